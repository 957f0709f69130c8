"""Compact one landing hour (see ``spark_jobs.compact``).

An entry point: a DAG task calls ``main`` on its Spark Connect session; from a shell it opens
one on the configured server.

    python spark_jobs/compact_job.py --hour 2024-01-01T10:00:00Z --run-id manual__1

Prints the summary as JSON. A table that failed is held back (``spark_jobs.held_tables``): the job
names it on stderr and in ``ops.hour_status`` (``PARTIAL``), the current gate reports it, and the
hour's other tables are published; the job still succeeds.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from cdclake.cli_args import hour_text, job_parser
from spark_jobs import hour_status
from spark_jobs.compact import CompactionOptions, CompactionSummary, compact_hour

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig


def options_from_config(config: PipelineConfig) -> CompactionOptions:
    return CompactionOptions(tombstone_retention_days=int(config.tombstone_retention_days),
                             table_prefixes=config.table_prefixes,
                             history={t.name: t.history for t in config.topics if t.history})


def run(spark: SparkSession, config: PipelineConfig, hour: dt.datetime, run_id: str,
        branch: str | None = None) -> CompactionSummary:
    """Compact ``hour``; with ``branch`` (write-audit-publish) every read and write goes through
    the hour's audit branch: the changelog branch holds the hour being audited, and the current
    tables' branches (created on first write) receive the result while ``main`` stays as it was."""
    if branch is None:
        summary = compact_hour(spark, hour, run_id, options_from_config(config))
    else:
        spark.conf.set("spark.wap.branch", branch)
        try:
            summary = compact_hour(spark, hour, run_id, options_from_config(config))
        finally:
            spark.conf.unset("spark.wap.branch")
    failures = "; ".join(f"{f.table}: {f.message}" for f in summary.failures)
    hour_status.record(spark, hour, hour_status.COMPACT, run_id,
                       hour_status.PARTIAL if failures else hour_status.OK,
                       [(t.table, None) for t in summary.tables if t.status == "OK"], failures or None)
    return summary


def summary_json(summary: CompactionSummary) -> str:
    return json.dumps({"hour": hour_text(summary.hour), "run_id": summary.run_id,
                       "tables": [asdict(t) for t in summary.tables],
                       "failed": len(summary.failures), "held": [h.line() for h in summary.held]})


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = job_parser("Apply one hour of cdc.changelog to the current.<db>__<table> tables.")
    parser.add_argument("--branch", help="read and write through this Iceberg branch (write-audit-publish)")
    args = parser.parse_args(argv)
    from spark_jobs.session import job_session

    name = f"cdclake-compact-{hour_text(args.hour)}"
    with job_session(args.config, name, spark) as (config, spark):
        summary = run(spark, config, args.hour, args.run_id, args.branch)
        print(summary_json(summary))
        for failure in summary.failures:
            print(f"compaction failed for {failure.source} ({failure.table}), held back: {failure.message}",
                  file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main())
