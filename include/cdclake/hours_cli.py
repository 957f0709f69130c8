"""``cdclake hours --start H --end H``: every stage of each hour side by side, read from the
tables the stages record in (``ops.offset_ledger``, ``ops.run_stats``, ``ops.gate_results`` and
``ops.hour_status``) through pyiceberg, with no JVM. ``expired`` names the layers whose copy of
the hour retention dropped (``ops.expired_hours``).

An hour is fully published when ``publish`` says ``PUBLISHED``; ``PUBLISHING`` is a publish that
was interrupted (run publish again to complete it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from cdclake.cli_args import hour_text, parse_hour
from cdclake.config import load_config
from cdclake.hour_report import HELD_EXPECTATION
from cdclake.table_names import EXPIRED_HOURS

COLUMNS = ("hour", "landed", "expired", "change_rows", "quarantined", "raw_gate", "changelog_gate",
           "compact", "current_gate", "publish", "published_tables")
_SOURCES = ("ops.offset_ledger", "ops.run_stats", "ops.gate_results", "ops.hour_status")


def _sql(start: dt.datetime, end: dt.datetime, expired: bool) -> str:
    # The bounds are datetimes formatted here, never user text.
    within = (f"landed_hour >= TIMESTAMP '{start:%Y-%m-%d %H:%M:%S}' "
              f"AND landed_hour < TIMESTAMP '{end:%Y-%m-%d %H:%M:%S}'")
    return f"""
        SELECT landed_hour, 'landed' AS what, CAST(sum(coalesce(landed_count, 0)) AS VARCHAR) AS value
          FROM ops.offset_ledger WHERE {within} GROUP BY 1
        UNION ALL
        SELECT landed_hour, metric, CAST(sum(value) AS VARCHAR) FROM ops.run_stats
         WHERE {within} AND stage = 'normalize' AND metric IN ('change_rows', 'quarantined_messages')
         GROUP BY 1, 2
        UNION ALL
        SELECT landed_hour, stage || '_gate', CASE WHEN bool_and(success) THEN 'PASSED'
               WHEN bool_and(success OR expectation = '{HELD_EXPECTATION}') THEN 'PASSED_HELD'
               ELSE 'FAILED' END
          FROM ops.gate_results WHERE {within} GROUP BY 1, 2
        UNION ALL
        SELECT landed_hour, stage, status FROM ops.hour_status WHERE {within}
        UNION ALL
        SELECT landed_hour, 'published_tables', CAST(len(tables) AS VARCHAR) FROM ops.hour_status
         WHERE {within} AND stage = 'publish' AND status = 'PUBLISHED'""" + ("" if not expired else f"""
        UNION ALL
        SELECT landed_hour, 'expired', string_agg(layer, ',' ORDER BY layer) FROM ops.expired_hours
         WHERE {within} GROUP BY 1""")


_RENAMED = {"quarantined_messages": "quarantined"}


def hour_rows(config: Any, start: dt.datetime, end: dt.datetime) -> list[tuple[Any, ...]]:
    """One row per hour that any stage recorded in [start, end), newest first (:data:`COLUMNS`)."""
    from cdclake.catalog import open_catalog
    from cdclake.query import run_query

    catalog = open_catalog(config)
    if not all(catalog.table_exists(name) for name in _SOURCES):
        return []  # no job has run on this lakehouse yet
    _, rows = run_query(config, _sql(start, end, catalog.table_exists(EXPIRED_HOURS)))
    by_hour: dict[dt.datetime, dict[str, str]] = {}
    for landed_hour, what, value in rows:
        by_hour.setdefault(landed_hour, {})[_RENAMED.get(what, what)] = value
    counts = ("landed", "change_rows", "quarantined")  # none counted: 0; a stage not run: NULL
    return [(hour_text(hour), *(values.get(c, "0" if c in counts else None) for c in COLUMNS[1:]))
            for hour, values in sorted(by_hour.items(), reverse=True)]


def _command(args: argparse.Namespace) -> int:
    from cdclake.query import write_result

    write_result(list(COLUMNS), hour_rows(load_config(), args.start, args.end), args.format, sys.stdout)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("hours", help="each hour's landing, normalize, gates, compaction and publish")
    p.add_argument("--start", required=True, type=parse_hour, help="first hour (UTC), e.g. 2024-01-01T10")
    p.add_argument("--end", required=True, type=parse_hour, help="end hour, exclusive")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(handler=_command)
