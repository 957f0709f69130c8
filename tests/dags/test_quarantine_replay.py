"""The operator's story of `cdclake quarantine`: a gate fails, the quarantine says why, a fix, a replay.

A topic of DataWorks messages is configured by mistake as Debezium JSON. Its hour runs through the
real hourly DAG (`airflow dags test`) and every message is quarantined, so the changelog gate
(quarantine rate) fails and nothing is published. `cdclake quarantine summary` shows the unpublished
hour's quarantine from its audit branch. The topic's format is corrected and
`cdclake quarantine replay --hour H` re-runs the hour: the messages move into the changelog, the
current-state table is published, the gates pass and the quarantine of the hour is empty.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TOPIC = "replay.dataworks"
HOUR = dt.datetime(2025, 2, 4, 10)
SCENARIOS = ("dataworks_json/manual_insert_no_pk", "dataworks_json/manual_update_two_messages",
             "dataworks_json/manual_heartbeat")


def _config_text(port: int, fmt: str) -> str:
    return "\n".join(["kafka:", f"  port: {port}", "topics:", f"  - name: {TOPIC}", f"    format: {fmt}",
                      "gates:", "  quarantine_rate_max: 0.05", ""])


def _rows(config, sql: str) -> list[tuple]:
    from cdclake.query import run_query

    return run_query(config, sql)[1]


def test_a_failed_hour_shows_its_quarantine_and_replay_after_the_fix_publishes_it(
        kafka_bootstrap: str, spark_server: str, state_home: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from cdclake import cli, demo
    from cdclake.config import load_config
    from cdclake.run_cli import RunFailed, run_range

    port = int(kafka_bootstrap.rsplit(":", 1)[1])
    config_path = state_home / "replay-pipeline.yml"
    config_path.write_text(_config_text(port, "debezium_json"))
    monkeypatch.setenv("CDCLAKE_CONFIG", str(config_path))
    monkeypatch.setenv("CDCLAKE_HOME", str(state_home / "replay-run"))
    messages = [m for s in SCENARIOS for m in demo._scenario_messages(s)]
    demo.produce(kafka_bootstrap, [
        demo.DemoMessage(TOPIC, key, value, demo._ms(HOUR + dt.timedelta(minutes=10 + i)))
        for i, (key, value) in enumerate(messages)])
    config = load_config()

    with pytest.raises(RunFailed, match="2025-02-04T10"):
        run_range(config, HOUR, HOUR + dt.timedelta(hours=1))
    # Nothing of the failed hour is published.
    assert _rows(config, "SELECT count(*) FROM cdc.changelog") == [(0,)]
    assert _rows(config, "SELECT count(*) FROM cdc.quarantine") == [(0,)]
    # The failed gate is on record (ops tables are written straight to main).
    stamp = "TIMESTAMPTZ '2025-02-04 10:00:00+00'"
    gates = f"SELECT stage, bool_and(success) FROM ops.gate_results WHERE landed_hour = {stamp} " \
            "GROUP BY stage ORDER BY min(validated_at)"
    assert _rows(config, gates) == [("raw", True), ("changelog", False)]
    capsys.readouterr()

    assert cli.main(["quarantine", "summary", "--hour", "2025-02-04T10"]) == 0
    summary = capsys.readouterr().out.splitlines()
    assert summary[0] == "quarantine of hour 2025-02-04T10:00:00Z:"
    assert summary[1].split() == [TOPIC, "INVALID_FIELD", "4"]
    assert summary[2].split() == ["total:", "4"]
    assert "unpublished" in summary[3] and "branch_audit_20250204T10" in summary[3]

    config_path.write_text(_config_text(port, "dataworks_json"))
    assert cli.main(["quarantine", "replay", "--hour", "2025-02-04T10"]) == 0
    replay = capsys.readouterr().out.splitlines()
    assert "replayed: 4 message(s) left the quarantine (now changes or control messages); " \
           "still quarantined:" in replay
    assert replay[-1] == "  total: 0"

    assert _rows(config, f"SELECT count(*) FROM cdc.quarantine WHERE landed_hour = {stamp}") == [(0,)]
    changes = _rows(config, "SELECT kafka_offset, record_index, op, database, table_name, row_key, "
                            "before, after FROM cdc.changelog ORDER BY kafka_offset, record_index")
    insert = {"name": "name11", "job": "job11", "sex": "man", "#alibaba_rds_row_id#": "15"}
    # The DataWorks update's two messages (offsets 1 and 2) paired into one UPDATE.
    assert changes == [
        (0, 0, "INSERT", "pkset_test", "pkset_test_no_pk", '["15"]', None, insert),
        (2, 0, "UPDATE", "pkset_test", "pkset_test_no_pk", '["15"]', insert, {**insert, "sex": "woman"})]
    assert _rows(config, "SELECT name, job, sex, _cdc_op FROM current.pkset_test__pkset_test_no_pk") == [
        ("name11", "job11", "woman", "UPDATE")]
    # Reconciliation of the replayed hour: 4 raw = 3 decoded + 1 control (the heartbeat) + 0 quarantined.
    stats = _rows(config, "SELECT metric, sum(value) FROM ops.run_stats WHERE stage = 'normalize' AND "
                          f"landed_hour = {stamp} AND metric LIKE '%messages' GROUP BY 1 ORDER BY 1")
    fast = [(metric, n) for metric, n in stats if metric.startswith("fast_")]
    assert [(metric, n) for metric, n in stats if (metric, n) not in fast] == [
        ("control_messages", 1), ("decoded_messages", 3), ("raw_messages", 4)]
    # dataworks_json has a JVM fast path: each of the 4 messages was decoded or declined there.
    assert {metric for metric, _ in fast} <= {"fast_decoded_messages", "fast_declined_messages"}
    assert sum(n for _, n in fast) == 4
    # The hour's gate results (the re-run replaced the failed run's): every gate passed.
    assert _rows(config, gates) == [("raw", True), ("changelog", True), ("current", True)]
