"""Shared fixtures: a private state folder, one Spark Connect server (and a session on it) and one
Kafka broker per test run."""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Before anything reads configuration: a state folder and broker port of this run's own, so
# two checkouts or two runs never share a broker, catalog or warehouse.
_HOME = Path(tempfile.mkdtemp(prefix="cdclake-test-"))
os.environ["CDCLAKE_HOME"] = str(_HOME)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Each xdist worker has its own broker and Spark server: it inherits the controller's ports.
_OWN_PORTS = bool(os.environ.get("PYTEST_XDIST_WORKER"))
for _port in ("CDCLAKE_KAFKA_PORT", "CDCLAKE_SPARK_PORT"):
    if _OWN_PORTS or _port not in os.environ:
        os.environ[_port] = str(_free_port())
os.environ.pop("CDCLAKE_KAFKA_BOOTSTRAP", None)
os.environ.pop("CDCLAKE_SPARK_REMOTE", None)
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
logging.getLogger("great_expectations").setLevel(logging.WARNING)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cluster-tier", action="store_true",
                     help="run the cluster tier too (tests/cluster)")


# Test files that share package fixtures (tests/dags: the hours run by `cdclake run` and backfilled
# on a scheduler): one worker runs them all, so the fixtures are made once.
SHARED_FIXTURE_FILES = frozenset({"tests/dags/test_hourly_e2e.py", "tests/dags/test_airflow_page.py"})
SHARED_FIXTURE_GROUP = "dags-pipeline"


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with the files of :data:`SHARED_FIXTURE_FILES` one unit of work."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SHARED_FIXTURE_GROUP if path in SHARED_FIXTURE_FILES else path

    return FileGroups(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tiers by marker: unit (unmarked), ``spark`` and ``e2e`` (both ``slow``): ``-m e2e`` runs
    the DAG runs, ``-m spark`` the rest of the integration tests, ``-m "not slow"`` the unit tests.
    The ``cluster`` tier (tests/cluster: the native cluster, ``cdclake cluster``) runs only when
    ``-m`` names it or ``--cluster-tier`` is given (``bash scripts/test.sh --cluster-tier``): it starts a
    dozen processes for many minutes."""
    wants_cluster = "cluster" in (config.option.markexpr or "") or bool(config.getoption("cluster_tier"))
    for item in items:
        if item.get_closest_marker("cluster"):
            if not wants_cluster:
                item.add_marker(pytest.mark.skip(reason="the cluster tier: run with -m cluster"))
        elif item.get_closest_marker("slow"):
            item.add_marker("e2e" if item.path.parent.name == "dags" else "spark")
    # The longest files first (each a worker's unit of work: ``--dist loadfile``), so that two
    # workers (``--no-loadscope-reorder``) do not end on one long file each: the cluster tier, the
    # DAG runs, the crash harnesses, the other integration tests, then the unit tests.
    items[:] = sorted(items, key=lambda item: _duration_rank(item, wants_cluster))


def _duration_rank(item: pytest.Item, wants_cluster: bool) -> int:
    if item.get_closest_marker("cluster"):
        return 0 if wants_cluster else 4
    if not item.get_closest_marker("slow"):
        return 4
    return {"dags": 1, "faults": 2}.get(item.path.parent.name, 3)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the run's state folder when every test passed; keep it (and say where) otherwise."""
    if exitstatus == 0 and not os.environ.get("CDCLAKE_KEEP_TEST_STATE"):
        shutil.rmtree(_HOME, ignore_errors=True)
    else:
        print(f"\ncdclake test state kept in {_HOME}")


@pytest.fixture(scope="session")
def state_home() -> Path:
    return _HOME


@pytest.fixture(scope="session")
def config():  # -> PipelineConfig
    from cdclake.config import load_config

    return load_config()


@pytest.fixture(scope="session")
def spark_server(config) -> Iterator[str]:
    """The test run's Spark Connect server (Iceberg catalog in the run's state folder), shared
    by the test session and every job the DAG tests run; stopped by its PID at the end."""
    from cdclake import spark_server as server

    url = server.start(config)
    yield url
    server.stop(config.home)


@pytest.fixture(scope="session")
def spark(config, spark_server) -> Iterator:
    """The test run's Spark Connect session on :func:`spark_server`."""
    from spark_jobs.session import connect

    session = connect(config, "cdclake-tests")
    yield session
    session.stop()


# The broker's SASL/PLAIN login, random per run: tests grep logs for it.
KAFKA_SASL_USER = "cdclake"
KAFKA_SASL_PASSWORD = f"pw-{secrets.token_hex(12)}"
_KAFKA_SASL_PORT = _free_port()


@pytest.fixture(scope="session")
def kafka_bootstrap(config) -> Iterator[str]:
    """A real Apache Kafka broker (KRaft) for the test run; stopped by its PID at the end. It
    also listens with SASL/PLAIN (:func:`kafka_sasl_settings`)."""
    from cdclake import kafka_broker

    sasl = kafka_broker.SaslListener(_KAFKA_SASL_PORT, {KAFKA_SASL_USER: KAFKA_SASL_PASSWORD})
    bootstrap = kafka_broker.start(config.kafka_port, config.home, sasl=sasl)
    yield bootstrap
    kafka_broker.stop(config.home)


@pytest.fixture(scope="session")
def kafka_sasl_settings(kafka_bootstrap) -> dict[str, str]:
    """Kafka client settings that log in to the test broker with a password."""
    return {"bootstrap.servers": f"localhost:{_KAFKA_SASL_PORT}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": KAFKA_SASL_USER,
            "sasl.password": KAFKA_SASL_PASSWORD}


@pytest.fixture(scope="session")
def catalog(config):
    from cdclake.catalog import open_catalog

    return open_catalog(config)
