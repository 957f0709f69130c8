"""``cdclake airflow start|stop|status|password|backfill``: the Airflow UI on the embedded default.

``start`` runs Airflow's four components (scheduler, API server with the UI, DAG processor,
triggerer: what ``airflow standalone`` runs) for this state folder, with low parallelism (the
defaults take many workers and several GB), in one process group of their own, each started again
when it exits (as a service manager's ``Restart=always`` would); ``stop`` ends exactly that group.
None of them serves logs: Airflow's log servers listen on every interface, and on one machine the
UI reads the task logs from disk. The UI listens on
127.0.0.1 unless ``--host`` says otherwise and asks for a login: user ``admin``, whose password
is generated once into ``<state folder>/airflow/passwords.json`` (0600); ``password`` shows it.

Backfills of the hourly DAG then run on that scheduler: from the UI (DAG ``cdclake_hourly`` ->
Trigger -> Backfill, *Max Active Runs* 1) or with ``cdclake airflow backfill --start H --end H``,
the CLI equivalent: it waits for the DAG to be parsed, unpauses it (a paused DAG's runs never
start, backfills included), calls ``airflow backfill create`` with ``--max-active-runs 1`` for the
hours ``[start, end)`` and, with ``--wait``, follows the runs until they finish. A backfill's
``max_active_runs`` is its own, not the DAG's: with more than one, hours would race for the
tables' ``main`` branch (Iceberg refuses the losing fast-forward; nothing is lost, the hour fails).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

from cdclake.airflow_env import (
    ADMIN_USER,
    admin_password,
    airflow_binary,
    airflow_env,
    airflow_home,
    ensure_airflow_db,
    password_file,
)
from cdclake.cli_args import hour_text, parse_hour
from cdclake.config import PipelineConfig, load_config
from cdclake.exceptions import CdclakeError
from cdclake.run_cli import HOURLY_DAG_ID, hours_between

FINISHED = ("success", "failed")
# The components, as `airflow standalone` starts them, without the log servers (see above).
COMPONENTS = (("scheduler", "--skip-serve-logs"), ("dag-processor",), ("triggerer", "--skip-serve-logs"),
              ("api-server",))
RESTART_DELAY_S = 5


def _pid_file(config: PipelineConfig) -> Path:
    return airflow_home(config) / "airflow.pid"


def log_file(config: PipelineConfig) -> Path:
    """What the running components print."""
    return airflow_home(config) / "airflow.log"


def running_group(config: PipelineConfig) -> int | None:
    """The process group of this state folder's running Airflow, or None."""
    try:
        pid = int(_pid_file(config).read_text().strip())
        os.kill(pid, 0)
        return pid
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None


def ui_url(host: str, port: int) -> str:
    """Where the UI (and the Execution API tasks call) is reached from this machine."""
    reachable = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{f'[{reachable}]' if ':' in reachable else reachable}:{port}"


def start(port: int, host: str = "127.0.0.1") -> int:
    config = load_config()
    url = ui_url(host, port)
    pid = running_group(config)
    if pid:
        print(f"Airflow already running (pid {pid}); UI at {url}")
        return 0
    from cdclake.spark_check import ensure_running

    print(f"Spark Connect server for the DAGs' tasks: {ensure_running(config)}")
    ensure_airflow_db(config)
    env = airflow_env(config)
    env.update({
        "AIRFLOW__API__HOST": host,
        "AIRFLOW__API__PORT": str(port),
        # Task processes reach the Execution API through the base URL (default port 8080).
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__SCHEDULER__PARSING_PROCESSES": "1",
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        # New DAGs wait to be unpaused: no surprise catch-up or maintenance on first start.
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
    })
    log = log_file(config)
    process = _start_group(env, log)
    _pid_file(config).write_text(str(process.pid))
    print(f"Airflow starting (process group {process.pid}, log {log})")
    print(f"UI at {url}: log in as {ADMIN_USER!r}; the password is in {password_file(config)} "
          "(`cdclake airflow password` shows it)")
    if host != "127.0.0.1":
        print(f"warning: the UI listens on {host}, beyond this machine; put TLS in front of it",
              file=sys.stderr)
    return 0


def supervised(component: tuple[str, ...]) -> str:
    """A shell loop that runs one component and starts it again whenever it exits: the scheduler,
    DAG processor and triggerer exit when their metadata database goes away (a PostgreSQL restart),
    and nothing else would bring them back."""
    name = component[0]
    return (f"while :; do {shlex.join([airflow_binary(), *component])}; "
            f"echo \"cdclake: airflow {name} exited ($?); starting it again in {RESTART_DELAY_S} s\"; "
            f"sleep {RESTART_DELAY_S}; done")


def _start_group(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    # One shell leads the group: it supervises each component (see supervised) and waits for them.
    script = " & ".join(f"({supervised(c)})" for c in COMPONENTS) + " & wait"
    with log.open("ab") as out:
        return subprocess.Popen(["/bin/sh", "-c", script], env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def password() -> int:
    config = load_config()
    print(f"user: {ADMIN_USER}\npassword: {admin_password(config)}\n(kept in {password_file(config)})")
    return 0


def stop() -> int:
    config = load_config()
    pid = running_group(config)
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
    pid = running_group(load_config())
    print(f"Airflow running (pid {pid})" if pid else "Airflow is not running")
    return 0 if pid else 3


def _airflow(config: PipelineConfig, *args: str, attempts: int = 5) -> subprocess.CompletedProcess[str]:
    """An ``airflow`` CLI call; retried while the SQLite metadata database stays locked."""
    for attempt in range(attempts):
        result = subprocess.run([airflow_binary(), *args], env=airflow_env(config), capture_output=True,
                                text=True, check=False)
        if result.returncode == 0 or "database is locked" not in result.stdout + result.stderr:
            return result
        time.sleep(5 * (attempt + 1))
    return result


def _json_rows(stdout: str) -> list[dict[str, object]]:
    """The JSON list an ``airflow ... --output json`` command printed (warnings may precede it)."""
    for line in stdout.splitlines():
        if line.startswith("["):
            return list(json.loads(line))
    return []


def hour_run_id(config: PipelineConfig, hour: dt.datetime) -> str | None:
    """The run id of the hourly DAG's latest run of the hour starting at ``hour``, None if none: a
    scheduled or backfill run (logical date the hour, run after its end) or ``cdclake run``'s
    ``airflow dags test`` (a manual run whose logical date is the hour's end)."""
    runs = _json_rows(_airflow(config, "dags", "list-runs", HOURLY_DAG_ID, "--output", "json").stdout)
    start = hour.astimezone(dt.UTC).replace(tzinfo=None) if hour.tzinfo else hour
    end = start + dt.timedelta(hours=1)

    def moment(text: object) -> dt.datetime | None:
        return dt.datetime.fromisoformat(str(text)).astimezone(dt.UTC).replace(tzinfo=None) if text else None

    for run in runs:  # the latest first
        logical, after = moment(run.get("logical_date")), moment(run.get("run_after"))
        tested = str(run.get("run_id", "")).startswith("manual__") and logical == end
        if tested or (logical == start and after == end):
            return str(run["run_id"])
    return None


def task_times(config: PipelineConfig, hour: dt.datetime) -> list[tuple[str, float]]:
    """Each task of the hour's run and how long it took (seconds), in the order they ran; through
    the Airflow CLI, so on any metadata database."""
    run_id = hour_run_id(config, hour)
    if run_id is None:
        return []
    tasks = _json_rows(_airflow(config, "tasks", "states-for-dag-run", HOURLY_DAG_ID, run_id,
                                "--output", "json").stdout)
    timed = [(str(t["start_date"]), str(t["task_id"]), dt.datetime.fromisoformat(str(t["end_date"]))
              - dt.datetime.fromisoformat(str(t["start_date"]))) for t in tasks if t.get("end_date")]
    return [(task, took.total_seconds()) for _, task, took in sorted(timed)]


def clear_task(config: PipelineConfig, hour: dt.datetime, task_id: str) -> subprocess.CompletedProcess[str]:
    """Clear the hour's tasks whose id contains ``task_id`` and every task after them (``airflow
    tasks clear -t ... -d``: Airflow matches the ids by substring, not as a pattern; ``land`` is the
    land task alone): the scheduler runs them again."""
    at = hour.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    return _airflow(config, "tasks", "clear", HOURLY_DAG_ID, "-s", at, "-e", at, "-t", task_id, "-d", "-y")


def _unpause_when_parsed(config: PipelineConfig, timeout_s: float) -> None:
    """Unpause the hourly DAG once the DAG processor has put it in the metadata database."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = _airflow(config, "dags", "list", "--output", "json")
        listed = _json_rows(result.stdout) if result.returncode == 0 else []
        dag = next((d for d in listed if d.get("dag_id") == HOURLY_DAG_ID), None)
        if dag is not None and str(dag.get("is_paused")).lower() == "false":
            return
        if dag is not None:
            _airflow(config, "dags", "unpause", HOURLY_DAG_ID)
            continue
        if time.monotonic() > deadline:
            raise CdclakeError(f"{HOURLY_DAG_ID} was not parsed within {timeout_s:.0f}s; see "
                               f"{log_file(config)}\n{result.stderr[-2000:]}")
        time.sleep(5)


def backfill_runs(config: PipelineConfig, hours: list[dt.datetime]) -> dict[str, str]:
    """State of the backfill runs of ``hours``, by data-interval start (``YYYY-MM-DDTHH:00:00Z``)."""
    result = _airflow(config, "dags", "list-runs", HOURLY_DAG_ID, "--output", "json")
    if result.returncode != 0:
        raise CdclakeError(f"airflow dags list-runs failed:\n{result.stderr[-2000:]}")
    wanted = {hour_text(h) for h in hours}
    states: dict[str, str] = {}
    for run in _json_rows(result.stdout):
        if not str(run.get("run_id", "")).startswith("backfill__") or not run.get("logical_date"):
            continue
        hour = dt.datetime.fromisoformat(str(run["logical_date"])).astimezone(dt.UTC).replace(tzinfo=None)
        if hour_text(hour) in wanted:
            states[hour_text(hour)] = str(run["state"])
    return states


BACKFILL_COMPLETION_S = 90


def backfill(config: PipelineConfig, start: dt.datetime, end: dt.datetime, reprocess: str = "completed",
             wait: bool = False, timeout_s: float = 6 * 3600, out: TextIO | None = None) -> int:
    """Backfill the hours ``[start, end)`` on the running scheduler; with ``wait``, follow them
    (progress to ``out``, by default sys.stderr as it is when called)."""
    out = sys.stderr if out is None else out
    hours = hours_between(start, end)
    if running_group(config) is None:
        raise CdclakeError("Airflow is not running: start it with `cdclake airflow start`")
    _unpause_when_parsed(config, timeout_s=300)
    # The DAG's logical date is its data-interval start; --to-date is inclusive.
    first, last = (h.strftime("%Y-%m-%dT%H:%M:%S+00:00") for h in (hours[0], hours[-1]))
    create = ("backfill", "create", "--dag-id", HOURLY_DAG_ID, "--from-date", first, "--to-date", last,
              "--max-active-runs", "1", "--reprocess-behavior", reprocess)
    result = _airflow(config, *create)
    # The scheduler marks a finished backfill complete every 30 s: one that just ended still counts.
    waited = time.monotonic() + BACKFILL_COMPLETION_S
    while result.returncode != 0 and "AlreadyRunningBackfill" in result.stderr and time.monotonic() < waited:
        time.sleep(10)
        result = _airflow(config, *create)
    if result.returncode != 0:
        raise CdclakeError(f"airflow backfill create failed:\n{(result.stdout + result.stderr)[-3000:]}")
    print(f"backfill of {len(hours)} hour(s) {hour_text(hours[0])} .. {hour_text(hours[-1])} created "
          f"(max active runs 1)", file=out)
    if not wait:
        return 0
    deadline = time.monotonic() + timeout_s
    shown = -1
    while True:
        states = backfill_runs(config, hours)
        done = sum(1 for s in states.values() if s in FINISHED)
        if done != shown:
            print(f"\r{done}/{len(hours)} hours finished", end="", file=out, flush=True)
            shown = done
        if len(states) == len(hours) and done == len(hours):
            print(file=out)
            failed = sorted(h for h, s in states.items() if s != "success")
            if failed:
                print(f"failed hours: {', '.join(failed)} (logs: {airflow_home(config) / 'logs'})",
                      file=out)
                return 1
            return 0
        if time.monotonic() > deadline:
            raise CdclakeError(f"backfill not finished after {timeout_s:.0f}s: {states}")
        time.sleep(15)


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("airflow", help="the Airflow UI (login required) and "
                                            "backfills on it")
    p.add_argument("action", choices=["start", "stop", "status", "password", "backfill"])
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--host", default="127.0.0.1",
                   help="start: address the UI listens on (default 127.0.0.1: this machine only)")
    p.add_argument("--start", type=parse_hour, help="backfill: first hour (UTC), e.g. 2025-02-03T07")
    p.add_argument("--end", type=parse_hour, help="backfill: end hour, exclusive")
    p.add_argument("--reprocess", choices=["none", "failed", "completed"], default="completed",
                   help="backfill: hours that already have a run are re-run when completed/failed")
    p.add_argument("--wait", action="store_true", help="backfill: follow the runs until they finish")
    p.set_defaults(handler=_command)


def _command(args: argparse.Namespace) -> int:
    if args.action == "backfill":
        if args.start is None or args.end is None:
            raise CdclakeError("backfill needs --start and --end")
        return backfill(load_config(), args.start, args.end, args.reprocess, args.wait)
    if args.action == "start":
        return start(args.port, args.host)
    if args.action == "password":
        return password()
    return stop() if args.action == "stop" else status()
