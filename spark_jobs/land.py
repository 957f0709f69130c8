"""Land one hour: read exactly the planned Kafka offset ranges into ``raw.kafka_messages``.

The plan (``cdclake.offsets.OffsetPlan``) is made on the Airflow side; here Spark's Kafka source
reads each partition's ``[start, end)`` with ``read_committed`` isolation (transaction markers and
aborted messages leave offset gaps and no rows), the records are mapped to the raw schema and the
hour's rows of the planned topics are replaced (a rerun never duplicates). ``ops.offset_ledger``
gets one row per topic-partition-hour; before anything is written the plan is checked against the
ledger and the low watermarks (``cdclake.offsets.check_continuity``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdclake.offsets import LedgerNeighbours, OffsetPlan, PartitionRange, check_continuity
from spark_jobs.session import local_frame
from spark_jobs.tables import OFFSET_LEDGER, RAW_MESSAGES, ensure_tables

log = logging.getLogger(__name__)

RAW_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers",
               "landed_hour", "run_id", "landed_at")

STATUS_LANDED = "landed"
STATUS_EMPTY = "empty"
STATUS_LANDED_WITH_GAP = "landed_with_gap"
LANDED_STATUSES = (STATUS_LANDED, STATUS_EMPTY, STATUS_LANDED_WITH_GAP)


@dataclass(frozen=True)
class PartitionLanding:
    topic: str
    partition: int
    planned_start: int
    planned_end: int
    landed_count: int
    first_offset: int | None
    last_offset: int | None
    status: str
    message: str | None


@dataclass(frozen=True)
class LandingSummary:
    hour: dt.datetime
    run_id: str
    messages: int
    partitions: tuple[PartitionLanding, ...]


def _hour_filter(hour: dt.datetime, topics: Sequence[str]) -> Column:
    return (F.col("landed_hour") == F.lit(hour)) & F.col("topic").isin(list(topics))


def read_planned_messages(spark: SparkSession, plan: OffsetPlan,
                          kafka_options: Mapping[str, str]) -> DataFrame:
    """The planned ranges as Spark Kafka-source rows (empty partitions are not read at all)."""
    ranges = [r for r in plan.ranges if not r.is_empty]
    if not ranges:
        return spark.createDataFrame([], _kafka_source_schema())
    assign: dict[str, list[int]] = {}
    starting: dict[str, dict[str, int]] = {}
    ending: dict[str, dict[str, int]] = {}
    for r in ranges:
        assign.setdefault(r.topic, []).append(r.partition)
        starting.setdefault(r.topic, {})[str(r.partition)] = r.start
        ending.setdefault(r.topic, {})[str(r.partition)] = r.end
    reader = spark.read.format("kafka")
    for key, value in kafka_options.items():
        reader = reader.option(key, value)
    return (reader
            .option("assign", json.dumps(assign))
            .option("startingOffsets", json.dumps(starting))
            .option("endingOffsets", json.dumps(ending))
            .option("includeHeaders", "true")
            .option("kafka.isolation.level", "read_committed")
            # Deleted offsets were ruled out by the plan check; any still missing now is an error.
            .option("failOnDataLoss", "true")
            .load())


def _kafka_source_schema() -> T.StructType:
    return T.StructType([
        T.StructField("key", T.BinaryType()),
        T.StructField("value", T.BinaryType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("timestamp", T.TimestampType()),
        T.StructField("timestampType", T.IntegerType()),
        T.StructField("headers", T.ArrayType(T.StructType([
            T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())]))),
    ])


def to_raw_messages(kafka_rows: DataFrame, hour: dt.datetime, run_id: str) -> DataFrame:
    """Kafka-source rows -> ``raw.kafka_messages`` rows (null values kept: Debezium tombstones)."""
    return kafka_rows.select(
        F.col("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("bigint").alias("offset"),
        F.col("timestamp"),
        F.col("timestampType").cast("int").alias("timestamp_type"),
        F.col("key"),
        F.col("value"),
        F.col("headers"),
        F.lit(hour).cast("timestamp").alias("landed_hour"),
        F.lit(run_id).alias("run_id"),
        F.current_timestamp().alias("landed_at"),
    )


def write_raw_messages(spark: SparkSession, raw: DataFrame, hour: dt.datetime, topics: Sequence[str]) -> None:
    """Replace the hour's rows of ``topics`` in ``raw.kafka_messages`` with ``raw``."""
    raw.select(*RAW_COLUMNS).writeTo(RAW_MESSAGES).overwrite(_hour_filter(hour, topics))


def landed_offsets(spark: SparkSession, hour: dt.datetime,
                   topics: Sequence[str]) -> dict[tuple[str, int], tuple]:
    """(topic, partition) -> (count, first offset, last offset) as the raw table holds them now."""
    rows = (spark.table(RAW_MESSAGES).where(_hour_filter(hour, topics))
            .groupBy("topic", "partition")
            .agg(F.count("*").alias("n"), F.min("offset").alias("first"), F.max("offset").alias("last"))
            .collect())
    return {(r["topic"], r["partition"]): (r["n"], r["first"], r["last"]) for r in rows}


def ledger_neighbours(spark: SparkSession, plan: OffsetPlan) -> dict[tuple[str, int], LedgerNeighbours]:
    """For each planned topic-partition: the ledger's previous, latest earlier and next landed hours."""
    hour = plan.hour
    rows = (spark.table(OFFSET_LEDGER)
            .where(F.col("topic").isin(list(plan.topics)) & F.col("status").isin(list(LANDED_STATUSES))
                   & (F.col("landed_hour") != F.lit(hour)))
            .select("topic", "partition", "landed_hour", "planned_start", "planned_end")
            .collect())
    found: dict[tuple[str, int], LedgerNeighbours] = {}
    by_partition: dict[tuple[str, int], list] = {}
    for row in rows:
        by_partition.setdefault((row["topic"], row["partition"]), []).append(row)
    for key, entries in by_partition.items():
        earlier = sorted((e for e in entries if e["landed_hour"] < hour), key=lambda e: e["landed_hour"])
        previous = [e for e in earlier if e["landed_hour"] == hour - dt.timedelta(hours=1)]
        following = [e for e in entries if e["landed_hour"] == hour + dt.timedelta(hours=1)]
        found[key] = LedgerNeighbours(
            previous_end=previous[0]["planned_end"] if previous else None,
            latest_end=earlier[-1]["planned_end"] if earlier else None,
            latest_hour=earlier[-1]["landed_hour"].strftime("%Y-%m-%dT%H:00:00Z") if earlier else None,
            next_start=following[0]["planned_start"] if following else None,
        )
    return found


def ledger_rows(plan: OffsetPlan, landed: Mapping[tuple[str, int], tuple], run_id: str,
                notes: Mapping[tuple[str, int], str], accept_gaps: bool) -> list[PartitionLanding]:
    """One ledger entry per planned topic-partition, reconciling the plan with what landed."""
    entries = []
    for r in plan.ranges:
        count, first, last = landed.get((r.topic, r.partition), (0, None, None))
        note = notes.get((r.topic, r.partition))
        _check_inside(r, count, first, last)
        status = STATUS_LANDED if count else STATUS_EMPTY
        if accept_gaps and note and "gone" in note:
            status = STATUS_LANDED_WITH_GAP
        entries.append(PartitionLanding(r.topic, r.partition, r.start, r.end, count, first, last,
                                        status, note))
    return entries


def _check_inside(r: PartitionRange, count: int, first: int | None, last: int | None) -> None:
    # Spark's Kafka source honours the offsets; this guards the contract the raw gate relies on.
    if not count:
        return
    lowest, highest = cast(int, first), cast(int, last)  # count > 0: the offsets' min and max
    if lowest < r.start or highest >= r.end or count > r.end - r.start:
        raise RuntimeError(f"{r.topic}/{r.partition}: landed offsets {first}..{last} ({count}) fall "
                           f"outside the planned range [{r.start}, {r.end})")


def write_ledger(spark: SparkSession, plan: OffsetPlan, entries: Sequence[PartitionLanding],
                 run_id: str) -> None:
    """Upsert the hour's ledger rows (one per topic-partition-hour) in one atomic MERGE.

    A MERGE rather than a filtered overwrite: the ledger is unpartitioned, and Iceberg can only
    overwrite by a filter that whole files match.
    """
    if not entries:
        return
    schema = spark.table(OFFSET_LEDGER).schema
    recorded_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    rows = [(e.topic, e.partition, plan.hour, e.planned_start, e.planned_end, e.landed_count,
             e.first_offset, e.last_offset, run_id, e.status, e.message, recorded_at) for e in entries]
    local_frame(spark, rows, schema).createOrReplaceTempView(_LEDGER_UPDATE_VIEW)
    try:
        spark.sql(f"""
            MERGE INTO {OFFSET_LEDGER} t USING {_LEDGER_UPDATE_VIEW} s
            ON t.topic = s.topic AND t.`partition` = s.`partition` AND t.landed_hour = s.landed_hour
            WHEN MATCHED THEN UPDATE SET *
            WHEN NOT MATCHED THEN INSERT *""")
    finally:
        spark.catalog.dropTempView(_LEDGER_UPDATE_VIEW)


_LEDGER_UPDATE_VIEW = "cdclake_offset_ledger_update"


def land_hour(spark: SparkSession, plan: OffsetPlan, kafka_options: Mapping[str, str], run_id: str, *,
              accept_gaps: bool = False) -> LandingSummary:
    """Check, read, write: the whole landing of one planned hour."""
    ensure_tables(spark)
    notes = check_continuity(plan, ledger_neighbours(spark, plan), accept_gaps=accept_gaps)
    for (topic, partition), note in sorted(notes.items()):
        log.warning("%s/%s hour %s: %s", topic, partition, plan.start, note)
    raw = to_raw_messages(read_planned_messages(spark, plan, kafka_options), plan.hour, run_id)
    write_raw_messages(spark, raw, plan.hour, plan.topics)
    entries = ledger_rows(plan, landed_offsets(spark, plan.hour, plan.topics), run_id, notes, accept_gaps)
    write_ledger(spark, plan, entries, run_id)
    return LandingSummary(plan.hour, run_id, sum(e.landed_count for e in entries), tuple(entries))


def ledger_discontinuities(spark: SparkSession, topics: Sequence[str] | None = None) -> list[dict]:
    """Adjacent landed hours of a topic-partition whose ranges do not meet (gaps and overlaps)."""
    from pyspark.sql.window import Window

    ledger = spark.table(OFFSET_LEDGER).where(F.col("status").isin(list(LANDED_STATUSES)))
    if topics is not None:
        ledger = ledger.where(F.col("topic").isin(list(topics)))
    order = Window.partitionBy("topic", "partition").orderBy("landed_hour")
    paired = (ledger
              .withColumn("previous_hour", F.lag("landed_hour").over(order))
              .withColumn("previous_end", F.lag("planned_end").over(order))
              .where((F.col("previous_hour") == F.col("landed_hour") - F.expr("INTERVAL 1 HOUR"))
                     & (F.col("previous_end") != F.col("planned_start")))
              .select("topic", "partition", "landed_hour", "previous_end", "planned_start",
                      F.when(F.col("previous_end") < F.col("planned_start"), "gap").otherwise("overlap")
                      .alias("kind")))
    return [row.asDict() for row in paired.orderBy("topic", "partition", "landed_hour").collect()]
