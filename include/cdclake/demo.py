"""``cdclake demo``: the whole story on the embedded default, from an empty state folder.

Starts the Kafka broker and the Spark Connect server, produces three hours of realistic
mixed-format traffic (every seed format: Huawei DRS JSON / JSON-C / generic / MongoDB, Alibaba
DataWorks and DTS Avro, OceanBase OMS Default / Extended / Canal / DataWorks 2.0 / SharePlex,
CloudCanal, Canal, Debezium; plus bad messages), runs the hourly DAG for each hour (``airflow dags
test``, like ``cdclake run``), and prints the current-state tables, the quarantine summary, the
gate results and where the Data Docs and the Airflow UI are.

The messages are the manuals' examples kept as test fixtures (``tests/fixtures``; an installed
wheel carries the demo's scenarios), replayed with Kafka timestamps inside the demo hours.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import os
import shutil
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cdclake.exceptions import CdclakeError
from cdclake.paths import bundled_dir, state_home

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

FIXTURES = bundled_dir("demo")
DEMO_HOURS = 3

# topic -> (format, [fixture scenarios in order]); each scenario's messages are spread over the
# demo hours in their order, so updates and deletes follow the inserts they change.
WORKLOAD: dict[str, tuple[str, list[str]]] = {
    # Chosen so no two sources share a table name (the manuals reuse names like `database.table`
    # with different column types, which compaction rightly refuses to merge into one table).
    "demo.drs": ("drs_json", ["drs_json/html_escapes_insert", "drs_json/manual_update_en",
                              "drs_json/ddl_and_keyless", "drs_json/delete_in_old"]),
    "demo.drs_c": ("drs_json_c", ["drs_json_c/update_timestamp_text"]),
    "demo.drs_pg": ("drs_json_generic", ["drs_json_generic/manual_gaussdb_update_keyless"]),
    "demo.dds": ("drs_mongo", ["drs_mongo/manual_examples"]),
    "demo.dataworks": ("dataworks_json", ["dataworks_json/manual_insert_no_pk",
                                          "dataworks_json/manual_update_two_messages",
                                          "dataworks_json/manual_delete",
                                          "dataworks_json/manual_heartbeat"]),
    "demo.dts": ("dts_avro", ["dts_avro/insert", "dts_avro/update", "dts_avro/ddl", "dts_avro/delete",
                              "dts_avro/transaction_and_heartbeat"]),
    "demo.oms": ("oms_default", ["oms_default/manual_examples_corrected"]),
    "demo.oms_ext": ("oms_default_ext", ["oms_default_ext/manual_examples_corrected"]),
    "demo.oms_canal": ("oms_canal", ["oms_canal/typed_values_and_nulls"]),
    "demo.oms_dataworks": ("oms_dataworks", ["oms_dataworks/manual_examples_corrected",
                                             "oms_dataworks/manual_heartbeat_corrected"]),
    "demo.shareplex": ("oms_shareplex", ["oms_shareplex/manual_examples"]),
    "demo.cloudcanal": ("cloudcanal_json", ["cloudcanal_json/manual_ddl_corrected",
                                            "cloudcanal_json/manual_dml_corrected"]),
    "demo.canal": ("auto", ["canal_json/insert_update_delete_batch", "canal_json/key_change_and_null_old",
                            "canal_json/manual_cloudcanal_dml_verbatim"]),
    "demo.debezium": ("debezium_json", ["debezium_json/mysql_schema_include",
                                        "debezium_json/tombstone_and_heartbeat"]),
}


# The manuals reuse a few source tables (test01.test in DRS JSON and JSON-C, shop.orders in DTS
# and Canal): those topics keep their tables apart, as two regions of one database would.
TABLE_PREFIXES = {"demo.drs_c": "drs_c", "demo.dts": "dts"}
# Topics whose tables also keep an SCD2 history (history.<db>__<table>): every version of a row.
HISTORY_TOPICS = ("demo.debezium",)


@dataclass(frozen=True)
class DemoMessage:
    topic: str
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


def demo_hours(now: dt.datetime | None = None) -> list[dt.datetime]:
    """The last :data:`DEMO_HOURS` complete hours before ``now`` (UTC, naive)."""
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(tzinfo=None)
    top = moment.replace(minute=0, second=0, microsecond=0)
    return [top - dt.timedelta(hours=DEMO_HOURS - i) for i in range(DEMO_HOURS)]


def _scenario_messages(scenario: str) -> list[tuple[bytes | None, bytes | None]]:
    folder = FIXTURES / scenario
    keys: list[bytes | None] = []
    if (folder / "keys.jsonl").exists():
        keys = [None if line.strip() == b"null" else line
                for line in (folder / "keys.jsonl").read_bytes().splitlines() if line.strip()]
    if (folder / "input.raw").exists():
        return [(None, (folder / "input.raw").read_bytes())]
    if (folder / "input.bin").exists():
        return [(None, (folder / "input.bin").read_bytes())]
    if (folder / "input.b64l").exists():
        lines = [line for line in (folder / "input.b64l").read_bytes().splitlines() if line.strip()]
        return [(None, base64.b64decode(line)) for line in lines]
    lines = [line for line in (folder / "input.jsonl").read_bytes().splitlines()
             if line.strip() and not line.lstrip().startswith(b"#")]
    return [(keys[i] if i < len(keys) else None, line) for i, line in enumerate(lines)]


def workload(hours: list[dt.datetime], topics: list[str] | None = None) -> list[DemoMessage]:
    """Every topic's messages spread evenly over ``hours``, in order, plus a few bad messages."""
    out: list[DemoMessage] = []
    for topic, (_format, scenarios) in WORKLOAD.items():
        if topics is not None and topic not in topics:
            continue
        messages = [m for s in scenarios for m in _scenario_messages(s)]
        for i, (key, value) in enumerate(messages):
            hour = hours[min(i * len(hours) // max(len(messages), 1), len(hours) - 1)]
            at = hour + dt.timedelta(minutes=5 + (i * 7) % 50, seconds=i % 60)
            out.append(DemoMessage(topic, key, value, _ms(at)))
    bad = [b'{"type": "INSERT", "data": [ {"id": "1"} ', b'{"hello": "not a CDC message"}']
    for i, value in enumerate(bad if topics is None or "demo.canal" in topics else []):
        out.append(DemoMessage("demo.canal", None, value, _ms(hours[1] + dt.timedelta(minutes=30 + i))))
    return out


def _ms(moment: dt.datetime) -> int:
    return int(moment.replace(tzinfo=dt.UTC).timestamp() * 1000)


def demo_config(port: int, topics: list[str] | None = None) -> str:
    """The demo's pipeline.yml: one topic per source, thresholds that tolerate the bad examples."""
    lines = ["kafka:", f"  port: {port}", "topics:"]
    for topic, (fmt, _scenarios) in WORKLOAD.items():
        if topics is not None and topic not in topics:
            continue
        lines += [f"  - name: {topic}", f"    format: {fmt}"]
        if fmt == "drs_json_c":
            lines.append("    source_timezone: Asia/Shanghai")
        if topic in TABLE_PREFIXES:
            lines.append(f"    table_prefix: {TABLE_PREFIXES[topic]}")
        if topic in HISTORY_TOPICS:
            lines.append("    history: true")
        if topic == "demo.canal":
            # The manual's CloudCanal "Canal Json" example is not valid JSON and two more bad
            # messages are added on purpose: in a quiet hour they are most of the topic's traffic.
            lines.append("    quarantine_rate_max: 0.9")
    lines += ["gates:", "  quarantine_rate_max: 0.05", ""]
    return "\n".join(lines)


def _free_port(preferred: int) -> int:
    with socket.socket() as sock:
        if sock.connect_ex(("127.0.0.1", preferred)) != 0:
            return preferred
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def produce(bootstrap: str, messages: list[DemoMessage]) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = sorted({m.topic for m in messages})
    existing = set(admin.list_topics(timeout=10).topics)
    new = [NewTopic(t, 1, 1) for t in topics if t not in existing]
    if new:
        for future in admin.create_topics(new).values():
            future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for m in messages:
        producer.produce(m.topic, key=m.key, value=m.value, timestamp=m.timestamp_ms)
    if producer.flush(30) != 0:
        raise RuntimeError("not every demo message was delivered to Kafka")


# Written into every folder the demo creates: only such a folder is wiped by the next demo.
DEMO_MARKER = ".cdclake-demo"


def refuse_foreign_folder(home: Path) -> None:
    """The demo wipes its folder first: refuse one that holds anything the demo did not make."""
    if home.exists() and not home.is_dir():
        raise CdclakeError(f"{home} is a file, not a folder; choose another --home")
    if home.is_dir() and any(home.iterdir()) and not (home / DEMO_MARKER).exists():
        raise CdclakeError(f"refusing to use {home} for the demo: it is not empty and was not created "
                           f"by `cdclake demo` (no {DEMO_MARKER} in it), and the demo wipes its folder "
                           "first. Choose a new or empty folder with --home.")


def prepare_home(home: Path) -> None:
    """An empty private folder for the demo: a previous demo's is stopped and wiped first."""
    from cdclake import kafka_broker, spark_server

    refuse_foreign_folder(home)
    if (home / DEMO_MARKER).exists():
        kafka_broker.stop(home)
        spark_server.stop(home)
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    home.chmod(0o700)
    (home / DEMO_MARKER).write_text("created by cdclake demo; the next demo here wipes this folder\n")


def run_demo(home: Path, out: TextIO | None = None, run_hours: int = DEMO_HOURS) -> int:
    """The demo in ``home``: every demo hour's traffic produced, the first ``run_hours`` of them run."""
    from cdclake import kafka_broker, spark_server

    out = sys.stdout if out is None else out  # as it is when called, not at import

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    prepare_home(home)
    port = _free_port(int(os.environ.get("CDCLAKE_KAFKA_PORT", "9092")))
    spark_port = _free_port(int(os.environ.get("CDCLAKE_SPARK_PORT", "15002")))
    (home / "pipeline.yml").write_text(demo_config(port))
    os.environ.update(CDCLAKE_HOME=str(home), CDCLAKE_CONFIG=str(home / "pipeline.yml"),
                      CDCLAKE_KAFKA_PORT=str(port), CDCLAKE_SPARK_PORT=str(spark_port))
    for remote in ("CDCLAKE_KAFKA_BOOTSTRAP", "CDCLAKE_SPARK_REMOTE"):
        os.environ.pop(remote, None)
    from cdclake.config import load_config
    from cdclake.run_cli import run_range

    config = load_config()
    say(f"== cdclake demo in {home}")
    bootstrap = kafka_broker.start(port, home)
    say(f"Kafka broker (KRaft) listening on {bootstrap}")
    say(f"Spark Connect server listening on {spark_server.start(config)}")
    hours = demo_hours()
    messages = workload(hours)
    produce(bootstrap, messages)
    say(f"produced {len(messages)} messages to {len(WORKLOAD)} topics over hours "
        f"{hours[0]:%Y-%m-%d %H:00} .. {hours[-1]:%H:00} UTC")
    ran = hours[:run_hours]
    say("running the hourly DAG for each hour (airflow dags test) ..." if ran == hours else
        f"running the hourly DAG for the first {len(ran)} hour(s) (airflow dags test) ...")
    began = time.monotonic()
    run_range(config, ran[0], ran[-1] + dt.timedelta(hours=1))
    say(f"{len(ran)} hour(s) ran in {time.monotonic() - began:.0f} s")
    print_report(config, say)
    return 0


def print_report(config: PipelineConfig, say: Callable[[str], None]) -> None:
    from cdclake.catalog import open_catalog
    from cdclake.query import run_query, write_result

    catalog = open_catalog(config)
    tables = sorted(t for _ns, t in catalog.list_tables("current") if not t.endswith("__tombstones"))
    say(f"\n== current-state tables ({len(tables)})")
    for table in tables:
        _print_table(config, say, f"current.{table}", "row(s)", ("_cdc_op", "_cdc_event_time"))
    histories = sorted(t for _ns, t in catalog.list_tables("history")) \
        if ("history",) in catalog.list_namespaces() else []
    say(f"\n== SCD2 history tables ({len(histories)}): every version of the rows of "
        f"{', '.join(HISTORY_TOPICS)}")
    for table in histories:
        _print_table(config, say, f"history.{table}", "version(s)",
                     ("_cdc_op", "_cdc_valid_from", "_cdc_valid_to", "_cdc_is_current"))
    say("\n== quarantine (messages that could not be decoded, with their reasons)")
    columns, rows = run_query(config, "SELECT kafka_topic, reason_code, count(*) AS messages "
                                      "FROM cdc.quarantine GROUP BY 1, 2 ORDER BY 1, 2")
    write_result(columns, rows, "table", sys.stdout)
    columns, rows = run_query(config, "SELECT stage, count(*) AS expectations, "
                                      "sum(CASE WHEN success THEN 1 ELSE 0 END) AS passed "
                                      "FROM ops.gate_results GROUP BY 1 ORDER BY 1")
    say("\n== quality gates (ops.gate_results)")
    write_result(columns, rows, "table", sys.stdout)
    docs = Path(config.home) / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    say(f"\nData Docs: {docs}")
    say("Airflow UI: `cdclake airflow start` (scheduler and UI, low parallelism) then "
        "http://127.0.0.1:8080, user admin, password from `cdclake airflow password`; stop it with "
        "`cdclake airflow stop`")
    say(f"Query the tables: CDCLAKE_HOME={config.home} CDCLAKE_CONFIG={config.home}/pipeline.yml "
        "cdclake query \"SELECT * FROM current.<db>__<table>\"")
    say(f"Spark SQL (time travel, branches, metadata tables): CDCLAKE_HOME={config.home} "
        f"cdclake sql \"SELECT * FROM current.<db>__<table>.snapshots\", or "
        f"pyspark --remote {config.spark_remote}")
    say(f"Stop the demo's services: CDCLAKE_HOME={config.home} cdclake kafka stop; "
        f"CDCLAKE_HOME={config.home} cdclake spark stop")


def _print_table(config: PipelineConfig, say: Callable[[str], None], table: str, unit: str,
                 shown_meta: tuple[str, ...]) -> None:
    """A table's row count and first rows: a few data columns and ``shown_meta``."""
    from cdclake.query import run_query, write_result

    order = " ORDER BY _cdc_key, _cdc_valid_from" if table.startswith("history.") else ""
    columns, rows = run_query(config, f"SELECT * FROM {table}{order}")
    say(f"\n-- {table}: {len(rows)} {unit}")
    visible = [i for i, c in enumerate(columns) if not c.startswith("_cdc_")][:8]
    visible += [columns.index(c) for c in shown_meta if c in columns]
    write_result([columns[i] for i in visible], [tuple(r[i] for i in visible) for r in rows[:5]],
                 "table", sys.stdout)


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("demo", help="the whole story on the embedded default, from an empty state")
    p.add_argument("--home", type=Path,
                   help="demo state folder (default <state folder>/demo); wiped first, so it must be "
                        "new, empty or a previous demo's")
    p.add_argument("--hours", type=int, choices=range(1, DEMO_HOURS + 1), default=DEMO_HOURS, metavar="N",
                   help=f"run only the first N (1-{DEMO_HOURS}) of the {DEMO_HOURS} demo hours (the traffic "
                        f"of all {DEMO_HOURS} is produced; default {DEMO_HOURS})")
    p.set_defaults(handler=lambda args: run_demo(args.home or state_home() / "demo", run_hours=args.hours))
