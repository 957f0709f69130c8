"""The demo's three hours, run by the cluster's scheduler (backfills: scheduled runs, each task an
Airflow LocalExecutor process, each Spark job on the standalone workers through the Connect
server), through a PostgreSQL restart, a lost worker and a killed Connect server, give tables
equal, row for row, to the embedded default's run of the same hours (``cdclake run``: ``airflow
dags test`` on a local-mode Spark server, SQLite catalog, local warehouse) reading the same Kafka
topics."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cdclake.cluster import connect, services
from cdclake.cluster.layout import Layout
from cdclake.kafka_broker import free_port
from tests.cluster.conftest import ROOT, Cluster, cdclake

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SNAPSHOT = Path(__file__).with_name("snapshot_tables.py")
HOUR_TIMEOUT_S = 1800


def _hour(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H")


def test_executors_import_the_wheel_not_the_checkout(cluster: Cluster) -> None:
    probe = cluster.client("python", str(Path(__file__).with_name("executor_probe.py")), timeout=900)
    assert probe.returncode == 0, probe.stderr[-3000:]
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    site = str(cluster.layout.venv)
    print("\nexecutors seen running tasks: " + ", ".join(f"{row['worker']} pid {row['pid']}" for row in seen))
    assert {row["worker"] for row in seen} == {"worker1", "worker2"}, seen
    for row in seen:
        assert row["cdclake"].startswith(site) and row["spark_jobs"].startswith(site), row
        # Of the checkout, only the shared dependencies (.venv: pyspark, Airflow) may show.
        assert set(re.findall(re.escape(f"{ROOT}/") + r"([^/\s'\"]+)", json.dumps(row))) <= {".venv"}, row


def test_three_demo_hours_on_the_scheduler_through_faults_equal_the_embedded_run(cluster: Cluster,
                                                                                tmp_path) -> None:
    """Hour by hour on the scheduler, with a fault before or during each of the last two: PostgreSQL
    restarted between hours 1 and 2; a worker killed (SIGKILL, with its executor) during hour 2's
    normalize; the Connect server killed between hours 2 and 3, so that hour 3's first Spark task
    fails at once naming the server, then restarted and the task cleared. The tables equal the
    embedded default's uninterrupted run of the same hours."""
    first, second, third = cluster.hours
    layout = cluster.layout
    began = time.monotonic()
    assert _backfill(cluster, first).returncode == 0
    print(f"\ncluster: hour 1 on the scheduler in {time.monotonic() - began:.0f} s")
    print(cluster.client("python", "-c", _TASK_TIMES, first.isoformat()).stdout)

    pg_before = services.pg_pid(layout)
    services.stop_postgres(layout)
    services.start_postgres(layout)
    assert services.pg_pid(layout) not in (None, pg_before)
    lost = _kill_worker_during(cluster, "normalize", second)
    print(f"PostgreSQL restarted (pid {pg_before} -> {services.pg_pid(layout)}); worker1 and its "
          f"executor {lost} killed during hour 2's normalize")
    assert re.search(r"Lost executor|Removing executor|ExecutorLost", layout.log("connect").read_text()), \
        "the Connect server never saw the worker go"
    airflow_log = (layout.home / "airflow" / "airflow.log").read_text()
    restarted = re.findall(r"cdclake: airflow (\S+) exited", airflow_log)
    print(f"Airflow components started again after the PostgreSQL restart: {restarted or 'none'}")

    services.start_worker(layout, 1)
    server = connect.stop(layout)
    assert server is not None
    began = time.monotonic()
    failed = _backfill(cluster, third)
    took = time.monotonic() - began
    land_log = _task_logs(layout, "land", third)
    print(f"Connect server (pid {server}) killed: hour 3 failed in {took:.0f} s:\n{land_log[-600:]}")
    assert failed.returncode != 0
    assert f"127.0.0.1:{layout.ports()['connect']}" in land_log and "Spark Connect server" in land_log
    assert took < 240, "the land task waited for a retry instead of failing at once"
    connect.start(layout)
    _clear_and_wait(cluster, third)
    on_cluster = cluster.client("python", str(SNAPSHOT))
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]

    start, end = first, third + dt.timedelta(hours=1)
    home = tmp_path / "embedded"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDCLAKE_")}
    env.update(CDCLAKE_HOME=str(home), CDCLAKE_CONFIG=str(cluster.config),
               CDCLAKE_KAFKA_PORT=str(layout.ports()["kafka"]), CDCLAKE_SPARK_PORT=str(free_port()),
               # `cdclake run` runs hours from the DAG's start date on (the cluster's is in the future).
               CDCLAKE_START_DATE=start.strftime("%Y-%m-%dT%H:00:00Z"))
    began = time.monotonic()
    try:
        run = cdclake("run", "--start", _hour(start), "--end", _hour(end), env=env,
                      timeout=HOUR_TIMEOUT_S * 3)
        print(f"embedded: 3 hours (cdclake run) in {time.monotonic() - began:.0f} s")
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        _print_embedded_task_times(env, first)
        embedded = _snapshot_embedded(env)
    finally:
        cdclake("spark", "stop", env=env)
    expected = json.loads(embedded)
    found = json.loads(on_cluster.stdout)
    assert sum(len(rows) for name, rows in expected.items() if name.startswith("current.")) > 0
    assert sorted(found) == sorted(expected)
    for name in expected:
        only_embedded = [row for row in expected[name] if row not in found[name]][:2]
        only_cluster = [row for row in found[name] if row not in expected[name]][:2]
        assert found[name] == expected[name], \
            f"{name}: embedded only {only_embedded}; cluster only {only_cluster}"


def _print_embedded_task_times(env: dict[str, str], hour: dt.datetime) -> None:
    import sys

    env = {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "include")])}
    done = subprocess.run([sys.executable, "-c", _TASK_TIMES, hour.isoformat()], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    print("embedded: hour 1's tasks\n" + done.stdout + done.stderr[-1000:])


def _backfill(cluster: Cluster, hour: dt.datetime) -> subprocess.CompletedProcess[str]:
    done = cluster.client("cdclake", "airflow", "backfill", "--start", _hour(hour),
                          "--end", _hour(hour + dt.timedelta(hours=1)), "--wait", timeout=HOUR_TIMEOUT_S)
    print(done.stdout[-1000:], done.stderr[-1000:])
    return done


def _task_logs(layout: Layout, task: str, hour: dt.datetime) -> str:
    """The task's log files of ``hour``'s run, every attempt (a run's id names its data interval's
    end, when it runs)."""
    logs = layout.home / "airflow" / "logs" / "dag_id=cdclake_hourly"
    found = sorted(logs.glob(f"run_id=*{hour + dt.timedelta(hours=1):%Y-%m-%dT%H}:*/task_id={task}/*.log"))
    return "\n".join(path.read_text(errors="replace") for path in found)


def _kill_worker_during(cluster: Cluster, task: str, hour: dt.datetime) -> list[int]:
    """Backfill ``hour``; once its ``task`` has started, SIGKILL worker1 and its executors. Returns
    the executors' PIDs; the hour must publish all the same."""
    layout = cluster.layout
    worker = services.running(layout, "worker1", services.WORKER_CLASS)
    assert worker is not None
    result: list[subprocess.CompletedProcess[str]] = []
    runner = threading.Thread(target=lambda: result.append(_backfill(cluster, hour)))
    runner.start()
    deadline = time.monotonic() + HOUR_TIMEOUT_S
    while not _task_logs(layout, task, hour) and runner.is_alive():
        assert time.monotonic() < deadline
        time.sleep(0.5)
    executors = _executors_in(layout.worker_dir(1))
    for pid in [worker, *executors]:
        os.kill(pid, signal.SIGKILL)
    runner.join()
    assert result and result[0].returncode == 0, "the hour did not publish after losing worker1"
    assert executors, f"worker1 ran no executor when {task} started"
    return executors


def _executors_in(folder: Path) -> list[int]:
    """PIDs of the executor JVMs working in ``folder`` (a worker's)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            command = (proc / "cmdline").read_bytes()
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if b"CoarseGrainedExecutorBackend" in command and cwd.startswith(str(folder)):
            found.append(int(proc.name))
    return found


_TASK_TIMES = """
import datetime as dt, sys
from cdclake.airflow_cli import task_times
from cdclake.config import load_config
for task, took in task_times(load_config(), dt.datetime.fromisoformat(sys.argv[1])):
    print(f"  {task:20} {took:6.1f} s")
"""


_CLEAR = """
import datetime as dt, sys, time
from cdclake.airflow_cli import backfill_runs, clear_task
from cdclake.config import load_config
config = load_config()
hour = dt.datetime.fromisoformat(sys.argv[1])
done = clear_task(config, hour, "land")
print(done.stdout[-2000:], done.stderr[-2000:])
assert done.returncode == 0, done.stdout + done.stderr
deadline = time.monotonic() + float(sys.argv[2])
while True:
    state = set(backfill_runs(config, [hour]).values())
    if state and state <= {"success", "failed"}:
        print(state)
        raise SystemExit(0 if state == {"success"} else 1)
    assert time.monotonic() < deadline, state
    time.sleep(10)
"""


def _clear_and_wait(cluster: Cluster, hour: dt.datetime) -> None:
    """Clear the hour's failed land task and what follows it (``airflow tasks clear -d``), then wait
    for its run to finish: it must succeed."""
    cleared = cluster.client("python", "-c", _CLEAR, hour.isoformat(), str(HOUR_TIMEOUT_S),
                             timeout=HOUR_TIMEOUT_S + 60)
    print(cleared.stdout[-3000:])
    assert cleared.returncode == 0, cleared.stdout[-3000:] + cleared.stderr[-3000:] + \
        _task_logs(cluster.layout, "land", hour)[-3000:]


def _snapshot_embedded(env: dict[str, str]) -> str:
    import sys

    env = {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "include")])}
    done = subprocess.run([sys.executable, str(SNAPSHOT)], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
