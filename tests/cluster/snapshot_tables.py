"""Prints, as JSON, every published table of the pipeline the environment names (``CDCLAKE_*``):
rows without lineage columns, sorted. Run in the pipeline's own Python (the cluster's venv reads
its PostgreSQL catalog and S3 warehouse), so it imports nothing of the tests."""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

from cdclake.catalog import open_catalog
from cdclake.config import load_config
from cdclake.query import run_query

# Columns that name the run or the moment it ran: they differ between two runs of the same hours.
LINEAGE = ("_cdc_run_id", "run_id", "quarantined_at", "validated_at")


def _utc(value: Any) -> Any:
    """An instant as UTC text: the two runs' readers name the UTC zone differently
    (``<UTC>``, ``<StaticTzInfo 'Etc/UTC'>``) for the same instant."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).isoformat()
    return value


def main() -> None:
    config = load_config()
    names = [f"current.{t}" for _ns, t in open_catalog(config).list_tables("current")]
    out = {}
    for name in sorted([*names, "cdc.changelog", "cdc.quarantine"]):
        columns, rows = run_query(config, f"SELECT * FROM {name}")
        keep = [i for i, c in enumerate(columns) if c not in LINEAGE]
        out[name] = sorted([repr(_utc(r[i])) for i in keep] for r in rows)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
