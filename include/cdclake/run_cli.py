"""``cdclake run --start H --end H``: run the hourly DAG for each hour, in order.

Each hour goes through the real DAG (``airflow dags test cdclake_hourly``), the same code path as
a scheduled run or a backfill from the UI; its Spark tasks run on the state folder's Spark Connect
server, started first if it does not run and restarted if it is dead; another state folder's is
refused (``cdclake.spark_check.ensure_running``; ``cdclake spark stop`` ends it). The hour ``H`` is the
data interval ``[H, H+1h)``; ``airflow dags test`` is given the logical date ``H+1h`` because a
manual run's data interval is the hour that ends at its logical date."""

from __future__ import annotations

import argparse
import datetime as dt
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

from cdclake.airflow_env import (
    TASKS_IN_ONE_PROCESS,
    airflow_binary,
    airflow_env,
    airflow_home,
    ensure_airflow_db,
)
from cdclake.cli_args import hour_text, parse_hour
from cdclake.config import PipelineConfig, load_config
from cdclake.exceptions import CdclakeError

HOURLY_DAG_ID = "cdclake_hourly"


class RunFailed(CdclakeError):
    """An hour's DAG run failed."""


def hours_between(start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    """Hours H with start <= H < end (``--end`` is exclusive, like a data interval)."""
    if end <= start:
        raise CdclakeError(f"--end {hour_text(end)} must be after --start {hour_text(start)}")
    count = int((end - start) / dt.timedelta(hours=1))
    return [start + dt.timedelta(hours=i) for i in range(count)]


# The DAGs whose runs commit to the lakehouse: none may be in flight while an hour runs here.
LAKEHOUSE_DAG_IDS = (HOURLY_DAG_ID, "cdclake_maintenance", "cdclake_erase")


def runs_in_flight(config: PipelineConfig) -> list[tuple[str, str, str]]:
    """(dag id, run id, state) of the lakehouse DAGs' runs that are queued or running in this
    state folder's Airflow (a scheduler's or a backfill's)."""
    import sqlite3

    database = airflow_home(config) / "airflow.db"
    if not database.exists():
        return []
    marks = ", ".join("?" for _ in LAKEHOUSE_DAG_IDS)
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as connection:
        try:
            return [tuple(row) for row in connection.execute(
                f"SELECT dag_id, run_id, state FROM dag_run WHERE dag_id IN ({marks}) "
                "AND state IN ('queued', 'running') ORDER BY dag_id, run_id", LAKEHOUSE_DAG_IDS)]
        except sqlite3.OperationalError:  # not migrated yet: no runs
            return []


def check_no_run_in_flight(config: PipelineConfig) -> None:
    """Refuse to run an hour beside a scheduled one, a maintenance or an erasure run: ``airflow
    dags test`` runs outside the DAG's ``max_active_runs`` and the ``lakehouse_writes`` pool, so
    the two would race for ``main`` of the same tables."""
    busy = runs_in_flight(config)
    if busy:
        runs = ", ".join(f"{dag} {run} ({state})" for dag, run, state in busy)
        raise CdclakeError(f"Airflow has lakehouse runs in flight: {runs}; wait for them to finish, "
                           "or pause the DAGs (cdclake airflow start shows the UI), then run again. A run "
                           "left running by a killed process stays so until marked failed in the UI")


def run_hour(config: PipelineConfig, hour: dt.datetime, log_dir: Path,
             conf: dict[str, object] | None = None) -> Path:
    """One DAG run for the data interval starting at ``hour``; returns its log file."""
    import json

    check_no_run_in_flight(config)

    logical_date = (hour + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    log = log_dir / f"{hour.strftime('%Y%m%dT%H')}.log"
    command = [airflow_binary(), "dags", "test", HOURLY_DAG_ID, logical_date]
    if conf:
        command += ["--conf", json.dumps(conf)]
    with log.open("w") as out:
        result = subprocess.run(command, env={**airflow_env(config), TASKS_IN_ONE_PROCESS: "1"}, stdout=out,
                                stderr=subprocess.STDOUT, check=False)
    text = log.read_text(errors="replace")
    if result.returncode != 0 or "state=success" not in text.split("DagRun Finished")[-1]:
        raise RunFailed(f"hour {hour_text(hour)} failed; log: {log}\n" + "\n".join(failure_lines(text)))
    return log


# A raised exception's last line in a task log: ``cdclake.exceptions.TopicNotFoundError: topic ...``.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Failed): ")


def failure_lines(log_text: str, limit: int = 8) -> list[str]:
    """Why an hour failed, from its ``airflow dags test`` log: the exceptions the tasks raised and
    the error lines, each once, the last ``limit`` of them."""
    found = [line for line in log_text.splitlines()
             if _EXCEPTION_LINE.match(line) or "ERROR" in line or "GateFailed" in line]
    return list(dict.fromkeys(found))[-limit:]


def _bar(done: int, total: int, label: str) -> str:
    width = 30
    filled = int(width * done / total) if total else width
    return f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label}"


def refuse_before_start_date(config: PipelineConfig, hours: list[dt.datetime]) -> None:
    """Airflow creates no task of a run before its DAG's start_date: ``dags test`` would report
    such an hour run, having run nothing."""
    first = config.start_date.astimezone(dt.UTC).replace(tzinfo=None)
    early = [h for h in hours if h < first]
    if early:
        raise CdclakeError(
            f"hour {hour_text(early[0])} is before schedule.start_date {hour_text(first)}: the hourly DAG "
            "runs no task before its start date, so it would run nothing. Set schedule.start_date (or "
            "CDCLAKE_START_DATE) to the first hour to run, or run the hours as a backfill "
            "(`cdclake airflow backfill`)")


def run_range(config: PipelineConfig, start: dt.datetime, end: dt.datetime,
              conf: dict[str, object] | None = None, out: TextIO | None = None) -> list[Path]:
    # sys.stderr as it is when called (a default argument would keep the one at import time).
    out = sys.stderr if out is None else out
    from cdclake.spark_check import ensure_running

    hours = hours_between(start, end)
    refuse_before_start_date(config, hours)
    ensure_running(config)
    ensure_airflow_db(config)
    log_dir = airflow_home(config) / "run-logs"
    log_dir.mkdir(exist_ok=True)
    logs = []
    began = time.monotonic()
    for i, hour in enumerate(hours):
        print(_bar(i, len(hours), f"running {hour_text(hour)}"), end="", file=out, flush=True)
        logs.append(run_hour(config, hour, log_dir, conf))
    print(_bar(len(hours), len(hours), f"done in {time.monotonic() - began:.0f}s"), file=out)
    return logs


def _run(args: argparse.Namespace) -> int:
    config = load_config()
    conf: dict[str, object] = {"topics": args.topics} if args.topics else {}
    if args.reland:
        conf["reland"] = True
    logs = run_range(config, args.start, args.end, conf or None)
    print(f"{len(logs)} hour(s) ran; logs in {logs[0].parent if logs else '-'}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("run", help="run the hourly DAG for each hour in [--start, --end)")
    p.add_argument("--start", required=True, type=parse_hour, help="first hour (UTC), e.g. 2024-01-01T10")
    p.add_argument("--end", required=True, type=parse_hour, help="hour after the last one (exclusive)")
    p.add_argument("--topics", nargs="*", help="restrict to these topics (DAG param)")
    p.add_argument("--reland", action="store_true",
                   help="read landed hours' recorded offsets from Kafka again instead of keeping their "
                        "raw copies (DAG param; refused if Kafka holds fewer messages)")
    p.set_defaults(handler=_run)
