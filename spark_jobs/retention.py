"""Expiring whole landing hours of ``raw.kafka_messages``, ``cdc.changelog`` and
``cdc.quarantine`` (settings: ``cdclake.retention``), and what a re-run of an expired hour needs.

An hour expires from a layer once it landed before the layer's cut-off and its publish is
complete (``ops.hour_status``): an hour not yet published, or failed, keeps its raw messages and
its quarantine for the re-run that fixes it. The changelog expires as a prefix: only hours before
the first hour not yet published and before every held table's hold (``cdc.held_tables``: the
changes it has not applied yet), folded into ``cdc.changelog_base`` first
(:mod:`spark_jobs.changelog_base`), which compaction and SCD2 history read in their place. An
hour at or before the changelog's expired hours is never normalized or landed again.

Each hour is recorded in ``ops.expired_hours`` before its rows are deleted (by partition: a
metadata-only commit), so an expiry stopped between the two finishes when run again. The bytes
leave the warehouse with the snapshots that still reference them (``expire_snapshots``,
``remove_orphan_files``).

Normalize refuses an hour whose raw copy expired: it would replace the hour's changelog with
nothing. Landing it again from Kafka (``--reland``, refused when Kafka holds fewer messages than
the ledger) brings the raw copy back and clears its record.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from cdclake.exceptions import ExpiredHourError
from cdclake.retention import CHANGELOG, LAYERS, QUARANTINE, RAW, RetentionConfig, setting
from spark_jobs import changelog_base
from spark_jobs.session import local_frame
from spark_jobs.tables import CHANGELOG as CHANGELOG_TABLE
from spark_jobs.tables import EXPIRED_HOURS, HELD_TABLES, HOUR_STATUS, OFFSET_LEDGER, RAW_MESSAGES
from spark_jobs.tables import QUARANTINE as QUARANTINE_TABLE

TABLES = {RAW: RAW_MESSAGES, CHANGELOG: CHANGELOG_TABLE, QUARANTINE: QUARANTINE_TABLE}
_UPDATE_VIEW = "cdclake_expired_hours_update"


def expire(spark: SparkSession, settings: RetentionConfig, as_of: dt.datetime, run_id: str,
           layers: Iterable[str] = LAYERS) -> dict[str, int]:
    """Expire every layer's hours before its cut-off as of ``as_of``; metrics per layer:
    ``<layer>_hours`` and ``<layer>_rows`` expired, ``<layer>_unpublished`` hours kept."""
    metrics: dict[str, int] = {}
    published: set[dt.datetime] | None = None
    for layer in layers:
        cutoff = settings.cutoff(layer, as_of)
        if cutoff is None:
            continue
        table = TABLES[layer]
        counts = {r["landed_hour"]: r["n"] for r in spark.table(table)
                  .where(F.col("landed_hour") < F.lit(cutoff).cast("timestamp"))
                  .groupBy("landed_hour").agg(F.count("*").alias("n")).collect()}
        if published is None:
            published = _published_hours(spark)
        if layer == CHANGELOG:
            limit = _changelog_limit(spark, published)
            due = [h for h in sorted(counts) if limit is None or h < limit]
        else:
            due = sorted(h for h in counts if h in published)
        metrics[f"{layer}_hours"] = len(due)
        metrics[f"{layer}_rows"] = sum(counts[h] for h in due)
        metrics[f"{layer}_unpublished"] = len(counts) - len(due)
        if due:
            _record(spark, layer, [(h, counts[h]) for h in due], run_id)
            if layer == CHANGELOG:
                metrics["changelog_base_rows"] = changelog_base.fold_into_base(spark, due[-1])
                spark.sql(f"DELETE FROM {table} WHERE landed_hour <= {_timestamp(due[-1])}")
            else:
                hours = ", ".join(_timestamp(h) for h in due)
                spark.sql(f"DELETE FROM {table} WHERE landed_hour IN ({hours})")
    return metrics


def _timestamp(hour: dt.datetime) -> str:
    return f"TIMESTAMP '{hour:%Y-%m-%d %H:%M:%S}'"


def _changelog_limit(spark: SparkSession, published: set[dt.datetime]) -> dt.datetime | None:
    """The first hour the changelog must keep: the earliest hour landed or compacted but not
    published, or a held table's hold, whichever is earlier (None: no limit)."""
    known = {r["landed_hour"] for r in spark.table(OFFSET_LEDGER).select("landed_hour").distinct().collect()}
    known |= {r["landed_hour"] for r in spark.table(HOUR_STATUS).select("landed_hour").distinct().collect()}
    held = [r["since"] for r in spark.table(HELD_TABLES).select("since").collect()]
    limits = sorted(known - published) + held
    return min(limits) if limits else None


def expired_changelog_through(spark: SparkSession) -> dt.datetime | None:
    """The newest hour whose changelog expired (recorded before it is folded and deleted)."""
    value = (spark.table(EXPIRED_HOURS).where(F.col("layer") == F.lit(CHANGELOG))
             .agg(F.max("landed_hour")).collect()[0][0])
    return value if isinstance(value, dt.datetime) else None


def refuse_expired_changelog(spark: SparkSession, hour: dt.datetime) -> None:
    """An hour at or before the changelog's expired hours is never run again: its changes live on
    in ``cdc.changelog_base`` only, and a new copy of them would not be read."""
    through = expired_changelog_through(spark)
    if through is not None and hour <= through:
        raise ExpiredHourError(
            f"hour {hour:%Y-%m-%dT%H:00:00Z}: the changelog expired up to {through:%Y-%m-%dT%H:00:00Z} under "
            f"{setting(CHANGELOG)} (ops.expired_hours); its changes are folded into cdc.changelog_base "
            "and the hour cannot be run again")


def expired_hours(spark: SparkSession, layer: str,
                  hours: Sequence[dt.datetime] | None = None) -> set[dt.datetime]:
    """The hours of ``layer`` recorded as expired (of ``hours``, when given)."""
    rows = spark.table(EXPIRED_HOURS).where(F.col("layer") == F.lit(layer))
    if hours is not None:
        rows = rows.where(F.col("landed_hour").isin([F.lit(h).cast("timestamp") for h in hours]))
    return {r["landed_hour"] for r in rows.select("landed_hour").collect()}


def expired_layers(spark: SparkSession, hour: dt.datetime) -> set[str]:
    """The layers whose copy of ``hour`` expired."""
    return {r["layer"] for r in spark.table(EXPIRED_HOURS)
            .where(F.col("landed_hour") == F.lit(hour).cast("timestamp")).select("layer").collect()}


def expired_raw_error(hour: dt.datetime) -> ExpiredHourError:
    after = hour + dt.timedelta(hours=1)
    return ExpiredHourError(
        f"hour {hour:%Y-%m-%dT%H:00:00Z}: its raw messages expired under {setting(RAW)} (ops.expired_hours), "
        "so it cannot be re-run from them; land it again from Kafka (`cdclake run --start "
        f"{hour:%Y-%m-%dT%H} --end {after:%Y-%m-%dT%H} --reland`, every topic of the hour), which is "
        "refused if Kafka no longer holds all of its messages")


def restored(spark: SparkSession, layer: str, hour: dt.datetime) -> None:
    """The hour's ``layer`` is whole again (re-landed, re-normalized): drop its expiry record."""
    spark.sql(f"DELETE FROM {EXPIRED_HOURS} WHERE layer = '{layer}' "
              f"AND landed_hour = TIMESTAMP '{hour:%Y-%m-%d %H:%M:%S}'")


def _published_hours(spark: SparkSession) -> set[dt.datetime]:
    return {r["landed_hour"] for r in spark.table(HOUR_STATUS)
            .where((F.col("stage") == "publish") & (F.col("status") == "PUBLISHED"))
            .select("landed_hour").collect()}


def _record(spark: SparkSession, layer: str, hours: Sequence[tuple[dt.datetime, int]], run_id: str) -> None:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    rows = [{"layer": layer, "landed_hour": h, "row_count": n, "run_id": run_id, "expired_at": now}
            for h, n in hours]
    local_frame(spark, rows, spark.table(EXPIRED_HOURS).schema).createOrReplaceTempView(_UPDATE_VIEW)
    try:
        spark.sql(f"""
            MERGE INTO {EXPIRED_HOURS} t USING {_UPDATE_VIEW} s
                ON t.layer = s.layer AND t.landed_hour = s.landed_hour
            WHEN MATCHED THEN UPDATE SET *
            WHEN NOT MATCHED THEN INSERT *""")
    finally:
        spark.catalog.dropTempView(_UPDATE_VIEW)
