"""Retention per layer (``retention:`` in ``pipeline.yml``): how many days of landing hours
``raw.kafka_messages``, ``cdc.changelog`` and ``cdc.quarantine`` keep. ``null`` keeps every hour,
the default.

The maintenance DAG's ``expire_hours`` step drops whole hours at once (``spark_jobs.retention``)
and records each in ``ops.expired_hours``; it never drops an hour whose publish is not complete.
An hour whose raw copy expired is re-run only by re-landing it from Kafka (``--reland``); an hour
whose changelog expired is not re-run at all (its changes live on folded into the changelog base).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from cdclake.exceptions import ConfigError

RAW, CHANGELOG, QUARANTINE = "raw", "changelog", "quarantine"
LAYERS = (RAW, CHANGELOG, QUARANTINE)
_KEYS = tuple(f"{layer}_days" for layer in LAYERS)


@dataclass(frozen=True)
class RetentionConfig:
    raw_days: int | None = None
    changelog_days: int | None = None
    quarantine_days: int | None = None

    def days(self, layer: str) -> int | None:
        return {RAW: self.raw_days, CHANGELOG: self.changelog_days, QUARANTINE: self.quarantine_days}[layer]

    def cutoff(self, layer: str, as_of: dt.datetime) -> dt.datetime | None:
        """Hours landed before this (an hour boundary, naive UTC) expire; None keeps them all."""
        days = self.days(layer)
        if days is None:
            return None
        moment = as_of.astimezone(dt.UTC).replace(tzinfo=None) if as_of.tzinfo else as_of
        return moment.replace(minute=0, second=0, microsecond=0) - dt.timedelta(days=days)


def parse(raw: dict[str, Any]) -> RetentionConfig:
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        raise ConfigError(f"unknown key(s) under 'retention': {unknown}; known: {sorted(_KEYS)}")
    values: dict[str, int | None] = {}
    for key in _KEYS:
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
