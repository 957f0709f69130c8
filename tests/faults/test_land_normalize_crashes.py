"""The crash-point harness for landing and normalize: an hour stopped at any commit point of land
or normalize, or its job killed (SIGKILL) in the middle of a commit, then run again, gives the
tables of an uninterrupted run.

Each scenario is its own topic and hour, holding the same messages (Canal changes and a message
that is not JSON). After a first hour, a counting run lists the commit points of landing then normalizing
the hour (every committing ``spark.sql`` and DataFrame write: :func:`tests.faults.crash.commit_points`).
Then, for each point ``k``, a scenario is stopped at point ``k`` (an exception no ``except
Exception`` catches) and run again whole; and for a sample of points, a job process is killed
there while the commit runs on the server. After the re-run, the raw copy, the offset ledger, the
changelog and quarantine (on the hour's audit branch) and the run stats equal the uninterrupted
run's, and the only branch left is the hour's own.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
from typing import Any

import pytest

from tests.faults.crash import InjectedCrash, commit_points, crash_at
from tests.landing.kafka_helpers import Record, make_topic, send

pytestmark = pytest.mark.slow

H0 = dt.datetime(2023, 9, 1, 0)  # the hours of these tests only: scenario n is hour H0 + n
MINUTE = dt.timedelta(minutes=1)
CANAL = [
    b'{"data":[{"id":"1","v":"a"},{"id":"2","v":"b"}],"database":"crash","es":%d,"id":1,"isDdl":false,'
    b'"mysqlType":{"id":"int","v":"varchar(8)"},"old":null,"pkNames":["id"],"sql":"",'
    b'"sqlType":{"id":4,"v":12},"table":"t","ts":%d,"type":"INSERT"}',
    b'{"data":[{"id":"1","v":"c"}],"database":"crash","es":%d,"id":2,"isDdl":false,'
    b'"mysqlType":{"id":"int","v":"varchar(8)"},"old":[{"v":"a"}],"pkNames":["id"],"sql":"",'
    b'"sqlType":{"id":4,"v":12},"table":"t","ts":%d,"type":"UPDATE"}',
    b'{"data":[{"id":"2","v":"b"}],"database":"crash","es":%d,"id":3,"isDdl":false,'
    b'"mysqlType":{"id":"int","v":"varchar(8)"},"old":null,"pkNames":["id"],"sql":"",'
    b'"sqlType":{"id":4,"v":12},"table":"t","ts":%d,"type":"DELETE"}',
    b"not json",
]
# The points killed in a separate process (SIGKILL while the commit runs on the server): the raw
# write, the ledger's, the changelog's and the run stats' (the last point).
KILLED = ("raw.kafka_messages", "offset_ledger", "cdc.changelog", "ops.run_stats")


def _scenario(bootstrap: str, n: int) -> tuple[str, dt.datetime]:
    """A topic holding the scenario's messages, all in hour ``H0 + n``."""
    hour = H0 + dt.timedelta(hours=n)
    topic = make_topic(bootstrap, f"crash.ln{n}")
    # The messages are the same bytes in every scenario (their own times are H0's); Kafka's
    # timestamps put them in the scenario's hour.
    ms = [int((H0 + (i + 1) * MINUTE).replace(tzinfo=dt.UTC).timestamp() * 1000) for i in range(len(CANAL))]
    values = [v % (ms[i], ms[i] + 100) if b"%d" in v else v for i, v in enumerate(CANAL)]
    send(bootstrap, topic, [Record(0, hour + (i + 1) * MINUTE, None, v) for i, v in enumerate(values)])
    return topic, hour


def run_hour(spark: Any, config: Any, topic: str, hour: dt.datetime, run_id: str) -> None:
    """Land and normalize ``hour`` of ``topic`` as the DAG's tasks do (normalize on the audit branch)."""
    from cdclake.formats.base import FormatOptions
    from cdclake.hourly import plan_hour
    from spark_jobs.decode_spark import TopicFormat
    from spark_jobs.land import run as land
    from spark_jobs.normalize import normalize_hour
    from spark_jobs.publish import audit_branch

    land(spark, config, hour, f"land-{run_id}", plan_hour(config, hour, (topic,)))
    normalize_hour(spark, {topic: TopicFormat("canal_json", FormatOptions())}, hour, f"normalize-{run_id}",
                   branch=audit_branch(hour))


def _state(spark: Any, topic: str, hour: dt.datetime) -> dict[str, Any]:
    """What the hour left, without what names the run, the topic or the hour."""
    from spark_jobs.publish import audit_branch, branch_names
    from spark_jobs.tables import CHANGELOG, OFFSET_LEDGER, QUARANTINE, RAW_MESSAGES, RUN_STATS

    branch = audit_branch(hour)
    own = f"audit_{hour:%Y%m%dT%H}"
    at = f"landed_hour = '{hour}'"
    unnamed = {"run_id", "landed_hour", "kafka_topic", "topic", "landed_at", "quarantined_at", "recorded_at"}

    def relative(name: str, value: Any) -> Any:
        """A Kafka timestamp as its time into the hour (the scenarios' hours differ)."""
        return value - hour if name in ("timestamp", "kafka_timestamp") and value is not None else value

    def rows(table: str, where: str) -> list[str]:
        found = [{k: relative(k, v) for k, v in r.asDict(recursive=True).items() if k not in unnamed}
                 for r in spark.table(table).where(where).collect()]
        return sorted(repr(sorted(r.items())) for r in found)

    return {
        "raw": rows(RAW_MESSAGES, f"{at} AND topic = '{topic}'"),
        "ledger": rows(OFFSET_LEDGER, f"{at} AND topic = '{topic}'"),
        "changelog": rows(f"{CHANGELOG}.branch_{branch}", f"{at} AND kafka_topic = '{topic}'"),
        "quarantine": rows(f"{QUARANTINE}.branch_{branch}", f"{at} AND kafka_topic = '{topic}'"),
        "stats": rows(RUN_STATS, f"{at} AND topic = '{topic}'"),
        "branches": sorted(b.replace(own, "audit_<hour>") for b in branch_names(spark, CHANGELOG)
                           if b.startswith(own)),
    }


def _differences(state: dict[str, Any], golden: dict[str, Any]) -> str:
    """What differs from the uninterrupted run ("" for nothing): the parts, and the first row."""
    parts = [name for name in golden if state[name] != golden[name]]
    if not parts:
        return ""
    first = parts[0]
    extra = sorted(set(state[first]) ^ set(golden[first]))
    return f"FAILED {', '.join(parts)}: {extra[0] if extra else 'order'}"


def _killed(topic: str, hour: dt.datetime, k: int) -> int:
    """Run the scenario's hour in a new process that SIGKILLs itself while its ``k``-th commit
    runs; its exit status."""
    command = [sys.executable, "-m", "tests.faults.killed_hour", topic, hour.isoformat(), str(k)]
    return subprocess.run(command, env=os.environ.copy(), timeout=300, check=False).returncode


def test_land_and_normalize_stopped_or_killed_at_any_commit_point_then_rerun_give_the_same_tables(
        spark, config, kafka_bootstrap, capsys) -> None:
    from spark_jobs.tables import ensure_tables

    ensure_tables(spark)
    # The first hour ever may commit more (an empty first snapshot of a table never written).
    run_hour(spark, config, *_scenario(kafka_bootstrap, 0), "first")
    topic, hour = _scenario(kafka_bootstrap, 1)
    with commit_points() as calls:
        run_hour(spark, config, topic, hour, "golden")
    golden = _state(spark, topic, hour)
    assert len(golden["raw"]) == len(CANAL) and len(golden["quarantine"]) == 1
    assert len(golden["changelog"]) == 4  # two inserts, an update, a delete
    assert golden["branches"] == ["audit_<hour>"]

    failed, results = [], []
    for k in range(1, len(calls) + 1):
        topic, hour = _scenario(kafka_bootstrap, 1 + k)
        with pytest.raises(InjectedCrash), commit_points(crash_at(k)):
            run_hour(spark, config, topic, hour, "crashed")
        run_hour(spark, config, topic, hour, "rerun")
        differences = _differences(_state(spark, topic, hour), golden)
        results.append((k, "stopped", differences, calls[k - 1]))
        failed += [k] if differences else []
    killed = [k for k, what in enumerate(calls, start=1) if any(name in what for name in KILLED)]
    for n, k in enumerate(sorted(set(killed)), start=len(calls) + 2):
        topic, hour = _scenario(kafka_bootstrap, n)
        assert _killed(topic, hour, k) == -signal.SIGKILL
        run_hour(spark, config, topic, hour, "rerun")
        differences = _differences(_state(spark, topic, hour), golden)
        results.append((k, "killed", differences, calls[k - 1]))
        failed += [k] if differences else []
    with capsys.disabled():
        print(f"\n{len(calls)} commit points in landing and normalizing an hour:")
        for k, how, differences, what in results:
            print(f"  {k:3d} {how:8s} {differences or 'ok':6s} {what[:100]}")
    assert len(calls) >= 6, calls
    assert len(killed) >= 3, calls
    assert failed == []
