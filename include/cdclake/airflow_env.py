"""The environment the embedded Airflow runs in: home, DAGs folder, connections, low parallelism.

Used by ``cdclake run`` (``airflow dags test`` per hour), ``cdclake airflow`` (scheduler and UI) and
the tests. Everything lives under ``<state folder>/airflow``; nothing touches ``~/airflow``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

from cdclake.config import PipelineConfig
from cdclake.exceptions import SetupError
from cdclake.paths import bundled_dir, import_paths, private_file, write_private

ADMIN_USER = "admin"


def airflow_home(config: PipelineConfig) -> Path:
    home = config.home / "airflow"
    home.mkdir(parents=True, exist_ok=True)
    return home


def password_file(config: PipelineConfig) -> Path:
    """The UI's login passwords (simple auth manager, JSON ``{user: password}``), mode 0600."""
    return airflow_home(config) / "passwords.json"


def admin_password(config: PipelineConfig) -> str:
    """The ``admin`` user's password: generated into :func:`password_file` on first use, so that
    Airflow never generates (and logs) one itself."""
    path = password_file(config)
    if not path.exists():
        write_private(path, json.dumps({ADMIN_USER: secrets.token_urlsafe(18)}) + "\n")
    private_file(path)
    return str(json.loads(path.read_text())[ADMIN_USER])


# SQLite metadata database: wait up to a minute for a lock (the scheduler, DAG processor, API
# server and the CLI all write to it) instead of failing with "database is locked" after 5 s.
SQLITE_CONNECT_ARGS: dict[str, object] = {"timeout": 60}


# Set for ``airflow dags test`` runs (``cdclake run``), whose tasks run one after another in one
# process: a task may then prepare what a later one needs (CdclakeSparkJobOperator.preload_gates).
TASKS_IN_ONE_PROCESS = "CDCLAKE_TASKS_IN_ONE_PROCESS"
AIRFLOW_DB_ENV = "CDCLAKE_AIRFLOW_DB"


def airflow_env(config: PipelineConfig, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables for an Airflow process of this state folder."""
    env = dict(os.environ if base is None else base)
    # Airflow's unit-test mode (set by test harnesses) swaps in a test configuration; the processes
    # started here are the real thing.
    env.pop("AIRFLOW__CORE__UNIT_TEST_MODE", None)
    env.pop("AIRFLOW__SIMPLE_AUTH_MANAGER__ALL_ADMINS", None)
    home = airflow_home(config)
    venv_bin = str(Path(sys.executable).parent)
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(bundled_dir("dags")),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(bundled_dir("plugins")),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "2",
        "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "120",
        "AIRFLOW__API__PORT": env.get("AIRFLOW__API__PORT", "8080"),
        "AIRFLOW__API__HOST": env.get("AIRFLOW__API__HOST", "127.0.0.1"),
        # A login for everyone: one admin whose password cdclake keeps in a 0600 file. Whatever
        # the environment says, nobody is an admin without logging in.
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(password_file(config)),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": env.get("AIRFLOW__LOGGING__LOGGING_LEVEL", "INFO"),
        "PATH": venv_bin + os.pathsep + env.get("PATH", ""),
        "CDCLAKE_HOME": str(config.home),
        "GX_ANALYTICS_ENABLED": "false",
    })
    # The metadata database: CDCLAKE_AIRFLOW_DB (a SQLAlchemy URL: the native cluster's PostgreSQL),
    # else SQLite in the Airflow home.
    database = env.get(AIRFLOW_DB_ENV)
    if database:
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = database
        env.pop("AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS", None)
    else:
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{home}/airflow.db"
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS"] = "cdclake.airflow_env.SQLITE_CONNECT_ARGS"
    python_path = os.pathsep.join([*import_paths(), env.get("PYTHONPATH", "")]).strip(os.pathsep)
    if python_path:
        env["PYTHONPATH"] = python_path
    # Connections for the embedded default; a real deployment defines them in Airflow instead.
    env.setdefault("AIRFLOW_CONN_SPARK_CONNECT_DEFAULT",
                   json.dumps(spark_connect_connection(config.spark_remote)))
    env.setdefault("AIRFLOW_CONN_KAFKA_DEFAULT", json.dumps({
        "conn_type": "kafka",
        "extra": {"bootstrap.servers": config.bootstrap_servers, **config.kafka_options}}))
    return env


def spark_connect_connection(remote: str) -> dict[str, object]:
    """The Airflow connection (type ``spark_connect``) of a ``sc://host:port`` URL."""
    from cdclake.spark_server import remote_address

    host, port = remote_address(remote)
    return {"conn_type": "spark_connect", "host": f"sc://{host}", "port": port}


def airflow_binary() -> str:
    found = Path(sys.executable).parent / "airflow"
    if found.exists():
        return str(found)
    which = shutil.which("airflow")
    if not which:
        raise SetupError("airflow not found; run scripts/setup.sh")
    return which


# Files under the Airflow home that hold secrets: the login passwords (ours, and the one an
# Airflow-generated login would use), airflow.cfg (its generated Fernet key and JWT secret) and the
# metadata database (connections, variables).
SECRET_FILES = ("passwords.json", "simple_auth_manager_passwords.json.generated", "airflow.cfg",
                "airflow.db")


def ensure_airflow_db(config: PipelineConfig) -> None:
    """``airflow db migrate`` once per state folder (idempotent, quick when up to date), the
    admin's password generated before any Airflow process could generate (and log) one, and
    every secrets file made private."""
    home = airflow_home(config)
    admin_password(config)
    marker = home / ".migrated"
    if marker.exists():
        _private_secrets(home)
        return
    result = subprocess.run([airflow_binary(), "db", "migrate"], env=airflow_env(config),
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SetupError(f"airflow db migrate failed: {result.stderr.strip()[-1500:]}")
    from cdclake.dag_defaults import (
        LAKEHOUSE_WRITES_POOL,
        LAKEHOUSE_WRITES_POOL_DESCRIPTION,
        LAKEHOUSE_WRITES_POOL_SLOTS,
    )

    pool = subprocess.run([airflow_binary(), "pools", "set", LAKEHOUSE_WRITES_POOL,
                           str(LAKEHOUSE_WRITES_POOL_SLOTS), LAKEHOUSE_WRITES_POOL_DESCRIPTION],
                          env=airflow_env(config), capture_output=True, text=True, check=False)
    if pool.returncode != 0:
        raise SetupError(f"creating the Airflow pool failed: {pool.stderr.strip()[-1500:]}")
    marker.write_text("ok\n")
    _private_secrets(home)


def _private_secrets(home: Path) -> None:
    for name in SECRET_FILES:
        private_file(home / name)
