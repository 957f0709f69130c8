"""Benchmark: normalize job vs. a bare Spark JSON parse of the same raw rows.

    .venv/bin/python bench/normalize/run.py [--messages 1000000] [--repeat 1] [--phases] [--floor]
        [--write-modes] [--keep]

Generates N raw messages (≈1 KB each, a mix of formats taken from the fixtures: copies of one
template per format, padded) into ``raw.kafka_messages`` for one hour of a private state folder, then
times, on the same rows and in the same run:
  1. the normalize job (decode, pair, changelog + quarantine + stats writes);
  2. a bare parse: ``from_json(value, map<string,string>)`` plus a count.
Prints messages/s for both and their ratio (normalize / bare). With ``--repeat N`` the two are
timed alternately N times and the best time of each is used (the machine is shared: another
process's load slows whichever run it overlaps); the load average is printed with each run.
Not a test: figures go in bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

ROOT = Path(__file__).resolve().parents[2]
HOUR = dt.datetime(2024, 6, 1, 12)

# (topic, format, fixture file, line index) — the mix: one template per format family.
TEMPLATES = [
    ("bench.canal", "canal_json", "canal_json/insert_update_delete_batch/input.jsonl", 0),
    ("bench.drs", "drs_json", "drs_json/manual_update_en/input.jsonl", 0),
    ("bench.dataworks", "dataworks_json", "dataworks_json/manual_update_one_message/input.jsonl", 0),
    ("bench.debezium", "debezium_json", "debezium_json/schemaless_mysql/input.jsonl", 0),
    ("bench.oms", "oms_default", "oms_default/manual_examples_corrected/input.jsonl", 0),
    ("bench.cloudcanal", "cloudcanal_json", "cloudcanal_json/manual_dml_corrected/input.jsonl", 0),
    ("bench.mongo", "drs_mongo", "drs_mongo/manual_examples/input.jsonl", 0),
    ("bench.maxwell", "maxwell_json", "maxwell_json/row_events/input.jsonl", 0),
]


def template(fixture: str, index: int) -> str:
    """A fixture's message (its ``index``-th line) as compact JSON."""
    lines = [line for line in (ROOT / "tests" / "fixtures" / fixture).read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    return json.dumps(json.loads(lines[index]), separators=(",", ":"), ensure_ascii=False)


def padded_template(fixture: str, index: int) -> str:
    """:func:`template` padded to about 1 KB with an extra top-level field that decoders ignore
    (``bench_pad``); a longer message is left as it is."""
    text = template(fixture, index)
    pad = max(0, 1000 - len(text.encode()))
    return text[:-1] + ',"bench_pad":"' + "x" * pad + '"}'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1,
                        help="time bare parse and normalize alternately this many times; best of each")
    parser.add_argument("--keep", action="store_true", help="keep the state folder")
    parser.add_argument("--phases", action="store_true",
                        help="also time the Python hand-off alone and the decoders alone (see below)")
    parser.add_argument("--floor", action="store_true",
                        help="also time the bare parse plus one Iceberg write of its maps (see below)")
    parser.add_argument("--write-modes", action="store_true",
                        help="also time the changelog write under each Iceberg distribution mode (see below)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="cdclake-bench-"))
    os.environ["CDCLAKE_HOME"] = str(home)
    sys.path[:0] = [str(ROOT), str(ROOT / "include")]
    from pyspark.sql import functions as F

    from cdclake.config import load_config
    from cdclake.formats.base import FormatOptions
    from cdclake.spark_check import ensure_running
    from cdclake.spark_server import stop as stop_server
    from spark_jobs.decode_spark import TopicFormat
    from spark_jobs.normalize import READ_SPLIT_BYTES, normalize_hour
    from spark_jobs.session import connect
    from spark_jobs.tables import RAW_MESSAGES, ensure_tables

    config = load_config()
    ensure_running(config)  # the state folder's Spark Connect server (cdclake spark stop ends it)
    spark = connect(config, "cdclake-bench-normalize")
    ensure_tables(spark)
    templates = [(topic, padded_template(fixture, index)) for topic, _fmt, fixture, index in TEMPLATES]
    print(f"cores: {os.cpu_count()}, messages: {args.messages}, templates: {len(templates)}")
    t0 = time.perf_counter()
    tdf = spark.createDataFrame([(i, topic, text) for i, (topic, text) in enumerate(templates)],
                                "t int, topic string, text string")
    n = len(templates)
    raw = (spark.range(args.messages)
           .withColumn("t", (F.col("id") % n).cast("int"))
           .join(F.broadcast(tdf), "t")
           .withColumn("value", F.encode("text", "UTF-8"))
           .select("topic", F.lit(0).alias("partition"), F.col("id").alias("offset"),
                   F.lit(HOUR + dt.timedelta(minutes=5)).cast("timestamp").alias("timestamp"),
                   F.lit(0).alias("timestamp_type"), F.lit(None).cast("binary").alias("key"), "value",
                   F.array().cast("array<struct<key:string,value:binary>>").alias("headers"),
                   F.lit(HOUR).cast("timestamp").alias("landed_hour"), F.lit("bench").alias("run_id"),
                   F.current_timestamp().alias("landed_at")))
    raw.writeTo(RAW_MESSAGES).overwrite(F.col("landed_hour") == F.lit(HOUR))
    stored = spark.table(RAW_MESSAGES).where(F.col("landed_hour") == F.lit(HOUR))
    avg_bytes = cast("Row", stored.select(F.avg(F.length("value"))).first())[0]
    print(f"generated in {time.perf_counter() - t0:.1f}s; average value {avg_bytes:.0f} bytes")

    formats = {topic: TopicFormat(fmt, FormatOptions()) for topic, fmt, _f, _i in TEMPLATES}
    bare_times, norm_times = [], []
    for run in range(1, args.repeat + 1):
        t1 = time.perf_counter()
        count = stored.select(F.from_json(F.col("value").cast("string"), "map<string,string>").alias("m")) \
            .where(F.col("m").isNotNull()).count()
        bare_times.append(time.perf_counter() - t1)
        t2 = time.perf_counter()
        summary = normalize_hour(spark, formats, HOUR, "bench")
        norm_times.append(time.perf_counter() - t2)
        print(f"run {run}: bare {bare_times[-1]:.1f}s, normalize {norm_times[-1]:.1f}s "
              f"(load average {os.getloadavg()[0]:.1f}); normalize's steps: "
              + ", ".join(f"{step} {seconds:.1f}s" for step, seconds in summary.step_seconds.items()))
    if args.phases:
        _time_phases(stored, formats, args.messages)
    floor_s = _time_floor(spark, stored, args.messages, args.repeat) if args.floor else None
    if args.write_modes:
        _time_write_modes(spark, stored, formats)
    bare_s, norm_s = min(bare_times), min(norm_times)
    bare_rate, norm_rate = args.messages / bare_s, args.messages / norm_s
    print(f"bare from_json parse: {count} rows in {bare_s:.1f}s = {bare_rate:,.0f} messages/s")
    print(f"normalize job:        {summary.raw_messages} messages -> {summary.change_rows} change rows, "
          f"{summary.quarantined_messages} quarantined, in {norm_s:.1f}s = {norm_rate:,.0f} messages/s")
    print(f"ratio normalize/bare: {norm_rate / bare_rate:.2f}")
    if floor_s is not None:
        print(f"ratio floor/bare: {bare_s / floor_s:.2f} (no normalize that writes the changelog through "
              f"Iceberg passes it); normalize takes {norm_s / floor_s:.2f}x the floor")
    # The same parse over normalize's own read splits (it reads the raw hour in smaller splits
    # than Spark's default, to balance its CPU-bound tasks): how much of the ratio that is.
    split_bare = []
    for _ in range(args.repeat):
        t3 = time.perf_counter()
        spark.read.option("split-size", str(READ_SPLIT_BYTES)).table(RAW_MESSAGES) \
            .where(F.col("landed_hour") == F.lit(HOUR)) \
            .select(F.from_json(F.col("value").cast("string"), "map<string,string>").alias("m")) \
            .where(F.col("m").isNotNull()).count()
        split_bare.append(time.perf_counter() - t3)
    print(f"bare parse over normalize's read splits ({READ_SPLIT_BYTES >> 20} MB): {min(split_bare):.1f}s = "
          f"{args.messages / min(split_bare):,.0f} messages/s; ratio {min(split_bare) / norm_s:.2f}")
    spark.stop()
    stop_server(config.home)  # the one this bench started, if any
    if not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    return 0


def _time_phases(stored: object, formats: dict, messages: int) -> None:
    """Where normalize's time goes, on the same rows:
    - Python hand-off: the raw columns through ``mapInArrow`` unchanged (Arrow both ways, no
      decoding): the floor of any Python-decoder design;
    - decoders: ``decode_outcomes`` into Spark's no-op sink (decoding only, no pairing, no writes).
    The rest of normalize (pairing, stats, three Iceberg commits) is its total minus the decoders.
    """
    from spark_jobs.decode_spark import decode_outcomes

    columns = stored.select("topic", "partition", "offset", "timestamp", "key", "value")  # type: ignore[attr-defined]
    phases = {
        "Python hand-off (identity mapInArrow)":
            lambda: columns.mapInArrow(lambda batches: batches, columns.schema),
        "decoders only (decode_outcomes)": lambda: decode_outcomes(stored, formats),  # type: ignore[arg-type]
    }
    for label, frame in phases.items():
        t = time.perf_counter()
        frame().write.format("noop").mode("overwrite").save()
        seconds = time.perf_counter() - t
        print(f"{label}: {seconds:.1f}s = {messages / seconds:,.0f} messages/s")


def _time_floor(spark: SparkSession, stored: DataFrame, messages: int, repeat: int) -> float:
    """The cheapest conceivable normalize: the bare parse, its maps written to an Iceberg table
    partitioned by landed hour, replacing the hour (one commit; normalize makes three and writes
    decoded rows, not one map per message). No decoder, however fast, makes normalize quicker
    than this, so ``bare / floor`` bounds the ratio any normalize that writes the changelog can
    reach on this machine."""
    from pyspark.sql import functions as F

    table = "cdc.bench_floor"
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table} (topic string, `partition` int, `offset` bigint, "
              "landed_hour timestamp, m map<string,string>) USING iceberg PARTITIONED BY (landed_hour)")
    parsed = stored.select("topic", "partition", "offset", "landed_hour",
                           F.from_json(F.col("value").cast("string"), "map<string,string>").alias("m"))
    times = []
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        parsed.writeTo(table).overwrite(F.col("landed_hour") == F.lit(HOUR))
        times.append(time.perf_counter() - start)
    print(f"floor (bare parse + one Iceberg write of its maps): best {min(times):.1f}s = "
          f"{messages / min(times):,.0f} messages/s")
    return min(times)


def _time_write_modes(spark: SparkSession, stored: DataFrame, formats: dict) -> None:
    """What the changelog's layout costs: the hour's decoded change rows (decoded once, persisted)
    written to a scratch copy of ``cdc.changelog`` under each Iceberg write distribution mode:
    ``range`` (the table's: its ``WRITE ORDERED BY`` sort, a sampling job and a range shuffle, so
    each file holds a slice of the tables), ``hash`` (one shuffle partition per landing hour, split
    by AQE only when large; each task sorted) and ``none`` (no shuffle; each input task writes its
    rows sorted, every file spanning all tables)."""
    from pyspark.sql import functions as F

    from spark_jobs.decode_spark import decode_outcomes
    from spark_jobs.normalize import changelog_rows
    from spark_jobs.session import REUSED
    from spark_jobs.tables import CHANGELOG, TABLES, in_catalog

    order = next(o for name, _c, _p, o in TABLES if name == CHANGELOG)
    outcomes = decode_outcomes(stored, formats).persist(REUSED)
    rows = changelog_rows(outcomes, HOUR, "bench")
    start = time.perf_counter()
    count = rows.count()
    print(f"decode + persist of {count} change rows: {time.perf_counter() - start:.1f}s")
    table = in_catalog(spark, "cdc.bench_changelog_layout")  # qualified: no catalog-lookup warning
    for mode in ("range", "hash", "none"):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(f"CREATE TABLE {table} USING iceberg PARTITIONED BY (landed_hour) "
                  f"AS SELECT * FROM {CHANGELOG} LIMIT 0")
        spark.sql(f"ALTER TABLE {table} WRITE ORDERED BY {order}")
        start = time.perf_counter()
        rows.writeTo(table).option("distribution-mode", mode).overwrite(F.col("landed_hour") == F.lit(HOUR))
        seconds = time.perf_counter() - start
        files = cast("Row", spark.sql(f"SELECT count(*) FROM {table}.files").first())[0]
        print(f"changelog write, distribution {mode}: {seconds:.1f}s, {files} file(s)")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    outcomes.unpersist()


if __name__ == "__main__":
    sys.exit(main())
