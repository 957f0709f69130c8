"""Write-audit-publish branch steps of one hour (see ``spark_jobs.publish``).

An entry point: a DAG task calls ``main`` on its Spark Connect session; from a shell it opens
one on the configured server.

    python spark_jobs/publish_job.py --hour 2024-01-01T10:00:00Z --run-id R [--action publish]

``--action start`` begins an attempt: drops what an unpublished earlier attempt left, then creates
the hour's audit branch on ``cdc.changelog`` and ``cdc.quarantine`` (plus any ``--table``);
``publish`` (default) fast-forwards ``main`` of every table holding the branch (changelog,
quarantine, current.*, the changelog last) and drops the branch; ``discard`` drops the branch
without publishing.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Sequence

from pyspark.sql import SparkSession

from cdclake.cli_args import hour_text, job_parser
from cdclake.exceptions import ConfigError
from spark_jobs import publish

ACTIONS = ("start", "publish", "discard")


def run(spark: SparkSession, config: object, hour: dt.datetime, run_id: str, action: str = "publish",
        tables: Sequence[str] | None = None) -> list[str]:
    """Apply ``action`` to the hour's audit branch; returns the tables it touched."""
    if action == "start":
        chosen = list(dict.fromkeys([*publish.AUDITED_TABLES, *(tables or ())]))
        publish.begin_attempt(spark, hour, chosen)
        return chosen
    if action == "publish":
        chosen = list(tables) if tables else publish.audit_candidates(spark)
        return publish.publish(spark, chosen, hour, run_id)
    chosen = list(tables) if tables else publish.audited_tables(spark, hour)
    publish.discard(spark, chosen, hour)
    return chosen


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = job_parser("Create, publish or discard the hour's Iceberg audit branch.")
    parser.add_argument("--action", choices=ACTIONS, default="publish")
    parser.add_argument("--branch", help="the hour's audit branch (checked: audit_<yyyymmdd>T<hh>)")
    parser.add_argument("--table", action="append", dest="tables", help="only this table (repeatable)")
    args = parser.parse_args(argv)
    if args.branch and args.branch != publish.audit_branch(args.hour):
        raise ConfigError(f"--branch {args.branch} is not the audit branch of hour {hour_text(args.hour)} "
                          f"({publish.audit_branch(args.hour)}); pass the hour's branch or omit --branch")
    from spark_jobs.session import job_session

    name = f"cdclake-publish-{hour_text(args.hour)}"
    with job_session(args.config, name, spark) as (config, spark):
        touched = run(spark, config, args.hour, args.run_id, args.action, args.tables)
        branch = publish.audit_branch(args.hour)
        print(json.dumps({"action": args.action, "branch": branch, "tables": touched}))
        return 0


if __name__ == "__main__":
    sys.exit(main())
