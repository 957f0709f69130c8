"""Each attempt at an hour starts clean, and an interrupted publish completes on a re-run.

An earlier attempt's branches (on the changelog and on current tables it touched, touched again
or not) are dropped when the next attempt begins, whether or not ``main`` moved in between, so
nothing of it is published; and ``publish`` run again after an interruption fast-forwards the
tables it had not reached, the changelog last.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

pytestmark = pytest.mark.slow

HOUR = dt.datetime(2024, 5, 1, 10)
KEPT = "current.attempts_db__kept"  # touched by both attempts
LEFT = "current.attempts_db__left"  # touched by the failed attempt only
# The tables these tests branch (the DAG's publish passes every table; the others hold no branch).
ALL = ["cdc.changelog", "cdc.quarantine", KEPT, LEFT]


def _ids(spark, table: str, branch: str | None = None) -> list[str]:
    ref = f"{table}.branch_{branch}" if branch else table
    return sorted(r["id"] for r in spark.table(ref).collect())


def _write(spark, table: str, ids: list[str], branch: str | None = None) -> None:
    frame = spark.createDataFrame([(i,) for i in ids], "id string")
    frame.writeTo(f"{table}.branch_{branch}" if branch else table).append()


@pytest.fixture()
def tables(spark):
    from spark_jobs.tables import ensure_tables

    ensure_tables(spark)
    for table in (KEPT, LEFT):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(f"CREATE TABLE {table} (id string) USING iceberg "
                  "TBLPROPERTIES ('write.wap.enabled'='true')")
        _write(spark, table, ["a"])
    yield
    for table in (KEPT, LEFT):
        spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_a_new_attempt_drops_what_a_failed_one_left_though_main_moved(spark, tables) -> None:
    from spark_jobs import publish
    from spark_jobs.tables import CHANGELOG, QUARANTINE

    branch = publish.begin_attempt(spark, HOUR)
    publish.start_audit(spark, [KEPT, LEFT], HOUR)
    _write(spark, KEPT, ["bad"], branch)
    _write(spark, LEFT, ["bad"], branch)
    _write(spark, KEPT, ["b"])  # main moves after the failed attempt (another writer)

    publish.begin_attempt(spark, HOUR)
    assert publish.audited_tables(spark, HOUR, ALL) == [CHANGELOG, QUARANTINE]
    publish.start_audit(spark, [KEPT], HOUR)
    _write(spark, KEPT, ["good"], branch)
    assert publish.publish(spark, ALL, HOUR) == [QUARANTINE, KEPT, CHANGELOG]
    assert _ids(spark, KEPT) == ["a", "b", "good"]
    assert _ids(spark, LEFT) == ["a"]
    assert publish.audited_tables(spark, HOUR, ALL) == []


def test_an_interrupted_publish_completes_when_run_again_and_the_hour_says_so(spark, config, tables) -> None:
    from cdclake.hours_cli import hour_rows
    from spark_jobs import hour_status, publish
    from spark_jobs.tables import CHANGELOG, QUARANTINE
    from tests.faults.crash import CrashAt, InjectedCrash

    branch = publish.begin_attempt(spark, HOUR)
    publish.start_audit(spark, [KEPT, LEFT], HOUR)
    _write(spark, KEPT, ["k"], branch)
    _write(spark, LEFT, ["l"], branch)
    everything = [QUARANTINE, KEPT, LEFT, CHANGELOG]  # the changelog last
    with pytest.raises(InjectedCrash):  # killed before its second fast-forward
        crashing: Any = CrashAt(spark, "fast_forward", 2)
        publish.publish(crashing, ALL, HOUR, "r1")
    assert publish.audited_tables(spark, HOUR, ALL) == [CHANGELOG, KEPT, LEFT]
    assert hour_status.recorded(spark, HOUR, hour_status.PUBLISH) == (hour_status.PUBLISHING, everything)

    assert publish.publish(spark, ALL, HOUR, "r2") == [KEPT, LEFT, CHANGELOG]
    assert (_ids(spark, KEPT), _ids(spark, LEFT)) == (["a", "k"], ["a", "l"])
    assert publish.audited_tables(spark, HOUR, ALL) == []
    [row] = spark.sql(f"SELECT status, run_id, tables FROM ops.hour_status WHERE stage = 'publish' "
                      f"AND landed_hour = '{HOUR}'").collect()
    mains = publish.main_snapshots(spark, everything)
    assert (row["status"], row["run_id"]) == ("PUBLISHED", "r2")
    assert [(t["name"], t["snapshot_id"]) for t in row["tables"]] == [(t, mains[t]) for t in everything]
    [shown] = hour_rows(config, HOUR, HOUR + dt.timedelta(hours=1))
    assert shown[0] == "2024-05-01T10:00:00Z" and shown[-2:] == ("PUBLISHED", "4")
