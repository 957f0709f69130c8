"""How DAGs submit the ``spark_jobs/*_job.py`` entry points (``SparkSubmitOperator`` arguments).

The Spark master, deploy mode and ``spark-submit`` binary come from the Airflow connection
``spark_default`` (``spark://spark-master:7077`` under docker-compose, ``local[2]`` on one
machine): pointing the DAGs at a cluster is configuration, not code.

The project's jars must be on ``--jars``: under ``spark-submit`` the driver JVM is already
running when the job builds its session, so ``spark.jars`` set there would reach the executors
but not the driver's class path (``Cannot find catalog plugin class ... SparkCatalog``).
Spark expands the glob itself, so nothing is listed at DAG parse time. The JVMs' options
(:func:`java_conf`) are launch-time settings for the same reason.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cdclake.paths import PROJECT_ROOT

SPARK_CONN_ID = "spark_default"
# Every Spark JVM of the project (driver and executors; spark_jobs.session sets the same for a
# session it launches): UTC, and the parallel collector, since these are batch jobs, where
# throughput matters more than pause times. Decoding allocates many short-lived maps and strings:
# under G1 an hour of 1M messages spent 1.4 s of 25 s in young collections on 2 cores, and the
# normalize job ran 1-2 s slower (bench/README.md, session 29).
JAVA_OPTIONS = "-Duser.timezone=UTC -XX:+UseParallelGC"
# Extra options for every Spark JVM, appended to JAVA_OPTIONS: e.g. ``-XX:TieredStopAtLevel=1``
# (the quick compiler only) where hours are small, so each job is mostly the JVM warming up; the
# end-to-end tests set it. Read when a job is submitted or a session built.
EXTRA_JAVA_OPTIONS_ENV = "CDCLAKE_JAVA_OPTIONS"


def _jars_folder() -> Path:
    """``$CDCLAKE_JARS`` or ``.jars/`` (no file system access, unlike ``cdclake.paths.jars_dir``)."""
    return Path(os.environ.get("CDCLAKE_JARS") or PROJECT_ROOT / ".jars")


def class_archive() -> Path:
    """The drivers' class-data-sharing archive (``<jars folder>/cds/spark-driver.jsa``), made by
    ``scripts/class_archive.py`` at set-up: the classes a job loads (Spark, Iceberg, the fast
    path), parsed and verified once, mapped by every driver JVM instead of loaded from the jars
    (a small normalize job 41-45 s -> 30-36 s on 2 cores, bench/README.md). A JVM without the
    file, or whose class path no longer matches it, starts as before (the latter with a warning)."""
    return _jars_folder() / "cds" / "spark-driver.jsa"


def java_conf() -> dict[str, str]:
    """The JVM options of a Spark application's driver and executors (launch-time settings):
    :data:`JAVA_OPTIONS`, ``$CDCLAKE_JAVA_OPTIONS``, and for the driver the class archive (left
    out when its path has blanks, since Spark splits the options on them). No file system
    access: a missing archive is the JVM's to skip."""
    common = " ".join(filter(None, [JAVA_OPTIONS, os.environ.get(EXTRA_JAVA_OPTIONS_ENV, "").strip()]))
    archive = class_archive()
    sharing = "" if any(c.isspace() for c in str(archive)) else f" -XX:SharedArchiveFile={archive}"
    return {"spark.driver.extraJavaOptions": common + sharing, "spark.executor.extraJavaOptions": common}


def spark_job_path(job: str) -> str:
    """``maintenance_job`` -> the absolute path of ``spark_jobs/maintenance_job.py``."""
    if not job.isidentifier():
        raise ValueError(f"{job!r} is not a job module name (e.g. 'maintenance_job')")
    return str(PROJECT_ROOT / "spark_jobs" / f"{job}.py")


def spark_jars_glob() -> str:
    """``<jars folder>/spark/*.jar`` (``$CDCLAKE_JARS`` moves the folder; no file system access)."""
    return str(_jars_folder() / "spark" / "*.jar")


def spark_job_args(job: str, **overrides: Any) -> dict[str, Any]:
    """``SparkSubmitOperator`` kwargs that run ``spark_jobs/<job>.py`` with the project's jars and
    JVM options (a ``conf`` override adds to those)."""
    conf = {**java_conf(), **overrides.pop("conf", {})}
    return {
        "conn_id": SPARK_CONN_ID,
        "application": spark_job_path(job),
        "jars": spark_jars_glob(),
        "name": f"cdclake-{job.removesuffix('_job').replace('_', '-')}",
        "conf": conf,
        **overrides,
    }
