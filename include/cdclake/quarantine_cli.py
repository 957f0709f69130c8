"""``cdclake quarantine summary|replay --hour H``: look at and replay an hour's quarantine.

Replay after a decoder fix re-runs the hour through the hourly DAG (``cdclake run`` for that one
hour). Normalize decodes every raw message of the hour again — the quarantined ones with the fixed
decoder, the others exactly as before — and replaces the hour, so the messages that now decode
move into the changelog (and, through compaction and the gates, into the published tables) and
the rest stay quarantined. Re-running is idempotent, so a replay can be repeated safely.
"""

from __future__ import annotations

import argparse
import datetime as dt

from cdclake.config import PipelineConfig, load_config
from spark_jobs.cli_args import hour_text, parse_hour


def quarantined(config: PipelineConfig, hour: dt.datetime) -> list[tuple]:
    """(topic, reason, messages) of the hour's published quarantine."""
    from cdclake.query import run_query

    stamp = hour.strftime("%Y-%m-%d %H:%M:%S")
    _columns, rows = run_query(
        config, "SELECT kafka_topic, reason_code, count(*) FROM cdc.quarantine "
                f"WHERE landed_hour = TIMESTAMPTZ '{stamp}+00' GROUP BY 1, 2 ORDER BY 1, 2")
    return [tuple(r) for r in rows]


def _print(rows: list[tuple]) -> None:
    for topic, reason, count in rows:
        print(f"  {topic:<30} {reason:<18} {count}")
    print(f"  total: {sum(r[2] for r in rows)}")


def _command(args: argparse.Namespace) -> int:
    config = load_config()
    before = quarantined(config, args.hour)
    print(f"quarantine of hour {hour_text(args.hour)}:")
    _print(before)
    if args.action == "summary":
        return 0
    from cdclake.run_cli import run_range

    run_range(config, args.hour, args.hour + dt.timedelta(hours=1))
    after = quarantined(config, args.hour)
    moved = sum(r[2] for r in before) - sum(r[2] for r in after)
    print(f"replayed: {moved} message(s) moved into the changelog; still quarantined:")
    _print(after)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("quarantine", help="summarise or replay an hour's quarantined messages")
    p.add_argument("action", choices=["summary", "replay"])
    p.add_argument("--hour", required=True, type=parse_hour, help="landing hour (UTC), e.g. 2024-01-01T10")
    p.set_defaults(handler=_command)
