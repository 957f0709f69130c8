"""The maintenance DAG's templated arguments render into what spark_jobs/jobs/maintenance.py accepts."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pendulum
import pytest

from spark_jobs.jobs.maintenance import build_parser
from spark_jobs.maintenance import STEPS
from tests.dags.conftest import DAGS_FOLDER


@pytest.fixture(scope="module")
def maintenance_dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER / "cdclake_maintenance.py"), safe_mode=False)
    assert bag.import_errors == {}
    return bag.dags["cdclake_maintenance"]


def _render(task, context: dict) -> list[str]:
    env = task.dag.get_template_env()
    return [env.from_string(arg).render(**context) for arg in task.op_kwargs["args"]]


def test_steps_run_in_order(maintenance_dag):
    order = [t.task_id for t in maintenance_dag.topological_sort()]
    assert order == list(STEPS)


@pytest.mark.parametrize("interval_end, expected", [
    (pendulum.datetime(2024, 3, 2, tz="UTC"), dt.datetime(2024, 3, 2)),
    (None, dt.datetime(2024, 3, 5, 7, 30)),  # manual run without a logical date: run_after
])
def test_job_args_render_to_a_valid_job_command_line(maintenance_dag, interval_end, expected):
    context = {"data_interval_end": interval_end, "run_id": "scheduled__x",
               "dag_run": SimpleNamespace(run_after=pendulum.datetime(2024, 3, 5, 7, 30, tz="UTC"))}
    for task in maintenance_dag.tasks:
        argv = _render(task, context)
        assert task.op_kwargs["job"] == "maintenance"
        assert argv == ["--run-id", "scheduled__x", "--as-of", argv[3], "--step", task.task_id]
        args = build_parser().parse_args(argv)  # the job's own command line accepts it
        assert (args.as_of, args.run_id, args.steps) == (expected, "scheduled__x", [task.task_id])
