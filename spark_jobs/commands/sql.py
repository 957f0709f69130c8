"""``cdclake sql "SQL"``: Spark SQL on the Spark Connect server (``cdclake spark start``).

Everything Spark and Iceberg read: ``main`` and ``branch_audit_<hour>`` of any table, time travel
(``FOR VERSION AS OF`` / ``FOR TIMESTAMP AS OF``) and metadata tables (``current.t.snapshots``,
``.history``, ``.refs``). Output as ``cdclake query`` prints it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cdclake.config import load_config
from cdclake.query import QueryError, write_result


def run_sql(config: Any, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``sql`` in a Connect session of its own; returns column names and rows."""
    # pyspark: imported when the command runs (see spark_jobs.commands)
    from pyspark.errors import PySparkException

    from spark_jobs.session import connect

    spark = connect(config, "cdclake-sql")
    try:
        frame = spark.sql(sql)
        rows = [tuple(row) for row in frame.collect()]
        return list(frame.columns), rows
    except PySparkException as exc:
        raise QueryError(str(exc).strip().splitlines()[0]) from None
    finally:
        spark.stop()


def _command(args: argparse.Namespace) -> int:
    columns, rows = run_sql(load_config(), args.sql)
    write_result(columns, rows, args.format, sys.stdout)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("sql", help="run Spark SQL on the Spark Connect server (time travel, "
                                        "branches, metadata tables)")
    p.add_argument("sql", metavar="SQL")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(handler=_command)
