"""Retention per layer (``retention:`` in ``pipeline.yml``): how many days of landing hours
``raw.kafka_messages`` and ``cdc.quarantine`` keep. ``null`` keeps every hour, the default.

The maintenance DAG's ``expire_hours`` step drops whole hours at once (``spark_jobs.retention``)
and records each in ``ops.expired_hours``; it never drops an hour whose publish is not complete.
An hour whose raw copy expired is re-run only by re-landing it from Kafka (``--reland``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from cdclake.exceptions import ConfigError

RAW, QUARANTINE = "raw", "quarantine"
LAYERS = (RAW, QUARANTINE)


@dataclass(frozen=True)
class RetentionConfig:
    raw_days: int | None = None
    quarantine_days: int | None = None

    def days(self, layer: str) -> int | None:
        return {RAW: self.raw_days, QUARANTINE: self.quarantine_days}[layer]

    def cutoff(self, layer: str, as_of: dt.datetime) -> dt.datetime | None:
        """Hours landed before this (an hour boundary, naive UTC) expire; None keeps them all."""
        days = self.days(layer)
        if days is None:
            return None
        moment = as_of.astimezone(dt.UTC).replace(tzinfo=None) if as_of.tzinfo else as_of
        return moment.replace(minute=0, second=0, microsecond=0) - dt.timedelta(days=days)


def parse(raw: dict[str, Any]) -> RetentionConfig:
    if raw.get("changelog_days") is not None:
        raise ConfigError(
            "retention.changelog_days is not available: compaction's replays and SCD2 history read a "
            "table's whole changelog; leave it null (raw_days and quarantine_days are available)")
    unknown = sorted(set(raw) - {"raw_days", "quarantine_days", "changelog_days"})
    if unknown:
        raise ConfigError(f"unknown key(s) under 'retention': {unknown}; known: "
                          "['changelog_days', 'quarantine_days', 'raw_days']")
    values: dict[str, int | None] = {}
    for key in ("raw_days", "quarantine_days"):
        value = raw.get(key)
        if value is None:
            values[key] = None
        elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"retention.{key} must be a whole number of days, at least 1, or null "
                              f"(keep every hour), got {value!r}")
        else:
            values[key] = value
    return RetentionConfig(**values)


def setting(layer: str) -> str:
    return f"retention.{layer}_days"
