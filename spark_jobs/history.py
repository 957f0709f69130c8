"""SCD type 2 history tables: ``history.<db>__<table>`` holds every version of every row.

Opt-in per topic or source table (``topics[].history``). A version is the state of a key from the
change that made it to the next change of the key: its data columns, ``_cdc_valid_from`` and
``_cdc_valid_to`` (event times; no end while it is current), ``_cdc_is_current``,
``_cdc_ended_by`` (the op that ended it: ``UPDATE``, a key-moving ``UPDATE``, ``DELETE`` or
``TRUNCATE``), the op that made it and its lineage (order key, Kafka topic, partition, offset,
run id). The versions of a key come from all its changes in the changelog, in compaction's total
order (``spark_jobs.compaction.events.order_key``, duplicates once), so out-of-order and re-run
hours give the same history; a TRUNCATE ends every version open at its order key.

Compaction maintains it hourly, on the hour's audit branch like the current table: the keys the
hour touched are rebuilt from the changelog (every key when the hour holds a TRUNCATE). The
current gate checks that the current versions equal the current table. ``cdclake history
rebuild`` rebuilds one table from the changelog alone. Keyless tables have no history (a row's
copies have no identity to follow).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdclake.exceptions import CdclakeError
from cdclake.formats.logical_types import cast_text
from spark_jobs import changelog_base, compact
from spark_jobs.compaction.ddl import declared_columns
from spark_jobs.compaction.events import change_events
from spark_jobs.compaction.fold import events_by_key, in_order
from spark_jobs.compaction.layout import KEYLESS_PROPERTY, SOURCE_PROPERTY, TABLE_PROPERTIES, TOPIC_PROPERTY
from spark_jobs.compaction.schema import (
    change_column_type,
    finish_widening,
    table_exists,
    table_properties,
    table_schema,
    table_spellings,
)
from spark_jobs.identifiers import (
    HISTORY_NAMESPACE,
    SOURCE_SCHEMA_SQL,
    current_table_name,
    history_table_name,
    quote,
    quote_table,
)
from spark_jobs.maintenance import audit_branches
from spark_jobs.tables import CHANGELOG, ensure_tables

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

KEY_KINDS = ("FULL", "PARTIAL", "DELETE")
META_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_cdc_key", "string"),
    ("_cdc_valid_from", "timestamp"),
    ("_cdc_valid_to", "timestamp"),
    ("_cdc_is_current", "boolean"),
    ("_cdc_ended_by", "string"),
    ("_cdc_op", "string"),
    ("_cdc_order_key", "string"),
    ("_cdc_kafka_topic", "string"),
    ("_cdc_kafka_partition", "int"),
    ("_cdc_kafka_offset", "bigint"),
    ("_cdc_run_id", "string"),
)
VERSION_SCHEMA = (
    "key string, vals string, op string, valid_from_us bigint, valid_to_us bigint, is_current boolean, "
    "ended_by string, order_key string, kafka_topic string, kafka_partition int, kafka_offset bigint, "
    "run_id string"
)
_VERSION_COLUMNS = [c.strip().split(" ")[0] for c in VERSION_SCHEMA.split(",")]


def versions_of_key(events: Iterable[dict[str, Any]],
                    truncates: Iterable[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """Every version of one key: ``events`` are its FULL, PARTIAL and DELETE events (any order),
    ``truncates`` the table's TRUNCATE events. Each event ends the version open before it; a
    partial image updates the columns it carries (onto nothing, it is the whole row, as in
    compaction)."""
    versions: list[dict[str, Any]] = []
    values: dict[str, Any] | None = None  # the key's row; None while it does not exist
    current: dict[str, Any] | None = None
    for ev in in_order([*events, *truncates]):
        if current is not None:
            versions.append({**current, "valid_to_us": ev["event_us"], "is_current": False,
                             "ended_by": ev["op"]})
            current = None
        if ev["kind"] in ("DELETE", "TRUNCATE"):
            values = None
            continue
        image = json.loads(ev["image"]) if ev["image"] else {}
        values = dict(image) if ev["kind"] == "FULL" or values is None else {**values, **image}
        current = {"key": ev["key"], "vals": json.dumps(values, ensure_ascii=False), "op": ev["op"],
                   "valid_from_us": ev["event_us"], "valid_to_us": None, "is_current": True,
                   "ended_by": None, "order_key": ev["order_key"], "kafka_topic": ev["kafka_topic"],
                   "kafka_partition": ev["kafka_partition"], "kafka_offset": ev["kafka_offset"],
                   "run_id": ev["run_id"]}
    if current is not None:
        versions.append(current)
    return versions


def _versions_partitions(truncates: list[dict[str, Any]]) -> Any:
    def run(frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        out: list[dict[str, Any]] = []
        for records in events_by_key(frames).values():
            out.extend(versions_of_key(records, truncates))
            if len(out) >= 10_000:
                yield pd.DataFrame(out, columns=_VERSION_COLUMNS)
                out = []
        if out:
            yield pd.DataFrame(out, columns=_VERSION_COLUMNS)
    return run


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def versions(events: DataFrame, keys: DataFrame | None) -> DataFrame:
    """Version rows (:data:`VERSION_SCHEMA`) of ``keys`` (every key when None) from a table's
    events (``change_events`` of its whole changelog)."""
    truncates = [r.asDict() for r in events.where(F.col("kind") == "TRUNCATE").collect()]
    keyed = events.where(F.col("key").isNotNull() & F.col("kind").isin(*KEY_KINDS))
    if keys is not None:
        keyed = keyed.join(keys, "key")
    return keyed.repartition("key").mapInPandas(_versions_partitions(truncates), VERSION_SCHEMA)


def typed_versions(rows: DataFrame, columns: Mapping[str, str]) -> DataFrame:
    """Version rows -> the history table's columns (data columns typed as the current table's)."""
    typed = rows.withColumn("_vals", F.from_json("vals", "map<string,string>"))
    data = [F.expr(cast_text(f"_vals[{_literal(name)}]", sql_type)).alias(name)
            for name, sql_type in sorted(columns.items())]
    return typed.select(
        *data, F.col("key").alias("_cdc_key"),
        F.timestamp_micros("valid_from_us").alias("_cdc_valid_from"),
        F.timestamp_micros("valid_to_us").alias("_cdc_valid_to"),
        F.col("is_current").alias("_cdc_is_current"), F.col("ended_by").alias("_cdc_ended_by"),
        F.col("op").alias("_cdc_op"), F.col("order_key").alias("_cdc_order_key"),
        F.col("kafka_topic").alias("_cdc_kafka_topic"),
        F.col("kafka_partition").alias("_cdc_kafka_partition"),
        F.col("kafka_offset").alias("_cdc_kafka_offset"), F.col("run_id").alias("_cdc_run_id"))


def ensure_table(spark: SparkSession, name: str, columns: Mapping[str, str], source: str,
                 buckets: int) -> None:
    """Create the history table, or give it the current table's new columns and wider types."""
    if not table_exists(spark, name):
        catalog = spark.conf.get("spark.sql.defaultCatalog")
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.{HISTORY_NAMESPACE}")
        data = [f"{quote(n)} {t}" for n, t in sorted(columns.items())]
        meta = [f"{quote(n)} {t}" for n, t in META_COLUMNS]
        spark.sql(f"CREATE TABLE IF NOT EXISTS {quote_table(name)} ({', '.join(data + meta)}) USING iceberg "
                  f"PARTITIONED BY (bucket({buckets}, _cdc_key)) TBLPROPERTIES ({TABLE_PROPERTIES}, "
                  f"'{SOURCE_PROPERTY}'={_literal(source)})")
        return
    existing = finish_widening(spark, name, table_schema(spark, name))
    for column, sql_type in sorted(columns.items()):
        if column in existing and existing[column] != sql_type:
            change_column_type(spark, name, column, existing[column], sql_type)
    added = {n: t for n, t in sorted(columns.items()) if n not in existing}
    if added:
        spark.sql(f"ALTER TABLE {quote_table(name)} ADD COLUMNS "
                  f"({', '.join(f'{quote(n)} {t}' for n, t in added.items())})")


def update(spark: SparkSession, table: str, source: str, changes: DataFrame, keys: DataFrame | None,
           columns: Mapping[str, str], buckets: int) -> None:
    """Rebuild the versions of ``keys`` (every key when None) of ``table``'s history from
    ``changes``, the source table's whole changelog, through the session's audit branch."""
    name = history_table_name(table)
    ensure_table(spark, name, columns, source, buckets)
    events = change_events(changes)
    rows = typed_versions(versions(events, keys), columns)
    view = f"_cdc_history_keys_{abs(hash(name)) % 10**8}"
    if changelog_base.exists(spark):
        # Expired changes are folded into one base row per key (changelog_base): the versions they
        # made, older than the key's first change still read, cannot be rebuilt and stay; the one
        # open at that first change (a late one) ends there.
        keyed = events.where(F.col("key").isNotNull() & F.col("kind").isin(*KEY_KINDS))
        if keys is not None:
            keyed = keyed.join(keys, "key")
        keyed.groupBy("key").agg(F.min("order_key").alias("first_order"),
                                 F.min_by("event_us", "order_key").alias("first_us"),
                                 F.min_by("op", "order_key").alias("first_op")).createOrReplaceTempView(view)
        spark.sql(f"""
            MERGE INTO {quote_table(name)} h USING {view} v ON h._cdc_key = v.key AND (
                h._cdc_order_key >= v.first_order
                OR coalesce(h._cdc_valid_to > timestamp_micros(v.first_us), h._cdc_valid_to IS NULL))
            WHEN MATCHED AND h._cdc_order_key >= v.first_order THEN DELETE
            WHEN MATCHED THEN UPDATE SET _cdc_valid_to = timestamp_micros(v.first_us),
                _cdc_is_current = false, _cdc_ended_by = v.first_op""")
        rows.writeTo(name).append()
        spark.catalog.dropTempView(view)
        return
    if keys is None:
        rows.writeTo(name).overwrite(F.lit(True))
        return
    keys.createOrReplaceTempView(view)
    spark.sql(f"DELETE FROM {quote_table(name)} WHERE _cdc_key IN (SELECT key FROM {view})")
    rows.writeTo(name).append()


def data_columns(frame: DataFrame) -> list[str]:
    """A current or history table's source columns (not cdclake's ``_cdc_`` ones)."""
    return [f.name for f in frame.schema.fields if not f.name.startswith("_cdc_")]


def current_mismatches(current: DataFrame, history: DataFrame) -> int:
    """Rows that differ between a current table and its history's current versions (key and
    source columns; both ways)."""
    columns = ["_cdc_key", *data_columns(current)]
    now = history.where(F.col("_cdc_is_current")).select(*columns)
    live = current.select(*columns)
    return live.exceptAll(now).count() + now.exceptAll(live).count()


class HistoryError(CdclakeError):
    """The history table cannot be rebuilt; the message says why."""


def current_of(name: str) -> str:
    """``current.shop__orders``, ``history.shop__orders`` or ``shop__orders`` -> the current table."""
    return "current." + name.split(".", 1)[-1]


def rebuild(spark: SparkSession, config: PipelineConfig, name: str) -> int:
    """Rebuild the history of current table ``name``; returns its number of versions."""
    ensure_tables(spark)
    table = current_of(name)
    if not table_exists(spark, table):
        raise HistoryError(f"{table} does not exist (cdclake tables lists the tables)")
    properties = table_properties(spark, table)
    if properties.get(KEYLESS_PROPERTY) == "true":
        raise HistoryError(f"{table} is keyless: its rows have no identity to keep a history of")
    catalog = str(spark.conf.get("spark.sql.defaultCatalog"))
    existing = [t for t in (table, history_table_name(table)) if table_exists(spark, t)]
    held = audit_branches(spark, catalog, existing)
    if held:
        branches = sorted({b for names in held.values() for b in names})
        raise HistoryError(f"an hour is in flight on {', '.join(sorted(held))} (branches "
                           f"{', '.join(branches)}); rebuild once it publishes")
    options = compact.options_from_config(config)
    topic = properties.get(TOPIC_PROPERTY)
    readable = changelog_base.readable_changes(spark, spark.table(CHANGELOG), changelog_base.through(spark))
    changes = compact.table_space(readable, options.table_prefixes)
    if topic is not None:
        changes = changes.where(F.col("kafka_topic") == F.lit(topic))
    sources = changes.select("database", F.expr(SOURCE_SCHEMA_SQL).alias("source_schema"),
                             "table_name").distinct().collect()
    matching = [(r["database"], r["source_schema"], r["table_name"]) for r in sources
                if current_table_name(r["database"], r["table_name"], r["source_schema"]) == table]
    if not matching:
        raise HistoryError(f"cdc.changelog holds no change of {table}'s source table")
    [source_table] = matching
    mine = compact.table_changes(spark, CHANGELOG, options, source_table, topic, None)
    declared = declared_columns(mine).get(source_table, {})
    spellings = table_spellings(spark, table, mine, declared)
    if spellings:
        mine = compact.table_changes(spark, CHANGELOG, options, source_table, topic, spellings)
    columns = {n: t for n, t in table_schema(spark, table).items() if not n.startswith("_cdc_")}
    source = properties.get(SOURCE_PROPERTY) or table
    update(spark, table, source, mine, None, columns, options.buckets)
    return spark.table(history_table_name(table)).count()
