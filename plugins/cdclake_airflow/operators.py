"""``CdclakeSparkJobOperator``: one cdclake Spark job (``spark_jobs/<job>_job.py``) per data interval.

A thin :class:`SparkSubmitOperator`: the job file, its name and the interval arguments are filled
in, the rest (``conn_id`` — ``spark_default``, so a cluster is a connection change — retries,
pool) is the caller's. Arguments are templated from the data interval, so a backfill of any range
runs each hour's job for exactly that hour. Nothing here does I/O at DAG parse time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

PROJECT_ROOT = Path(__file__).resolve().parents[2]
JOBS_FOLDER = PROJECT_ROOT / "spark_jobs"

# The hour every job works on: the run's data interval start, in UTC.
HOUR_TEMPLATE = "{{ data_interval_start.isoformat() }}"
# One Iceberg audit branch per hour (write-audit-publish, see spark_jobs/publish.py).
AUDIT_BRANCH_TEMPLATE = "audit_{{ data_interval_start.strftime('%Y%m%dT%H') }}"


class CdclakeSparkJobOperator(SparkSubmitOperator):
    """Run ``spark_jobs/<job>_job.py --hour <interval start> --run-id <run id> [extra args]``."""

    def __init__(self, *, job: str, extra_args: Sequence[str] = (), conn_id: str = "spark_default",
                 **kwargs: Any) -> None:
        application = JOBS_FOLDER / f"{job}_job.py"
        if not job.isidentifier():
            raise ValueError(f"job must be a module name under spark_jobs/, got {job!r}")
        super().__init__(
            application=str(application),
            application_args=["--hour", HOUR_TEMPLATE, "--run-id", "{{ run_id }}", *extra_args],
            name=f"cdclake-{job}",
            conn_id=conn_id,
            **kwargs,
        )
        self.job = job
