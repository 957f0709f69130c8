"""Compaction: apply one hour of ``cdc.changelog`` to ``current.<db>__<table>`` tables.

One current table per source table ``(database, schema, table)`` (see ``identifiers``: the schema
counts when it is not the database, e.g. ``HR.EMP`` and ``SCOTT.EMP`` are two tables).

Design (why re-runs and shuffled hours give the same tables)
-----------------------------------------------------------
The state of a key is defined as the *fold* of all its changes in total order: the **order key**
``V<event_time micros, 20 digits>|<source_sequence>|<partition>|<offset>|<record_index>``
(zero-padded, so text order is the order; see :func:`order_key`). Event time comes first because
every change has one (snapshot and full-load rows carry no vendor sequence); the vendor sequence
orders the changes of one event time (one transaction, or a clock's resolution: MySQL's binlog
times are seconds), and of two changes with the same time, one with a sequence comes before one
without; then the Kafka coordinates (the tool's emission order). Redelivered duplicates (same
topic, partition, offset, record index) count once. Every stored row keeps the order key of the
last change it reflects.

For each key the hour touches, compaction takes one of two paths:

* **fast path** — every change of the hour is newer than what is stored (or nothing is stored):
  fold the hour's changes onto the stored row. Partial images update only the columns they carry
  (the MERGE keeps the other stored columns), full images and deletes replace.
* **slow path** — some change is not newer (an out-of-order hour, a duplicate, a re-run): recompute
  the key from its *whole* history in ``cdc.changelog`` (all hours) and replace the stored row.
  Every key of an hour that is not later than the newest hour already compacted into the table
  (table property ``cdc.compacted-through``: a re-run or an out-of-order hour) takes the slow
  path, so a re-run never depends on tombstones still being there.

Every run only ever grows the set of changes a key's state is the fold of, and a fold of the same
set is the same state, so after all hours are compacted — once, twice, in any order — each key
holds the fold of all its changes. In the common in-order case only the hour's changes are read,
so the cost follows the change volume; the slow path reads the table's history for the few keys
that need it.

Deletes leave a **tombstone** (key + order key) in ``current.<db>__<table>__tombstones`` so a late
change never resurrects a deleted row; the main table holds live rows only, which is what analysts
query. Tombstones are dropped by the daily maintenance DAG ``compaction.tombstone_retention_days``
after their event time; it records the cut-off on the tombstone table
(``cdc.tombstones-purged-before``), and a key with neither a stored row nor a tombstone whose
changes reach below it takes the slow path too, so a purged delete still wins over an older
change that lands later, on its first run as on any re-run. Re-running or replaying hours does not
depend on tombstones (see the slow path); they only keep the in-order case fast.
``TRUNCATE`` is a table-level change: rows older than it are deleted, its order key is kept in the
table property ``cdc.truncated-before`` (changes older than it never apply), and rows newer than it
are recomputed from history (they may hold partial updates on top of truncated state).

Keys: ``row_key`` (key columns, or a vendor row id). An UPDATE whose before-image key differs from
its key moves the row: the old key gets a delete (tombstone), the new key the row (a partial after
image is completed from the before image). Tables with neither key columns nor row ids are
**keyless**: whole rows form a multiset — ``_cdc_key`` is a hash of the row's values and
``_cdc_occurrence`` numbers its copies; an insert adds a copy, a delete removes one (never below
zero), an update does both.

Typed columns come from ``column_types`` (see :mod:`cdclake.formats.logical_types`). New columns (from
images or ``ALTER TABLE ... ADD COLUMN`` DDL) are added; an ADD COLUMN's SQL type only types a
column no change declares (vendors type some SQL types otherwise in their rows), and a column that
holds no value yet takes the type its first values declare; types are widened by a commutative join;
a change that cannot be represented (string vs bigint, a value that does not fit its column)
fails that table with :class:`IncompatibleSchemaChange` — nothing of it is published — while the
other tables of the hour are still compacted; the summary lists the failures, and the failed
table is held back until it compacts again (see ``held_tables``). One exception: a MySQL zero
date (``0000-00-00``, a zero month or day) in a date or timestamp column is NULL there, as Debezium
gives it; the changelog keeps the text and the decoder's warning. MongoDB collections (``db_type``
MongoDB, from DRS, Debezium or DTS) are schemaless: one field may hold an int in one document and
a double, a string or a sub-document in the next, so their columns are strings holding the exact
canonical text (as Paimon's MongoDB sync types them); the changelog keeps each value's type.

Column names are kept as the source spells them. Where the source compares column names ignoring
case (MySQL and its kin, Oracle, ..., see ``identifiers.case_insensitive_source``), a column
spelled two ways (``ALTER TABLE t CHANGE name Name ...``; ``mysqlType`` and ``sqlType`` that
disagree) is one column: its names are folded into the table's spelling, or for a new column the
lower-case spelling if the hour has it, else the first in sort order (:func:`fold_case`). Elsewhere
such twins fail the table, as Spark cannot tell them apart.

``_cdc_run_id`` is the ``run_id`` of the changelog row that last changed the row (the normalize run
that produced it), so the tables are a pure function of the changelog.

Layout: the main table is sorted by ``_cdc_key``, with merge-on-read deletes/updates, so a MERGE
writes delete files and new rows for affected keys only instead of rewriting data files. It starts
unpartitioned (a small table's MERGE costs about half a bucketed one's); the daily maintenance
partitions it by ``bucket(N, _cdc_key)`` once it holds ``maintenance.bucket_rows`` rows.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from spark_jobs import changelog_base, held_tables, hour_status
from spark_jobs.compaction.case import fold_case
from spark_jobs.compaction.ddl import declared_columns
from spark_jobs.compaction.events import change_events
from spark_jobs.compaction.fold import fold_events
from spark_jobs.compaction.hour import HourFold, TablePlan, fold_hour
from spark_jobs.compaction.layout import (
    CASE_FOLDED_PROPERTY,
    COMPACTED_THROUGH_PROPERTY,
    KEYLESS_PROPERTY,
    TRUNCATE_PROPERTY,
    CompactionError,
    CompactionOptions,
    IncompatibleSchemaChange,
    SourceTable,
)
from spark_jobs.compaction.merge import (
    append_tombstones,
    apply_truncate,
    check_values,
    merge_keyed,
    merge_keyless,
    merge_tombstones,
    typed_source,
    widen_or_refuse,
)
from spark_jobs.compaction.schema import (
    NeedsExclusiveSession,
    check_no_image_twins,
    ensure_current_tables,
    evolve_schema,
    sharing_session,
    sql_literal,
    table_exists,
    table_properties,
    table_spellings,
    two_topics_message,
)
from spark_jobs.held_tables import Hold
from spark_jobs.identifiers import (
    NO_DATABASE,
    PURGED_BEFORE_PROPERTY,
    SOURCE_SCHEMA_SQL,
    IdentifierCollision,
    current_table_name,
    find_collisions,
    history_table_name,
    prefixed_database,
    quote,
    quote_table,
    source_label,
    tombstone_table_name,
)
from spark_jobs.session import REUSED, concurrently
from spark_jobs.tables import CHANGELOG, ensure_tables, in_catalog

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

STAGE = "compact"
ALONE = "alone"  # a table compacted on its own (see plan_table)
R = TypeVar("R")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TableResult:
    source: str
    table: str
    status: str  # "OK" or "FAILED"
    changes: int  # key-level events (an update that moves a key counts twice)
    slow_keys: int = 0
    message: str = ""


@dataclass
class CompactionSummary:
    hour: dt.datetime
    run_id: str
    tables: list[TableResult] = field(default_factory=list)
    held: list[Hold] = field(default_factory=list)  # the tables held back after this hour

    @property
    def failures(self) -> list[TableResult]:
        return [t for t in self.tables if t.status != "OK"]


def compact_table_alone(spark: SparkSession, source_table: SourceTable,
                        hour_changes: DataFrame, hour_events: DataFrame, declared: dict[str, str | None],
                        hour: dt.datetime, options: CompactionOptions, changelog: str = CHANGELOG,
                        hour_kinds: Sequence[Row] | None = None, topic: str | None = None,
                        through: dt.datetime | None = None) -> TableResult:
    """Apply one source table's changes of the hour on its own (see the module docstring): a held
    table catching up, a table with a TRUNCATE or case-folded names in the hour. ``hour_kinds``:
    the table's events counted by kind (``kind``, ``n``, newest ``k``), when counted already;
    ``topic``: the one topic the table's changes come from (the hour's, checked against the
    table's); ``through``: the newest landing hour among the changes when they span several (a
    held table catching up, see ``held_tables``)."""
    database, schema, table_name = source_table
    table = current_table_name(database, table_name, schema)
    source = source_label(database, table_name, schema)
    events = hour_events.where(_same_table(source_table, F.col("source_schema")))
    mine = hour_changes.where(_same_table(source_table, F.expr(SOURCE_SCHEMA_SQL)))
    spellings = table_spellings(spark, table, mine, declared)
    if spellings:
        check_no_image_twins(mine, source)
        mine = fold_case(mine, spellings)
        events = change_events(mine)
        declared = declared_columns(mine, spellings).get(source_table, {})
        hour_kinds = None
    by_kind = hour_kinds if hour_kinds is not None else \
        events.groupBy("kind").agg(F.count("*").alias("n"), F.max("order_key").alias("k")).collect()
    kinds = {r["kind"]: r["n"] for r in by_kind}
    newest_truncate = next((r["k"] for r in by_kind if r["kind"] == "TRUNCATE"), None)
    keyless = _keyless(spark, table, source, kinds)
    ensure_current_tables(spark, table, source, keyless, options, topic)
    columns = evolve_schema(spark, table, declared)

    properties = table_properties(spark, table)
    if spellings and properties.get(CASE_FOLDED_PROPERTY) != "true":
        spark.sql(f"ALTER TABLE {quote_table(table)} SET TBLPROPERTIES ('{CASE_FOLDED_PROPERTY}'='true')")
    stored_truncate = properties.get(TRUNCATE_PROPERTY)
    hour_label = _hour_label(hour)
    through_label = _hour_label(max(hour, through or hour))
    compacted_through = properties.get(COMPACTED_THROUGH_PROPERTY)
    # A re-run or an out-of-order hour: later hours may hold changes of its keys (whose tombstones
    # may be purged by now), so every key is recomputed from its whole history.
    replay = compacted_through is not None and hour_label <= compacted_through
    # The hour's TRUNCATE, unless an earlier one supersedes it; a re-run of its hour applies it
    # again (see apply_truncate).
    newer_truncate = newest_truncate if newest_truncate and (
        stored_truncate is None or newest_truncate >= stored_truncate) else None
    main = spark.table(table)
    truncate_slow = (main.where(F.col("_cdc_order_key") > F.lit(newer_truncate)).select(
        F.col("_cdc_key").alias("key")).distinct().localCheckpoint() if newer_truncate else None)
    truncated_before = newer_truncate or stored_truncate

    key_events = events.where(F.col("key").isNotNull())
    if truncated_before:
        key_events = key_events.where(F.col("order_key") > F.lit(truncated_before))
    batch = key_events.groupBy("key").agg(F.min("order_key").alias("batch_min"),
                                          F.min("event_us").alias("batch_min_us"))
    if truncate_slow is not None:
        batch = batch.join(truncate_slow.withColumn("forced", F.lit(True)), "key", "full")
    else:
        batch = batch.withColumn("forced", F.lit(None).cast("boolean"))
    if replay:
        batch = batch.withColumn("forced", F.lit(True))
    # Rows and tombstones older than the hour's TRUNCATE count as gone here; they are deleted just
    # before the MERGE, after any column widening (which commits to main: see change_column_type).
    live, tombs = spark.table(table), spark.table(tombstone_table_name(table))
    if newer_truncate:
        live = live.where(F.col("_cdc_order_key") >= F.lit(newer_truncate))
        tombs = tombs.where(F.col("_cdc_order_key") >= F.lit(newer_truncate))
    stored = (live.groupBy(F.col("_cdc_key").alias("key"))
              .agg(F.max("_cdc_order_key").alias("stored_order"), F.count("*").alias("stored_count"))
              .withColumn("present", F.lit(True)))
    tomb = tombs.select(F.col("_cdc_key").alias("key"), F.col("_cdc_order_key").alias("tomb_order"))
    purged_before = table_properties(spark, tombstone_table_name(table)).get(PURGED_BEFORE_PROPERTY)
    # No stored row and no tombstone, but a change older than purged tombstones: its delete may
    # have been purged, so the key's history decides.
    below_purge = (F.col("batch_min_us") < F.lit(int(purged_before)) if purged_before
                   else F.lit(False))
    classified = (batch.join(stored, "key", "left").join(tomb, "key", "left").select(
        "key", F.coalesce("stored_count", F.lit(0)).alias("stored_count"),
        F.when(F.col("forced") | (F.col("batch_min") <= F.greatest("stored_order", "tomb_order")), "SLOW")
        .when(F.col("present"), "PRESENT").when(F.col("tomb_order").isNull() & below_purge, "SLOW")
        .otherwise("ABSENT").alias("base"), F.col("tomb_order").isNotNull().alias("tombstoned"))
    ).localCheckpoint()
    counted = classified.groupBy("base").agg(
        F.count("*").alias("n"), F.sum(F.col("tombstoned").cast("int")).alias("tombstoned")).collect()
    bases = {r["base"]: r["n"] for r in counted}
    tombstoned = sum(r["tombstoned"] or 0 for r in counted)
    slow_keys = classified.where(F.col("base") == "SLOW").select("key", "stored_count")
    n_slow = bases.get("SLOW", 0)
    fast = key_events.join(classified.where(F.col("base") != "SLOW").drop("tombstoned"), "key")
    if n_slow:
        past = table_changes(spark, changelog, options, source_table, topic, spellings)
        past_events = change_events(past).where(F.col("key").isNotNull() & (F.col("kind") != "TRUNCATE"))
        if truncated_before:
            past_events = past_events.where(F.col("order_key") > F.lit(truncated_before))
        # A re-run's keys are the whole hour: too many to broadcast.
        keys = slow_keys if replay else slow_keys.hint("broadcast")
        slow = past_events.join(keys, "key").withColumn("base", F.lit("ABSENT"))
        fold_input = fast.unionByName(slow)
    else:
        fold_input = fast
    # Checkpointed: the MERGEs then plan a scan of the states, not the fold again.
    results = fold_events(fold_input).localCheckpoint()
    columns = check_values(spark, table, results, columns)
    if newer_truncate:
        apply_truncate(spark, table, newer_truncate)
    merge_source = typed_source(results, columns)
    if keyless:
        merge_keyless(spark, table, merge_source, columns)
    else:
        merge_keyed(spark, table, merge_source, columns)
    # A tombstone is written when a key is deleted (a delete, a key move, a keyless row's last
    # copy) and dropped when a key comes back over it; slow keys are recomputed from history.
    if n_slow or tombstoned or _deletes_keys(kinds):
        merge_tombstones(spark, table, merge_source)
    if not keyless and options.keeps_history(topic, source_table):
        _update_history(spark, source_table, topic, None if newest_truncate else events, columns,
                        options, changelog, spellings)
    if not replay:
        _mark_compacted(spark, table, through_label)
    return TableResult(source, table, "OK", sum(kinds.values()), n_slow)


def compact_table(spark: SparkSession, source_table: SourceTable, plan: TablePlan, fold: HourFold,
                  hour: dt.datetime, options: CompactionOptions, events: DataFrame,
                  changelog: str = CHANGELOG) -> TableResult:
    """Write one planned table's folded keys of the hour (see ``compaction.hour``) and what goes
    with them: tombstones, history, the compacted-through mark."""
    table, kinds = plan.table, plan.kinds
    columns = widen_or_refuse(spark, table, plan.columns, fold.checks.get(plan.index, {}))
    merge_source = typed_source(fold.of(plan), columns)
    if plan.keyless:
        merge_keyless(spark, table, merge_source, columns)
    else:
        merge_keyed(spark, table, merge_source, columns)
    n_slow = fold.slow_keys.get(plan.index, 0)
    if n_slow or fold.tombstoned.get(plan.index):
        merge_tombstones(spark, table, merge_source)
    elif _deletes_keys(kinds):  # no tombstone to update or drop: the new ones only
        append_tombstones(merge_source, table)
    if not plan.keyless and options.keeps_history(plan.topic, source_table):
        mine = events.where(_same_table(source_table, F.col("source_schema")))
        _update_history(spark, source_table, plan.topic, mine, columns, options, changelog, None)
    if not plan.replay:
        _mark_compacted(spark, table, _hour_label(hour))
    return TableResult(plan.source, table, "OK", sum(kinds.values()), n_slow)


def plan_table(spark: SparkSession, index: int, source_table: SourceTable, topic: str,
               hour_changes: DataFrame, declared: dict[str, str | None], hour_kinds: Sequence[Row],
               hour: dt.datetime, options: CompactionOptions) -> TablePlan | str:
    """Ready one table for the hour-wide jobs: its tables made and evolved, its metadata read.
    :data:`ALONE` when it is compacted on its own (:func:`compact_table_alone`)."""
    database, schema, table_name = source_table
    table = current_table_name(database, table_name, schema)
    source = source_label(database, table_name, schema)
    kinds = {r["kind"]: r["n"] for r in hour_kinds}
    if kinds.get("TRUNCATE"):
        return ALONE
    mine = hour_changes.where(_same_table(source_table, F.expr(SOURCE_SCHEMA_SQL)))
    if table_spellings(spark, table, mine, declared):
        return ALONE
    keyless = _keyless(spark, table, source, kinds)
    ensure_current_tables(spark, table, source, keyless, options, topic)
    columns = evolve_schema(spark, table, declared)
    properties = table_properties(spark, table)
    compacted_through = properties.get(COMPACTED_THROUGH_PROPERTY)
    purged_before = table_properties(spark, tombstone_table_name(table)).get(PURGED_BEFORE_PROPERTY)
    replay = compacted_through is not None and _hour_label(hour) <= compacted_through
    return TablePlan(index, source_table, table, source, topic, keyless, columns, replay,
                     truncated_before=properties.get(TRUNCATE_PROPERTY),
                     purged_before=int(purged_before) if purged_before else None, kinds=kinds)


def _deletes_keys(kinds: Mapping[str, int]) -> bool:
    """Whether the hour's events (counted by kind) delete a key or a keyless row's copy."""
    return bool(kinds.get("DELETE") or kinds.get("DEC"))


def _keyless(spark: SparkSession, table: str, source: str, kinds: Mapping[str, int]) -> bool:
    """Whether the table's changes are keyless (whole rows as a multiset); refuses a mix."""
    if kinds.get("UNKEYED"):
        raise CompactionError(f"{source}: {kinds['UNKEYED']} change(s) have key columns but no key "
                              "values in their images; fix the decoder or the key override")
    has_keyed = any(kinds.get(k) for k in ("FULL", "PARTIAL", "DELETE"))
    has_keyless = any(kinds.get(k) for k in ("INC", "DEC"))
    if has_keyed and has_keyless:
        raise CompactionError(f"{source}: some changes carry keys and some do not; set a key override "
                              "for the table (topics[].primary_keys) so every change has a key")
    if not (has_keyed or has_keyless) and table_exists(spark, table):
        return table_properties(spark, table).get(KEYLESS_PROPERTY) == "true"
    return has_keyless


def _update_history(spark: SparkSession, source_table: SourceTable, topic: str | None,
                    events: DataFrame | None, columns: dict[str, str], options: CompactionOptions,
                    changelog: str, spellings: Mapping[str, str] | None) -> None:
    """The table's SCD2 history for the keys of ``events`` (None: every key, after a TRUNCATE,
    which ends every key's version), from the table's whole changelog."""
    from spark_jobs import history  # built on this module's events and schema helpers

    database, schema, table_name = source_table
    table = current_table_name(database, table_name, schema)
    touched = None if events is None else events.where(F.col("key").isNotNull()).select("key").distinct()
    changes = table_changes(spark, changelog, options, source_table, topic, spellings)
    history.update(spark, table, source_label(database, table_name, schema), changes, touched, columns,
                   options.buckets)


def _hour_label(hour: dt.datetime) -> str:
    """An hour as ``cdc.compacted-through`` holds it (text order is time order)."""
    return hour.strftime("%Y-%m-%dT%H:00:00Z")


def _mark_compacted(spark: SparkSession, table: str, through_label: str) -> None:
    """Record the newest hour compacted into ``table``. Tombstones are purged by the daily
    maintenance DAG only: purging here, by event time, dropped the tombstones of replayed historic
    hours at once, so re-running an earlier hour afterwards resurrected deleted rows."""
    spark.sql(f"ALTER TABLE {quote_table(table)} SET TBLPROPERTIES "
              f"('{COMPACTED_THROUGH_PROPERTY}'={sql_literal(through_label)})")


def table_changes(spark: SparkSession, changelog: str, options: CompactionOptions,
                   source_table: SourceTable, topic: str | None,
                   spellings: Mapping[str, str] | None) -> DataFrame:
    """Every changelog row of one source table (all hours; those of expired hours from the
    changelog base, see ``changelog_base``), names as compaction reads them."""
    rows = spark.table(changelog)
    if changelog == CHANGELOG:
        rows = changelog_base.readable_changes(spark, rows, changelog_base.through(spark))
    past = table_space(rows, options.table_prefixes)
    if topic is not None:
        past = past.where(F.col("kafka_topic") == F.lit(topic))
    past = past.where(_same_table(source_table, F.expr(SOURCE_SCHEMA_SQL)))
    if spellings:
        database, schema, table_name = source_table
        check_no_image_twins(past, source_label(database, table_name, schema))
        past = fold_case(past, spellings)
    return past


def _same_table(source_table: SourceTable, schema_column: Any) -> Any:
    """Rows of ``source_table``; ``schema_column`` is the frame's source schema (see
    ``identifiers.source_schema``)."""
    def equal(column: Any, value: str | None) -> Any:
        return column.isNull() if value is None else column == F.lit(value)

    database, schema, table_name = source_table
    return equal(F.col("database"), database) & equal(schema_column, schema) & \
        equal(F.col("table_name"), table_name)


def table_space(changes: DataFrame, prefixes: Mapping[str, str]) -> DataFrame:
    """Changelog rows with ``database`` as compaction sees it: see
    ``identifiers.prefixed_database`` (the changelog keeps the real name)."""
    if not prefixes:
        return changes
    database = F.col("database")
    for topic, prefix in sorted(prefixes.items()):
        database = F.when(F.col("kafka_topic") == F.lit(topic), F.concat(
            F.lit(prefixed_database(prefix, "")),  # the prefix and its separator
            F.coalesce(F.col("database"), F.lit(NO_DATABASE)),
        )).otherwise(database)
    # A schema that repeats the database (CloudCanal) still counts for nothing (SOURCE_SCHEMA_SQL).
    schema = F.when(F.col("schema_name") == F.col("database"), database).otherwise(F.col("schema_name"))
    return changes.withColumns({"schema_name": schema, "database": database})


def compact_hour(spark: SparkSession, hour: dt.datetime, run_id: str,
                 options: CompactionOptions | None = None, changelog: str = CHANGELOG) -> CompactionSummary:
    """Apply the changelog rows landed in ``hour`` to the current-state tables they touch.

    A table that fails (collision, incompatible schema change, any Spark error) is reported in
    the summary, left unchanged by its remaining steps and held back (``held_tables``); the other
    tables are still compacted. A held table is tried again in every later hour with all its
    changes since the hour it was held from. Database-level changes (no table name) make no table.

    Most tables are classified and folded together, in one Spark job for the hour
    (``compaction.hour``): each table is first planned (made, evolved, its metadata read), then
    written (its MERGE and what goes with it). Held tables catching up, tables with a TRUNCATE
    or case-folded names, and every table of an hour with fewer than ``options.hour_wide_from``
    tables are compacted on their own (:func:`compact_table_alone`). Tables are
    planned and written ``options.threads`` at a time on the one session: each is its own Iceberg
    commits, and the server overlaps one table's planning and commits with another's jobs.
    """
    options = options or CompactionOptions()
    ensure_tables(spark)
    changes = spark.table(changelog).where(F.col("landed_hour") == F.lit(hour).cast("timestamp"))
    changes = table_space(changes, options.table_prefixes).persist(REUSED)
    summary = CompactionSummary(hour, run_id)
    holds = held_tables.read(spark)
    n_held = len(holds)
    failed: list[SourceTable] = []
    try:
        topics: dict[SourceTable, set[str]] = {}
        for r in changes.select("database", F.expr(SOURCE_SCHEMA_SQL).alias("source_schema"), "table_name",
                                "kafka_topic").distinct().collect():
            if _names_a_table(r["table_name"]):
                topics.setdefault((r["database"], r["source_schema"], r["table_name"]), set()).add(
                    r["kafka_topic"])
        catching_up = {s: h for s, h in holds.items() if h.since <= hour}
        sources = sorted(set(topics) | set(catching_up), key=lambda s: tuple(str(part) for part in s))
        collisions = find_collisions(sources)
        # Checkpointed, not cached: each table's queries then plan a scan of the stored events,
        # not the events' plan again.
        events = change_events(changes).localCheckpoint()
        kinds = _kinds_by_table(events)
        declared_all: dict[SourceTable, dict[str, str | None]] | None
        try:
            declared_all = declared_columns(changes)
        except IncompatibleSchemaChange:
            declared_all = None  # some table's types clash: find which, table by table

        def declared_of(source_table: SourceTable) -> dict[str, str | None]:
            return _declared_for(changes, source_table) if declared_all is None \
                else declared_all.get(source_table, {})

        def plan_source(source_table: SourceTable) -> TablePlan | str:
            database, schema, table_name = source_table
            if current_table_name(database, table_name, schema) in collisions or \
                    source_table in catching_up or len(topics[source_table]) > 1:
                return ALONE
            [topic] = topics[source_table]
            return plan_table(spark, sources.index(source_table), source_table, topic, changes,
                              declared_of(source_table), kinds.get(source_table, []), hour, options)

        planned: dict[SourceTable, TablePlan | str | TableResult] = dict.fromkeys(sources, ALONE)
        if len(sources) >= options.hour_wide_from:
            each = _each_table(spark, sources, plan_source, options.threads)
            planned = dict(zip(sources, each, strict=True))
        plans = [p for p in planned.values() if isinstance(p, TablePlan)]
        fold: HourFold | None = None
        if plans:
            try:
                past = table_space(spark.table(changelog), options.table_prefixes)
                fold = fold_hour(spark, events, plans, past)
            except Exception as exc:  # each table on its own then, so one table's error fails only it
                log.warning("compacting %s table by table: the hour-wide fold failed: %s", hour,
                            _first_line(exc))

        def compact_source(source_table: SourceTable) -> TableResult:
            database, schema, table_name = source_table
            table = current_table_name(database, table_name, schema)
            label = source_label(database, table_name, schema)
            plan = planned[source_table]
            if isinstance(plan, TableResult):
                return plan  # its plan failed
            if isinstance(plan, TablePlan) and fold is not None:
                return compact_table(spark, source_table, plan, fold, hour, options, events, changelog)
            hold = catching_up.get(source_table)
            if table in collisions:
                raise IdentifierCollision(
                    f"source tables {collisions[table]} all map to {table}; rename one of them "
                    "(or set a distinct database) so each has its own current table")
            if hold is not None:
                return _catch_up(spark, source_table, hold.since, hour, options, changelog)
            if len(topics[source_table]) > 1:
                raise IdentifierCollision(two_topics_message(label, sorted(topics[source_table])))
            [topic] = topics[source_table]
            return compact_table_alone(spark, source_table, changes, events, declared_of(source_table), hour,
                                       options, changelog, kinds.get(source_table, []), topic)

        for source_table, result in zip(sources, _each_table(spark, sources, compact_source, options.threads),
                                        strict=True):
            assert isinstance(result, TableResult)
            if result.status == "OK" and source_table in catching_up:
                del holds[source_table]  # caught up
            elif result.status != "OK":
                failed.append(source_table)
            summary.tables.append(result)
    finally:
        changes.unpersist()
    _hold_failures(spark, summary, holds, failed, released=len(holds) < n_held)
    return summary


def _each_table(spark: SparkSession, sources: Sequence[SourceTable],
                step: Callable[[SourceTable], R], threads: int) -> list[R | TableResult]:
    """``step`` of every source table, ``threads`` at a time, as results in ``sources``' order; a
    table's failure is a ``FAILED`` result. A table whose column must be rewritten
    (:class:`NeedsExclusiveSession`) takes its step again after the others, alone on the session."""
    def attempt(source_table: SourceTable) -> tuple[R | TableResult] | None:
        with sharing_session():
            try:
                return (_result_of(step, source_table),)
            except NeedsExclusiveSession:
                return None

    if threads <= 1 or len(sources) <= 1:
        return [_result_of(step, s) for s in sources]
    results = concurrently(spark, sources, attempt, threads)
    return [result[0] if result is not None else _result_of(step, source_table)
            for source_table, result in zip(sources, results, strict=True)]


def _result_of(step: Callable[[SourceTable], R], source_table: SourceTable) -> R | TableResult:
    """One table's step; its failure is a ``FAILED`` result, never the others' end."""
    database, schema, table_name = source_table
    table = current_table_name(database, table_name, schema)
    label = source_label(database, table_name, schema)
    try:
        return step(source_table)
    except NeedsExclusiveSession:
        raise
    except (CompactionError, IdentifierCollision) as exc:
        return TableResult(label, table, "FAILED", 0, message=str(exc))
    except Exception as exc:  # one table's Spark error never stops the others
        return TableResult(label, table, "FAILED", 0, message=f"{type(exc).__name__}: {_first_line(exc)}")


def _catch_up(spark: SparkSession, source_table: SourceTable, since: dt.datetime, hour: dt.datetime,
              options: CompactionOptions, changelog: str) -> TableResult:
    """Compact a held table with every change of it landed from ``since`` on (see ``held_tables``)."""
    database, schema, table_name = source_table
    label = source_label(database, table_name, schema)
    since_then = spark.table(changelog).where(F.col("landed_hour") >= F.lit(since).cast("timestamp"))
    pending = table_space(since_then, options.table_prefixes)
    pending = pending.where(_same_table(source_table, F.expr(SOURCE_SCHEMA_SQL))).persist(REUSED)
    try:
        spans = pending.groupBy("kafka_topic").agg(F.max("landed_hour").alias("newest")).collect()
        if len(spans) > 1:
            raise IdentifierCollision(two_topics_message(label, sorted(r["kafka_topic"] for r in spans)))
        topic = spans[0]["kafka_topic"] if spans else None
        newest = spans[0]["newest"] if spans else None
        events = change_events(pending).persist(REUSED)
        try:
            return compact_table_alone(spark, source_table, pending, events,
                                       _declared_for(pending, source_table), hour, options, changelog,
                                       None, topic, through=newest)
        finally:
            events.unpersist()
    finally:
        pending.unpersist()


def _hold_failures(spark: SparkSession, summary: CompactionSummary, holds: dict[SourceTable, Hold],
                   failed: Sequence[SourceTable], released: bool) -> None:
    """Hold back the hour's ``failed`` tables (``holds`` no longer has those that caught up) and
    drop what a failed table wrote to the hour's audit branch: none of it is published."""
    results = {(t.source, t.table): t for t in summary.failures}
    for source_table in failed:
        database, schema, table_name = source_table
        failure = results[(source_label(database, table_name, schema),
                           current_table_name(database, table_name, schema))]
        earlier = holds.get(source_table)
        since = min(earlier.since, summary.hour) if earlier else summary.hour
        holds[source_table] = Hold(source_table, failure.table, failure.source, since, summary.hour,
                                   failure.message, summary.run_id)
        _drop_audit_branch(spark, failure.table)
    summary.held = sorted(holds.values(), key=lambda h: h.table)
    if failed or released:
        held_tables.write(spark, summary.held)


def _drop_audit_branch(spark: SparkSession, table: str) -> None:
    branch = spark.conf.get(held_tables.WAP_BRANCH, None)
    if not branch:
        return
    for name in (table, tombstone_table_name(table), history_table_name(table)):
        if table_exists(spark, name):
            qualified = quote_table(in_catalog(spark, name))
            spark.sql(f"ALTER TABLE {qualified} DROP BRANCH IF EXISTS {quote(branch)}")


def _names_a_table(table_name: str | None) -> bool:
    """A database-level change (``CREATE DATABASE``, a DDL with no table) has no current table."""
    return table_name is not None and bool(table_name.strip())


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:500]


def _kinds_by_table(events: DataFrame) -> dict[SourceTable, list[Row]]:
    """Each source table's events of the hour counted by kind, in one query for every table."""
    rows = events.groupBy("database", "source_schema", "table_name", "kind").agg(
        F.count("*").alias("n"), F.max("order_key").alias("k")).collect()
    kinds: dict[SourceTable, list[Row]] = {}
    for r in rows:
        kinds.setdefault((r["database"], r["source_schema"], r["table_name"]), []).append(r)
    return kinds


def _declared_for(changes: DataFrame, source_table: SourceTable) -> dict[str, str | None]:
    same = _same_table(source_table, F.expr(SOURCE_SCHEMA_SQL))
    return declared_columns(changes.where(same)).get(source_table, {})


def options_from_config(config: PipelineConfig) -> CompactionOptions:
    return CompactionOptions(tombstone_retention_days=int(config.tombstone_retention_days),
                             table_prefixes=config.table_prefixes,
                             history={t.name: t.history for t in config.topics if t.history},
                             threads=config.compaction_threads)


def run(spark: SparkSession, config: PipelineConfig, hour: dt.datetime, run_id: str,
        branch: str | None = None) -> CompactionSummary:
    """Compact ``hour``; with ``branch`` (write-audit-publish) every read and write goes through
    the hour's audit branch: the changelog branch holds the hour being audited, and the current
    tables' branches (created on first write) receive the result while ``main`` stays as it was."""
    if branch is None:
        summary = compact_hour(spark, hour, run_id, options_from_config(config))
    else:
        spark.conf.set("spark.wap.branch", branch)
        try:
            summary = compact_hour(spark, hour, run_id, options_from_config(config))
        finally:
            spark.conf.unset("spark.wap.branch")
    failures = "; ".join(f"{f.table}: {f.message}" for f in summary.failures)
    hour_status.record(spark, hour, hour_status.COMPACT, run_id,
                       hour_status.PARTIAL if failures else hour_status.OK,
                       [(t.table, None) for t in summary.tables if t.status == "OK"], failures or None)
    return summary
