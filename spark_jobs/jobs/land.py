"""Land one hour of Kafka offsets (see ``spark_jobs.land``).

    python -m spark_jobs.jobs.land --hour 2024-01-01T10:00:00Z --run-id manual__1 \\
        --plan-file /tmp/plan.json          # or --plan-json '{...}' (the Airflow plan task's XCom)

Without a plan the job plans the hour itself from the configured topics.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from cdclake.cli_args import add_landing_options, hour_text, job_parser
from cdclake.offsets import OffsetPlan
from spark_jobs import land
from spark_jobs.session import job_session


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = job_parser("Land one hour of Kafka offsets into raw.kafka_messages and ops.offset_ledger.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--plan-file", type=Path, help="offset plan JSON file (cdclake.offsets.OffsetPlan)")
    source.add_argument("--plan-json", help="offset plan as JSON text")
    add_landing_options(parser)
    args = parser.parse_args(argv)
    plan = None
    if args.plan_file:
        plan = OffsetPlan.from_json(args.plan_file.read_text())
    elif args.plan_json:
        plan = OffsetPlan.from_json(args.plan_json)
    with job_session(args.config, f"cdclake-land-{hour_text(args.hour)}", spark) as (config, spark):
        summary = land.run(spark, config, args.hour, args.run_id, plan, accept_gaps=args.accept_retention_gap,
                           reland=args.reland, skip=args.skip)
        print(json.dumps(land.summary_dict(summary)))
        return 0


if __name__ == "__main__":
    sys.exit(main())
