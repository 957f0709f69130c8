"""The crash-point harness for maintenance: a maintenance run stopped at any of its commit points,
then run again, leaves the data analysts read (main, a tag, an audit branch), the tombstones and
the recorded purge cut-off as an uninterrupted run does.

Each scenario is its own copy of a merge-on-read current table (small files, delete files, a tag,
a branch) and its tombstone table (one tombstone past the retention). A counting run lists the
commit points (:func:`tests.faults.crash.commit_points`: the purge's DELETE and cut-off, the retry
setting, the rewrite, expire and orphan procedures); CI stops the run at the first point of each
kind, ``CDCLAKE_CRASH_POINTS=all`` at every one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from typing import Any

import pytest

from tests.faults.crash import InjectedCrash, commit_points, crash_at

pytestmark = pytest.mark.slow

MOR = ("'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")
# The kinds of commit point CI stops at (the first of each).
KINDS = ("DELETE FROM", "tombstones-purged-before", "commit.retry", "rewrite_data_files",
         "rewrite_position_delete_files", "expire_snapshots", "remove_orphan_files")


def _tables(n: int) -> tuple[str, str]:
    return f"current.mcrash{n}__orders", f"current.mcrash{n}__orders__tombstones"


def _make(spark: Any, n: int, now: dt.datetime) -> tuple[str, str]:
    table, tombstones = _tables(n)
    for name in (table, tombstones):
        spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.sql(f"CREATE TABLE {table} (_cdc_key string, v string) USING iceberg TBLPROPERTIES ({MOR})")
    for i in range(1, 5):  # a small data file per commit
        spark.sql(f"INSERT INTO {table} VALUES ('k{i}', 'v{i}'), ('k{i}b', 'w{i}')")
    spark.sql(f"ALTER TABLE {table} CREATE TAG kept")
    spark.sql(f"DELETE FROM {table} WHERE _cdc_key IN ('k2', 'k3b')")  # position delete files
    spark.sql(f"UPDATE {table} SET v = 'changed' WHERE _cdc_key = 'k4'")
    spark.sql(f"ALTER TABLE {table} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {table}.branch_audit VALUES ('k9', 'in flight')")
    spark.sql(f"CREATE TABLE {tombstones} (_cdc_key string, _cdc_event_time timestamp, "
              f"_cdc_order_key string) USING iceberg TBLPROPERTIES ({MOR})")
    spark.createDataFrame([(k, now - age, f"T{k}") for k, age in
                           (("old", dt.timedelta(days=30)), ("recent", dt.timedelta(days=1)))],
                          "_cdc_key string, _cdc_event_time timestamp, _cdc_order_key string") \
        .writeTo(tombstones).append()
    return table, tombstones


def _maintain(spark: Any, config: Any, n: int, now: dt.datetime) -> None:
    from cdclake.config import MaintenanceConfig
    from spark_jobs.maintenance import run

    config = dataclasses.replace(config, tombstone_retention_days=7, maintenance=MaintenanceConfig(
        snapshot_retention_days=0, retain_last=1, orphan_file_age_days=3, min_input_files=2))
    summary = run(spark, config, now, f"maintenance__crash{n}", tables=_tables(n))
    assert summary.failures == [], summary.failures


def _state(spark: Any, n: int) -> dict[str, Any]:
    table, tombstones = _tables(n)

    def rows(ref: str) -> list[tuple]:
        return sorted(tuple(r) for r in spark.table(ref).collect())

    properties = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {tombstones}").collect()}
    return {"main": rows(table), "tag": rows(f"{table}.tag_kept"), "branch": rows(f"{table}.branch_audit"),
            "tombstones": rows(tombstones), "cutoff": properties.get("cdc.tombstones-purged-before")}


def _chosen(calls: list[str]) -> list[int]:
    if os.environ.get("CDCLAKE_CRASH_POINTS") == "all":
        return list(range(1, len(calls) + 1))
    return sorted({next(k for k, what in enumerate(calls, start=1) if kind in what) for kind in KINDS})


def test_maintenance_stopped_at_any_commit_point_then_rerun_leaves_what_an_uninterrupted_run_does(
        spark, config, capsys) -> None:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    _make(spark, 0, now)
    with commit_points() as calls:
        _maintain(spark, config, 0, now)
    golden = _state(spark, 0)
    assert [row[0] for row in golden["tombstones"]] == ["recent"]
    assert [row[0] for row in golden["branch"]][-1] == "k9" and golden["cutoff"] is not None

    results = []
    for k in _chosen(calls):
        _make(spark, k, now)
        with pytest.raises(InjectedCrash), commit_points(crash_at(k)):
            _maintain(spark, config, k, now)
        _maintain(spark, config, k, now)
        results.append((k, _state(spark, k) == golden, calls[k - 1]))
        for name in _tables(k):  # a small namespace keeps the next scenario's listing short
            spark.sql(f"DROP TABLE {name} PURGE")
    with capsys.disabled():
        print(f"\n{len(calls)} commit points in maintaining a table and its tombstones; "
              f"stopped at {len(results)}:")
        for k, ok, what in results:
            print(f"  {k:3d} {'ok' if ok else 'FAILED':6s} {what[:100]}")
    assert [k for k, ok, _ in results if not ok] == []
    assert len(results) == len(KINDS) or os.environ.get("CDCLAKE_CRASH_POINTS") == "all"
