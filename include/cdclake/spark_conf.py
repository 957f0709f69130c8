"""The Spark configuration of the cdclake Spark Connect server: what it is launched with.

Pure settings, no processes: the jars, the JVM options, the Iceberg catalog (which every Connect
session also sets for itself, :func:`catalog_conf`) and the session defaults
(:func:`session_conf`), built from the pipeline configuration (:func:`settings_from_config`).
The server process that uses them is :mod:`cdclake.spark_server`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from cdclake.exceptions import SetupError
from cdclake.paths import jars_dir

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
# The JVM fast path's jar (spark_jobs.jvm_decode): its function catalog (fast_decode) and its
# session extensions (the cdclake_key_counts aggregate), in every session of the server.
FUNCTIONS_CATALOG = "cdclake_jvm"
FUNCTIONS_CLASS = "cdclake.jvm.Functions"
JAR_EXTENSIONS = "cdclake.jvm.Extensions"
# Every Spark JVM: UTC, and the parallel collector (batch jobs: throughput over pause times).
JAVA_OPTIONS = "-Duser.timezone=UTC -XX:+UseParallelGC"
# Extra options for the server's JVMs, appended to JAVA_OPTIONS (launch-time settings).
EXTRA_JAVA_OPTIONS_ENV = "CDCLAKE_JAVA_OPTIONS"


@dataclass(frozen=True)
class SparkSettings:
    """Everything the server's Spark needs; built from the pipeline configuration."""

    catalog_name: str
    catalog_uri: str
    warehouse: str
    jars: tuple[str, ...]
    master: str = "local[2]"
    driver_memory: str = "4g"
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
    scheme = catalog_uri.split(":", 1)[0]  # never the rest: it may hold a password
    raise ValueError(f"unsupported catalog uri scheme {scheme!r} (sqlite:///..., postgresql://..., jdbc:...)")


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
        raise SetupError(f"no Spark jars in {jars_folder / 'spark'}; run scripts/setup.sh")
    return jars


def java_options() -> str:
    """The JVM options of the server's driver and executors: :data:`JAVA_OPTIONS` and
    ``$CDCLAKE_JAVA_OPTIONS``."""
    return " ".join(filter(None, [JAVA_OPTIONS, os.environ.get(EXTRA_JAVA_OPTIONS_ENV, "").strip()]))


def catalog_conf(catalog_name: str, catalog_uri: str, warehouse: str) -> dict[str, str]:
    """The Iceberg catalog's settings. Runtime settings: every Connect session sets its own
    (:func:`spark_jobs.session.connect`), so one server can serve several state folders' catalogs."""
    cat = f"spark.sql.catalog.{catalog_name}"
    return {
        cat: "org.apache.iceberg.spark.SparkCatalog",
        f"{cat}.type": "jdbc",
        f"{cat}.uri": jdbc_url(catalog_uri),
        f"{cat}.warehouse": warehouse,
        f"{cat}.jdbc.schema-version": "V1",
        # Many sessions share the server (every task, the CLI, analysts): each must read the
        # tables as committed, not as its catalog first cached them.
        f"{cat}.cache-enabled": "false",
        # Every table may be written through a write-audit-publish branch (spark.wap.branch).
        f"{cat}.table-default.write.wap.enabled": "true",
        **{f"{cat}.jdbc.{k}": v for k, v in jdbc_credentials(catalog_uri).items()},
        "spark.sql.defaultCatalog": catalog_name,
    }


def session_conf(settings: SparkSettings) -> dict[str, str]:
    """The server's Spark configuration: extensions, session defaults, the catalog."""
    conf = {
        "spark.sql.extensions": f"{ICEBERG_EXTENSIONS},{JAR_EXTENSIONS}",
        **catalog_conf(settings.catalog_name, settings.catalog_uri, settings.warehouse),
        f"spark.sql.catalog.{FUNCTIONS_CATALOG}": FUNCTIONS_CLASS,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.executor.extraJavaOptions": java_options(),
        "spark.sql.iceberg.check-ordering": "false",
        # A job's cached frames (normalize's decoded hour, compaction's changes) live for that
        # job: skip the columnar cache's encoders; memory is bounded anyway, they spill to disk.
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # Sessions a client left open (a killed task) are released after this idle time, with
        # their cached frames and views: the server lives for weeks.
        "spark.connect.session.manager.defaultSessionTimeout": "30min",
        # The driver keeps the plans and metrics of recent queries, jobs and stages for its status
        # store (1,000 of each by default, even without the UI): a few suffice, the heap stays flat.
        "spark.sql.ui.retainedExecutions": "50",
        "spark.ui.retainedJobs": "100",
        "spark.ui.retainedStages": "100",
        # Options and settings that name secrets are shown redacted in plans, errors and logs;
        # Spark's defaults miss a Kafka JAAS login.
        "spark.redaction.regex": "(?i)secret|password|token|access[.]key|jaas",
        "spark.sql.redaction.options.regex": "(?i)url|jaas",
    }
    if settings.local_dir:
        conf["spark.local.dir"] = settings.local_dir
    conf.update(settings.extra_conf)
    return conf


def settings_from_config(config: PipelineConfig, scratch: Path | None = None) -> SparkSettings:
    """``scratch``: the server's own scratch folder (:func:`cdclake.spark_server.start` makes it),
    its ``spark.local.dir`` unless the configuration's ``spark.conf`` names another."""
    return SparkSettings(
        catalog_name=config.catalog_name,
        catalog_uri=config.catalog_uri,
        warehouse=config.warehouse,
        jars=spark_jars(jars_dir()),
        master=config.spark_master,
        driver_memory=config.spark_driver_memory,
        local_dir=str(scratch) if scratch else None,
        extra_conf=dict(config.spark_conf),
    )
