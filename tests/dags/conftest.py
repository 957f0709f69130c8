"""Airflow for DAG tests: a private AIRFLOW_HOME, no examples, the project's dags/ folder (set
before Airflow is first imported: this conftest loads before the test modules of tests/dags;
parsing DAG files needs no metadata database).

And the end-to-end pipelines shared by the e2e modules: three hours of mixed-format traffic on the
real broker, run with `cdclake run` (``pipeline``) and backfilled on a real scheduler
(``backfilled``: `cdclake airflow start`, which keeps running until the last test of this folder).
Each pipeline has a state folder of its own (catalog, warehouse, Airflow database) under the test
run's; the Kafka broker and the Spark Connect server are the test run's.
"""

from __future__ import annotations

import atexit
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags"

if "airflow" not in sys.modules:
    os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="cdclake-airflow-")
    atexit.register(shutil.rmtree, os.environ["AIRFLOW_HOME"], ignore_errors=True)
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(DAGS_FOLDER)
    os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"

TOPICS = ["demo.drs", "demo.dataworks", "demo.canal"]
HOURS = [dt.datetime(2025, 2, 3, 7), dt.datetime(2025, 2, 3, 8), dt.datetime(2025, 2, 3, 9)]
LINEAGE = ("_cdc_run_id", "run_id", "quarantined_at", "validated_at")


def snapshot(config) -> dict[str, list[tuple]]:
    """Every published table's rows (lineage run ids left out), sorted."""
    from cdclake.catalog import open_catalog
    from cdclake.query import run_query

    catalog = open_catalog(config)
    names = [f"current.{t}" for _ns, t in catalog.list_tables("current")]
    names += ["cdc.changelog", "cdc.quarantine"]
    out = {}
    for name in sorted(names):
        columns, rows = run_query(config, f"SELECT * FROM {name}")
        keep = [i for i, c in enumerate(columns) if c not in LINEAGE]
        out[name] = sorted(tuple(repr(r[i]) for i in keep) for r in rows)
    return out


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="package")
def config_file(kafka_bootstrap, spark_server, state_home) -> Path:
    """The topics of these tests (used by every process of both pipelines, through
    ``CDCLAKE_CONFIG``: see :func:`pipeline_environment`), and their traffic."""
    from cdclake import demo

    path = state_home / "e2e-pipeline.yml"
    path.write_text(demo.demo_config(int(kafka_bootstrap.rsplit(":", 1)[1]), TOPICS))
    demo.produce(kafka_bootstrap, demo.workload(HOURS, TOPICS))
    return path


def pipeline_environment(config_file: Path, **values: str):  # -> context manager
    """The environment the pipelines' processes start in: the test's configuration, and ``values``
    (set only while they start, so the other tests of the folder never see them)."""
    return _environment(CDCLAKE_CONFIG=str(config_file), **values)


@pytest.fixture(scope="package")
def pipeline(config_file, state_home, kafka_sasl_settings):
    """Run the three hours through Airflow with `cdclake run` (`airflow dags test` per hour)."""
    from cdclake.config import load_config
    from cdclake.run_cli import run_range

    with pipeline_environment(config_file, CDCLAKE_HOME=str(state_home / "e2e-run")):
        config = load_config()
    # Kafka through an Airflow connection that logs in with a password (SASL/PLAIN).
    connection = json.dumps({"conn_type": "kafka", "extra": kafka_sasl_settings})
    with pipeline_environment(config_file, AIRFLOW_CONN_KAFKA_DEFAULT=connection):
        run_range(config, HOURS[0], HOURS[-1] + dt.timedelta(hours=1))
    return config


@dataclass
class Backfill:
    config: object  # PipelineConfig
    ui: dict[str, object]  # what the running UI answered (ui_probe)
    url: str  # the running UI


def http(method: str, url: str, body: dict[str, str] | None = None,
          token: str | None = None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _group_socket_inodes(group: int) -> set[str]:
    """The socket inodes held open by the processes of process group ``group``."""
    inodes = set()
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or os.getpgid(int(proc.name)) != group:
                continue
            for fd in (proc / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except (ProcessLookupError, FileNotFoundError, PermissionError):
            continue  # a process that ended meanwhile
    return inodes


def listening_sockets(group: int) -> set[tuple[str, int]]:
    """(local address in hex, as /proc/net shows it, and port) of every socket that a process of
    process group ``group`` listens on."""
    inodes = _group_socket_inodes(group)
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and fields[9] in inodes:
                found.add((address, int(hex_port, 16)))
    return found


def ui_probe(config, port: int) -> dict[str, object]:
    """The running UI as an outsider and as the admin sees it, and what Airflow listens on."""
    from cdclake.airflow_cli import running_group
    from cdclake.airflow_env import admin_password

    base = f"http://127.0.0.1:{port}"
    password = admin_password(config)
    status, body = http("POST", f"{base}/auth/token", {"username": "admin", "password": password})
    token = json.loads(body)["access_token"] if status == 201 else None
    return {
        "anonymous_api": http("GET", f"{base}/api/v2/dags")[0],
        "anonymous_token": http("GET", f"{base}/auth/token")[0],  # the all-admins door
        "wrong_password": http("POST", f"{base}/auth/token", {"username": "admin", "password": "x" * 12})[0],
        "login": status,
        "api_with_login": http("GET", f"{base}/api/v2/dags", token=token)[0],
        "listening": listening_sockets(running_group(config) or 0),
        "password": password,
    }


@pytest.fixture(scope="package")
def backfilled(config_file, state_home) -> Iterator[Backfill]:
    """The same hours backfilled on a real scheduler, into a state folder of their own; its UI
    is probed, and it keeps running for the tests of the UI."""
    from cdclake import airflow_cli, kafka_broker
    from cdclake.config import load_config

    # A start date far ahead: the unpaused DAG schedules nothing itself, only the backfills run.
    home = str(state_home / "e2e-backfill")
    port = kafka_broker.free_port()
    settings = {"CDCLAKE_HOME": home, "CDCLAKE_START_DATE": "2100-01-01T00:00:00Z"}
    with pipeline_environment(config_file, **settings):
        config = load_config()
        airflow_cli.start(port)
    try:
        code = airflow_cli.backfill(config, HOURS[0], HOURS[-1] + dt.timedelta(hours=1), wait=True,
                                    timeout_s=60 * 60)
        assert code == 0, f"backfill failed; logs under {config.home / 'airflow' / 'logs'}"
        yield Backfill(config, ui_probe(config, port), f"http://127.0.0.1:{port}")
    finally:
        # The shell leading Airflow's process group is this process's child: reaped as it exits,
        # or its zombie keeps the group alive until stop() gives up waiting and kills it.
        group = airflow_cli.running_group(config)
        if group is not None:
            threading.Thread(target=_reap, args=(group,), daemon=True).start()
        with pipeline_environment(config_file, **settings):
            airflow_cli.stop()


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
