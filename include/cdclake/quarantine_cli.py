"""``cdclake quarantine summary|replay --hour H``: look at and replay an hour's quarantine.

Replay after a decoder fix (or a corrected topic setting, such as a topic configured with the
wrong format) re-runs the hour through the hourly DAG (``cdclake run`` for that one hour).
Normalize decodes every raw message of the hour again — the quarantined ones with the fixed
decoder, the others exactly as before — and replaces the hour, so the messages that now decode
move into the changelog (and, through compaction and the gates, into the published tables) and
the rest stay quarantined. Re-running is idempotent, so a replay can be repeated safely.

An hour whose gates failed was never published: its quarantine is on the hour's audit branch of
``cdc.quarantine`` (write-audit-publish, ``spark_jobs.publish``), and that is what is shown,
marked unpublished — it is usually why the gate failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections import Counter
from dataclasses import dataclass

from cdclake.cli_args import hour_text, parse_hour
from cdclake.config import PipelineConfig, load_config
from cdclake.exceptions import CdclakeError
from cdclake.table_names import QUARANTINE, audit_branch


@dataclass(frozen=True)
class HourQuarantine:
    """The hour's quarantined messages by (topic, reason), and where they were read from."""

    rows: list[tuple[str, str, int]]
    branch: str | None  # the unpublished hour's audit branch; None: main (published)

    @property
    def total(self) -> int:
        return sum(r[2] for r in self.rows)


def quarantined(config: PipelineConfig, hour: dt.datetime) -> HourQuarantine:
    """(topic, reason, messages) of the hour: its audit branch if unpublished, else ``main``."""
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.expressions import EqualTo, Reference
    from pyiceberg.expressions.literals import literal

    from cdclake.catalog import open_catalog

    try:
        table = open_catalog(config).load_table(QUARANTINE)
    except NoSuchTableError:
        return HourQuarantine([], None)
    audit = audit_branch(hour)
    snapshot = table.snapshot_by_name(audit)
    branch = audit if snapshot is not None else None
    if snapshot is None:
        snapshot = table.current_snapshot()
    if snapshot is None:
        return HourQuarantine([], None)
    stamp = hour.replace(tzinfo=dt.UTC).isoformat()
    arrow = table.scan(row_filter=EqualTo(term=Reference("landed_hour"), value=literal(stamp)),
                       snapshot_id=snapshot.snapshot_id,
                       selected_fields=("kafka_topic", "reason_code")).to_arrow()
    counts = Counter(zip(arrow.column("kafka_topic").to_pylist(), arrow.column("reason_code").to_pylist(),
                         strict=True))
    return HourQuarantine(sorted((t, r, n) for (t, r), n in counts.items()), branch)


def _print(found: HourQuarantine) -> None:
    for topic, reason, count in found.rows:
        print(f"  {topic:<30} {reason:<18} {count}")
    print(f"  total: {found.total}")
    if found.branch is not None:
        print(f"  (unpublished: the hour's gates have not passed; rows on branch {found.branch} of "
              f"cdc.quarantine; in Spark SQL: SELECT * FROM cdc.quarantine.branch_{found.branch})")


def _command(args: argparse.Namespace) -> int:
    config = load_config()
    before = quarantined(config, args.hour)
    print(f"quarantine of hour {hour_text(args.hour)}:")
    _print(before)
    if args.action == "summary":
        return 0
    from cdclake.run_cli import run_range

    try:
        run_range(config, args.hour, args.hour + dt.timedelta(hours=1))
    except CdclakeError:
        print("replay failed; quarantine of the replayed hour:")
        _print(quarantined(config, args.hour))
        raise
    after = quarantined(config, args.hour)
    print(f"replayed: {before.total - after.total} message(s) left the quarantine (now changes or control "
          "messages); still quarantined:")
    _print(after)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("quarantine", help="summarise or replay an hour's quarantined messages")
    p.add_argument("action", choices=["summary", "replay"])
    p.add_argument("--hour", required=True, type=parse_hour, help="landing hour (UTC), e.g. 2024-01-01T10")
    p.set_defaults(handler=_command)
