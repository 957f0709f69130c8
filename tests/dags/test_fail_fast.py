"""Configuration errors fail an hour at once, through the real DAG: no retries, no waiting."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HOUR = dt.datetime(2025, 2, 5, 10)


def test_a_missing_topic_fails_the_hour_at_once_naming_it(
        kafka_bootstrap: str, spark_server: str, state_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cdclake.config import load_config
    from cdclake.run_cli import RunFailed, run_range

    port = int(kafka_bootstrap.rsplit(":", 1)[1])
    config_path = state_home / "fail-fast-pipeline.yml"
    config_path.write_text("\n".join(["kafka:", f"  port: {port}", "topics:", "  - name: no.such.topic",
                                      "    format: canal_json", ""]))
    monkeypatch.setenv("CDCLAKE_CONFIG", str(config_path))
    monkeypatch.setenv("CDCLAKE_HOME", str(state_home / "fail-fast"))
    config = load_config()
    began = time.monotonic()
    with pytest.raises(RunFailed) as failed:
        run_range(config, HOUR, HOUR + dt.timedelta(hours=1))
    # Not through the I/O retries (5 minutes apart): the plan task failed for good.
    assert time.monotonic() - began < 120
    assert "topic 'no.such.topic' does not exist" in str(failed.value)
    log = Path(str(failed.value).split("log: ", 1)[1].splitlines()[0]).read_text()
    assert "up_for_retry" not in log.lower().replace(" ", "_")


def test_an_unreachable_spark_server_fails_the_task_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's own check, before any Connect client retries for minutes."""
    import json

    from airflow.sdk.exceptions import AirflowFailException

    from cdclake.kafka_broker import free_port
    from cdclake_airflow.operators import fail_unless_reachable

    port = free_port()
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_PROBE",
                       json.dumps({"conn_type": "spark_connect", "host": "sc://127.0.0.1", "port": port}))
    began = time.monotonic()
    with pytest.raises(AirflowFailException, match=f"sc://127.0.0.1:{port}.*cdclake spark start"):
        fail_unless_reachable("spark_probe")
    assert time.monotonic() - began < 5
