"""The DataFrames the quality gates validate, one per stage and batch (see ``expectations/*.json``).

Derived columns are computed here in Spark (in-range flags, minutes between two times, per-topic
counts) so the expectations stay simple column checks and every threshold is a parameter or a
column taken from the pipeline configuration, never a constant hidden in code.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from cdclake.formats import errors as format_errors
from cdclake.formats.errors import DECODER_ERROR
from spark_jobs.erased_messages import erased_coordinates
from spark_jobs.normalize import STAGE as NORMALIZE_STAGE
from spark_jobs.normalize import table_ref
from spark_jobs.session import concurrently, union_all
from spark_jobs.tables import CHANGELOG, OFFSET_LEDGER, QUARANTINE, RAW_MESSAGES, RUN_STATS

KEYED_OPS = ("UPDATE", "DELETE")
OCCURRENCE = "_cdc_occurrence"


def _at_hour(hour: dt.datetime, column: str = "landed_hour") -> Column:
    return F.col(column) == F.lit(hour).cast("timestamp")


def minutes_between(later: Column, earlier: Column) -> Column:
    """``later - earlier`` in minutes (double; null when either is null)."""
    return (F.unix_micros(later) - F.unix_micros(earlier)) / F.lit(60_000_000.0)


def raw_messages(spark: SparkSession, hour: dt.datetime) -> DataFrame:
    """The hour's landed records with ``offset_in_planned_range`` from the hour's ledger."""
    raw = spark.table(RAW_MESSAGES).where(_at_hour(hour)).select("topic", "partition", "offset")
    plan = (spark.table(OFFSET_LEDGER).where(_at_hour(hour))
            .select("topic", "partition", "planned_start", "planned_end"))
    joined = raw.join(plan, ["topic", "partition"], "left")
    in_range = (F.col("offset") >= F.col("planned_start")) & (F.col("offset") < F.col("planned_end"))
    return joined.withColumn("offset_in_planned_range", F.coalesce(in_range, F.lit(False)))


def raw_partitions(spark: SparkSession, hour: dt.datetime) -> DataFrame:
    """Per topic-partition: the ledger's landed count beside the records actually landed, those
    an erasure removed since (``erased_messages``, missing from raw on purpose) included."""
    landed = (spark.table(RAW_MESSAGES).where(_at_hour(hour)).groupBy("topic", "partition")
              .agg(F.count(F.lit(1)).alias("raw_records")))
    ledger = (spark.table(OFFSET_LEDGER).where(_at_hour(hour))
              .select("topic", "partition", "planned_start", "planned_end",
                      F.col("landed_count").alias("ledger_landed_count"), "status"))
    erased = (erased_coordinates(spark, hour).groupBy("topic", "partition")
              .agg(F.count(F.lit(1)).alias("erased_messages")))
    partitions = (ledger.join(landed, ["topic", "partition"], "full")
                  .join(erased, ["topic", "partition"], "left"))
    for name in ("raw_records", "erased_messages"):
        partitions = partitions.withColumn(name, F.coalesce(name, F.lit(0)).cast("bigint"))
    return (partitions.withColumn("landed_messages", F.col("raw_records") + F.col("erased_messages"))
            .drop("raw_records"))


def changelog_changes(spark: SparkSession, hour: dt.datetime, branch: str | None) -> DataFrame:
    """The hour's change rows with key and time-sanity columns."""
    changes = spark.table(table_ref(CHANGELOG, branch)).where(_at_hour(hour))
    hour_end = F.lit(hour + dt.timedelta(hours=1)).cast("timestamp")
    source_table = Window.partitionBy("database", "schema_name", "table_name")
    names_key = (F.coalesce(F.size("primary_key_columns"), F.lit(0)) > 0) | F.col("row_key").isNotNull()
    keyed_table = F.max(names_key.cast("int")).over(source_table) == 1
    key_values_present = F.coalesce(F.forall(
        F.coalesce("primary_key_columns", F.array().cast("array<string>")),
        lambda k: F.coalesce(F.col("before")[k], F.col("after")[k]).isNotNull()), F.lit(True))
    key_required = F.col("op").isin(*KEYED_OPS) & keyed_table
    # What compaction keys a change by: its row key (some vendors send it apart from the images,
    # e.g. OMS record_primary_value), else the key columns' values in its images.
    key_present = F.col("row_key").isNotNull() | (
        (F.coalesce(F.size("primary_key_columns"), F.lit(0)) > 0) & key_values_present)
    return (changes
            # A database-level DDL (e.g. DTS `CREATE TABLE` records name only the database)
            # has no table; every other change must name one.
            .withColumn("table_name_present_unless_ddl",
                        F.col("table_name").isNotNull() | (F.col("op") == F.lit("DDL")))
            .withColumn("event_time_present_unless_snapshot",
                        F.col("event_time").isNotNull() | (F.col("op") == F.lit("SNAPSHOT")))
            .withColumn("key_present_if_required", ~key_required | key_present)
            .withColumn("event_time_minutes_past_hour_end", minutes_between(F.col("event_time"), hour_end))
            .withColumn("event_time_minutes_after_kafka_timestamp",
                        minutes_between(F.col("event_time"), F.col("kafka_timestamp")))
            .withColumn("event_time_minutes_after_produced_time",
                        minutes_between(F.col("event_time"), F.col("produced_time"))))


def _per_topic(default: float, per_topic: Mapping[str, float]) -> Column:
    """A topic's threshold: its own, else the default."""
    value = F.lit(float(default))
    for topic, own in sorted(per_topic.items()):
        value = F.when(F.col("topic") == F.lit(topic), F.lit(float(own))).otherwise(value)
    return value


def changelog_topics(spark: SparkSession, hour: dt.datetime, branch: str | None,
                     quarantine_rate_max: Mapping[str, float], default_rate_max: float,
                     warning_rate_max: Mapping[str, float] | None = None,
                     default_warning_rate_max: float = 1.0) -> DataFrame:
    """Per topic: raw records, normalize's run stats, changelog and quarantine rows, quarantine
    rate, and the rate of change rows decoded despite contradicting metadata (drift warnings).
    ``change_rows`` counts the rows normalize decoded and those it carried over at erased
    messages (``carried_change_rows``: their raw message is gone, see ``spark_jobs.erased_messages``)."""
    raw = (spark.table(RAW_MESSAGES).where(_at_hour(hour)).groupBy("topic")
           .agg(F.count(F.lit(1)).alias("raw_messages")))
    drift = (F.col("metric") == F.lit("warnings")) & F.col("reason_code").isin(*format_errors.DRIFT_CODES)
    stats = (spark.table(RUN_STATS).where(_at_hour(hour) & (F.col("stage") == NORMALIZE_STAGE))
             .withColumn("metric", F.when(drift, F.lit("drift_warnings")).otherwise(F.col("metric")))
             .groupBy("topic").pivot("metric", ["decoded_messages", "control_messages",
                                                "quarantined_messages", "change_rows", "carried_change_rows",
                                                "drift_warnings"])
             .agg(F.sum("value")))
    changelog = (spark.table(table_ref(CHANGELOG, branch)).where(_at_hour(hour))
                 .groupBy(F.col("kafka_topic").alias("topic")).agg(F.count(F.lit(1)).alias("changelog_rows")))
    quarantine = (spark.table(table_ref(QUARANTINE, branch)).where(_at_hour(hour))
                  .groupBy(F.col("kafka_topic").alias("topic"))
                  .agg(F.count(F.lit(1)).alias("quarantine_rows"),
                       F.sum(F.when(F.col("reason_code") == F.lit(DECODER_ERROR), 1).otherwise(0))
                       .alias("decoder_errors")))
    counts = ("raw_messages", "decoded_messages", "control_messages", "quarantined_messages",
              "change_rows", "carried_change_rows", "changelog_rows", "quarantine_rows", "decoder_errors",
              "drift_warnings")
    topics = (raw.join(stats, "topic", "full").join(changelog, "topic", "full")
              .join(quarantine, "topic", "full"))
    for name in counts:
        topics = topics.withColumn(name, F.coalesce(F.col(name), F.lit(0)).cast("bigint"))
    return (topics
            .withColumn("change_rows", F.col("change_rows") + F.col("carried_change_rows"))
            .withColumn("accounted_messages",
                        F.col("decoded_messages") + F.col("control_messages") + F.col("quarantined_messages"))
            .withColumn("quarantine_rate", F.when(F.col("raw_messages") > 0,
                                                  F.col("quarantined_messages") / F.col("raw_messages"))
                        .otherwise(F.lit(0.0)))
            .withColumn("quarantine_rate_max", _per_topic(default_rate_max, quarantine_rate_max))
            .withColumn("warning_rate", F.when(F.col("change_rows") > 0,
                                               F.col("drift_warnings") / F.col("change_rows"))
                        .otherwise(F.lit(0.0)))
            .withColumn("warning_rate_max", _per_topic(default_warning_rate_max, warning_rate_max or {})))


CURRENT_COLUMNS = ("current_table", "_cdc_key", "current_row_id", "cdc_event_time_minutes_ahead_of_now",
                   "_cdc_kafka_topic", "_cdc_kafka_partition", "_cdc_kafka_offset")


def current_rows(spark: SparkSession, table: str, branch: str | None, now: dt.datetime) -> DataFrame:
    """A current-state (or tombstone) table with ``current_row_id`` and event-time freshness."""
    rows = spark.table(table_ref(table, branch))
    row_id = F.col("_cdc_key")
    if OCCURRENCE in rows.columns:  # keyless table: copies of one whole row share _cdc_key
        row_id = F.concat_ws("#", F.col("_cdc_key"), F.col(OCCURRENCE).cast("string"))
    return (rows.withColumn("current_table", F.lit(table))
            .withColumn("current_row_id", F.when(F.col("_cdc_key").isNotNull(), row_id))
            .withColumn("cdc_event_time_minutes_ahead_of_now",
                        minutes_between(F.col("_cdc_event_time"), F.lit(now).cast("timestamp")))
            .select(*CURRENT_COLUMNS))


def current_tables_rows(spark: SparkSession, tables: Sequence[tuple[str, str | None]],
                        now: dt.datetime, threads: int = 1) -> DataFrame | None:
    """The rows of every ``(table, branch)`` in one frame, so one gate pass checks them all.

    Read once and checkpointed, in ``threads`` groups at once: every query of a frame over
    hundreds of tables plans hundreds of table scans again, which costs more than reading them."""
    if not tables:
        return None
    groups = [list(tables[i::threads]) for i in range(min(threads, len(tables)))]

    def read(group: list[tuple[str, str | None]]) -> DataFrame:
        frames = [current_rows(spark, table, branch, now) for table, branch in group]
        return union_all(frames).localCheckpoint()

    return union_all(concurrently(spark, groups, read, threads))
