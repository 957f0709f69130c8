"""The quality gate of one stage and hour (see ``spark_jobs.gates``).

    python -m spark_jobs.jobs.validate --stage changelog --hour 2024-01-01T10:00:00Z \
        --run-id scheduled__2024-01-01T10 --branch audit_20240101T10

Exit status 1 with the failure summary on stderr when the gate fails (Airflow marks the task
failed; gate tasks do not retry: the data they read has not changed).
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

from cdclake.cli_args import hour_text, job_parser
from cdclake.exceptions import GateFailed
from spark_jobs.gates import STAGES, run_gate
from spark_jobs.session import job_session


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = job_parser("Validate one stage of one landing hour with its Great Expectations suite.")
    parser.add_argument("--stage", required=True, choices=STAGES)
    parser.add_argument("--branch", help="validate this Iceberg audit branch (write-audit-publish)")
    parser.add_argument("--table", action="append", dest="tables",
                        help="current stage: validate this table (repeatable; default: the hour's tables)")
    args = parser.parse_args(argv)
    name = f"cdclake-validate-{args.stage}-{hour_text(args.hour)}"
    with job_session(args.config, name, spark) as (config, spark):
        try:
            report = run_gate(spark, config, args.stage, args.hour, args.run_id, branch=args.branch,
                              tables=args.tables)
        except GateFailed as exc:
            print(str(exc), file=sys.stderr)
            return 1
        print(report.summary())
        return 0


if __name__ == "__main__":
    sys.exit(main())
