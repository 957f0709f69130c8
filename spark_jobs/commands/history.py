"""``cdclake history rebuild --table current.shop__orders``: rebuild an SCD2 history table from the
changelog alone, on the Spark Connect server (see ``spark_jobs.history``)."""

from __future__ import annotations

import argparse

from cdclake.config import load_config


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("history", help="SCD2 history tables (history.<db>__<table>)")
    actions = p.add_subparsers(dest="action", required=True)
    rebuild = actions.add_parser("rebuild", help="rebuild one history table from cdc.changelog alone")
    rebuild.add_argument("--table", required=True,
                         help="the current table (current.shop__orders) or its history table")
    rebuild.set_defaults(handler=_rebuild)


def _rebuild(args: argparse.Namespace) -> int:
    # pyspark and the Spark code: imported when the command runs (see spark_jobs.commands)
    from spark_jobs.history import current_of, rebuild
    from spark_jobs.identifiers import history_table_name
    from spark_jobs.session import connect

    config = load_config()
    spark = connect(config, "cdclake-history-rebuild")
    try:
        versions = rebuild(spark, config, args.table)
    finally:
        spark.stop()
    print(f"{history_table_name(current_of(args.table))}: {versions} versions rebuilt from cdc.changelog")
    return 0
