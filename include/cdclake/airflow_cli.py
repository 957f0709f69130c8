"""``cdclake airflow start|stop|status``: the Airflow UI on the embedded default.

Runs ``airflow standalone`` (scheduler, API server with the UI, DAG processor, triggerer) for this
state folder, with low parallelism (standalone defaults to many workers and several GB), in its
own process group; ``stop`` ends exactly that group. Backfills of the hourly DAG can then be
started from the UI (DAG ``cdclake_hourly`` -> Trigger -> Backfill) or with
``airflow backfill create --dag-id cdclake_hourly --from-date ... --to-date ...``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time

from cdclake.airflow_env import airflow_binary, airflow_env, airflow_home, ensure_airflow_db
from cdclake.config import load_config


def _pid_file(config: object):  # -> Path
    return airflow_home(config) / "standalone.pid"  # type: ignore[arg-type]


def _running(config: object) -> int | None:
    try:
        pid = int(_pid_file(config).read_text().strip())
        os.kill(pid, 0)
        return pid
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None


def start(port: int) -> int:
    config = load_config()
    pid = _running(config)
    if pid:
        print(f"Airflow already running (pid {pid}); UI at http://localhost:{port}")
        return 0
    ensure_airflow_db(config)
    env = airflow_env(config)
    env.update({
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__SCHEDULER__PARSING_PROCESSES": "1",
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__SIMPLE_AUTH_MANAGER__ALL_ADMINS": "True",
    })
    log = airflow_home(config) / "standalone.log"
    with log.open("ab") as out:
        process = subprocess.Popen([airflow_binary(), "standalone"], env=env, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    _pid_file(config).write_text(str(process.pid))
    print(f"Airflow standalone starting (pid {process.pid}, log {log}); UI at http://localhost:{port}")
    return 0


def stop() -> int:
    config = load_config()
    pid = _running(config)
    if pid is None:
        print("Airflow is not running")
        return 0
    os.killpg(pid, signal.SIGTERM)
    for _ in range(60):
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.5)
    else:
        os.killpg(pid, signal.SIGKILL)
    _pid_file(config).unlink(missing_ok=True)
    print(f"Airflow stopped (process group {pid})")
    return 0


def status() -> int:
    pid = _running(load_config())
    print(f"Airflow running (pid {pid})" if pid else "Airflow is not running")
    return 0 if pid else 3


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("airflow", help="the Airflow UI (airflow standalone) for this state folder")
    p.add_argument("action", choices=["start", "stop", "status"])
    p.add_argument("--port", type=int, default=8080)
    p.set_defaults(handler=_command)


def _command(args: argparse.Namespace) -> int:
    if args.action == "start":
        return start(args.port)
    return stop() if args.action == "stop" else status()
