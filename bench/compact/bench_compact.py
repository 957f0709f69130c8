"""Benchmark: compaction against a bare MERGE floor, by change count, table size and table count.

    PYTHONPATH=.:include python bench/compact/bench_compact.py \\
        --sizes 1000000,10000000 --changes 100000,1000000 --tables 200

All in one run, on one Spark Connect server (local[2]):

* **size**: for each size N a table ``current.bench<N>__t`` is seeded with N live rows (as if
  earlier hours had been compacted). For each change count C (into the largest table; the first
  count into every table) one changelog hour is written (60% full updates of existing keys, 20%
  partial updates, 10% deletes, 10% inserts), then timed twice from the same table snapshot:
  the **floor**, a bare ``MERGE INTO`` of the same changes already folded to one row per key (the
  fold not timed), rolled back; then ``compact_hour``. Prints both, the ratio compact/floor and the
  rate. Sizes ratio: the first count's compaction in the largest vs the smallest table.
* **tables**: an hour of T tables x 5 changes against an hour of one table x 5T changes, each on
  tables an earlier (untimed) hour created with 5 rows per table; each with two floors: one bare
  MERGE per table, and the **commit floor**, one metadata-only commit per table (pyiceberg
  ``add_files`` of a prewritten one-row Parquet file, on the same catalog), serially, rolled back
  (``--sizes ''`` runs only this part, ``--tables 0`` skips it).

``--threads`` is ``compaction.threads``: tables compacted at once on the session.

Uses its own state folder (``--home`` to keep one).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from typing import Any

COLUMNS = {"id": "bigint", "name": "string", "amount": "decimal(12,2)", "qty": "bigint"}
HOUR0 = dt.datetime(2024, 1, 1)


def changelog_rows(spark: Any, hour: dt.datetime, n: int, database: str, table: Any, key: Any,
                   kind: Any) -> Any:
    """``n`` changelog rows of ``hour``: ``table``, ``key`` and ``kind`` (0-5 full update, 6-7
    partial, 8 delete, 9 insert) are expressions of the change number ``i``."""
    from pyspark.sql import functions as F

    changes = spark.range(n).select(F.col("id").alias("i")).select(
        "i", table.alias("t"), key.alias("k"), kind.alias("kind"))
    image = F.create_map(F.lit("id"), F.col("k").cast("string"),
                         F.lit("name"), F.concat(F.lit("upd-"), F.col("i")), F.lit("amount"), F.lit("1.25"),
                         F.lit("qty"), (F.col("i") % 5).cast("string"))
    partial = F.create_map(F.lit("id"), F.col("k").cast("string"), F.lit("qty"), F.lit("99"))
    types = F.create_map(F.lit("id"), F.lit("LONG"), F.lit("name"), F.lit("STRING"),
                         F.lit("amount"), F.lit("DECIMAL(12,2)"), F.lit("qty"), F.lit("LONG"))
    kind = F.col("kind")
    micros = int((hour - dt.datetime(1970, 1, 1)).total_seconds() * 1e6)
    return changes.select(
        F.lit("bench").alias("source_format"), F.lit("bench").alias("kafka_topic"),
        F.lit(0).alias("kafka_partition"), F.col("i").alias("kafka_offset"), F.lit(0).alias("record_index"),
        F.lit(hour).cast("timestamp").alias("landed_hour"), F.lit("bench").alias("run_id"),
        F.lit("mysql").alias("db_type"), F.lit(database).alias("database"),
        F.lit(None).cast("string").alias("schema_name"), F.col("t").alias("table_name"),
        F.when(kind < 8, "UPDATE").when(kind == 8, "DELETE").otherwise("INSERT").alias("op"),
        F.array(F.lit("id")).alias("primary_key_columns"),
        F.to_json(F.array(F.col("k").cast("string"))).alias("row_key"),
        F.when(kind >= 6, F.create_map(F.lit("id"), F.col("k").cast("string"))).alias("before"),
        F.when(kind == 8, F.lit(None)).when(kind >= 6, partial).otherwise(image).alias("after"),
        ((kind < 6) | (kind == 9)).alias("after_is_full"), types.alias("column_types"),
        F.timestamp_micros(F.lit(micros) + F.col("i")).alias("event_time"),
        *[F.lit(None).cast("timestamp").alias(c) for c in ("produced_time", "kafka_timestamp")],
        *[F.lit(None).cast("string").alias(c)
          for c in ("source_sequence", "source_position", "transaction_id", "ddl")],
        F.array().cast("array<string>").alias("warnings"))


def seed(spark: Any, table: str, size: int) -> None:
    from pyspark.sql import functions as F

    spark.range(size).select(
        F.col("id"), F.concat(F.lit("name-"), F.col("id")).alias("name"),
        (F.col("id") % 100000 / 100).cast("decimal(12,2)").alias("amount"), (F.col("id") % 7).alias("qty"),
        F.to_json(F.array(F.col("id").cast("string"))).alias("_cdc_key"), F.lit("SNAPSHOT").alias("_cdc_op"),
        F.lit(dt.datetime(2023, 1, 1)).cast("timestamp").alias("_cdc_event_time"),
        F.concat(F.lit("V"), F.lpad(F.col("id").cast("string"), 20, "0"), F.lit("||0000000000|"),
                 F.lpad(F.col("id").cast("string"), 20, "0"), F.lit("|0000000000")).alias("_cdc_order_key"),
        F.lit("seed").alias("_cdc_kafka_topic"), F.lit(0).alias("_cdc_kafka_partition"),
        F.col("id").alias("_cdc_kafka_offset"), F.lit("seed").alias("_cdc_run_id"),
    ).writeTo(table).append()


def floor_merge(spark: Any, table: str, hour: dt.datetime, source_table: str | None = None) -> float:
    """Time a bare MERGE of the hour's changes folded to their last change per key (the fold is
    done and cached first), then roll the table back to where it was."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from spark_jobs.compaction.events import change_events
    from spark_jobs.tables import CHANGELOG, in_catalog

    hour_rows = spark.table(CHANGELOG).where(F.col("landed_hour") == F.lit(hour).cast("timestamp"))
    if source_table is not None:
        hour_rows = hour_rows.where(F.col("table_name") == F.lit(source_table))
    last = change_events(hour_rows).withColumn("_n", F.row_number().over(
        Window.partitionBy("key").orderBy(F.col("order_key").desc()))).where("_n = 1")
    vals = F.from_json("image", "map<string,string>")
    source = last.select(
        *[vals[c].cast(t).alias(c) for c, t in COLUMNS.items()], F.col("key").alias("_cdc_key"),
        F.col("op").alias("_cdc_op"), F.timestamp_micros("event_us").alias("_cdc_event_time"),
        F.col("order_key").alias("_cdc_order_key"), F.col("kafka_topic").alias("_cdc_kafka_topic"),
        F.col("kafka_partition").alias("_cdc_kafka_partition"),
        F.col("kafka_offset").alias("_cdc_kafka_offset"),
        F.col("run_id").alias("_cdc_run_id"), (F.col("kind") == "DELETE").alias("_deleted")).localCheckpoint()
    source.count()
    source.createOrReplaceTempView("bench_floor_source")
    [before] = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots "
                         "ORDER BY committed_at DESC LIMIT 1").collect()
    names = [*COLUMNS, "_cdc_key", "_cdc_op", "_cdc_event_time", "_cdc_order_key", "_cdc_kafka_topic",
             "_cdc_kafka_partition", "_cdc_kafka_offset", "_cdc_run_id"]
    t0 = time.time()
    spark.sql(f"""
        MERGE INTO {table} t USING bench_floor_source s ON t._cdc_key = s._cdc_key
        WHEN MATCHED AND s._deleted THEN DELETE
        WHEN MATCHED THEN UPDATE SET {', '.join(f'{n} = s.{n}' for n in names)}
        WHEN NOT MATCHED AND NOT s._deleted THEN INSERT ({', '.join(names)})
            VALUES ({', '.join('s.' + n for n in names)})""")
    elapsed = time.time() - t0
    catalog = spark.conf.get("spark.sql.defaultCatalog")
    spark.sql(f"CALL {catalog}.system.rollback_to_snapshot('{in_catalog(spark, table)}', {before[0]})")
    return elapsed


def commit_floor(spark: Any, tables: list[str]) -> float:
    """Time one metadata-only commit per table, serially: pyiceberg appends a one-row data file
    written beforehand (not timed), on the catalog Spark writes; then each table is rolled back
    to where it was."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import _dataframe_to_data_files, schema_to_pyarrow

    from cdclake.catalog import open_catalog
    from cdclake.config import load_config
    from spark_jobs.tables import in_catalog

    catalog = open_catalog(load_config())
    prepared, before = [], []
    for n, name in enumerate(tables):
        table = catalog.load_table(name)
        schema = schema_to_pyarrow(table.schema(), include_field_ids=False)
        row: dict[str, Any] = {f.name: None for f in schema}
        row.update({"id": 10**9 + n, "_cdc_key": f'["{10**9 + n}"]', "_cdc_order_key": "V0"})
        files = list(_dataframe_to_data_files(table.metadata, pa.Table.from_pylist([row], schema=schema),
                                              table.io))
        prepared.append((table, files))
        before.append(table.metadata.current_snapshot_id)
    t0 = time.time()
    for table, files in prepared:
        with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
            for data_file in files:
                append.append_data_file(data_file)
    elapsed = time.time() - t0
    catalog_name = spark.conf.get("spark.sql.defaultCatalog")
    for name, snapshot in zip(tables, before, strict=True):
        spark.sql(f"CALL {catalog_name}.system.rollback_to_snapshot('{in_catalog(spark, name)}', {snapshot})")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="table sizes, comma separated")
    parser.add_argument("--changes", default="100000,1000000",
                        help="change counts, comma separated: the first into every size, all into the "
                        "largest")
    parser.add_argument("--tables", type=int, default=200, help="tables of the many-tables hour (0: skip)")
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--threads", type=int, default=4, help="compaction.threads (1: one table at a time)")
    parser.add_argument("--home", help="state folder (default: a new temporary folder)")
    args = parser.parse_args(argv)
    os.environ["CDCLAKE_HOME"] = args.home or tempfile.mkdtemp(prefix="cdclake-bench-")

    from pyspark.sql import functions as F

    from cdclake.config import load_config
    from cdclake.spark_check import ensure_running
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
    options = CompactionOptions(buckets=args.buckets, threads=args.threads)
    hours = iter(HOUR0 + dt.timedelta(hours=h) for h in range(1000))

    def compact(hour: dt.datetime) -> tuple[float, Any]:
        t0 = time.time()
        summary = compact_hour(spark, hour, "bench", options)
        elapsed = time.time() - t0
        if summary.failures:
            raise SystemExit(f"compaction failed: {summary.failures}")
        return elapsed, summary

    def land(rows: Any, hour: dt.datetime) -> None:
        rows.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour).cast("timestamp"))

    sizes = [int(s) for s in args.sizes.split(",") if s]
    counts = [int(c) for c in args.changes.split(",")]
    first_count: dict[int, float] = {}
    for size in sizes:
        database, table = f"bench{size}", f"current.bench{size}__t"
        ensure_current_tables(spark, table, f"{database}.t", False, options)
        evolve_schema(spark, table, COLUMNS)
        t0 = time.time()
        seed(spark, table, size)
        print(f"seeded {size:,} rows in {time.time() - t0:.1f}s", flush=True)
        for n in counts if size == sizes[-1] else counts[:1]:
            hour = next(hours)
            kind = F.col("i") % 10
            key = F.when(kind < 9, F.abs(F.xxhash64(F.col("i"), F.lit(size), F.lit(n))) % size) \
                .otherwise(F.col("i") + size + hour.hour * 10 * n)
            land(changelog_rows(spark, hour, n, database, F.lit("t"), key, kind), hour)
            floor = floor_merge(spark, table, hour)
            elapsed, summary = compact(hour)
            if n == counts[0]:
                first_count[size] = elapsed
            print(f"size={size:>11,}  changes={n:>9,}  floor={floor:6.1f}s  compact={elapsed:6.1f}s  "
                  f"compact/floor={elapsed / floor:4.2f}  rate={n / elapsed:,.0f} changes/s  "
                  f"slow_keys={summary.tables[0].slow_keys}", flush=True)
    if len(sizes) > 1 and first_count:
        ratio = first_count[sizes[-1]] / first_count[sizes[0]]
        print(f"size ratio {sizes[-1]:,}/{sizes[0]:,} at {counts[0]:,} changes: {ratio:.2f}", flush=True)

    if args.tables:
        per_table, n = 5, 5 * args.tables
        times, floors, commits = {}, {}, {}
        for label, tables in (("many", args.tables), ("one", 1)):
            rows_per_table = n // tables
            table_of = F.concat(F.lit("t"), (F.col("i") % tables).cast("string"))
            key = (F.col("i") / tables).cast("bigint")
            created = next(hours)
            land(changelog_rows(spark, created, n, f"bench{label}", table_of, key, F.lit(9)), created)
            compact(created)
            hour = next(hours)
            # Per table: updates, a partial update, a delete and an insert of a new key.
            slot = key % per_table
            kind = F.when(slot < 2, 0).when(slot == 2, 6).when(slot == 3, 8).otherwise(9)
            key = F.when(slot == 4, key + rows_per_table).otherwise(key)
            land(changelog_rows(spark, hour, n, f"bench{label}", table_of, key, kind), hour)
            names = [f"current.bench{label}__t{t}" for t in range(tables)]
            # The floors: one bare MERGE per table, and one metadata-only commit per table.
            floors[label] = sum(floor_merge(spark, name, hour, f"t{t}") for t, name in enumerate(names))
            commits[label] = commit_floor(spark, names)
            times[label], summary = compact(hour)
            print(f"{tables:>4} table(s) x {rows_per_table:>5} changes: commit floor={commits[label]:6.1f}s  "
                  f"MERGE floor={floors[label]:6.1f}s  compact={times[label]:6.1f}s  "
                  f"compact/commit floor={times[label] / commits[label]:5.2f}  "
                  f"compact/MERGE floor={times[label] / floors[label]:4.2f}  ({len(summary.tables)} tables, "
                  f"threads={args.threads})", flush=True)
        print(f"many/one: compact {times['many'] / times['one']:.2f}, "
              f"MERGE floor {floors['many'] / floors['one']:.2f}, "
              f"commit floor {commits['many'] / commits['one']:.2f}", flush=True)
    spark.stop()
    stop_server(config.home)  # the one this bench started, if any
    return 0


if __name__ == "__main__":
    sys.exit(main())
