"""Make the Spark drivers' class-data-sharing archive (``cdclake.spark_submit.class_archive``).

    .venv/bin/python scripts/class_archive.py [ARCHIVE]

Runs one hour of the demo's traffic (every format, good and bad messages) through the hourly
jobs' entry points in one ``spark-submit`` driver, exactly as the DAG launches them, in a
throw-away state folder: the raw hour is written straight to ``raw.kafka_messages`` (no broker
at set-up), then validate raw, normalize, validate changelog, compact, validate current and
publish, on the hour's audit branch. The JVM runs with ``-XX:ArchiveClassesAtExit``, so every
class those steps loaded (Spark's, Iceberg's, the fast path's) is written to the archive when it
exits; later drivers map it instead of loading, parsing and verifying the classes again.
``scripts/setup.sh`` calls this when the jars, the JDK or this file change. A step that fails
still leaves its classes loaded, so the archive is made whatever the gates say; the archive is
only a start-up cache, and a JVM that cannot use it starts as before.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOUR = dt.datetime(2024, 6, 1, 12)


def make(archive: Path) -> int:
    """Launch the workload under spark-submit with the dump option; move the archive in place."""
    from cdclake.spark_submit import EXTRA_JAVA_OPTIONS_ENV, JAVA_OPTIONS, spark_jars_glob

    home = Path(tempfile.mkdtemp(prefix="cdclake-class-archive-"))
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    env = {**os.environ, "CDCLAKE_HOME": str(home), "CDCLAKE_CONFIG": str(home / "pipeline.yml"),
           "GX_ANALYTICS_ENABLED": "false",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "include")]),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop(EXTRA_JAVA_OPTIONS_ENV, None)
    command = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]",
               "--jars", spark_jars_glob(),
               # The quick compiler only: the workload is small (it does not change what is archived).
               "--conf", f"spark.driver.extraJavaOptions={JAVA_OPTIONS} -XX:TieredStopAtLevel=1 "
                         f"-XX:ArchiveClassesAtExit={partial}",
               "--conf", f"spark.executor.extraJavaOptions={JAVA_OPTIONS}",
               str(Path(__file__).resolve()), "--workload"]
    log = home / "class-archive.log"
    try:
        with log.open("w") as out:
            code = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  check=False).returncode
        if code != 0 or not partial.is_file():
            # The dump's own notes ("[cds] Skipping ...": classes it cannot archive) left out.
            lines = [line for line in log.read_text(errors="replace").splitlines() if "][cds" not in line]
            print(f"class archive not made (exit {code}); log:\n" + "\n".join(lines[-60:]), file=sys.stderr)
            return 1
        partial.replace(archive)
        print(f"class archive: {archive} ({archive.stat().st_size >> 20} MB)")
        return 0
    finally:
        shutil.rmtree(home, ignore_errors=True)


def workload() -> int:
    """Inside the spark-submit driver: one demo hour through the hourly jobs' entry points."""
    from cdclake import demo
    from spark_jobs import compact_job, normalize_job, publish_job, validate_job
    from spark_jobs.cli_args import hour_text
    from spark_jobs.session import job_session, local_frame
    from spark_jobs.tables import RAW_MESSAGES, ensure_tables

    Path(os.environ["CDCLAKE_CONFIG"]).write_text(demo.demo_config(9092))
    _config, spark = job_session(None, "cdclake-class-archive")
    ensure_tables(spark)
    messages = demo.workload([HOUR, HOUR])  # two hours: its bad messages go to the second
    rows = [{"topic": m.topic, "partition": 0, "offset": i, "timestamp": dt.datetime.fromtimestamp(
                m.timestamp_ms / 1000, dt.UTC).replace(tzinfo=None),
             "timestamp_type": 0, "key": m.key, "value": m.value, "headers": [], "landed_hour": HOUR,
             "run_id": "class-archive", "landed_at": HOUR} for i, m in enumerate(messages)]
    local_frame(spark, rows, spark.table(RAW_MESSAGES).schema).writeTo(RAW_MESSAGES).append()
    hour, branch = ["--hour", hour_text(HOUR), "--run-id", "class-archive"], ["--branch", "audit_20240601T12"]
    steps = [(validate_job.main, [*hour, "--stage", "raw"]),
             (normalize_job.main, [*hour, *branch]),
             (validate_job.main, [*hour, "--stage", "changelog", *branch]),
             (compact_job.main, [*hour, *branch]),
             (validate_job.main, [*hour, "--stage", "current", *branch]),
             (publish_job.main, [*hour, *branch])]
    for main, argv in steps:
        try:
            main(argv)
        except Exception:  # noqa: BLE001 - the classes are loaded either way (see the module doc)
            traceback.print_exc()
    spark.stop()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--workload"]:
        sys.exit(workload())
    sys.path[:0] = [str(ROOT), str(ROOT / "include")]
    from cdclake.spark_submit import class_archive

    sys.exit(make(Path(sys.argv[1]) if len(sys.argv) > 1 else class_archive()))
