"""The ``cdclake`` command. Each sub-command is a thin shell over a module of its own."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from cdclake import masking
from cdclake.exceptions import CdclakeError

Handler = Callable[[argparse.Namespace], int]


def _formats(args: argparse.Namespace) -> int:
    from cdclake.formats import registry

    for format_id, decoder in registry().items():
        print(f"{format_id:<20} {decoder.description}")
    return 0


def _decode(args: argparse.Namespace) -> int:
    from cdclake.decode_cli import run_decode

    return run_decode(args.files, args.format, args.key_file, args.schema_file, args.timezone,
                      sys.stdout, sys.stderr, whole_file=args.whole_file, flattened=args.flattened,
                      source_table=args.source_table, binary_encoding=args.binary_encoding,
                      update_images_swapped=args.update_images_swapped,
                      produced_timezone=args.produced_timezone,
                      unavailable_value_placeholder=args.unavailable_value_placeholder)


def _kafka(args: argparse.Namespace) -> int:
    from cdclake import kafka_broker

    return kafka_broker.command(args.action, port=args.port)


def _spark(args: argparse.Namespace) -> int:
    from cdclake import spark_cli

    return spark_cli.command(args.action, port=args.port, host=args.host)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cdclake",
        description="Hourly CDC lakehouse: Kafka -> raw -> Iceberg changelog -> current-state tables.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = commands.add_parser("formats", help="list the CDC message formats cdclake decodes")
    p.set_defaults(handler=_formats)

    p = commands.add_parser("decode", help="decode captured messages into canonical change rows (JSON lines)")
    p.add_argument("--format", default="auto", help="format id (see `cdclake formats`) or auto")
    p.add_argument("--key-file", help="Kafka keys, one line per message of FILE (Debezium key columns)")
    p.add_argument("--schema-file", help="vendor Avro schema file (drs_avro)")
    p.add_argument("--timezone", default="UTC", help="source time zone of zone-less vendor timestamps")
    p.add_argument("--produced-timezone",
                   help="ogg_json: zone of current_ts (the replicat host), when not --timezone")
    p.add_argument("--flattened", action="store_true",
                   help="debezium_json: Debezium ExtractNewRecordState output (tombstones are deletes)")
    p.add_argument("--source-table", help="database.table (or database.schema.table) of messages "
                                          "that name none (Flink SQL canal-json/debezium-json "
                                          "sinks, Debezium flattened rows and tombstones)")
    p.add_argument("--binary-encoding", choices=["latin1", "hex", "base64", "byte_list"],
                   help="Canal family: how binary columns travel, when not the format's own "
                        "(hex: Tencent Cloud DTS Canal JSON, not-fully-compatible mode)")
    p.add_argument("--update-images-swapped", action="store_true",
                   help="Canal family: UPDATE 'data' is the before image and 'old' the after "
                        "image (Alibaba Cloud DTS Canal Json, instances created before 2022-03-20)")
    p.add_argument("--unavailable-value-placeholder", metavar="TEXT",
                   help="debezium_json: the connector's unavailable.value.placeholder, when not "
                        "Debezium's default (hex:... for bytes)")
    p.add_argument("--whole-file", action="store_true",
                   help="each FILE is one message (pretty-printed JSON) instead of JSON lines")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(handler=_decode)

    p = commands.add_parser("kafka", help="the embedded Apache Kafka broker (KRaft)")
    p.add_argument("action", choices=["start", "stop", "status"])
    p.add_argument("--port", type=int, help="listener port (default from configuration, 9092)")
    p.set_defaults(handler=_kafka)

    p = commands.add_parser("spark", help="the Spark Connect server every job runs on")
    p.add_argument("action", choices=["start", "stop", "status"])
    p.add_argument("--port", type=int, help="listener port (default from configuration, 15002)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.set_defaults(handler=_spark)

    for module in COMMAND_MODULES:
        importlib.import_module(module).register(commands)
    return parser


# Modules that contribute sub-commands: each has ``register(commands)`` adding its parser(s). The
# ones that run on Spark live with the jobs (spark_jobs.commands) and are found by name: spark_jobs
# depends on this package, never the other way round.
COMMAND_MODULES = (
    "cdclake.landing_cli",           # produce
    "spark_jobs.commands.land",      # land
    "spark_jobs.commands.validate",  # validate
    "cdclake.run_cli",               # run
    "cdclake.quarantine_cli",        # quarantine summary|replay
    "cdclake.query",                 # query
    "cdclake.hours_cli",             # hours
    "cdclake.tables_cli",            # tables
    "spark_jobs.commands.history",   # history rebuild
    "spark_jobs.commands.sql",       # sql
    "spark_jobs.commands.erase",     # erase
    "cdclake.demo",                  # demo
    "cdclake.airflow_cli",           # airflow start|stop|status
    "cdclake.cluster.cli",           # cluster up|down|status|env|exec
)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    masking.install_log_filter()
    try:
        return int(args.handler(args) or 0)
    except CdclakeError as exc:
        print(masking.mask(f"cdclake: error: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `cdclake decode ... | head`: the reader left; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception:  # a traceback may quote a setting: masked like every other error
        print(masking.mask(traceback.format_exc()), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
