"""The erasure DAG: triggered by hand, a dry run unless the trigger says otherwise, in the lakehouse
write pool, and its templated arguments render into what spark_jobs/jobs/erase.py accepts."""

from __future__ import annotations

from typing import Any

import pytest

from cdclake.dag_defaults import LAKEHOUSE_WRITES_POOL
from spark_jobs.jobs.erase import build_parser
from tests.dags.conftest import DAGS_FOLDER


@pytest.fixture(scope="module")
def erase_dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER / "cdclake_erase.py"), safe_mode=False)
    assert bag.import_errors == {}
    return bag.dags["cdclake_erase"]


def _argv(dag, **params: Any) -> list[str]:
    """The erase task's arguments for a run with ``params`` (the DAG's defaults for the others),
    as run_job passes them to the job: rendered, empty ones dropped."""
    task = dag.get_task("erase")
    context = {"params": {**{name: dag.params[name] for name in ("topic", "dry_run", "confirm")}, **params},
               "run_id": "manual__2026-12-07T15:00:00+00:00"}
    env = dag.get_template_env()
    rendered = [env.from_string(arg).render(**context) for arg in task.op_kwargs["args"]]
    return [arg for arg in rendered if arg]


def test_triggered_by_hand_only_one_run_at_a_time(erase_dag) -> None:
    assert erase_dag.timetable.can_be_scheduled is False  # schedule=None
    assert erase_dag.max_active_runs == 1
    assert [t.task_id for t in erase_dag.tasks] == ["erase"]


def test_params_a_trigger_from_the_ui_is_a_dry_run(erase_dag) -> None:
    params = erase_dag.params
    assert set(params) == {"table", "key", "topic", "reason", "dry_run", "confirm"}
    assert params["dry_run"] is True
    assert params["confirm"] is False
    assert params["topic"] is None
    for required in ("table", "key", "reason"):  # no default: the trigger form asks for them
        assert not params.get_param(required).has_value, required
    schema = params.get_param("key").schema
    assert "object" in schema["type"] and "string" in schema["type"]


def test_the_task_runs_the_erase_job_in_the_write_pool(erase_dag) -> None:
    task = erase_dag.get_task("erase")
    assert task.op_kwargs["job"] == "erase"
    assert task.pool == LAKEHOUSE_WRITES_POOL
    assert "--hour" not in task.op_kwargs["args"]  # not an hourly job


@pytest.mark.parametrize("key", [{"id": 42}, '{"id": 42}'], ids=["object", "json-text"])
def test_a_dry_run_trigger_renders_a_dry_run_command_line(erase_dag, key) -> None:
    argv = _argv(erase_dag, table="shop.customers", key=key, reason="GDPR request 1234")
    assert argv == ["--run-id", "manual__2026-12-07T15:00:00+00:00", "--table=shop.customers",
                    '--key={"id": 42}', "--reason=GDPR request 1234", "--dry-run"]
    args = build_parser().parse_args(argv)
    assert (args.table, args.key, args.reason, args.topic) == ("shop.customers", {"id": 42},
                                                               "GDPR request 1234", None)
    assert args.dry_run and not args.yes
    assert args.run_id == "manual__2026-12-07T15:00:00+00:00"


def test_a_confirmed_trigger_renders_yes_and_keeps_awkward_values_whole(erase_dag) -> None:
    """Quotes, spaces, a leading dash and Jinja-looking text reach the job as they were given: one
    argument each, no shell, not rendered twice."""
    key = {"email": "o'brien \"x\" <a&b>@example.com", "id": "-7"}
    reason = "-- ticket {{ 1 }} 'quoted'"
    argv = _argv(erase_dag, table="shop.public.customers", key=key, topic="demo.drs", reason=reason,
                 dry_run=False, confirm=True)
    assert argv[-1] == "--yes" and "--dry-run" not in argv
    args = build_parser().parse_args(argv)
    assert args.key == key
    assert (args.table, args.topic, args.reason) == ("shop.public.customers", "demo.drs", reason)
    assert args.yes and not args.dry_run


def test_unticking_dry_run_without_confirm_passes_neither_flag(erase_dag) -> None:
    """The job then refuses: an erasure needs ``--yes``."""
    argv = _argv(erase_dag, table="shop.customers", key={"id": 1}, reason="r", dry_run=False)
    args = build_parser().parse_args(argv)
    assert not args.dry_run and not args.yes
    assert "" not in argv


@pytest.mark.parametrize("name, value", [
    ("key", {}), ("key", ""), ("key", 42), ("table", ""), ("reason", ""), ("dry_run", "no"),
])
def test_a_trigger_with_an_empty_or_mistyped_param_is_refused(erase_dag, name: str, value: Any) -> None:
    import copy

    from airflow.sdk.exceptions import ParamValidationError

    params = copy.deepcopy(erase_dag.params)
    with pytest.raises(ParamValidationError, match=f"param {name}"):
        params[name] = value


def test_a_trigger_naming_table_key_and_reason_is_valid(erase_dag) -> None:
    import copy

    for key in ({"id": 42}, '{"id": 42}'):
        params = copy.deepcopy(erase_dag.params)
        params.update({"table": "shop.customers", "key": key, "reason": "GDPR request 1234"})
        assert params.validate()["dry_run"] is True
