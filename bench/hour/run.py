"""Benchmark: the hourly DAG's cost per hour through ``cdclake run`` on the Spark Connect server.

    PYTHONPATH=. .venv/bin/python bench/hour/run.py [--hours 24] [--only empty|demo|tables|big] [--keep]
        [--histogram] [--tables 200] [--changes 1000000 --rows 10000000]

In a private state folder (own broker, own Spark Connect server):
  1. **empty**: ``--hours`` hours of the demo's topics with no message in them: the pipeline's
     fixed cost (plan, land, three gates, normalize, compact, publish);
  2. **demo**: ``--hours`` hours carrying the demo's traffic (every seed format, good and bad
     messages, 17 source tables), the demo's three hours repeated.
Each hour is one ``airflow dags test`` (as ``cdclake run`` does it). Prints the per-hour median
and each task's median duration (from Airflow's task instances). The server is started (and
warmed by one hour, not counted) before the timed hours. Two more parts run alone, on Canal JSON
topics of their own (``--only``):
  3. **tables**: an hour of ``--tables`` tables x 5 changes against an hour of 10 tables x
     (``--tables`` / 2) changes (the same number of changes), on tables the warm-up hour created;
  4. **big**: one hour of ``--changes`` changes (70% updates, 10% deletes, 20% inserts, ten rows a
     message) over 20 tables seeded with ``--rows`` rows in all, against an empty hour before it:
     the end-to-end rate after the empty hour's fixed cost.
Not a test: figures go in bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

# The warm-up hour; the timed hours follow it one after another (landing refuses a hole).
WARM_HOUR = dt.datetime(2024, 12, 31, 23)


def _hours(start: dt.datetime, count: int) -> list[dt.datetime]:
    return [start + dt.timedelta(hours=i) for i in range(count)]


def _run_hours(config: PipelineConfig, hours: list[dt.datetime]) -> list[float]:
    from cdclake.airflow_env import airflow_home
    from cdclake.run_cli import run_hour

    log_dir = airflow_home(config) / "run-logs"
    log_dir.mkdir(exist_ok=True)
    seconds = []
    for hour in hours:
        began = time.monotonic()
        run_hour(config, hour, log_dir)
        seconds.append(time.monotonic() - began)
        print(f"  {hour:%Y-%m-%dT%H}: {seconds[-1]:.1f} s", flush=True)
    return seconds


def _task_medians(config: PipelineConfig, hours: list[dt.datetime]) -> dict[str, float]:
    """Median duration of each task over the DAG runs of ``hours`` (Airflow's task instances)."""
    from cdclake.airflow_env import airflow_home

    ends = {(h + dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S") for h in hours}
    with sqlite3.connect(airflow_home(config) / "airflow.db") as db:
        rows = db.execute(
            "SELECT ti.task_id, ti.duration, dr.data_interval_end FROM task_instance ti "
            "JOIN dag_run dr ON dr.run_id = ti.run_id AND dr.dag_id = ti.dag_id "
            "WHERE ti.dag_id = 'cdclake_hourly' AND ti.duration IS NOT NULL").fetchall()
    by_task: dict[str, list[float]] = {}
    for task_id, duration, interval_end in rows:
        if str(interval_end)[:19] in ends:
            by_task.setdefault(task_id, []).append(float(duration))
    return {task: statistics.median(values) for task, values in by_task.items()}


def heap_used_mb(pid: int) -> float:
    """The server driver's live heap after a full collection (``jcmd GC.run``, ``GC.heap_info``).

    Collected twice, a few seconds apart: the first collection only hands Spark's context
    cleaner the broadcasts, shuffles and cached blocks nothing references any more, and the
    cleaner then drops them from the block manager, for the second to free.
    """
    import re
    import subprocess

    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, check=True)
    time.sleep(5)
    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, check=True)
    info = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True,
                          check=True).stdout
    used = [int(k) for k in re.findall(r"used (\d+)K", info)]
    return sum(used[:2]) / 1024 if len(used) >= 2 else float("nan")  # young + old generation


def heap_histogram(pid: int, top: int = 15) -> str:
    """The classes holding most of the driver's live heap (``jcmd GC.class_histogram``: a full
    collection first, so only what is still referenced counts)."""
    import subprocess

    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, check=True)
    time.sleep(5)  # the context cleaner's turn (see heap_used_mb)
    lines = subprocess.run(["jcmd", str(pid), "GC.class_histogram"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.lstrip().startswith("num"))
    return "\n".join(lines[head:head + 2 + top])


def _tables_part(config: PipelineConfig, bootstrap: str, tables: int) -> None:
    """``tables`` tables x 5 changes in one hour, 10 tables x ``tables // 2`` in the next."""
    from bench.hour import canal_traffic as canal
    from cdclake import demo

    few_changes = tables * 5 // 10
    demo.produce(bootstrap, canal.created("bench.many", "many", tables, 5, WARM_HOUR)
                 + canal.created("bench.few", "few", 10, few_changes, WARM_HOUR))
    print(f"warm-up hour: creates {tables} + 10 tables (not counted)")
    _run_hours(config, [WARM_HOUR])
    many, few = WARM_HOUR + dt.timedelta(hours=1), WARM_HOUR + dt.timedelta(hours=2)
    demo.produce(bootstrap, canal.changed("bench.many", "many", tables, 5, many)
                 + canal.changed("bench.few", "few", 10, few_changes, few))
    [many_s] = _run_hours(config, [many])
    _report(f"{tables} tables x 5 changes", [many_s], _task_medians(config, [many]))
    [few_s] = _run_hours(config, [few])
    _report(f"10 tables x {few_changes} changes", [few_s], _task_medians(config, [few]))
    print(f"\n{tables}-table hour / 10-table hour: {many_s / few_s:.2f}")


def _big_part(config: PipelineConfig, bootstrap: str, changes: int, rows: int) -> None:
    """An empty hour, then one of ``changes`` changes over 20 tables seeded with ``rows`` rows."""
    from bench.hour import canal_traffic as canal
    from cdclake import demo

    tables = 20
    _seed_big(config, tables, rows // tables)
    print("warm-up hour: empty (not counted)")
    _run_hours(config, [WARM_HOUR])
    empty, big = WARM_HOUR + dt.timedelta(hours=1), WARM_HOUR + dt.timedelta(hours=2)
    [empty_s] = _run_hours(config, [empty])
    _report("empty hour", [empty_s], _task_medians(config, [empty]))
    began = time.monotonic()
    messages = list(canal.big_hour("bench.big", "big", tables, rows // tables, changes, big))
    demo.produce(bootstrap, messages)
    print(f"produced {len(messages):,} messages ({changes:,} changes) in {time.monotonic() - began:.1f} s")
    [big_s] = _run_hours(config, [big])
    _report(f"{changes:,} changes into {rows:,} rows", [big_s], _task_medians(config, [big]))
    print(f"\nend to end after the empty hour: {changes / max(big_s - empty_s, 1e-9):,.0f} changes/s "
          f"({big_s:.1f} s - {empty_s:.1f} s)")


def _seed_big(config: PipelineConfig, tables: int, rows: int) -> None:
    """Current tables as earlier hours would have left them: ``rows`` live rows each, older than
    any change of the timed hour (written directly, not through the DAG)."""
    from pyspark.sql import functions as F

    from bench.hour.canal_traffic import TABLE_COLUMNS
    from spark_jobs.compaction.layout import CompactionOptions
    from spark_jobs.compaction.schema import ensure_current_tables, evolve_schema
    from spark_jobs.session import connect
    from spark_jobs.tables import ensure_tables

    began = time.monotonic()
    spark = connect(config, "cdclake-bench-hour-seed")
    try:
        ensure_tables(spark)
        for t in range(tables):
            table = f"current.big__t{t}"
            ensure_current_tables(spark, table, f"big.t{t}", False, CompactionOptions(), "bench.big")
            evolve_schema(spark, table, TABLE_COLUMNS)
            key = F.col("id").cast("string")
            spark.range(rows).select(
                F.col("id"), F.concat(F.lit("name-"), key, F.lit("-0")).alias("name"),
                (F.col("id") % 1000).cast("decimal(12,2)").alias("amount"), F.lit(0).alias("qty"),
                F.to_json(F.array(key)).alias("_cdc_key"), F.lit("INSERT").alias("_cdc_op"),
                F.lit(dt.datetime(2024, 1, 1)).cast("timestamp").alias("_cdc_event_time"),
                F.concat(F.lit("V"), F.lpad(key, 20, "0"), F.lit("||0000000000|"), F.lpad(key, 20, "0"),
                         F.lit("|0000000000")).alias("_cdc_order_key"),
                F.lit("bench.big").alias("_cdc_kafka_topic"), F.lit(0).alias("_cdc_kafka_partition"),
                F.col("id").alias("_cdc_kafka_offset"), F.lit("seed").alias("_cdc_run_id"),
            ).writeTo(table).append()
    finally:
        spark.stop()
    print(f"seeded {tables} tables x {rows:,} rows in {time.monotonic() - began:.1f} s")


def _config_text(kafka_port: int, only: str | None) -> str:
    from cdclake import demo

    if only == "tables":
        topics = ["bench.many", "bench.few"]
    elif only == "big":
        topics = ["bench.big"]
    else:
        return demo.demo_config(kafka_port)
    lines = ["kafka:", f"  port: {kafka_port}", "topics:"]
    for topic in topics:
        lines += [f"  - name: {topic}", "    format: canal_json"]
    return "\n".join([*lines, ""])


def _report(name: str, seconds: list[float], tasks: dict[str, float]) -> None:
    order = ["plan", "land", "validate_raw", "normalize", "validate_changelog", "compact",
             "validate_current", "publish"]
    print(f"\n== {name}: {len(seconds)} hours, median {statistics.median(seconds):.1f} s an hour "
          f"(min {min(seconds):.1f}, max {max(seconds):.1f}, total {sum(seconds):.0f} s)")
    print("   task medians: " + ", ".join(f"{t} {tasks[t]:.1f} s" for t in order if t in tasks))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--only", choices=["empty", "demo", "tables", "big"])
    parser.add_argument("--tables", type=int, default=200,
                        help="tables of the many-tables hour (--only tables)")
    parser.add_argument("--changes", type=int, default=1_000_000, help="changes of the big hour (--only big)")
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows the big hour's tables hold")
    parser.add_argument("--keep", action="store_true", help="keep the state folder (printed)")
    parser.add_argument("--histogram", action="store_true",
                        help="print the classes holding most of the server's live heap at the end")
    args = parser.parse_args(argv)

    home = Path(tempfile.mkdtemp(prefix="cdclake-bench-hour-"))
    from cdclake import demo, kafka_broker, spark_server

    kafka_port = kafka_broker.free_port()
    os.environ.update(CDCLAKE_HOME=str(home), CDCLAKE_CONFIG=str(home / "pipeline.yml"),
                      CDCLAKE_KAFKA_PORT=str(kafka_port), CDCLAKE_SPARK_PORT=str(kafka_broker.free_port()))
    for remote in ("CDCLAKE_KAFKA_BOOTSTRAP", "CDCLAKE_SPARK_REMOTE"):
        os.environ.pop(remote, None)
    (home / "pipeline.yml").write_text(_config_text(kafka_port, args.only))
    from cdclake.airflow_env import ensure_airflow_db
    from cdclake.config import load_config

    config = load_config()
    bootstrap = kafka_broker.start(kafka_port, home)
    try:
        began = time.monotonic()
        spark_server.start(config)
        print(f"Spark Connect server up in {time.monotonic() - began:.1f} s")
        ensure_airflow_db(config)
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(t.name, 1, 1) for t in config.topics]).values():
            future.result()
        if args.only == "tables":
            _tables_part(config, bootstrap, args.tables)
            return 0
        if args.only == "big":
            _big_part(config, bootstrap, args.changes, args.rows)
            return 0
        print("warming the server with one empty hour (not counted)")
        _run_hours(config, [WARM_HOUR])
        start = WARM_HOUR + dt.timedelta(hours=1)
        server = spark_server.status(home)
        pid = server[0] if server else 0
        ran = 1
        print(f"server heap after {ran} hour: {heap_used_mb(pid):.0f} MB live")
        if args.only in (None, "empty"):
            hours = _hours(start, args.hours)
            start += dt.timedelta(hours=len(hours))
            print(f"\n{len(hours)} empty hours:")
            _report("empty hours", _run_hours(config, hours), _task_medians(config, hours))
            ran += len(hours)
            print(f"server heap after {ran} hours: {heap_used_mb(pid):.0f} MB live")
        if args.only in (None, "demo"):
            hours = _hours(start, args.hours)
            for block in range(0, len(hours), demo.DEMO_HOURS):
                demo.produce(bootstrap, demo.workload(hours[block:block + demo.DEMO_HOURS]))
            print(f"\n{len(hours)} demo-traffic hours:")
            _report("demo-traffic hours", _run_hours(config, hours), _task_medians(config, hours))
            ran += len(hours)
            print(f"server heap after {ran} hours: {heap_used_mb(pid):.0f} MB live")
        if args.histogram:
            print(heap_histogram(pid))
    finally:
        spark_server.stop(home)
        kafka_broker.stop(home)
        if args.keep:
            print(f"state kept in {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
