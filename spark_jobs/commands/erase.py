"""``cdclake erase``: erase one key of one source table from every layer of the lake, on the Spark
Connect server (the same code as the ``cdclake_erase`` DAG's job, ``spark_jobs.jobs.erase``)."""

from __future__ import annotations

import argparse
import datetime as dt
import json

from cdclake.config import load_config

EXAMPLE = """'{"id": 42}'"""


def key_object(text: str) -> dict[str, object]:
    """``--key``: a JSON object of the key's columns and values."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"--key is not JSON ({exc.msg}): give e.g. {EXAMPLE}") from None
    if not isinstance(value, dict) or not value:
        raise argparse.ArgumentTypeError(f"--key must be a JSON object of the key columns, e.g. {EXAMPLE}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", required=True,
                        help="the source table (db.table or db.schema.table) or current.<name>")
    parser.add_argument("--key", required=True, type=key_object,
                        help="the key's columns and values as JSON, e.g. '{\"id\": 42}'")
    parser.add_argument("--topic", help="only the changes that came from this topic")
    parser.add_argument("--reason", help="why (recorded in ops.erasures; required unless --dry-run)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="list what would go, erase nothing")
    mode.add_argument("--yes", action="store_true",
                      help="confirm: time travel to before the erasure is lost for the tables it touches")


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("erase", help="erase one key of one table everywhere in the lake (GDPR Art. 17)")
    add_arguments(p)
    p.set_defaults(handler=_erase)


def _erase(args: argparse.Namespace) -> int:
    # pyspark and the Spark code: imported when the command runs (see spark_jobs.commands)
    from spark_jobs.jobs.erase import run
    from spark_jobs.session import connect

    run_id = "manual__" + dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    config = load_config()
    spark = connect(config, "cdclake-erase")
    try:
        return run(spark, config, args, run_id)  # ErasureError: exit 2
    finally:
        spark.stop()
