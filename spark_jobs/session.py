"""The one place a SparkSession is configured.

Job entry points (``spark_jobs/*_job.py``) and the test suite's session fixture call
:func:`build_session`; transforms receive DataFrames and never build sessions. The Iceberg
catalog ``lakehouse`` is a SQL (JDBC) catalog on SQLite plus a local warehouse folder by default
— the same catalog pyiceberg opens (``cdclake.catalog``) — or whatever the settings point at.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from cdclake.spark_submit import java_conf

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

# How a job keeps a frame it reads several times: Spark's own default for Dataset.cache() (memory,
# else disk; deserialized). PySpark's StorageLevel.MEMORY_AND_DISK is the serialized form, which
# copies every cached batch through the serializer (8 s of 43 s when normalize cached 1M messages).
REUSED = StorageLevel.MEMORY_AND_DISK_DESER


def empty_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    """No rows, of ``schema``, planned in the JVM: the optimizer turns it into an empty relation
    and drops it from unions. ``createDataFrame([], schema)`` instead runs a job over an empty
    Python RDD wherever it is read: 0.5 s each time, 3 s in a fresh process (bench/README.md,
    session 29). Every column is nullable."""
    return spark.range(0).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields])


def local_frame(spark: SparkSession, rows: Sequence[Mapping[str, Any] | Sequence[Any]],
                schema: StructType) -> DataFrame:
    """A few rows made in Python (run stats, gate results, ledger entries: dicts by column name or
    tuples in column order) as a frame of ``schema``, through one Arrow table: exact values, and
    a relation in the JVM. ``createDataFrame(list)`` instead runs a job over a Python RDD
    wherever the frame is read: a run-stats write took 0.6-0.9 s that way, 3.3 s the first time
    in a process, against 0.2 s (bench/README.md, session 29)."""
    names = schema.fieldNames()
    records = [dict(row) if isinstance(row, Mapping) else dict(zip(names, row, strict=True)) for row in rows]
    return spark.createDataFrame(pa.Table.from_pylist(records, schema=to_arrow_schema(schema)))

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


@dataclass(frozen=True)
class SparkSettings:
    """Everything a session needs; built from the pipeline configuration (``from_config``)."""

    catalog_name: str
    catalog_uri: str
    warehouse: str
    jars: tuple[str, ...]
    master: str = "local[2]"
    driver_memory: str = "4g"
    app_name: str = "cdclake"
    local_dir: str | None = None
    extra_conf: dict[str, str] = field(default_factory=dict)


def jdbc_url(catalog_uri: str) -> str:
    """``sqlite:///path`` (pyiceberg's form) -> ``jdbc:sqlite:/path`` (Iceberg JdbcCatalog's);
    ``postgresql://user:pw@host/db`` -> ``jdbc:postgresql://host/db`` (credentials: jdbc_credentials)."""
    if catalog_uri.startswith("jdbc:"):
        return catalog_uri
    if catalog_uri.startswith("sqlite:///"):
        return "jdbc:sqlite:" + catalog_uri[len("sqlite:///"):]
    if catalog_uri.startswith(("postgresql://", "postgresql+psycopg2://", "postgresql+psycopg://")):
        parts = urlsplit(catalog_uri)
        return "jdbc:postgresql://" + parts.netloc.rsplit("@", 1)[-1] + parts.path
    raise ValueError(f"unsupported catalog uri {catalog_uri!r}")


def jdbc_credentials(catalog_uri: str) -> dict[str, str]:
    """User and password embedded in a SQLAlchemy-style catalog URI, if any."""
    parts = urlsplit(catalog_uri)
    out = {}
    if parts.username:
        out["user"] = unquote(parts.username)
    if parts.password:
        out["password"] = unquote(parts.password)
    return out


def spark_jars(jars_folder: Path) -> tuple[str, ...]:
    jars = tuple(sorted(str(p) for p in (jars_folder / "spark").glob("*.jar")))
    if not jars:
        raise FileNotFoundError(f"no Spark jars in {jars_folder / 'spark'}; run scripts/setup.sh")
    return jars


def session_conf(settings: SparkSettings) -> dict[str, str]:
    """The Spark configuration for ``settings`` (also used to build spark-submit --conf args)."""
    cat = f"spark.sql.catalog.{settings.catalog_name}"
    conf = {
        "spark.jars": ",".join(settings.jars),
        "spark.driver.memory": settings.driver_memory,
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        cat: "org.apache.iceberg.spark.SparkCatalog",
        f"{cat}.type": "jdbc",
        f"{cat}.uri": jdbc_url(settings.catalog_uri),
        f"{cat}.warehouse": settings.warehouse,
        f"{cat}.jdbc.schema-version": "V1",
        # Every table may be written through a write-audit-publish branch (spark.wap.branch).
        f"{cat}.table-default.write.wap.enabled": "true",
        **{f"{cat}.jdbc.{k}": v for k, v in jdbc_credentials(settings.catalog_uri).items()},
        "spark.sql.defaultCatalog": settings.catalog_name,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # UTC, the parallel collector and the class archive (cdclake.spark_submit says why);
        # under spark-submit the driver's come from the submitter (spark_job_args).
        **java_conf(),
        "spark.sql.iceberg.check-ordering": "false",
        # A job's cached frames (normalize's decoded hour, compaction's changes) live for that
        # job: skip the columnar cache's encoders (3.5 s of normalize's 21 s decode of 1M
        # messages); memory is bounded anyway, REUSED spills to disk.
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
    }
    if settings.local_dir:
        conf["spark.local.dir"] = settings.local_dir
    conf.update(settings.extra_conf)
    return conf


def build_session(settings: SparkSettings) -> SparkSession:
    """A SparkSession with the Iceberg catalog and the project's jars (reuses a running one)."""
    # Executors run the same interpreter as the driver (the project's venv); Python-side
    # timestamps (collect, Arrow) are UTC like the session, whatever the machine's zone.
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(settings.app_name)
    conf = session_conf(settings)
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        # Under spark-submit the JVM is already running with the submitter's --master, --jars
        # and driver memory (from the spark_default connection): don't override them.
        for launch_only in ("spark.jars", "spark.driver.memory"):
            conf.pop(launch_only, None)
    else:
        builder = builder.master(settings.master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def settings_from_config(config: PipelineConfig, app_name: str = "cdclake") -> SparkSettings:
    """SparkSettings from a ``cdclake.config.PipelineConfig`` (duck-typed: executors don't need it)."""
    from cdclake.paths import jars_dir

    home = Path(config.home)
    return SparkSettings(
        catalog_name=config.catalog_name,
        catalog_uri=config.catalog_uri,
        warehouse=config.warehouse,
        jars=spark_jars(jars_dir()),
        master=config.spark_master,
        driver_memory=config.spark_driver_memory,
        app_name=app_name,
        local_dir=str(home / "spark-tmp"),
        extra_conf=dict(config.spark_conf),
    )


def job_session(config_file: str | None, app_name: str) -> tuple[PipelineConfig, SparkSession]:
    """A spark-submit job's configuration (``--config`` or the default file) and its session."""
    from cdclake.config import load_config

    config = load_config(Path(config_file) if config_file else None)
    return config, build_session(settings_from_config(config, app_name=app_name))
