"""``cdclake land``: land one hour of Kafka offsets into ``raw.kafka_messages``.

    cdclake land --hour 2024-01-01T10:00:00Z [--run-id ID] [--topic T ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys

from cdclake.cli_args import add_landing_options, parse_hour
from cdclake.config import load_config
from cdclake.exceptions import LandingError


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("land", help="land one hour of Kafka offsets into raw.kafka_messages")
    p.add_argument("--hour", required=True, help="landing hour (UTC), e.g. 2024-01-01T10:00:00Z")
    p.add_argument("--run-id", help="run id recorded with the rows (default manual__<now>)")
    p.add_argument("--topic", action="append", dest="topics",
                   help="land only this topic (repeatable; default: the configured topics)")
    add_landing_options(p)
    p.set_defaults(handler=_land)


def _land(args: argparse.Namespace) -> int:
    # pyspark and the Spark code: imported when the command runs (see spark_jobs.commands)
    from spark_jobs.land import run, summary_dict
    from spark_jobs.session import connect

    try:
        hour = parse_hour(args.hour)
    except argparse.ArgumentTypeError as exc:
        raise LandingError(str(exc)) from None
    run_id = args.run_id or "manual__" + dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    config = load_config()
    spark = connect(config, "cdclake-land")
    try:
        summary = run(spark, config, hour, run_id, topics=tuple(args.topics) if args.topics else None,
                      accept_gaps=args.accept_retention_gap, reland=args.reland, skip=args.skip)
    finally:
        spark.stop()
    json.dump(summary_dict(summary), sys.stdout)
    print()
    return 0
