"""One hour's classification, fold and values check for every table at once.

Per table these are a handful of small Spark jobs each (most of a small table's compaction time);
for the hour they are one job each, keyed by (table, key). A table is named in the frames by its
``tbl`` number (:class:`TablePlan`'s ``index``). Semantics are ``compact.compact_table_alone``'s for
a table with no TRUNCATE in the hour and no case-folded names; the other tables take that path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.compaction.events import change_events
from spark_jobs.compaction.fold import fold_events
from spark_jobs.compaction.layout import SourceTable
from spark_jobs.compaction.merge import ValueCheck, bad_value_sql
from spark_jobs.identifiers import SOURCE_SCHEMA_SQL, tombstone_table_name
from spark_jobs.session import union_all

TBL = "tbl"
_NAMES = ("database", "source_schema", "table_name")


@dataclass(frozen=True)
class TablePlan:
    """One table's part of the hour, read from its metadata before the hour-wide jobs."""
    index: int
    source_table: SourceTable
    table: str
    source: str
    topic: str
    keyless: bool
    columns: dict[str, str]
    replay: bool  # a re-run or an out-of-order hour: every key from its whole history
    truncated_before: str | None
    purged_before: int | None  # tombstones purged below this event time (micros)
    kinds: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class HourFold:
    """Every planned table's folded keys (``tbl`` + :func:`fold_events`' columns), checkpointed."""
    states: DataFrame
    slow_keys: Mapping[int, int]
    tombstoned: Mapping[int, int]  # keys of the hour that have a tombstone
    checks: Mapping[int, Mapping[str, ValueCheck]]

    def of(self, plan: TablePlan) -> DataFrame:
        return self.states.where(F.col(TBL) == F.lit(plan.index)).drop(TBL)


def fold_hour(spark: SparkSession, events: DataFrame, plans: Sequence[TablePlan],
              past_changes: DataFrame) -> HourFold:
    """Classify and fold the hour's ``events`` of every planned table. ``past_changes``: the
    changelog of all hours (names as compaction reads them), read for the keys that need their
    whole history."""
    params = spark.createDataFrame(
        [(p.index, *p.source_table, p.topic, p.truncated_before, p.replay, p.purged_before) for p in plans],
        "tbl int, p_database string, p_source_schema string, p_table_name string, p_topic string, "
        "truncated_before string, replay boolean, purged_before bigint")
    # Changes older than the table's recorded TRUNCATE never apply.
    after_truncate = F.col("truncated_before").isNull() | (F.col("order_key") > F.col("truncated_before"))
    key_events = _numbered(events, params).where(F.col("key").isNotNull() & after_truncate)
    batch = key_events.groupBy(TBL, "key").agg(F.min("order_key").alias("batch_min"),
                                               F.min("event_us").alias("batch_min_us"),
                                               F.first("replay").alias("replay"),
                                               F.first("purged_before").alias("purged_before"))
    stored = union_all([spark.table(p.table).groupBy(F.col("_cdc_key").alias("key")).agg(
        F.max("_cdc_order_key").alias("stored_order"), F.count("*").alias("stored_count"))
        .withColumn(TBL, F.lit(p.index)) for p in plans]).withColumn("present", F.lit(True))
    tombs = union_all([spark.table(tombstone_table_name(p.table)).select(
        F.lit(p.index).alias(TBL), F.col("_cdc_key").alias("key"),
        F.col("_cdc_order_key").alias("tomb_order")) for p in plans])
    # No stored row and no tombstone, but a change older than purged tombstones: its delete may
    # have been purged, so the key's history decides.
    below_purge = F.coalesce(F.col("batch_min_us") < F.col("purged_before"), F.lit(False))
    classified = (batch.join(stored, [TBL, "key"], "left").join(tombs, [TBL, "key"], "left").select(
        TBL, "key", F.coalesce("stored_count", F.lit(0)).alias("stored_count"),
        F.when(F.col("replay") | (F.col("batch_min") <= F.greatest("stored_order", "tomb_order")), "SLOW")
        .when(F.col("present"), "PRESENT").when(F.col("tomb_order").isNull() & below_purge, "SLOW")
        .otherwise("ABSENT").alias("base"), F.col("tomb_order").isNotNull().alias("tombstoned"))
    ).localCheckpoint()
    counted = classified.groupBy(TBL, "base").agg(
        F.count("*").alias("n"), F.sum(F.col("tombstoned").cast("int")).alias("tombstoned")).collect()
    slow_keys = {p.index: 0 for p in plans}
    tombstoned = {p.index: 0 for p in plans}
    for r in counted:
        tombstoned[r[TBL]] += r["tombstoned"] or 0
        if r["base"] == "SLOW":
            slow_keys[r[TBL]] = r["n"]
    columns = [*key_events.drop(*params.columns[1:]).columns, "base", "stored_count"]
    fast = key_events.join(classified.where(F.col("base") != "SLOW").drop("tombstoned"), [TBL, "key"])
    fold_input = fast.select(*columns)
    slow_plans = [p for p in plans if slow_keys[p.index]]
    if slow_plans:
        slow = classified.where(F.col("base") == "SLOW").select(TBL, "key", "stored_count")
        # A re-run's keys are whole hours: too many to broadcast.
        slow = slow if any(p.replay for p in slow_plans) else slow.hint("broadcast")
        past_events = _numbered(change_events(_of_tables(past_changes, slow_plans, params)), params).where(
            F.col("key").isNotNull() & (F.col("kind") != "TRUNCATE") & after_truncate)
        fold_input = fold_input.unionByName(
            past_events.join(slow, [TBL, "key"]).withColumn("base", F.lit("ABSENT")).select(*columns))
    # Checkpointed: the MERGEs then plan a scan of the states, not the fold again.
    states = fold_events(fold_input, (TBL,)).localCheckpoint()
    return HourFold(states, slow_keys, tombstoned, value_checks(spark, states, plans))


def _numbered(events: DataFrame, params: DataFrame) -> DataFrame:
    """Events of the planned tables, each with its table's number and parameters."""
    same = reduce(Column.__and__, [F.col(n).eqNullSafe(F.col(f"p_{n}")) for n in _NAMES])
    return events.join(F.broadcast(params), same).drop(*[f"p_{n}" for n in _NAMES], "p_topic")


def _of_tables(changes: DataFrame, plans: Sequence[TablePlan], params: DataFrame) -> DataFrame:
    """The changelog rows of ``plans``' tables, from each table's one topic."""
    wanted = params.where(F.col(TBL).isin([p.index for p in plans])).select(
        *[F.col(f"p_{n}") for n in _NAMES], "p_topic")
    named = changes.withColumn("_source_schema", F.expr(SOURCE_SCHEMA_SQL))
    same = (F.col("database").eqNullSafe(F.col("p_database"))
            & F.col("_source_schema").eqNullSafe(F.col("p_source_schema"))
            & F.col("table_name").eqNullSafe(F.col("p_table_name"))
            & (F.col("kafka_topic") == F.col("p_topic")))
    return named.join(F.broadcast(wanted), same, "left_semi").drop("_source_schema")


def value_checks(spark: SparkSession, states: DataFrame,
                 plans: Sequence[TablePlan]) -> dict[int, dict[str, ValueCheck]]:
    """Each planned table's typed columns that some new value does not fit, in one job: the
    values exploded to (table, column, text) and checked against the column's type."""
    typed = [(p.index, name, sql_type) for p in plans for name, sql_type in sorted(p.columns.items())
             if sql_type != "string"]
    if not typed:
        return {}
    types = spark.createDataFrame(typed, "tbl int, name string, sql_type string")
    cells = states.where(~F.col("deleted")).select(
        TBL, F.explode(F.from_json("vals", "map<string,string>")).alias("name", "text"))
    bad = F.lit(False)
    for sql_type in sorted({t for _, _, t in typed}, reverse=True):
        bad = F.when(F.col("sql_type") == F.lit(sql_type),
                     F.expr(bad_value_sql("text", sql_type))).otherwise(bad)
    wide = (F.col("sql_type") == F.lit("bigint")) & F.expr("try_cast(text AS decimal(38,0)) IS NOT NULL")
    checked = cells.join(F.broadcast(types), [TBL, "name"]).withColumn("_bad", bad)
    rows = checked.where(F.col("_bad")).groupBy(TBL, "name").agg(
        F.min("text").alias("bad"),
        F.max(F.when(wide, F.length(F.regexp_replace("text", "^[-+]", "")))).alias("digits")).collect()
    checks: dict[int, dict[str, ValueCheck]] = {}
    for r in rows:
        checks.setdefault(r[TBL], {})[r["name"]] = ValueCheck(r["bad"], r["digits"])
    return checks

