"""Normalize one landing hour (see ``spark_jobs.normalize``).

An entry point: a DAG task calls ``main`` on its Spark Connect session; from a shell it opens
one on the configured server.

    python spark_jobs/normalize_job.py --hour 2024-01-01T10:00:00Z --run-id manual__1
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from cdclake.cli_args import hour_text, job_parser
from spark_jobs.normalize import NormalizeSummary, normalize_hour, topic_formats

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig


def run(spark: SparkSession, config: PipelineConfig, hour: dt.datetime, run_id: str,
        branch: str | None = None) -> NormalizeSummary:
    return normalize_hour(spark, topic_formats(config), hour, run_id, branch)


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = job_parser("Decode one landing hour into cdc.changelog and cdc.quarantine.")
    parser.add_argument("--branch", help="write to this Iceberg branch (write-audit-publish)")
    args = parser.parse_args(argv)
    from spark_jobs.session import job_session

    with job_session(args.config, f"cdclake-normalize-{hour_text(args.hour)}", spark) as (config, spark):
        summary = run(spark, config, args.hour, args.run_id, args.branch)
        print(json.dumps({k: (hour_text(v) if isinstance(v, dt.datetime) else v)
                          for k, v in asdict(summary).items()}))
        return 0


if __name__ == "__main__":
    sys.exit(main())
