"""``CdclakeSparkJobOperator``: one cdclake Spark job (``spark_jobs/<job>_job.py``) per data interval.

A thin :class:`SparkSubmitOperator`: the job file, the project's jars, its name, the connection
(``spark_default``, so a cluster is a connection change; see ``cdclake.spark_submit``) and the
interval arguments are filled in; retries and pool are the caller's. Arguments are templated
from the data interval, so a backfill of any range runs each hour's job for exactly that hour.
Nothing here does I/O at DAG parse time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from cdclake.spark_submit import spark_job_args

# The hour every job works on: the run's data interval start, in UTC.
HOUR_TEMPLATE = "{{ data_interval_start.isoformat() }}"
# One Iceberg audit branch per hour (write-audit-publish, see spark_jobs/publish.py).
AUDIT_BRANCH_TEMPLATE = "audit_{{ data_interval_start.strftime('%Y%m%dT%H') }}"


class CdclakeSparkJobOperator(SparkSubmitOperator):
    """Run ``spark_jobs/<job>_job.py --hour <interval start> --run-id <run id> [extra args]``."""

    def __init__(self, *, job: str, extra_args: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(
            **spark_job_args(f"{job}_job", **kwargs),
            application_args=["--hour", HOUR_TEMPLATE, "--run-id", "{{ run_id }}", *extra_args],
        )
        self.job = job
