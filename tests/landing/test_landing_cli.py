"""`cdclake produce` and `cdclake land`, run in-process (the land command reuses the test session)."""

from __future__ import annotations

import json
import uuid

import pytest

from cdclake.cli import main
from spark_jobs.tables import OFFSET_LEDGER, RAW_MESSAGES
from tests.landing.kafka_helpers import H0, epoch_ms

pytestmark = pytest.mark.slow


def test_produce_then_land_one_hour(spark, kafka_bootstrap, tmp_path, capsys) -> None:
    topic = f"cli.produce.{uuid.uuid4().hex[:8]}"
    messages = tmp_path / "messages.jsonl"
    messages.write_text('{"op":"c","id":1}\n\n{"op":"u","id":1}\n')
    keys = tmp_path / "keys.jsonl"
    keys.write_text('{"id":1}\nnull\n')
    at = epoch_ms(H0) + 90_000
    assert main(["produce", "--topic", topic, "--key-file", str(keys), "--timestamp-ms", str(at),
                 str(messages)]) == 0
    assert capsys.readouterr().out == f"sent 2 messages to {topic} (topic created)\n"

    assert main(["land", "--hour", "2023-07-15T10:00:00Z", "--topic", topic, "--run-id", "cli-1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == {"hour": "2023-07-15T10:00:00Z", "run_id": "cli-1", "messages": 2, "partitions": [
        {"topic": topic, "partition": 0, "planned_start": 0, "planned_end": 2, "landed_count": 2,
         "first_offset": 0, "last_offset": 1, "status": "landed", "message": None, "late_messages": 0,
         "max_lateness_ms": None, "erased_messages": 0}]}
    raw = sorted((r["offset"], r["key"] and bytes(r["key"]), bytes(r["value"]), r["timestamp"], r["run_id"])
                 for r in spark.table(RAW_MESSAGES).where(f"topic = '{topic}'").collect())
    moment = H0.replace(minute=1, second=30)
    assert raw == [(0, b'{"id":1}', b'{"op":"c","id":1}', moment, "cli-1"),
                   (1, None, b'{"op":"u","id":1}', moment, "cli-1")]
    rows = spark.table(OFFSET_LEDGER).where(f"topic = '{topic}'").collect()
    ledger = [(r["partition"], r["landed_hour"], r["planned_start"], r["planned_end"], r["landed_count"],
               r["run_id"], r["status"]) for r in rows]
    assert ledger == [(0, H0, 0, 2, 2, "cli-1", "landed")]


def test_land_job_takes_the_plan_as_json_and_checks_its_hour(spark, config, kafka_bootstrap, capsys) -> None:
    from cdclake.exceptions import LandingError
    from cdclake.hourly import plan_hour
    from spark_jobs.jobs import land as land_job
    from tests.landing.kafka_helpers import HOUR, Record, make_topic, send

    topic = make_topic(kafka_bootstrap, "cli.job")
    send(kafka_bootstrap, topic, [Record(0, H0 + HOUR / 2, None, b"x")])
    plan = plan_hour(config, H0, (topic,))
    with pytest.raises(LandingError, match="the offset plan is for hour 2023-07-15T10:00:00Z, not "
                                           "2023-07-15T11:00:00Z"):
        land_job.main(["--hour", "2023-07-15T11:00:00Z", "--run-id", "job-1", "--plan-json", plan.to_json()])
    assert land_job.main(["--hour", "2023-07-15T10:00:00Z", "--run-id", "job-1",
                          "--plan-json", plan.to_json()]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["messages"], summary["partitions"][0]["planned_end"]) == (1, 1)


def test_land_names_a_missing_topic_and_refuses_an_unfinished_hour(spark, kafka_bootstrap, capsys) -> None:
    assert main(["land", "--hour", "2023-07-15T10:00:00Z", "--topic", "cli.missing"]) == 2
    assert "topic 'cli.missing' does not exist" in capsys.readouterr().err
    assert main(["land", "--hour", "2999-01-01T00:00:00Z", "--topic", "cli.missing"]) == 2
    assert "is not over yet" in capsys.readouterr().err
