"""Write-audit-publish branch steps of one hour (see ``spark_jobs.publish``).

    python -m spark_jobs.jobs.publish --hour 2024-01-01T10:00:00Z --run-id R [--action publish]

``--action start`` begins an attempt: drops what an unpublished earlier attempt left, then creates
the hour's audit branch on ``cdc.changelog`` and ``cdc.quarantine`` (plus any ``--table``);
``publish`` (default) fast-forwards ``main`` of every table holding the branch (changelog,
quarantine, current.*, the changelog last) and drops the branch; ``discard`` drops the branch
without publishing.
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

from cdclake.cli_args import hour_text, job_parser
from cdclake.exceptions import ConfigError
from cdclake.table_names import audit_branch
from spark_jobs.publish import ACTIONS, apply_action
from spark_jobs.session import job_session


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = job_parser("Create, publish or discard the hour's Iceberg audit branch.")
    parser.add_argument("--action", choices=ACTIONS, default="publish")
    parser.add_argument("--branch", help="the hour's audit branch (checked: audit_<yyyymmdd>T<hh>)")
    parser.add_argument("--table", action="append", dest="tables", help="only this table (repeatable)")
    args = parser.parse_args(argv)
    branch = audit_branch(args.hour)
    if args.branch and args.branch != branch:
        raise ConfigError(f"--branch {args.branch} is not the audit branch of hour {hour_text(args.hour)} "
                          f"({branch}); pass the hour's branch or omit --branch")
    name = f"cdclake-publish-{hour_text(args.hour)}"
    with job_session(args.config, name, spark) as (config, spark):
        touched = apply_action(spark, args.hour, args.run_id, args.action, args.tables,
                               config.compaction_threads)
        print(json.dumps({"action": args.action, "branch": branch, "tables": touched}))
        return 0


if __name__ == "__main__":
    sys.exit(main())
