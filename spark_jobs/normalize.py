"""Normalize one landing hour: ``raw.kafka_messages`` -> ``cdc.changelog`` + ``cdc.quarantine``.

Every raw message ends up in exactly one of three places, and the run stats prove it per topic:
raw messages = messages that produced change rows + control messages + quarantined messages.
Control messages (heartbeats, transaction markers, tombstones) are counted, not stored as changes.
Each write replaces the hour, so re-running an hour (or replaying its quarantine after a decoder
fix, which is the same thing) gives the same tables.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from spark_jobs.decode_spark import (
    KIND_CONTROL,
    KIND_REJECTED,
    KIND_ROW,
    ROW_SCHEMA,
    TopicFormat,
    cached_outcomes,
    change_rows,
    paired_updates,
)
from spark_jobs.formats.base import PAIR_KEY, FormatOptions
from spark_jobs.session import REUSED, empty_frame, local_frame
from spark_jobs.tables import CHANGELOG, QUARANTINE, RAW_MESSAGES, RUN_STATS, ensure_tables, replace_small

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

STAGE = "normalize"
# An hour with at most this many quarantined messages writes them as one file from one task.
SMALL_QUARANTINE = 10_000


class ReconciliationError(RuntimeError):
    """Raw message counts do not equal decoded + control + quarantined: something was lost."""


@dataclass(frozen=True)
class NormalizeSummary:
    hour: dt.datetime
    run_id: str
    raw_messages: int
    decoded_messages: int
    control_messages: int
    quarantined_messages: int
    change_rows: int
    # Wall-clock seconds of each step (decode, pairing + stats, then the three writes): where an
    # hour's time went, printed with the counts by the job and read by bench/normalize.
    step_seconds: dict[str, float] = field(default_factory=dict)


@contextmanager
def _timed(seconds: dict[str, float], step: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        seconds[step] = round(time.perf_counter() - start, 3)


def topic_formats(config: PipelineConfig) -> dict[str, TopicFormat]:
    """Per-topic decoding from a ``PipelineConfig`` (format id, time zone, key overrides, ...)."""
    formats = {}
    for topic in config.topics:
        formats[topic.name] = TopicFormat(topic.format, FormatOptions(
            source_timezone=topic.source_timezone,
            primary_key_overrides=dict(topic.primary_keys),
            string_columns=dict(topic.string_columns),
            schema_file=topic.schema_file,
            max_value_bytes=config.max_value_bytes,
            flattened=topic.flattened, source_table=topic.source_table,
            binary_encoding=topic.binary_encoding,
            update_images_swapped=topic.update_images_swapped,
            produced_timezone=topic.produced_timezone,
            unavailable_value_placeholder=topic.unavailable_value_placeholder,
        ))
    return formats


def hour_filter(hour: dt.datetime, column: str = "landed_hour") -> Column:
    return F.col(column) == F.lit(hour).cast("timestamp")


def changelog_rows(outcomes: DataFrame, hour: dt.datetime, run_id: str,
                   paired: DataFrame | None = None) -> DataFrame:
    return (change_rows(outcomes, paired)
            .withColumn("landed_hour", F.lit(hour).cast("timestamp"))
            .withColumn("run_id", F.lit(run_id)))


def quarantine_rows(outcomes: DataFrame, hour: dt.datetime, run_id: str) -> DataFrame:
    return outcomes.where(F.col("_kind") == KIND_REJECTED).select(
        F.col("msg_topic").alias("kafka_topic"),
        F.col("msg_partition").alias("kafka_partition"),
        F.col("msg_offset").alias("kafka_offset"),
        F.col("msg_timestamp").alias("kafka_timestamp"),
        F.col("msg_key").alias("key"),
        F.col("msg_value").alias("value"),
        "format_tried",
        "reason_code",
        F.col("reason_message").alias("message"),
        F.lit(hour).cast("timestamp").alias("landed_hour"),
        F.lit(run_id).alias("run_id"),
        F.current_timestamp().alias("quarantined_at"),
    )


# A run-stats row's breakdown: (topic, metric, source_format, op, table_name, reason_code, control_kind).
StatKey = tuple[str, str, str | None, str | None, str | None, str | None, str | None]


def outcome_counts(outcomes: DataFrame) -> list[Row]:
    """One aggregation of the decoded outcomes, collected: per topic, kind, format, op, table,
    control kind and rejection reason, and whether the rows are halves of two-message updates,
    the outcomes and the messages (their first outcomes)."""
    return outcomes.groupBy(
        "msg_topic", "_kind", "source_format", "op", "table_name", "control_kind", "format_tried",
        "reason_code", F.col(PAIR_KEY).isNotNull().alias("half"),
    ).agg(F.count(F.lit(1)).alias("outcomes"), F.count_if("_first").alias("messages")).collect()


def has_update_halves(counts: list[Row]) -> bool:
    """True when the hour has halves of two-message updates to pair (:func:`outcome_counts`)."""
    return any(row["_kind"] == KIND_ROW and row["half"] for row in counts)


def run_stats(raw: DataFrame, counts: list[Row], paired: DataFrame | None, hour: dt.datetime,
              run_id: str) -> list[dict[str, Any]]:
    """Long-format counters (see ``tables.RUN_STATS_DDL``) for the hour, per topic: the raw
    messages as landed, and what the decoded ones became, from the outcomes' :func:`outcome_counts`
    and their merged update pairs (``paired``, :func:`~spark_jobs.decode_spark.paired_updates`;
    None when the hour has no halves)."""
    counts_by: Counter[StatKey] = Counter()
    for row in raw.groupBy("topic").count().collect():
        counts_by[(row["topic"], "raw_messages", None, None, None, None, None)] += row["count"]
    for row in counts:
        topic, kind = row["msg_topic"], row["_kind"]
        if kind == KIND_ROW:
            counts_by[(topic, "decoded_messages", row["source_format"], None, None, None, None)] += \
                row["messages"]
            if not row["half"]:  # halves of two-message updates are counted once paired, below
                counts_by[(topic, "change_rows", row["source_format"], row["op"], row["table_name"],
                           None, None)] += row["outcomes"]
        elif kind == KIND_CONTROL:
            counts_by[(topic, "control_messages", None, None, None, None, row["control_kind"])] += \
                row["outcomes"]
        else:
            counts_by[(topic, "quarantined_messages", row["format_tried"], None, None, row["reason_code"],
                       None)] += row["outcomes"]
    pairs = [] if paired is None else \
        paired.groupBy("kafka_topic", "source_format", "op", "table_name").count().collect()
    for row in pairs:
        counts_by[(row["kafka_topic"], "change_rows", row["source_format"], row["op"], row["table_name"],
                   None, None)] += row["count"]
    names = ("topic", "metric", "source_format", "op", "table_name", "reason_code", "control_kind")
    return [{"stage": STAGE, "landed_hour": hour, "run_id": run_id, **dict(zip(names, key, strict=True)),
             "value": value} for key, value in sorted(counts_by.items(), key=lambda kv: str(kv[0]))
            if value]


def reconcile(stats: list[dict]) -> dict[str, dict[str, int]]:
    """Per-topic totals; raises :class:`ReconciliationError` when a topic's messages don't add up."""
    totals: dict[str, dict[str, int]] = {}
    for row in stats:
        per_topic = totals.setdefault(row["topic"], {})
        per_topic[row["metric"]] = per_topic.get(row["metric"], 0) + int(row["value"])
    problems = []
    for topic, t in sorted(totals.items()):
        accounted = t.get("decoded_messages", 0) + t.get("control_messages", 0) + \
            t.get("quarantined_messages", 0)
        if t.get("raw_messages", 0) != accounted:
            problems.append(f"topic {topic!r}: raw {t.get('raw_messages', 0)} != decoded "
                            f"{t.get('decoded_messages', 0)} + control {t.get('control_messages', 0)} "
                            f"+ quarantined {t.get('quarantined_messages', 0)}")
    if problems:
        raise ReconciliationError("messages not accounted for: " + "; ".join(problems))
    return totals


def normalize_hour(spark: SparkSession, formats: dict[str, TopicFormat], hour: dt.datetime,
                   run_id: str, branch: str | None = None) -> NormalizeSummary:
    """Decode the hour's raw messages and replace the hour in changelog, quarantine and stats.

    ``branch`` (Iceberg write-audit-publish) writes the changelog and quarantine to that branch
    instead of ``main``; stats always go to ``main`` (gates read them).
    """
    ensure_tables(spark)
    if branch is not None:
        from spark_jobs.publish import audit_branch, start_audit

        if branch != audit_branch(hour):
            raise ValueError(f"the audit branch of hour {hour:%Y-%m-%dT%H} is {audit_branch(hour)!r}, "
                             f"not {branch!r}")
        # A fresh branch from main: a re-run of the hour starts from what analysts see.
        start_audit(spark, (CHANGELOG, QUARANTINE), hour)
    raw = spark.table(RAW_MESSAGES).where(hour_filter(hour))
    seconds: dict[str, float] = {}
    # Decoded once (the cache is filled in the "decode" step), and the update pairs merged once:
    # stats, changelog and quarantine all read the cached outcomes and pairs, and the stats are
    # computed once (written from what was collected), so no decoder or pairing pass runs twice.
    with ExitStack() as cache:
        with _timed(seconds, "decode"):
            outcomes = cache.enter_context(cached_outcomes(raw, formats))
        with _timed(seconds, "pair_stats"):
            counts = outcome_counts(outcomes)
            # Pairing (a shuffle and a Python pass) only for an hour with halves to pair.
            paired = None
            if has_update_halves(counts):
                paired = paired_updates(outcomes).persist(REUSED)
                cache.callback(paired.unpersist)
            stats = run_stats(raw, counts, paired, hour, run_id)
            totals = reconcile(stats)
        if paired is None:
            paired = empty_frame(spark, ROW_SCHEMA)

        def total(metric: str) -> int:
            return sum(t.get(metric, 0) for t in totals.values())

        with _timed(seconds, "changelog_write"):
            _replace_hour(spark, changelog_rows(outcomes, hour, run_id, paired), CHANGELOG, hour, branch)
        with _timed(seconds, "quarantine_write"):
            quarantined = quarantine_rows(outcomes, hour, run_id)
            if total("quarantined_messages") <= SMALL_QUARANTINE:
                # Usually none or a few: one file, without the range shuffle's sampling job.
                replace_small(quarantined, table_ref(QUARANTINE, branch), hour_filter(hour))
            else:
                _replace_hour(spark, quarantined, QUARANTINE, hour, branch)
        with _timed(seconds, "stats_write"):
            _replace_stats(spark, local_frame(spark, stats, spark.table(RUN_STATS).schema), hour)

    return NormalizeSummary(hour, run_id, total("raw_messages"), total("decoded_messages"),
                            total("control_messages"), total("quarantined_messages"), total("change_rows"),
                            seconds)


def table_ref(table: str, branch: str | None) -> str:
    """``table`` or its Iceberg branch (``db.t.branch_audit``) for reads and writes."""
    return f"{table}.branch_{branch}" if branch else table


def _replace_hour(spark: SparkSession, df: DataFrame, table: str, hour: dt.datetime,
                  branch: str | None) -> None:
    df.writeTo(table_ref(table, branch)).overwrite(hour_filter(hour))


def _replace_stats(spark: SparkSession, stats: DataFrame, hour: dt.datetime) -> None:
    replace_small(stats, RUN_STATS, hour_filter(hour) & (F.col("stage") == F.lit(STAGE)))
