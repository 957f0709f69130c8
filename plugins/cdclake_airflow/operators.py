"""``CdclakeSparkJobOperator``: one cdclake job (``spark_jobs/jobs/<job>.py``) per data interval,
run on the Spark Connect server.

A thin :class:`PySparkOperator` (the Spark provider's own Spark Connect support): the task opens a
Connect session through the ``spark_connect_default`` connection (``sc://127.0.0.1:15002`` on
one machine, the compose service's address under docker-compose: a cluster is a connection
change), calls the job's ``main`` with the interval's arguments on that session, and stops the
session, which releases everything the job left on the server. The session is the task's own,
so its settings (the audit branch) never reach another task. Arguments are templated from the
data interval, so a backfill of any range runs each hour's job for exactly that hour. Nothing
here does I/O at DAG parse time.

A server that cannot be reached or must not be used (it does not answer, lost its scratch space,
or was started for another state folder: ``cdclake.spark_check.check_server``, checked before
the job and again when the job failed), a gate that failed and a configuration error fail the
task at once, without retries: they are not transient.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_pyspark import PySparkOperator

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

# The Airflow connection (type spark_connect) of the Spark Connect server.
SPARK_CONN_ID = "spark_connect_default"
# The hour every job works on: the run's data interval start, in UTC.
HOUR_TEMPLATE = "{{ data_interval_start.isoformat() }}"
# One Iceberg audit branch per hour (write-audit-publish, see spark_jobs/publish.py).
AUDIT_BRANCH_TEMPLATE = "audit_{{ data_interval_start.strftime('%Y%m%dT%H') }}"


def run_job(job: str, args: list[str], spark: Any = None) -> None:
    """Run ``spark_jobs/jobs/<job>.py``'s ``main(args)`` on ``spark``; a non-zero exit fails the
    task (the job printed why)."""
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from cdclake.exceptions import (
        CdclakeError,
        GateFailed,
        LandingError,
        OffsetContinuityError,
        RetentionGapError,
    )

    module = importlib.import_module(f"spark_jobs.jobs.{job}")
    try:
        code = module.main([a for a in args if a], spark=spark)  # a flag rendered empty is absent
    except (GateFailed, OffsetContinuityError, RetentionGapError) as exc:  # waiting changes nothing
        raise AirflowFailException(str(exc)) from exc
    except LandingError:
        raise  # Kafka may come back: retried
    except CdclakeError as exc:  # configuration: a retry would fail the same way
        raise AirflowFailException(str(exc)) from exc
    if code:
        raise AirflowException(f"cdclake job {job} exited with status {code} (its output says why)")


def fail_unless_reachable(conn_id: str) -> None:
    """Fail at once (no retries) when the connection's Spark Connect server does not listen, does
    not answer, or must not be used by the task's state folder: a retry minutes later would find
    it the same. One Config call when it is fine."""
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook
    from airflow.sdk.exceptions import AirflowFailException

    from cdclake.exceptions import SparkServerError
    from cdclake.spark_check import check_server

    try:
        check_server(_task_config(), SparkConnectHook(conn_id).get_connection_url())
    except SparkServerError as exc:
        raise AirflowFailException(f"{exc} (Airflow connection {conn_id!r})") from None


def lasting_server_problem(conn_id: str) -> str | None:
    """Why the connection's server can run no job of this task's any more, when a retry would
    find it the same (it lost its scratch space, or is another state folder's); None when it is
    fine or may come back (not listening or not answering: it may be restarting)."""
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    from cdclake.exceptions import SparkServerError
    from cdclake.spark_check import ServerNotUsable, check_server

    try:
        check_server(_task_config(), SparkConnectHook(conn_id).get_connection_url())
    except ServerNotUsable as exc:
        return f"{exc} (Airflow connection {conn_id!r})" if exc.lasting else None
    except SparkServerError:
        return None
    return None


def _task_config() -> PipelineConfig | None:
    """The task's configuration (its state folder: ``CDCLAKE_HOME``), which says whether the
    connection is the state folder's own server; None when it does not load (the job says why)."""
    from cdclake.config import load_config
    from cdclake.exceptions import CdclakeError

    try:
        return load_config()
    except CdclakeError:
        return None


def preload_gates() -> None:
    """Import Great Expectations in the background (seconds of imports), so that the first
    gate of a process that runs the hour's tasks one after another finds it imported."""
    import threading

    from spark_jobs.gate_history import import_gx

    threading.Thread(target=import_gx, name="cdclake-preload-gx").start()


class CdclakeSparkJobOperator(PySparkOperator):
    """Run ``spark_jobs/jobs/<job>.py --hour <interval start> --run-id <run id> [extra args]`` on
    the Spark Connect server. ``preload_gates``: when the DAG's tasks share one process
    (``cdclake run``), import the gates' library while this task runs."""

    def __init__(self, *, job: str, extra_args: Sequence[str] = (), hourly: bool = True,
                 conn_id: str = SPARK_CONN_ID, preload_gates: bool = False, **kwargs: Any) -> None:
        interval = ["--hour", HOUR_TEMPLATE] if hourly else []
        super().__init__(
            python_callable=run_job,
            conn_id=conn_id,
            op_kwargs={"job": job, "args": [*interval, "--run-id", "{{ run_id }}", *extra_args]},
            **kwargs,
        )
        self.job = job
        self.preload_gates = preload_gates

    def execute_callable(self) -> Any:
        import os

        from cdclake.airflow_env import TASKS_IN_ONE_PROCESS

        if self.conn_id:
            fail_unless_reachable(self.conn_id)
        if self.preload_gates and os.environ.get(TASKS_IN_ONE_PROCESS) == "1":
            preload_gates()
        try:
            return super().execute_callable()
        except Exception as failure:
            # A server that lost its scratch space under the job fails the same way on every
            # retry: say so now.
            from airflow.sdk.exceptions import AirflowFailException

            problem = (lasting_server_problem(self.conn_id)
                       if self.conn_id and not isinstance(failure, AirflowFailException) else None)
            if problem:
                raise AirflowFailException(problem) from failure
            raise
