"""Normalize one landing hour: ``raw.kafka_messages`` -> ``cdc.changelog`` + ``cdc.quarantine``.

Every raw message ends up in exactly one of three places, and the run stats prove it per topic:
raw messages = messages that produced change rows + control messages + quarantined messages.
Control messages (heartbeats, transaction markers, tombstones) are counted, not stored as changes.
Each run replaces the hour (the changelog's rows of declined messages and update pairs are appended
after its replacing write), so re-running an hour (or replaying its quarantine after a decoder fix,
which is the same thing) gives the same tables.

Messages an erasure removed from raw (``ops.erased_messages``, :mod:`spark_jobs.erased_messages`)
are not decoded even if raw still holds one; the other keys' change rows they carried, already in
the changelog, are kept through the hour's rewrite as they are (metrics ``erased_messages`` and
``carried_change_rows``). An hour without erased messages pays one look at the tiny erased table.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from cdclake.formats import errors as format_errors
from cdclake.formats.base import PAIR_KEY, FormatOptions
from spark_jobs import erased_messages, jvm_decode, retention
from spark_jobs.decode_spark import (
    KIND_CONTROL,
    KIND_REJECTED,
    KIND_ROW,
    OUTCOME_SCHEMA,
    ROW_SCHEMA,
    TopicFormat,
    change_rows,
    declined_outcomes,
    decode_plan,
    paired_updates,
)
from spark_jobs.session import REUSED, empty_frame, local_frame
from spark_jobs.tables import CHANGELOG, QUARANTINE, RAW_MESSAGES, RUN_STATS, ensure_tables, replace_small

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

STAGE = "normalize"
# An hour with at most this many quarantined messages writes them as one file from one task.
SMALL_QUARANTINE = 10_000
# The raw hour is read in splits of about this many (compressed) bytes. Decoding is bound by the
# CPU and the raw files are small (one per topic and landing task), so Iceberg's default 128 MB
# splits make one or a few uneven tasks; bench/normalize compares split sizes.
READ_SPLIT_BYTES = 8 * 1024 * 1024


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
    # Wall-clock seconds of each step (the Python decoders' cache, the changelog write with the fast
    # path's decoding, the declined messages and update pairs, the quarantine and stats writes):
    # where an hour's time went, printed with the counts by the job and read by bench/normalize.
    step_seconds: dict[str, float] = field(default_factory=dict)
    # Messages of the hour an erasure removed from raw, and the other keys' change rows kept there.
    erased_messages: int = 0
    carried_change_rows: int = 0


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


# One group of decoded outcomes and its counts (:func:`outcome_counts`, :func:`observed_counts`):
# msg_topic, _kind, source_format, op, table_name, control_kind, format_tried, reason_code, half
# (halves of two-message updates), outcomes, messages (their first outcomes) and warned (outcomes
# with warnings).
OutcomeCount = Mapping[str, Any]


def outcome_counts(outcomes: DataFrame) -> list[OutcomeCount]:
    """One aggregation of the decoded outcomes, collected: per topic, kind, format, op, table,
    control kind and rejection reason, and whether the rows are halves of two-message updates,
    the outcomes, the messages (their first outcomes) and the outcomes with warnings."""
    return [row.asDict() for row in outcomes.groupBy(
        "msg_topic", "_kind", "source_format", "op", "table_name", "control_kind", "format_tried",
        "reason_code", F.col(PAIR_KEY).isNotNull().alias("half"),
    ).agg(F.count(F.lit(1)).alias("outcomes"), F.count_if("_first").alias("messages"),
          F.count_if(F.size("warnings") > 0).alias("warned")).collect()]


def observed_key() -> Column:
    """What :func:`observed_counts` groups the fast path's outcome records by (no controls or
    rejections there: the fast path only decodes or declines), as one text:
    ``topic|kind|op|flags|table``. Kafka topic names, kinds and canonical ops hold no ``|``; the
    table name, which may, comes last; the four flags (0/1) are: a half of a two-message update,
    the message's first record, op null, table null. (A JSON array of the same fields cost twice
    as much in the write.)"""
    def flag(condition: Column) -> Column:
        return F.when(condition, F.lit("1")).otherwise(F.lit("0"))

    op, table = F.col("op"), F.col("table_name")
    return F.concat(F.col("msg_topic"), F.lit("|"), F.col("_kind"), F.lit("|"), F.coalesce(op, F.lit("")),
                    F.lit("|"), flag(F.col(PAIR_KEY).isNotNull()), flag(F.col("_first")), flag(op.isNull()),
                    flag(table.isNull()), F.lit("|"), F.coalesce(table, F.lit("")))


def observed_counts(observed: str, source_formats: Mapping[str, str]) -> list[OutcomeCount]:
    """The :func:`outcome_counts` groups of the fast path's outcome records, from the counts by
    :func:`observed_key` that the changelog write observed (``cdclake_key_counts``, a JSON object);
    ``source_formats`` is each fast topic's format (a declined message has none)."""
    outcomes: Counter[tuple[Any, ...]] = Counter()
    messages: Counter[tuple[Any, ...]] = Counter()
    for key, count in json.loads(observed).items():
        topic, kind, op, flags, table_name = key.split("|", 4)
        half, first, no_op, no_table = (flag == "1" for flag in flags)
        source_format = None if kind in jvm_decode.DECLINED_KINDS else source_formats[topic]
        group = (topic, kind, source_format, None if no_op else op, None if no_table else table_name, half)
        outcomes[group] += count
        messages[group] += count if first else 0
    names = ("msg_topic", "_kind", "source_format", "op", "table_name", "half")
    return [{**dict(zip(names, group, strict=True)), "control_kind": None, "format_tried": None,
             "reason_code": None, "outcomes": count, "messages": messages[group], "warned": 0}
            for group, count in sorted(outcomes.items(), key=lambda kv: str(kv[0]))]


def has_update_halves(counts: list[OutcomeCount]) -> bool:
    """True when the hour has halves of two-message updates to pair (:func:`outcome_counts`)."""
    return any(row["_kind"] == KIND_ROW and row["half"] for row in counts)


def warning_counts(outcomes: DataFrame) -> Counter[tuple[str, str]]:
    """Decoded rows' warnings per (topic, code): a warning's code is its ``CODE: `` prefix
    (``formats.errors.warning``), else ``OTHER``. Only the Python decoders warn: the fast path
    leaves every message that would warn to them."""
    text = F.col("warning")
    code = F.regexp_extract(text, r"^([A-Z][A-Z0-9_]*): ", 1)
    rows = (outcomes.where((F.col("_kind") == KIND_ROW) & (F.size("warnings") > 0))
            .select("msg_topic", F.explode("warnings").alias("warning"))
            .groupBy("msg_topic", F.when(code == "", F.lit(format_errors.OTHER_WARNING)).otherwise(code)
                     .alias("code"))
            .count().collect())
    return Counter({(row["msg_topic"], row["code"]): row["count"] for row in rows})


def run_stats(raw_counts: Mapping[str, int], counts: list[OutcomeCount], paired: DataFrame | None,
              hour: dt.datetime, run_id: str,
              warnings: Mapping[tuple[str, str], int] | None = None) -> list[dict[str, Any]]:
    """Long-format counters (see ``tables.RUN_STATS_DDL``) for the hour, per topic: the raw
    messages as landed (``raw_counts``), and what the decoded ones became, from the outcomes'
    :func:`outcome_counts` and their merged update pairs (``paired``,
    :func:`~spark_jobs.decode_spark.paired_updates`; None when the hour has no halves), and the
    decoders' warnings (:func:`warning_counts`: metric ``warnings``, the code in ``reason_code``)."""
    counts_by: Counter[StatKey] = Counter()
    for (topic, code), count in (warnings or {}).items():
        counts_by[(topic, "warnings", None, None, None, code, None)] += count
    for topic, count in raw_counts.items():
        counts_by[(topic, "raw_messages", None, None, None, None, None)] += count
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
    for pair in pairs:
        counts_by[(pair["kafka_topic"], "change_rows", pair["source_format"], pair["op"], pair["table_name"],
                   None, None)] += pair["count"]
    names = ("topic", "metric", "source_format", "op", "table_name", "reason_code", "control_kind")
    return [{"stage": STAGE, "landed_hour": hour, "run_id": run_id, **dict(zip(names, key, strict=True)),
             "value": value} for key, value in sorted(counts_by.items(), key=lambda kv: str(kv[0]))
            if value]


# ops.run_stats metrics of the JVM fast path, per topic, by outcome kind: the messages it decoded,
# declined by design (a shape it leaves to Python) and declined on an exception (a bug).
FAST_PATH_METRICS = {KIND_ROW: "fast_decoded_messages", jvm_decode.KIND_DECLINED: "fast_declined_messages",
                     jvm_decode.KIND_DECLINED_ERROR: "fast_failed_messages"}


def fast_path_stats(fast_counts: list[OutcomeCount], hour: dt.datetime, run_id: str) -> list[dict[str, Any]]:
    """Run-stats rows of the fast path (:data:`FAST_PATH_METRICS`) from :func:`observed_counts`.
    A declined message is one record; a decoded one counts once, by its first row."""
    totals: Counter[tuple[str, str]] = Counter()
    for count in fast_counts:
        metric = FAST_PATH_METRICS[count["_kind"]]
        totals[(count["msg_topic"], metric)] += count["messages"] if count["_kind"] == KIND_ROW \
            else count["outcomes"]
    return [topic_stat(hour, run_id, topic, metric, value)
            for (topic, metric), value in sorted(totals.items()) if value]


def topic_stat(hour: dt.datetime, run_id: str, topic: str, metric: str, value: int) -> dict[str, Any]:
    """One run-stats row of a topic's whole-hour counter (no breakdown)."""
    return {"stage": STAGE, "landed_hour": hour, "run_id": run_id, "topic": topic, "metric": metric,
            "source_format": None, "op": None, "table_name": None, "reason_code": None,
            "control_kind": None, "value": value}


def _log_fast_failures(tried: DataFrame, shown: int = 20) -> None:
    """Log the Kafka coordinates of the messages the fast path declined on an exception (the
    Spark server's log has the exceptions)."""
    failed = (tried.where(jvm_decode.failed()).select("topic", "partition", "offset")
              .orderBy("topic", "partition", "offset").limit(shown).collect())
    log.warning("the JVM fast path failed on message(s) %s%s; the Python decoders decided them, and the "
                "Spark server's log names the exception (a bug to report)",
                ", ".join(f"{r['topic']}/{r['partition']}@{r['offset']}" for r in failed),
                f" (the first {shown})" if len(failed) == shown else "")


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


@dataclass(frozen=True)
class _Erased:
    """An hour's erased messages: what normalize leaves out of raw and keeps in the changelog."""
    coordinates: list[erased_messages.Coordinate]
    carried: DataFrame | None  # the changelog's rows at those messages (checkpointed), else None
    carried_counts: dict[str, int]

    def without_erased(self, spark: SparkSession, raw: DataFrame) -> DataFrame:
        if not self.coordinates:
            return raw
        return erased_messages.without_erased(raw, erased_messages.coordinates_frame(spark, self.coordinates))

    def with_carried(self, rows: DataFrame) -> DataFrame:
        return rows if self.carried is None else rows.unionByName(self.carried.select(*rows.columns))

    def stats(self, hour: dt.datetime, run_id: str) -> list[dict[str, Any]]:
        counts = [("erased_messages", erased_messages.counts_by_topic(self.coordinates)),
                  ("carried_change_rows", self.carried_counts)]
        return [topic_stat(hour, run_id, topic, metric, value)
                for metric, by_topic in counts for topic, value in sorted(by_topic.items()) if value]


def _erased(spark: SparkSession, hour: dt.datetime) -> _Erased:
    """The hour's erased messages and the surviving change rows at them, read from ``main``
    before the hour is rewritten (checkpointed: the rewrite replaces what they are read from)."""
    coordinates = erased_messages.collect_erased(spark, hour)
    if not coordinates:
        return _Erased([], None, {})
    at = erased_messages.at_erased(spark.table(CHANGELOG).where(hour_filter(hour)),
                                   erased_messages.coordinates_frame(spark, coordinates),
                                   ("kafka_topic", "kafka_partition", "kafka_offset"))
    carried = at.localCheckpoint(eager=True)
    counts = {r["kafka_topic"]: r["count"] for r in carried.groupBy("kafka_topic").count().collect()}
    log.info("hour %s: %d erased message(s) left out, %d change row(s) of other keys kept at them",
             hour, len(coordinates), sum(counts.values()))
    return _Erased(coordinates, carried, counts)


def normalize_hour(spark: SparkSession, formats: dict[str, TopicFormat], hour: dt.datetime,
                   run_id: str, branch: str | None = None) -> NormalizeSummary:
    """Decode the hour's raw messages and replace the hour in changelog, quarantine and stats.

    ``branch`` (Iceberg write-audit-publish) writes the changelog and quarantine to that branch
    instead of ``main``; stats always go to ``main`` (gates read them).

    The counts are known once the changelog is written (the fast path's rows are counted as they
    are written), so a :class:`ReconciliationError` is raised after the changelog write and before
    the quarantine and stats writes: the hour's changelog (on the audit branch, which is then not
    published) is new, its stats are not written and the job fails.
    """
    expired = _begin(spark, hour, branch)
    erased = _erased(spark, hour)
    raw = erased.without_erased(spark, spark.read.option("split-size", str(READ_SPLIT_BYTES))
                                .table(RAW_MESSAGES).where(hour_filter(hour)))
    source, python_decoded, fast = decode_plan(raw, formats)
    changelog = table_ref(CHANGELOG, branch)
    seconds: dict[str, float] = {}
    empty_outcomes = empty_frame(spark, OUTCOME_SCHEMA)
    no_pairs = empty_frame(spark, ROW_SCHEMA)
    # Every message is decoded once. The Python decoders' outcomes (the topics without a fast path) are
    # cached: the changelog, the pairing and the quarantine read them. The fast path's rows are not: they
    # stream from the raw files into the changelog write, which counts them as it writes (Dataset.observe).
    # Only the topics where the fast path declined messages or decoded halves of two-message updates are
    # read again, to decode the declined in Python and to pair the halves; their rows are appended.
    with ExitStack() as cache:
        def persisted(frame: DataFrame) -> DataFrame:
            frame = frame.persist(REUSED)
            cache.callback(frame.unpersist)
            return frame

        with _timed(seconds, "python_decode"):
            raw_counts = {row["topic"]: row["count"] for row in raw.groupBy("topic").count().collect()}
            in_fast = F.col("topic").isin(list(fast))
            python, counts = empty_outcomes, []
            if any(topic not in fast for topic in raw_counts):
                python = persisted(source.where(~in_fast).mapInArrow(python_decoded, OUTCOME_SCHEMA))
                counts = outcome_counts(python)
        with _timed(seconds, "changelog_write"):
            streamed, observation = empty_outcomes, Observation("fast_path")
            fast_topics = any(topic in fast for topic in raw_counts)
            if fast_topics:
                streamed = _fast_rows(source.where(in_fast), fast, observation)
            rows = changelog_rows(python.unionByName(streamed), hour, run_id, no_pairs)
            _replace_hour(erased.with_carried(rows), changelog, hour)
            formats_of = {topic: spec[0] for topic, spec in fast.items()}
            fast_counts = observed_counts(observation.get["counts"], formats_of) if fast_topics else []
        with _timed(seconds, "declined_pairs"):
            again = sorted({c["msg_topic"] for c in fast_counts if c["_kind"] in jvm_decode.DECLINED_KINDS
                            or c["half"]})
            counts += [c for c in fast_counts if c["_kind"] not in jvm_decode.DECLINED_KINDS]
            declined, redecoded = empty_outcomes, empty_outcomes
            if again:
                tried = persisted(jvm_decode.with_fast_rows(source.where(F.col("topic").isin(again)), fast))
                if any(c["_kind"] == jvm_decode.KIND_DECLINED_ERROR for c in fast_counts):
                    _log_fast_failures(tried)
                declined = persisted(declined_outcomes(tried, python_decoded))
                counts += outcome_counts(declined)
                redecoded = jvm_decode.fast_outcomes(tried, OUTCOME_SCHEMA.fieldNames(), KIND_ROW)
            # Pairing (a shuffle and a Python pass) only for an hour with halves to pair.
            paired = None
            if has_update_halves(counts):
                paired = persisted(paired_updates(python.unionByName(declined).unionByName(redecoded)))
            if again or paired is not None:
                changelog_rows(declined, hour, run_id, no_pairs if paired is None else paired) \
                    .writeTo(changelog).append()
            # Warnings are rare: their codes are counted only in an hour that has some.
            warned = warning_counts(python.unionByName(declined)) \
                if any(c.get("warned") for c in counts) else None
            stats = run_stats(raw_counts, counts, paired, hour, run_id, warned) + \
                fast_path_stats(fast_counts, hour, run_id) + erased.stats(hour, run_id)
            totals = reconcile(stats)
        with _timed(seconds, "quarantine_write"):
            _write_quarantine(spark, quarantine_rows(python.unionByName(declined), hour, run_id), hour,
                              branch, totals, expired)
        with _timed(seconds, "stats_write"):
            _replace_stats(spark, local_frame(spark, stats, spark.table(RUN_STATS).schema), hour)
    return _summary(hour, run_id, totals, seconds)


def _begin(spark: SparkSession, hour: dt.datetime, branch: str | None) -> set[str]:
    """Check the hour can be normalized and begin its attempt (on ``branch``, a fresh one from
    ``main``); returns the hour's expired layers."""
    ensure_tables(spark)
    retention.refuse_expired_changelog(spark, hour)
    expired = retention.expired_layers(spark, hour)
    if retention.RAW in expired:  # normalizing nothing would replace the hour's changelog with nothing
        raise retention.expired_raw_error(hour)
    if branch is not None:
        from spark_jobs.publish import audit_branch, begin_attempt

        if branch != audit_branch(hour):
            raise ValueError(f"the audit branch of hour {hour:%Y-%m-%dT%H} is {audit_branch(hour)!r}, "
                             f"not {branch!r}")
        # A fresh branch from main: a re-run of the hour starts from what analysts see.
        begin_attempt(spark, hour, (CHANGELOG, QUARANTINE))
    return expired


def _fast_rows(source: DataFrame, fast: dict[str, tuple[str, str, int]],
               observation: Observation) -> DataFrame:
    """The fast path's change rows of ``source``, its outcome records counted by
    :func:`observed_key` into ``observation`` as they are written."""
    tried = jvm_decode.with_fast_rows(source, fast)
    return (jvm_decode.fast_outcomes(tried, OUTCOME_SCHEMA.fieldNames(), KIND_ROW, outer=True)
            .observe(observation, F.call_function(jvm_decode.KEY_COUNTS, observed_key()).alias("counts"))
            .where(F.col("_kind") == KIND_ROW))


def _write_quarantine(spark: SparkSession, quarantined: DataFrame, hour: dt.datetime, branch: str | None,
                      totals: Mapping[str, Mapping[str, int]], expired: set[str]) -> None:
    if _total(totals, "quarantined_messages") <= SMALL_QUARANTINE:
        # Usually none or a few: one file, without the range shuffle's sampling job.
        replace_small(quarantined, table_ref(QUARANTINE, branch), hour_filter(hour))
    else:
        _replace_hour(quarantined, table_ref(QUARANTINE, branch), hour)
    if retention.QUARANTINE in expired:  # decoded again from the raw copy: whole again
        retention.restored(spark, retention.QUARANTINE, hour)


def _total(totals: Mapping[str, Mapping[str, int]], metric: str) -> int:
    return sum(t.get(metric, 0) for t in totals.values())


def _summary(hour: dt.datetime, run_id: str, totals: Mapping[str, Mapping[str, int]],
             seconds: dict[str, float]) -> NormalizeSummary:
    def total(metric: str) -> int:
        return sum(t.get(metric, 0) for t in totals.values())

    return NormalizeSummary(hour, run_id, total("raw_messages"), total("decoded_messages"),
                            total("control_messages"), total("quarantined_messages"), total("change_rows"),
                            seconds, total("erased_messages"), total("carried_change_rows"))


def table_ref(table: str, branch: str | None) -> str:
    """``table`` or its Iceberg branch (``db.t.branch_audit``) for reads and writes."""
    return f"{table}.branch_{branch}" if branch else table


def _replace_hour(df: DataFrame, table: str, hour: dt.datetime) -> None:
    df.writeTo(table).overwrite(hour_filter(hour))


def _replace_stats(spark: SparkSession, stats: DataFrame, hour: dt.datetime) -> None:
    replace_small(stats, RUN_STATS, hour_filter(hour) & (F.col("stage") == F.lit(STAGE)))
