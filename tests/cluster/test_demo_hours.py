"""The demo's three hours, run by the cluster's scheduler (a backfill: scheduled runs, each task
an Airflow LocalExecutor process, each Spark job on the standalone workers through the Connect
server), give tables equal, row for row, to the embedded default's run of the same hours
(``cdclake run``: ``airflow dags test`` on a local-mode Spark server, SQLite catalog, local
warehouse) reading the same Kafka topics."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
from pathlib import Path

import pytest

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
    assert {row["worker"] for row in seen} == {"worker1", "worker2"}, seen
    for row in seen:
        assert row["cdclake"].startswith(site) and row["spark_jobs"].startswith(site), row
        # Of the checkout, only the shared dependencies (.venv: pyspark, Airflow) may show.
        assert set(re.findall(re.escape(f"{ROOT}/") + r"([^/\s'\"]+)", json.dumps(row))) <= {".venv"}, row


def test_three_demo_hours_on_the_scheduler_equal_the_embedded_run(cluster: Cluster, tmp_path) -> None:
    start, end = cluster.hours[0], cluster.hours[-1] + dt.timedelta(hours=1)
    began = time.monotonic()
    backfill = cluster.client("cdclake", "airflow", "backfill", "--start", _hour(start), "--end", _hour(end),
                              "--wait", timeout=HOUR_TIMEOUT_S * 3)
    print(f"\ncluster: 3 hours on the scheduler in {time.monotonic() - began:.0f} s")
    assert backfill.returncode == 0, backfill.stdout[-3000:] + backfill.stderr[-3000:]
    on_cluster = cluster.client("python", str(SNAPSHOT))
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]

    home = tmp_path / "embedded"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDCLAKE_")}
    env.update(CDCLAKE_HOME=str(home), CDCLAKE_CONFIG=str(cluster.config),
               CDCLAKE_KAFKA_PORT=str(cluster.layout.ports()["kafka"]), CDCLAKE_SPARK_PORT=str(free_port()),
               # `cdclake run` runs hours from the DAG's start date on (the cluster's is in the future).
               CDCLAKE_START_DATE=start.strftime("%Y-%m-%dT%H:00:00Z"))
    began = time.monotonic()
    try:
        run = cdclake("run", "--start", _hour(start), "--end", _hour(end), env=env,
                      timeout=HOUR_TIMEOUT_S * 3)
        print(f"embedded: 3 hours (cdclake run) in {time.monotonic() - began:.0f} s")
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
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


def _snapshot_embedded(env: dict[str, str]) -> str:
    import subprocess
    import sys

    env = {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "include")])}
    done = subprocess.run([sys.executable, str(SNAPSHOT)], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
