"""The one place a job gets its SparkSession: a Spark Connect session on the server.

The server (``cdclake.spark_server``) holds the Spark configuration (``cdclake.spark_conf``):
the Iceberg catalog ``lakehouse`` (a SQL (JDBC) catalog on SQLite plus a local warehouse folder by
default, the same catalog pyiceberg opens, ``cdclake.catalog``), the jars and the session
defaults. Job entry points (``spark_jobs/jobs/``), the CLI and the test suite call
:func:`connect`; transforms receive DataFrames and never build sessions.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from cdclake.config import PipelineConfig, load_config
from cdclake.spark_check import check_server
from cdclake.spark_conf import catalog_conf

# How a job keeps a frame it reads several times: Spark's own default for Dataset.cache() (memory,
# else disk; deserialized). PySpark's StorageLevel.MEMORY_AND_DISK is the serialized form, which
# copies every cached batch through the serializer (a large share of normalize's time on 1M messages).
REUSED = StorageLevel.MEMORY_AND_DISK_DESER
T = TypeVar("T")
R = TypeVar("R")


def empty_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    """No rows, of ``schema``, planned in the JVM: the optimizer turns it into an empty relation
    and drops it from unions, where ``createDataFrame([], schema)`` runs a job wherever it is
    read. Every column is nullable."""
    return spark.range(0).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields])


def local_frame(spark: SparkSession, rows: Sequence[Mapping[str, Any] | Sequence[Any]],
                schema: StructType) -> DataFrame:
    """A few rows made in Python (run stats, gate results, ledger entries: dicts by column name or
    tuples in column order) as a frame of ``schema``, through one Arrow table: exact values, and
    a local relation on the server."""
    names = schema.fieldNames()
    records = [dict(row) if isinstance(row, Mapping) else dict(zip(names, row, strict=True)) for row in rows]
    return spark.createDataFrame(pa.Table.from_pylist(records, schema=to_arrow_schema(schema)), schema=schema)


def connect(config: PipelineConfig, app_name: str = "cdclake") -> SparkSession:
    """A new Spark Connect session on the configured server (``cdclake spark start``): its own
    settings and temporary state, released by ``stop()``. Fails at once, naming the URL and the
    command that starts the server, when nothing listens there; and when the server there does
    not answer, lost its scratch space or was started for another state folder
    (:func:`cdclake.spark_check.check_server`: one Config call)."""
    check_server(config)
    session = SparkSession.builder.remote(config.spark_remote).create()
    return use_catalog(session, config, app_name)


def use_catalog(session: SparkSession, config: PipelineConfig, app_name: str) -> SparkSession:
    """Point ``session`` at the state folder's Iceberg catalog (runtime settings: each session
    brings its own) and tag its operations with ``app_name``."""
    # Results stream back in one call, without reattachable execution: its release calls go
    # through a process-wide thread pool that closing any session shuts down, and a session
    # closed by garbage collection in the middle of another's query deadlocked that query (a
    # local server needs no reattaching anyway).
    cast(Any, session).client.disable_reattachable_execute()
    # Python-side timestamps (collect, Arrow) are UTC like the session, whatever the machine's zone.
    os.environ["TZ"] = "UTC"
    time.tzset()
    for key, value in catalog_conf(config.catalog_name, config.catalog_uri, config.warehouse).items():
        session.conf.set(key, value)
    # Every operation of the session carries the job's name: spark.interruptTag(name) stops them.
    session.addTag(app_name)
    return session


@contextmanager
def job_session(config_file: str | None, app_name: str,
                spark: SparkSession | None = None) -> Iterator[tuple[PipelineConfig, SparkSession]]:
    """A job's configuration (``--config`` or the default file) and its session: ``spark`` when
    the caller has one (an Airflow task's), pointed at the configuration's catalog, else a
    Connect session of its own, stopped after."""
    config = load_config(Path(config_file) if config_file else None)
    if spark is not None:
        yield config, use_catalog(spark, config, app_name)
        return
    session = connect(config, app_name)
    try:
        yield config, session
    finally:
        session.stop()


def union_all(frames: Sequence[DataFrame]) -> DataFrame:
    """The frames' union by name as a balanced tree: a plan's depth stays logarithmic in their
    number (hundreds of tables)."""
    if len(frames) == 1:
        return frames[0]
    middle = len(frames) // 2
    return union_all(frames[:middle]).unionByName(union_all(frames[middle:]))


def concurrently(spark: SparkSession, items: Sequence[T], work: Callable[[T], R], threads: int) -> list[R]:
    """``work`` of every item, ``threads`` at a time on ``spark`` (one Connect session), as results in
    ``items``' order. Made for many small Iceberg commits (one per table): the server overlaps one
    table's planning and commit with another's jobs. ``work`` handles its own errors."""
    if threads <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    tags = spark.getTags()

    def tagged(item: T) -> R:
        for tag in tags:  # a Connect session's tags are per thread: spark.interruptTag reaches these
            spark.addTag(tag)
        return work(item)

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cdclake-table") as pool:
        return list(pool.map(tagged, items))
