"""The names of the lakehouse's fixed tables and of an hour's audit branch: constants of the
product, never taken from messages. Their schemas live with the Spark code (``spark_jobs.tables``);
the names are here so that code without Spark (the ``cdclake`` commands, pyiceberg reads) uses
the same ones."""

from __future__ import annotations

import datetime as dt

NAMESPACES = ("raw", "ops", "cdc", "current", "history")

RAW_MESSAGES = "raw.kafka_messages"
OFFSET_LEDGER = "ops.offset_ledger"
TOPIC_STARTS = "ops.topic_starts"
EXPIRED_HOURS = "ops.expired_hours"
ERASURES = "ops.erasures"
ERASED_MESSAGES = "ops.erased_messages"
CHANGELOG = "cdc.changelog"
CHANGELOG_BASE = "cdc.changelog_base"  # what expired changelog hours leave (spark_jobs.changelog_base)
QUARANTINE = "cdc.quarantine"
RUN_STATS = "ops.run_stats"
GATE_RESULTS = "ops.gate_results"
HOUR_STATUS = "ops.hour_status"
HELD_TABLES = "cdc.held_tables"


def audit_branch(hour: dt.datetime) -> str:
    """``2024-03-01 10:00`` -> ``audit_20240301T10`` (one branch per hour and table)."""
    return "audit_" + hour.strftime("%Y%m%dT%H")

# Compaction's delete markers beside each current table: ``current.<table>__tombstones``.
TOMBSTONE_SUFFIX = "__tombstones"
# The current gate's failed, non-blocking outcome for a table compaction held back.
HELD_EXPECTATION = "current_table_compacted"
