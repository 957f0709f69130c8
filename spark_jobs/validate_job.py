"""The quality gate of one stage and hour (see ``spark_jobs.gates``).

An entry point: a DAG task calls ``main`` on its Spark Connect session; from a shell it opens
one on the configured server.

    python spark_jobs/validate_job.py --stage changelog --hour 2024-01-01T10:00:00Z \
        --run-id scheduled__2024-01-01T10 --branch audit_20240101T10

Exit status 1 with the failure summary on stderr when the gate fails (Airflow marks the task
failed; gate tasks do not retry: the data they read has not changed).
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from cdclake.cli_args import hour_text, job_parser
from cdclake.exceptions import GateFailed
from spark_jobs.gates import STAGES, GateReport, run_gate

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig


def run(spark: SparkSession, config: PipelineConfig, stage: str, hour: dt.datetime, run_id: str,
        branch: str | None = None, tables: Sequence[str] | None = None) -> GateReport:
    """Validate ``stage`` of ``hour``; raises :class:`GateFailed` when an expectation fails."""
    return run_gate(spark, config, stage, hour, run_id, branch=branch, tables=tables)


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = job_parser("Validate one stage of one landing hour with its Great Expectations suite.")
    parser.add_argument("--stage", required=True, choices=STAGES)
    parser.add_argument("--branch", help="validate this Iceberg audit branch (write-audit-publish)")
    parser.add_argument("--table", action="append", dest="tables",
                        help="current stage: validate this table (repeatable; default: the hour's tables)")
    args = parser.parse_args(argv)
    from spark_jobs.session import job_session

    name = f"cdclake-validate-{args.stage}-{hour_text(args.hour)}"
    with job_session(args.config, name, spark) as (config, spark):
        try:
            report = run(spark, config, args.stage, args.hour, args.run_id, args.branch, args.tables)
        except GateFailed as exc:
            print(str(exc), file=sys.stderr)
            return 1
        print(report.summary())
        return 0


if __name__ == "__main__":
    sys.exit(main())
