"""Land one hour of Kafka offsets (see ``spark_jobs.land``).

An entry point: a DAG task calls ``main`` on its Spark Connect session; from a shell it opens
one on the configured server.

    python spark_jobs/land_job.py --hour 2024-01-01T10:00:00Z --run-id manual__1 \\
        --plan-file /tmp/plan.json          # or --plan-json '{...}' (the Airflow plan task's XCom)

Without a plan the job plans the hour itself from the configured topics.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from cdclake.cli_args import add_landing_options, hour_text, job_parser
from cdclake.hourly import plan_hour
from spark_jobs.land import LandingSummary, land_hour, skip_hour

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig
    from cdclake.offsets import OffsetPlan


def run(spark: SparkSession, config: PipelineConfig, hour: dt.datetime, run_id: str,
        plan: OffsetPlan | None = None, *, topics: tuple[str, ...] | None = None,
        accept_gaps: bool = False, reland: bool = False, skip: str | None = None) -> LandingSummary:
    """Land ``hour`` (or, with ``skip``, record it as skipped for that reason): with ``plan`` (an
    ``OffsetPlan``) as given, else planned here."""
    from cdclake.exceptions import LandingError
    from cdclake.kafka_settings import kafka_client_config, spark_kafka_options

    plan = plan or plan_hour(config, hour, topics)
    if plan.hour != hour:
        raise LandingError(f"the offset plan is for hour {plan.start}, not {hour_text(hour)}; "
                           "pass the plan made for this run's data interval")
    if skip is not None:
        return skip_hour(spark, plan, run_id, skip)
    return land_hour(spark, plan, spark_kafka_options(kafka_client_config(config)), run_id,
                     accept_gaps=accept_gaps, reland=reland)


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = job_parser("Land one hour of Kafka offsets into raw.kafka_messages and ops.offset_ledger.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--plan-file", type=Path, help="offset plan JSON file (cdclake.offsets.OffsetPlan)")
    source.add_argument("--plan-json", help="offset plan as JSON text")
    add_landing_options(parser)
    args = parser.parse_args(argv)
    from cdclake.offsets import OffsetPlan
    from spark_jobs.session import job_session

    plan = None
    if args.plan_file:
        plan = OffsetPlan.from_json(args.plan_file.read_text())
    elif args.plan_json:
        plan = OffsetPlan.from_json(args.plan_json)
    with job_session(args.config, f"cdclake-land-{hour_text(args.hour)}", spark) as (config, spark):
        summary = run(spark, config, args.hour, args.run_id, plan, accept_gaps=args.accept_retention_gap,
                      reland=args.reland, skip=args.skip)
        print(json.dumps(summary_dict(summary)))
        return 0


def summary_dict(summary: LandingSummary) -> dict:
    return {"hour": hour_text(summary.hour), "run_id": summary.run_id, "messages": summary.messages,
            "partitions": [asdict(p) for p in summary.partitions]}


if __name__ == "__main__":
    sys.exit(main())
