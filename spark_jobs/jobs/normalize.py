"""Normalize one landing hour (see ``spark_jobs.normalize``).

    python -m spark_jobs.jobs.normalize --hour 2024-01-01T10:00:00Z --run-id manual__1
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import asdict

from pyspark.sql import SparkSession

from cdclake.cli_args import hour_text, job_parser
from spark_jobs.normalize import normalize_hour, topic_formats
from spark_jobs.session import job_session


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = job_parser("Decode one landing hour into cdc.changelog and cdc.quarantine.")
    parser.add_argument("--branch", help="write to this Iceberg branch (write-audit-publish)")
    args = parser.parse_args(argv)
    with job_session(args.config, f"cdclake-normalize-{hour_text(args.hour)}", spark) as (config, spark):
        summary = normalize_hour(spark, topic_formats(config), args.hour, args.run_id, args.branch)
        print(json.dumps({k: (hour_text(v) if isinstance(v, dt.datetime) else v)
                          for k, v in asdict(summary).items()}))
        return 0


if __name__ == "__main__":
    sys.exit(main())
