"""Compact one landing hour (see ``spark_jobs.compact``).

    python -m spark_jobs.jobs.compact --hour 2024-01-01T10:00:00Z --run-id manual__1

Prints the summary as JSON. A table that failed is held back (``spark_jobs.held_tables``): the job
names it on stderr and in ``ops.hour_status`` (``PARTIAL``), the current gate reports it, and the
hour's other tables are published; the job still succeeds.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from pyspark.sql import SparkSession

from cdclake.cli_args import hour_text, job_parser
from spark_jobs import compact
from spark_jobs.session import job_session


def summary_json(summary: compact.CompactionSummary) -> str:
    return json.dumps({"hour": hour_text(summary.hour), "run_id": summary.run_id,
                       "tables": [asdict(t) for t in summary.tables],
                       "failed": len(summary.failures), "held": [h.line() for h in summary.held]})


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = job_parser("Apply one hour of cdc.changelog to the current.<db>__<table> tables.")
    parser.add_argument("--branch", help="read and write through this Iceberg branch (write-audit-publish)")
    args = parser.parse_args(argv)
    name = f"cdclake-compact-{hour_text(args.hour)}"
    with job_session(args.config, name, spark) as (config, spark):
        summary = compact.run(spark, config, args.hour, args.run_id, args.branch)
        print(summary_json(summary))
        for failure in summary.failures:
            print(f"compaction failed for {failure.source} ({failure.table}), held back: {failure.message}",
                  file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main())
