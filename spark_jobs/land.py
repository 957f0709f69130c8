"""Land one hour: read its Kafka offset ranges into ``raw.kafka_messages``.

The plan (``cdclake.offsets.OffsetPlan``) is made on the Airflow side by time; here its ranges
are anchored to ``ops.offset_ledger`` (each starts where the previous landed hour ended:
``cdclake.offsets.anchor_to_ledger``) and checked against the ledger and the low watermarks
(``check_continuity``: holes and retention gaps fail) and against each topic's start
(``cdclake.topic_starts``: no hole before its first landed hour either). Spark's Kafka source reads each
``[start, end)`` with ``read_committed`` isolation (transaction markers and aborted messages leave
offset gaps and no rows), and the hour's rows of the planned topics are replaced. The ledger gets
one row per topic-partition-hour, with how late its messages were.

Messages an erasure removed from raw (``ops.erased_messages``, :mod:`spark_jobs.erased_messages`)
are never written back: they are read from Kafka with the rest and left out of the raw write. The
ledger counts them in ``landed_count`` (they were landed once, and are missing on purpose) and
names them in ``erased_messages``.

A topic already landed for the hour keeps its raw copy on a re-run: Kafka may no longer hold it
(retention, compaction). ``reland`` reads the recorded ranges again, and refuses a copy that would
hold fewer messages than the ledger records. :func:`skip_hour` records an hour as skipped: its
range is empty and its offsets land in the next hour.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, cast

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdclake.cli_args import hour_text
from cdclake.exceptions import LandingError
from cdclake.hourly import plan_hour
from cdclake.kafka_settings import kafka_client_config, spark_kafka_options
from cdclake.offsets import (
    LedgerNeighbours,
    OffsetPlan,
    PartitionRange,
    anchor_to_ledger,
    check_continuity,
)
from cdclake.topic_starts import StartRules, check_start
from spark_jobs import erased_messages, retention, topic_starts
from spark_jobs.session import local_frame
from spark_jobs.tables import OFFSET_LEDGER, RAW_MESSAGES, ensure_tables, in_catalog

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

log = logging.getLogger(__name__)

RAW_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers",
               "landed_hour", "run_id", "landed_at")

STATUS_LANDED = "landed"
STATUS_EMPTY = "empty"
STATUS_LANDED_WITH_GAP = "landed_with_gap"
STATUS_SKIPPED = "skipped"
# Statuses that close an hour: the next hour continues where it ended.
LANDED_STATUSES = (STATUS_LANDED, STATUS_EMPTY, STATUS_LANDED_WITH_GAP, STATUS_SKIPPED)


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
    # Messages whose timestamp is before the hour (stragglers), and the most late one's delay.
    late_messages: int = 0
    max_lateness_ms: int | None = None
    # Messages of the range that an erasure removed: counted in landed_count, not written to raw.
    erased_messages: int = 0


@dataclass(frozen=True)
class LandingSummary:
    hour: dt.datetime
    run_id: str
    messages: int
    partitions: tuple[PartitionLanding, ...]


def _hour_filter(hour: dt.datetime, topics: Sequence[str]) -> Column:
    return (F.col("landed_hour") == F.lit(hour)) & F.col("topic").isin(list(topics))


def read_planned_messages(spark: SparkSession, plan: OffsetPlan, kafka_options: Mapping[str, str],
                          fail_on_data_loss: bool = True) -> DataFrame:
    """The planned ranges as Spark Kafka-source rows (empty partitions are not read at all).
    Without ``fail_on_data_loss`` offsets Kafka no longer holds are skipped (a re-land counts
    what it read against the ledger instead)."""
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
            .option("failOnDataLoss", str(fail_on_data_loss).lower())
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
    """(topic, partition) -> (count, first offset, last offset, late messages, max lateness ms)
    as the raw table holds them now."""
    start = F.lit(hour).cast("timestamp")
    late = F.col("timestamp") < start
    rows = (spark.table(RAW_MESSAGES).where(_hour_filter(hour, topics))
            .groupBy("topic", "partition")
            .agg(F.count("*").alias("n"), F.min("offset").alias("first"), F.max("offset").alias("last"),
                 F.sum(F.when(late, 1).otherwise(0)).alias("late"),
                 F.max(F.when(late, F.unix_millis(start) - F.unix_millis(F.col("timestamp"))))
                 .alias("lateness"))
            .collect())
    return {(r["topic"], r["partition"]): (r["n"], r["first"], r["last"], r["late"], r["lateness"])
            for r in rows}


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
                notes: Mapping[tuple[str, int], str], accept_gaps: bool,
                erased: Mapping[tuple[str, int], int] | None = None) -> list[PartitionLanding]:
    """One ledger entry per planned topic-partition, reconciling the plan with what landed;
    ``erased`` messages (per topic-partition) count as landed, though raw no longer holds them."""
    entries = []
    for r in plan.ranges:
        written, first, last, late, lateness = landed.get((r.topic, r.partition), (0, None, None, 0, None))
        gone = (erased or {}).get((r.topic, r.partition), 0)
        count = written + gone
        note = notes.get((r.topic, r.partition))
        _check_inside(r, count, first, last)
        status = STATUS_LANDED if count else STATUS_EMPTY
        if accept_gaps and note and "gone" in note:
            status = STATUS_LANDED_WITH_GAP
        entries.append(PartitionLanding(r.topic, r.partition, r.start, r.end, count, first, last,
                                        status, note, int(late or 0), lateness, gone))
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
    schema = _ledger_schema(spark)
    recorded_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    rows = [(e.topic, e.partition, plan.hour, e.planned_start, e.planned_end, e.landed_count,
             e.first_offset, e.last_offset, run_id, e.status, e.message, recorded_at, e.late_messages,
             e.max_lateness_ms, e.erased_messages) for e in entries]
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
# Columns added to the ledger after it was first made, in order: a ledger made before gets them.
_LATER_LEDGER_COLUMNS = (("late_messages", "bigint"), ("max_lateness_ms", "bigint"),
                         ("erased_messages", "bigint"))


def _ledger_schema(spark: SparkSession) -> T.StructType:
    schema = spark.table(OFFSET_LEDGER).schema
    missing = [f"{name} {kind}" for name, kind in _LATER_LEDGER_COLUMNS if name not in schema.fieldNames()]
    if missing:
        spark.sql(f"ALTER TABLE {in_catalog(spark, OFFSET_LEDGER)} ADD COLUMNS ({', '.join(missing)})")
        schema = spark.table(OFFSET_LEDGER).schema
    return schema


def _ledger_topics(spark: SparkSession, hour: dt.datetime) -> set[str]:
    return {r["topic"] for r in spark.table(OFFSET_LEDGER).where(F.col("landed_hour") == F.lit(hour))
            .select("topic").distinct().collect()}


def recorded_hour(spark: SparkSession, hour: dt.datetime,
                  topics: Sequence[str]) -> dict[str, list[PartitionLanding]]:
    """The ledger's entries of ``hour`` for ``topics`` (landed, empty, with a gap or skipped), by topic."""
    rows = (spark.table(OFFSET_LEDGER)
            .where((F.col("landed_hour") == F.lit(hour)) & F.col("topic").isin(list(topics))
                   & F.col("status").isin(list(LANDED_STATUSES)))
            .collect())
    found: dict[str, list[PartitionLanding]] = {}
    for r in sorted(rows, key=lambda r: (r["topic"], r["partition"])):
        row = r.asDict()
        found.setdefault(r["topic"], []).append(PartitionLanding(
            r["topic"], r["partition"], r["planned_start"], r["planned_end"], r["landed_count"] or 0,
            r["first_offset"], r["last_offset"], r["status"], r["message"],
            int(row.get("late_messages") or 0), row.get("max_lateness_ms"),
            int(row.get("erased_messages") or 0)))
    return found


def _relanded_ranges(plan: OffsetPlan, recorded: Mapping[str, list[PartitionLanding]]) -> OffsetPlan:
    """The recorded ranges of the re-landed topics (watermarks as planned now), refused when
    Kafka can no longer hold as many messages as the ledger records."""
    planned = {(r.topic, r.partition): r for r in plan.ranges}
    ranges, short = [], []
    for topic in plan.topics:
        for e in recorded.get(topic, []):
            now = planned.get((topic, e.partition))
            low, high = (now.low_watermark, now.high_watermark) if now else (e.planned_start, e.planned_end)
            most = max(0, e.planned_end - max(e.planned_start, low))
            if most < e.landed_count:
                short.append(f"{topic}/{e.partition}: Kafka now holds at most {most} message(s) of the "
                             f"recorded range [{e.planned_start}, {e.planned_end}) (log start offset "
                             f"{low}), the ledger records {e.landed_count}")
            ranges.append(PartitionRange(topic, e.partition, e.planned_start, e.planned_end, low, high))
    if short:
        raise LandingError(f"hour {plan.start}: re-landing would lose messages, the raw copy is kept: "
                           + "; ".join(short))
    return replace(plan, ranges=tuple(ranges))


def _check_relanded_counts(kafka_rows: DataFrame, plan: OffsetPlan,
                           recorded: Mapping[str, list[PartitionLanding]]) -> None:
    counts = {(r["topic"], r["partition"]): r["count"]
              for r in kafka_rows.groupBy("topic", "partition").count().collect()}
    short = [f"{e.topic}/{e.partition}: Kafka now holds {counts.get((e.topic, e.partition), 0)} "
             f"message(s) of the recorded range [{e.planned_start}, {e.planned_end}), the ledger "
             f"records {e.landed_count}"
             for topic in plan.topics for e in recorded.get(topic, [])
             if counts.get((e.topic, e.partition), 0) < e.landed_count]
    if short:
        raise LandingError(f"hour {plan.start}: re-landing would lose messages, the raw copy is kept: "
                           + "; ".join(short))


def land_hour(spark: SparkSession, plan: OffsetPlan, kafka_options: Mapping[str, str], run_id: str, *,
              accept_gaps: bool = False, reland: bool = False,
              starts: StartRules | None = None) -> LandingSummary:
    """Check, read, write: the whole landing of one planned hour (see the module docstring).
    With ``starts``, an hour after a topic's start lands only once an hour since then has
    (``cdclake.topic_starts``)."""
    ensure_tables(spark)
    retention.refuse_expired_changelog(spark, plan.hour)
    recorded = recorded_hour(spark, plan.hour, plan.topics)
    if accept_gaps and recorded:
        held = sum(e.landed_count for entries in recorded.values() for e in entries)
        raise LandingError(
            f"--accept-retention-gap is for hours never landed: hour {plan.start} of "
            f"{', '.join(sorted(recorded))} is landed ({held} messages); a re-run keeps that copy")
    expired = bool(recorded) and retention.RAW in retention.expired_layers(spark, plan.hour)
    if expired and not reland:
        raise retention.expired_raw_error(plan.hour)
    kept = {} if reland else recorded
    fresh = tuple(t for t in plan.topics if t not in kept)
    kept_entries = [e for topic in sorted(kept) for e in kept[topic]]
    if kept:
        log.info("hour %s: %s already landed; keeping the raw copy (reland to read Kafka again)",
                 plan.start, ", ".join(sorted(kept)))
    if not fresh:
        return LandingSummary(plan.hour, run_id, sum(e.landed_count for e in kept_entries),
                              tuple(kept_entries))
    work = replace(plan, topics=fresh, ranges=tuple(r for r in plan.ranges if r.topic in fresh))
    relanded = {t: recorded[t] for t in fresh if t in recorded}
    neighbours = ledger_neighbours(spark, work)
    _check_starts(spark, starts, tuple(t for t in fresh if t not in relanded), plan.hour, run_id, neighbours)
    if relanded:
        again = _relanded_ranges(replace(work, topics=tuple(relanded)), relanded)
        new = anchor_to_ledger(replace(work, topics=tuple(t for t in fresh if t not in relanded),
                                       ranges=tuple(r for r in work.ranges if r.topic not in relanded)),
                               neighbours)
        work = replace(work, ranges=again.ranges + new.ranges)
    else:
        work = anchor_to_ledger(work, neighbours)
    notes = check_continuity(work, neighbours, accept_gaps=accept_gaps)
    for (topic, partition), note in sorted(notes.items()):
        log.warning("%s/%s hour %s: %s", topic, partition, plan.start, note)
    if accept_gaps:  # the accepted loss: read from the first offset Kafka still holds
        work = replace(work, ranges=tuple(
            replace(r, start=r.low_watermark, end=max(r.end, r.low_watermark)) if r.start < r.low_watermark
            else r for r in work.ranges))
    kafka_rows = read_planned_messages(spark, work, kafka_options, fail_on_data_loss=not relanded)
    if relanded:
        _check_relanded_counts(kafka_rows, work, relanded)
    erased = _write_unerased(spark, work, to_raw_messages(kafka_rows, plan.hour, run_id))
    entries = ledger_rows(work, landed_offsets(spark, plan.hour, work.topics), run_id, notes, accept_gaps,
                          erased)
    write_ledger(spark, work, entries, run_id)
    if expired and not _ledger_topics(spark, plan.hour) - set(relanded):
        retention.restored(spark, retention.RAW, plan.hour)  # every topic's raw copy is back
    every = [*kept_entries, *entries]
    return LandingSummary(plan.hour, run_id, sum(e.landed_count - e.erased_messages for e in every),
                          tuple(every))


def erased_in_ranges(spark: SparkSession, plan: OffsetPlan) -> list[erased_messages.Coordinate]:
    """The erased messages of ``plan``'s hour and topics inside its ranges (usually none)."""
    ranges = {(r.topic, r.partition): r for r in plan.ranges}
    return [(topic, partition, offset)
            for topic, partition, offset in erased_messages.collect_erased(spark, plan.hour, plan.topics)
            if (r := ranges.get((topic, partition))) is not None and r.start <= offset < r.end]


def _write_unerased(spark: SparkSession, plan: OffsetPlan, raw: DataFrame) -> dict[tuple[str, int], int]:
    """Write the hour's ``raw`` rows but the erased messages' (one look at the tiny erased table;
    a join only when the ranges hold some); returns how many were left out per topic-partition."""
    erased = erased_in_ranges(spark, plan)
    if erased:
        log.info("hour %s: %d erased message(s) are not landed again", plan.start, len(erased))
        raw = erased_messages.without_erased(raw, erased_messages.coordinates_frame(spark, erased))
    write_raw_messages(spark, raw, plan.hour, plan.topics)
    return dict(Counter((topic, partition) for topic, partition, _offset in erased))


def _check_starts(spark: SparkSession, starts: StartRules | None, topics: Sequence[str], hour: dt.datetime,
                  run_id: str, neighbours: Mapping[tuple[str, int], LedgerNeighbours]) -> None:
    if starts is None or not topics:
        return
    begins = topic_starts.resolve(spark, starts, topics, run_id)
    latest: dict[str, dt.datetime | None] = {}
    for (topic, _partition), around in neighbours.items():
        if around.latest_hour is not None:
            landed = dt.datetime.strptime(around.latest_hour, "%Y-%m-%dT%H:00:00Z")
            latest[topic] = max(landed, latest.get(topic) or landed)
    check_start(hour, begins, latest)


def skip_hour(spark: SparkSession, plan: OffsetPlan, run_id: str, reason: str,
              starts: StartRules | None = None) -> LandingSummary:
    """Record ``plan``'s hour as skipped: an empty range where the previous hour ended, so the
    hour's offsets land in the next hour. Refused for an hour already landed."""
    if not reason.strip():
        raise LandingError("skipping an hour needs a reason; it is recorded in ops.offset_ledger")
    ensure_tables(spark)
    retention.refuse_expired_changelog(spark, plan.hour)
    recorded = recorded_hour(spark, plan.hour, plan.topics)
    if recorded:
        raise LandingError(f"hour {plan.start} of {', '.join(sorted(recorded))} is landed already; "
                           "only an hour never landed can be skipped")
    neighbours = ledger_neighbours(spark, plan)
    _check_starts(spark, starts, plan.topics, plan.hour, run_id, neighbours)
    anchored = anchor_to_ledger(plan, neighbours)
    check_continuity(anchored, neighbours)  # no hole before it
    entries = [PartitionLanding(r.topic, r.partition, r.start, r.start, 0, None, None, STATUS_SKIPPED,
                                reason) for r in anchored.ranges]
    write_ledger(spark, anchored, entries, run_id)
    return LandingSummary(plan.hour, run_id, 0, tuple(entries))


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


def run(spark: SparkSession, config: PipelineConfig, hour: dt.datetime, run_id: str,
        plan: OffsetPlan | None = None, *, topics: tuple[str, ...] | None = None,
        accept_gaps: bool = False, reland: bool = False, skip: str | None = None) -> LandingSummary:
    """Land ``hour`` (or, with ``skip``, record it as skipped for that reason): with ``plan`` (an
    ``OffsetPlan``) as given, else planned here."""
    plan = plan or plan_hour(config, hour, topics)
    if plan.hour != hour:
        raise LandingError(f"the offset plan is for hour {plan.start}, not {hour_text(hour)}; "
                           "pass the plan made for this run's data interval")
    starts = StartRules.from_config(config)
    if skip is not None:
        return skip_hour(spark, plan, run_id, skip, starts)
    return land_hour(spark, plan, spark_kafka_options(kafka_client_config(config)), run_id,
                     accept_gaps=accept_gaps, reland=reland, starts=starts)


def summary_dict(summary: LandingSummary) -> dict:
    return {"hour": hour_text(summary.hour), "run_id": summary.run_id, "messages": summary.messages,
            "partitions": [asdict(p) for p in summary.partitions]}
