"""Benchmark: time to compact one hour of changes into current tables of two sizes.

    PYTHONPATH=.:include python bench/compact/bench_compact.py --sizes 1000000,10000000 --changes 100000

For each size N a table ``current.bench<N>__t`` is seeded directly with N live rows (as if earlier
hours had been compacted), one hour of ``--changes`` change rows is written to the changelog
(60% full updates of random existing keys, 20% partial updates, 10% deletes, 10% inserts of new
keys), and ``compact_hour`` is timed. Prints each time and the ratio largest/smallest (target <= 2:
the cost should follow the change volume, not the table size). Uses its own state folder.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="table sizes, comma separated")
    parser.add_argument("--changes", type=int, default=100_000, help="change rows in the hour")
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--home", help="state folder (default: a new temporary folder)")
    args = parser.parse_args(argv)
    os.environ["CDCLAKE_HOME"] = args.home or tempfile.mkdtemp(prefix="cdclake-bench-")

    from pyspark.sql import functions as F

    from cdclake.config import load_config
    from cdclake.spark_server import ensure_running
    from cdclake.spark_server import stop as stop_server
    from spark_jobs.compact import compact_hour
    from spark_jobs.compaction.layout import CompactionOptions
    from spark_jobs.compaction.schema import ensure_current_tables, evolve_schema
    from spark_jobs.session import connect
    from spark_jobs.tables import CHANGELOG, ensure_tables

    config = load_config()
    ensure_running(config)  # the state folder's Spark Connect server (cdclake spark stop ends it)
    spark = connect(config, "cdclake-bench-compact")
    ensure_tables(spark)
    options = CompactionOptions(buckets=args.buckets)
    columns = {"id": "bigint", "name": "string", "amount": "decimal(12,2)", "qty": "bigint"}
    results = []
    for i, size in enumerate(int(s) for s in args.sizes.split(",")):
        database, table = f"bench{size}", f"current.bench{size}__t"
        hour = dt.datetime(2024, 1, 1) + dt.timedelta(hours=i)
        ensure_current_tables(spark, table, f"{database}.t", False, options)
        evolve_schema(spark, table, columns)
        t0 = time.time()
        seed = spark.range(size).select(
            F.col("id"),
            F.concat(F.lit("name-"), F.col("id")).alias("name"),
            (F.col("id") % 100000 / 100).cast("decimal(12,2)").alias("amount"),
            (F.col("id") % 7).alias("qty"),
            F.to_json(F.array(F.col("id").cast("string"))).alias("_cdc_key"),
            F.lit("SNAPSHOT").alias("_cdc_op"),
            F.lit(dt.datetime(2023, 1, 1)).cast("timestamp").alias("_cdc_event_time"),
            F.concat(
                F.lit("T"),
                F.lpad(F.col("id").cast("string"), 20, "0"),
                F.lit("|0000000000|"),
                F.lpad(F.col("id").cast("string"), 20, "0"),
                F.lit("|0000000000"),
            ).alias("_cdc_order_key"),
            F.lit("seed").alias("_cdc_kafka_topic"),
            F.lit(0).alias("_cdc_kafka_partition"),
            F.col("id").alias("_cdc_kafka_offset"),
            F.lit("seed").alias("_cdc_run_id"),
        )
        seed.writeTo(table).append()
        seeded = time.time() - t0
        n = args.changes
        micros = int((hour - dt.datetime(1970, 1, 1)).total_seconds() * 1e6)
        changes = spark.range(n).select(
            F.col("id").alias("i"),
            F.when(F.col("id") % 10 < 9, F.abs(F.xxhash64(F.col("id"), F.lit(size))) % size)
            .otherwise(F.col("id") + size)
            .alias("k"),
        )
        kind = F.col("i") % 10
        image = F.create_map(
            F.lit("id"),
            F.col("k").cast("string"),
            F.lit("name"),
            F.concat(F.lit("upd-"), F.col("i")),
            F.lit("amount"),
            F.lit("1.25"),
            F.lit("qty"),
            (F.col("i") % 5).cast("string"),
        )
        partial = F.create_map(F.lit("id"), F.col("k").cast("string"), F.lit("qty"), F.lit("99"))
        types = F.create_map(
            F.lit("id"),
            F.lit("LONG"),
            F.lit("name"),
            F.lit("STRING"),
            F.lit("amount"),
            F.lit("DECIMAL(12,2)"),
            F.lit("qty"),
            F.lit("LONG"),
        )
        rows = changes.select(
            F.lit("bench").alias("source_format"),
            F.lit("bench").alias("kafka_topic"),
            F.lit(0).alias("kafka_partition"),
            F.col("i").alias("kafka_offset"),
            F.lit(0).alias("record_index"),
            F.lit(hour).cast("timestamp").alias("landed_hour"),
            F.lit("bench").alias("run_id"),
            F.lit("mysql").alias("db_type"),
            F.lit(database).alias("database"),
            F.lit(None).cast("string").alias("schema_name"),
            F.lit("t").alias("table_name"),
            F.when(kind < 6, "UPDATE")
            .when(kind < 8, "UPDATE")
            .when(kind < 9, "DELETE")
            .otherwise("INSERT")
            .alias("op"),
            F.array(F.lit("id")).alias("primary_key_columns"),
            F.to_json(F.array(F.col("k").cast("string"))).alias("row_key"),
            F.when(kind >= 6, F.create_map(F.lit("id"), F.col("k").cast("string"))).alias("before"),
            F.when(kind == 8, F.lit(None))
            .when((kind >= 6) & (kind < 8), partial)
            .otherwise(image)
            .alias("after"),
            ((kind < 6) | (kind == 9)).alias("after_is_full"),
            types.alias("column_types"),
            F.timestamp_micros(F.lit(micros) + F.col("i")).alias("event_time"),
            F.lit(None).cast("timestamp").alias("produced_time"),
            F.lit(None).cast("timestamp").alias("kafka_timestamp"),
            F.lit(None).cast("string").alias("source_sequence"),
            F.lit(None).cast("string").alias("source_position"),
            F.lit(None).cast("string").alias("transaction_id"),
            F.lit(None).cast("string").alias("ddl"),
            F.array().cast("array<string>").alias("warnings"),
        )
        rows.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour).cast("timestamp"))
        t0 = time.time()
        summary = compact_hour(spark, hour, "bench", options)
        elapsed = time.time() - t0
        if summary.failures:
            print(summary.failures, file=sys.stderr)
            return 1
        results.append((size, elapsed))
        print(
            f"size={size:>11,} rows  changes={n:,}  seed={seeded:.1f}s  compact={elapsed:.1f}s  "
            f"slow_keys={summary.tables[0].slow_keys}",
            flush=True,
        )
    if len(results) > 1:
        print(f"ratio largest/smallest: {results[-1][1] / results[0][1]:.2f} (target <= 2)")
    spark.stop()
    stop_server(config.home)  # the one this bench started, if any
    return 0


if __name__ == "__main__":
    sys.exit(main())
