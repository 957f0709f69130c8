"""``cdclake validate``: run one quality gate in-process (the same code as the Spark job).

    cdclake validate --stage changelog --hour 2024-01-01T10:00:00Z [--run-id ID] [--branch B]
"""

from __future__ import annotations

import argparse
import datetime as dt

from cdclake.cli_args import hour_text, parse_hour
from cdclake.config import load_config

STAGES = ("raw", "changelog", "current")


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("validate", help="run the Great Expectations gate of a stage for one hour")
    p.add_argument("--stage", required=True, choices=STAGES)
    p.add_argument("--hour", required=True, help="landing hour (UTC), e.g. 2024-01-01T10:00:00Z")
    p.add_argument("--run-id", help="run id recorded with the results (default manual__<now>)")
    p.add_argument("--branch", help="validate this Iceberg audit branch, e.g. audit_20240101T10")
    p.add_argument("--table", action="append", dest="tables",
                   help="current stage: validate this table (repeatable; default: the hour's tables)")
    p.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    # pyspark, GX and the Spark code: imported when the command runs (see spark_jobs.commands)
    from spark_jobs.gates import run_gate
    from spark_jobs.session import connect

    try:
        hour = parse_hour(args.hour)
    except argparse.ArgumentTypeError as exc:
        raise SystemExit(f"cdclake validate: {exc}") from None
    run_id = args.run_id or "manual__" + dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    config = load_config()
    spark = connect(config, f"cdclake-validate-{hour_text(hour)}")
    try:
        # GateFailed: exit 2
        report = run_gate(spark, config, args.stage, hour, run_id, branch=args.branch, tables=args.tables)
    finally:
        spark.stop()
    print(report.summary())
    return 0
