"""DAG integrity, per file in dags/: imports cleanly with no connection, Variable or network access at
parse time, one @dag named like its file, tags and docs, and every task follows cdclake.dag_defaults
(gates never retry, I/O tasks retry; Spark jobs run in the lakehouse write pool)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from cdclake.dag_defaults import LAKEHOUSE_WRITES_POOL, RETRY_POLICY, task_kind
from tests.dags.conftest import DAGS_FOLDER

DAG_FILES = sorted(p for p in DAGS_FOLDER.glob("*.py") if not p.name.startswith("_"))


class ParseTimeLookup(AssertionError):
    """A DAG file touched a connection, Variable or the network while being parsed."""


def _forbid(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ParseTimeLookup(f"{what} at DAG parse time ({args[1:] or kwargs}); move it into a task")
    return refuse


@pytest.fixture(scope="module")
def parse_bag():
    """Parse one DAG file (or the folder) with lookups and the network forbidden."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.connection import Connection as ModelConnection
    from airflow.models.variable import Variable as ModelVariable
    from airflow.sdk import BaseHook, Connection, Variable

    bags: dict[Path, Any] = {}

    def parse(path: Path):
        if path not in bags:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(BaseHook, "get_connection", classmethod(_forbid("BaseHook.get_connection")))
                patch.setattr(Connection, "get", classmethod(_forbid("Connection.get")))
                patch.setattr(Variable, "get", classmethod(_forbid("Variable.get")))
                patch.setattr(ModelConnection, "get_connection_from_secrets",
                              classmethod(_forbid("Connection.get_connection_from_secrets")))
                patch.setattr(ModelVariable, "get", classmethod(_forbid("Variable.get")))
                patch.setattr(socket.socket, "connect", _forbid("a network connection"))
                patch.setattr(socket, "create_connection", _forbid("a network connection"))
                bags[path] = DagBag(dag_folder=str(path), safe_mode=False)
        return bags[path]

    return parse


def test_dags_folder_has_dag_files():
    assert DAG_FILES, f"no DAG files in {DAGS_FOLDER}"


def test_whole_folder_imports_without_errors(parse_bag):
    bag = parse_bag(DAGS_FOLDER)
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == sorted(p.stem for p in DAG_FILES)


@pytest.mark.parametrize("path", DAG_FILES, ids=lambda p: p.name)
def test_imports_cleanly_one_dag_named_like_its_file(parse_bag, path: Path):
    bag = parse_bag(path)
    assert bag.import_errors == {}, f"{path.name} failed to import: {bag.import_errors}"
    assert list(bag.dags) == [path.stem], f"{path.name} must define exactly one DAG, dag_id {path.stem!r}"


@pytest.mark.parametrize("path", DAG_FILES, ids=lambda p: p.name)
def test_has_tags_docs_and_owner(parse_bag, path: Path):
    for dag in parse_bag(path).dags.values():
        assert dag.tags, f"{dag.dag_id} has no tags"
        assert "cdclake" in dag.tags
        assert dag.doc_md and dag.doc_md.strip(), f"{dag.dag_id} has no doc_md (use doc_md=__doc__)"
        assert dag.catchup is False or dag.max_active_runs is not None


@pytest.mark.parametrize("path", DAG_FILES, ids=lambda p: p.name)
def test_retry_policy_per_kind_of_task(parse_bag, path: Path):
    for dag in parse_bag(path).dags.values():
        assert dag.tasks, f"{dag.dag_id} has no tasks"
        for task in dag.tasks:
            kind = task_kind(task.task_id)
            policy = RETRY_POLICY[kind]
            where = f"{dag.dag_id}.{task.task_id} ({kind})"
            assert task.retries == policy["retries"], f"{where}: retries {task.retries}, policy {policy}"
            if kind == "gate":
                assert task.retries == 0, f"{where}: quality gates never retry"
            else:
                assert task.retries > 0, f"{where}: I/O tasks retry"
                assert task.retry_delay == policy["retry_delay"], where


@pytest.mark.parametrize("path", DAG_FILES, ids=lambda p: p.name)
def test_spark_jobs_run_on_the_spark_connect_server(parse_bag, path: Path):
    """Every Spark task is a job's ``main`` on a session of the Spark Connect connection: no
    spark-submit, no JVM per task."""
    import importlib

    from airflow.providers.apache.spark.operators.spark_pyspark import PySparkOperator

    from cdclake_airflow.operators import SPARK_CONN_ID, CdclakeSparkJobOperator, run_job

    spark_tasks = 0
    for dag in parse_bag(path).dags.values():
        for task in dag.tasks:
            where = f"{dag.dag_id}.{task.task_id}"
            assert type(task).__name__ != "SparkSubmitOperator", f"{where}: a JVM per task"
            if not isinstance(task, PySparkOperator):
                continue
            spark_tasks += 1
            assert isinstance(task, CdclakeSparkJobOperator), where
            assert task.conn_id == SPARK_CONN_ID, where
            assert task.python_callable is run_job, where
            module = importlib.import_module(f"spark_jobs.jobs.{task.op_kwargs['job']}")
            assert callable(module.main), where
    assert spark_tasks, f"{path.name} runs no Spark job"


@pytest.mark.parametrize("path", DAG_FILES, ids=lambda p: p.name)
def test_iceberg_writers_share_the_write_pool(parse_bag, path: Path):
    """Spark I/O tasks commit to Iceberg: one at a time across DAGs (maintenance vs. hourly)."""
    from cdclake_airflow.operators import CdclakeSparkJobOperator

    for dag in parse_bag(path).dags.values():
        for task in dag.tasks:
            if isinstance(task, CdclakeSparkJobOperator) and task_kind(task.task_id) == "io":
                assert task.pool == LAKEHOUSE_WRITES_POOL, (
                    f"{dag.dag_id}.{task.task_id}: Spark jobs write Iceberg tables; "
                    "use lakehouse_write_args()")


@pytest.mark.parametrize("lookup", [
    "from airflow.sdk import Variable\nVariable.get('x')",
    "from airflow.sdk import BaseHook\nBaseHook.get_connection('kafka_default')",
    "import socket\nsocket.create_connection(('localhost', 9092))",
])
def test_parse_time_lookups_are_caught(parse_bag, tmp_path: Path, lookup: str):
    """The guard above works: a DAG file doing a lookup at parse time is an import error."""
    dag_file = tmp_path / "bad_dag.py"
    dag_file.write_text(f"from airflow.sdk import dag\n{lookup}\n\n@dag(schedule=None)\ndef bad_dag():\n"
                        "    pass\n\nbad_dag()\n")
    bag = parse_bag(dag_file)
    assert "ParseTimeLookup" in str(bag.import_errors) or "parse time" in str(bag.import_errors)


def test_hourly_start_date_comes_from_the_configuration(monkeypatch: pytest.MonkeyPatch):
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("CDCLAKE_START_DATE", "2025-02-03T07:00:00Z")
    bag = DagBag(dag_folder=str(DAGS_FOLDER / "cdclake_hourly.py"), safe_mode=False)
    dag = bag.dags["cdclake_hourly"]
    assert dag.start_date is not None and dag.start_date.isoformat() == "2025-02-03T07:00:00+00:00"
    assert dag.catchup is True and dag.max_active_runs == 1


@pytest.mark.parametrize("reland", [False, True])
def test_the_land_task_reads_kafka_again_only_when_the_run_asks(parse_bag, reland: bool) -> None:
    """Param ``reland`` adds ``--reland`` to the land job; otherwise the flag renders empty and
    ``run_job`` drops it, so a re-run keeps the hour's raw copy."""
    import pendulum

    class TaskInstance:
        def xcom_pull(self, task_ids: str) -> str:
            return f"/plans/{task_ids}.json"

    dag = parse_bag(DAGS_FOLDER / "cdclake_hourly.py").dags["cdclake_hourly"]
    land = dag.get_task("land")
    context = {"params": {"topics": [], "reland": reland}, "run_id": "manual__1", "ti": TaskInstance(),
               "data_interval_start": pendulum.datetime(2025, 2, 3, 7, tz="UTC")}
    rendered = [dag.get_template_env().from_string(arg).render(**context) for arg in land.op_kwargs["args"]]
    assert [arg for arg in rendered if arg] == [
        "--hour", "2025-02-03T07:00:00+00:00", "--run-id", "manual__1", "--plan-file", "/plans/plan.json",
        *(["--reland"] if reland else [])]
    assert dag.params["reland"] is False


def test_a_hole_or_retention_gap_fails_the_task_at_once_and_kafka_outages_are_retried(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Waiting fills no hole: those fail without retries; an unreachable broker may come back."""
    import sys
    import types

    from airflow.sdk.exceptions import AirflowFailException

    from cdclake.exceptions import LandingError, OffsetContinuityError, RetentionGapError
    from cdclake_airflow.operators import run_job

    for error, final in ((OffsetContinuityError, True), (RetentionGapError, True), (LandingError, False)):
        def main(args: list[str], spark: object = None, error: type[Exception] = error) -> int:
            raise error(f"{error.__name__} for {args}")

        module = types.ModuleType("spark_jobs.jobs.failing")
        module.main = main  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "spark_jobs.jobs.failing", module)
        with pytest.raises(AirflowFailException if final else LandingError, match=error.__name__):
            run_job("failing", ["--hour", "2025-02-03T07:00:00+00:00", ""])
