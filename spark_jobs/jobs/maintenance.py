"""Daily table maintenance (see ``spark_jobs.maintenance``).

    python -m spark_jobs.jobs.maintenance --as-of 2024-01-02T00:00:00Z --run-id scheduled__1 \\
        --step rewrite_data_files --step rewrite_position_delete_files

``--as-of`` is the reference time of every retention cut-off (the DAG run's data_interval_end).
Without ``--step`` every step runs, in order. Prints the summary as JSON; exits 1 when a step
failed for any table (the other tables were still maintained).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from dataclasses import asdict

from pyspark.sql import SparkSession

from spark_jobs import maintenance
from spark_jobs.maintenance import STEPS, MaintenanceSummary
from spark_jobs.session import job_session


def parse_instant(text: str) -> dt.datetime:
    """ISO-8601 instant (``Z``/offset, or naive = UTC) -> naive UTC datetime."""
    body = text.strip().replace(" ", "T")
    body = body[:-1] + "+00:00" if body.endswith("Z") else body
    try:
        moment = dt.datetime.fromisoformat(body)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO-8601 time: {text!r} (e.g. 2024-01-02T00:00:00Z)") from None
    return moment.astimezone(dt.UTC).replace(tzinfo=None) if moment.tzinfo else moment


def summary_json(summary: MaintenanceSummary) -> str:
    return json.dumps({"as_of": summary.as_of.isoformat() + "Z", "run_id": summary.run_id,
                       "results": [asdict(r) for r in summary.results],
                       "failed": len(summary.failures)})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Compact files, expire snapshots, remove orphan files and "
                                                 "purge old tombstones on every lakehouse table; "
                                                 "expire old GX validation results.")
    parser.add_argument("--as-of", required=True, type=parse_instant,
                        help="reference time of the retention cut-offs (UTC), e.g. 2024-01-02T00:00:00Z")
    parser.add_argument("--run-id", required=True, help="the Airflow run id (lineage)")
    parser.add_argument("--config", help="pipeline configuration file (default include/config/pipeline.yml)")
    parser.add_argument("--step", action="append", choices=STEPS, dest="steps",
                        help="run only this step (repeatable; default: all, in order)")
    parser.add_argument("--table", action="append", dest="tables", metavar="NS.TABLE",
                        help="maintain only this table (repeatable; default: every lakehouse table "
                             "and the GX folder)")
    return parser


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    args = build_parser().parse_args(argv)
    steps = tuple(args.steps or STEPS)
    name = f"cdclake-maintenance-{'-'.join(steps)}"
    with job_session(args.config, name, spark) as (config, spark):
        tables = tuple(args.tables) if args.tables else None
        summary = maintenance.run(spark, config, args.as_of, args.run_id, steps, tables)
        print(summary_json(summary))
        for failure in summary.failures:
            print(f"{failure.step} {failure.status.lower()} for {failure.table}: {failure.message}",
                  file=sys.stderr)
        return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
