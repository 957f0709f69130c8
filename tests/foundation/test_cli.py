"""The console command exists and lists its sub-commands."""

from __future__ import annotations

import shutil
import subprocess
import sys


def _cdclake() -> list[str]:
    found = shutil.which("cdclake")
    return [found] if found else [sys.executable, "-m", "cdclake.cli"]


def test_help_lists_the_commands() -> None:
    out = subprocess.run([*_cdclake(), "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("formats", "decode", "kafka", "produce", "query", "run", "demo"):
        assert command in out, command


def test_formats_lists_every_registered_format_with_a_description() -> None:
    from cdclake.formats import registry

    out = subprocess.run([*_cdclake(), "formats"], capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(registry())
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)


def test_airflow_backfill_refuses_clearly_without_a_scheduler(tmp_path) -> None:
    import os

    env = {**os.environ, "CDCLAKE_HOME": str(tmp_path)}
    run = subprocess.run([*_cdclake(), "airflow", "backfill", "--start", "2025-02-03T07", "--end",
                          "2025-02-03T10"], capture_output=True, text=True, env=env, check=False)
    assert run.returncode != 0
    assert "Airflow is not running: start it with `cdclake airflow start`" in run.stderr
    run = subprocess.run([*_cdclake(), "airflow", "backfill", "--start", "2025-02-03T07", "--end",
                          "2025-02-03T07"], capture_output=True, text=True, env=env, check=False)
    assert run.returncode != 0
    assert "--end 2025-02-03T07:00:00Z must be after --start 2025-02-03T07:00:00Z" in run.stderr


def test_run_refuses_beside_a_lakehouse_run_in_flight(tmp_path, monkeypatch) -> None:
    """``airflow dags test`` runs outside max_active_runs and the write pool: ``cdclake run`` and
    ``quarantine replay`` refuse while the scheduler has an hourly, maintenance or erasure run
    going. The table is the three columns of Airflow's ``dag_run`` that the check reads."""
    import sqlite3

    import pytest

    from cdclake.config import load_config
    from cdclake.exceptions import CdclakeError
    from cdclake.run_cli import check_no_run_in_flight, runs_in_flight

    monkeypatch.setenv("CDCLAKE_HOME", str(tmp_path))
    config = load_config()
    assert runs_in_flight(config) == []  # no Airflow database yet
    database = tmp_path / "airflow" / "airflow.db"
    database.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE dag_run (dag_id TEXT, run_id TEXT, state TEXT)")
        connection.executemany("INSERT INTO dag_run VALUES (?, ?, ?)", [
            ("cdclake_hourly", "scheduled__2025-02-03T07", "success"),
            ("cdclake_maintenance", "scheduled__2025-02-04", "running"),
            ("cdclake_erase", "manual__1", "queued"),
            ("other_dag", "manual__1", "running")])
    busy = (r"in flight: cdclake_erase manual__1 \(queued\), "
            r"cdclake_maintenance scheduled__2025-02-04 \(running\)")
    with pytest.raises(CdclakeError, match=busy):
        check_no_run_in_flight(config)
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE dag_run SET state = 'success'")
    check_no_run_in_flight(config)


def test_run_refuses_an_hour_before_the_dags_start_date_instead_of_running_nothing() -> None:
    """Airflow creates no task of a run before the DAG's start date: ``dags test`` would succeed
    having run nothing, so ``cdclake run`` refuses such an hour and says what to do."""
    import dataclasses
    import datetime as dt

    import pytest

    from cdclake.config import load_config
    from cdclake.exceptions import CdclakeError
    from cdclake.run_cli import refuse_before_start_date

    config = dataclasses.replace(load_config(), start_date=dt.datetime(2025, 2, 3, 8, tzinfo=dt.UTC))
    with pytest.raises(CdclakeError, match=r"hour 2025-02-03T07:00:00Z is before schedule.start_date "
                                           r"2025-02-03T08:00:00Z: .*cdclake airflow backfill"):
        refuse_before_start_date(config, [dt.datetime(2025, 2, 3, 7), dt.datetime(2025, 2, 3, 8)])
    refuse_before_start_date(config, [dt.datetime(2025, 2, 3, 8), dt.datetime(2025, 2, 3, 9)])
