"""The crash-point harness: an hour killed at any commit point of compaction or publish, then run
again, gives the tables of an uninterrupted run, with no temporary column or stray branch.

One source table, two hours. The first creates it; the second widens a column (``bigint`` to
``decimal``: a rewrite on ``main``), adds one, deletes a key (a tombstone), truncates the table and
writes after the truncate. A counting run of the second hour lists its commit points (every
``spark.sql`` that commits: branch changes, DDL, DML, procedures); then, for each point ``k``, a
fresh copy of the table (its own database) runs the first hour, has the second killed at point
``k`` (:class:`tests.faults.crash.CrashAt`) and runs it again whole.

Every point takes about 25 s on 2 cores, so CI crashes at the first point of each kind in
:data:`CI_KINDS` and at the last; ``CDCLAKE_CRASH_POINTS=all`` crashes at every one.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from typing import Any

import pytest

from tests.compaction.changes import BASE, Changes, hour, write_hour
from tests.faults.crash import COMMIT, CrashAt, InjectedCrash

pytestmark = pytest.mark.slow

FIRST_HOUR = 1000  # every database's first hour, the golden second hour, then the crash runs'


def _hours(database: str) -> tuple[list[dict], list[dict]]:
    """``orders`` gets a widening, a new column and a delete; ``logs`` a TRUNCATE."""
    types = {"id": "LONG", "amount": "LONG", "note": "STRING"}
    orders = Changes(database, "orders", keys=["id"], types=types)
    logs = Changes(database, "logs", keys=["id"], types={"id": "LONG"})
    at = [BASE + dt.timedelta(minutes=m) for m in range(10)]
    first = [orders.row("INSERT", after={"id": str(i), "amount": str(i), "note": f"n{i}"}, at=at[0])
             for i in (1, 2, 3)] + [logs.row("INSERT", after={"id": str(i)}, at=at[0]) for i in (1, 2)]
    second = [
        orders.row("UPDATE", before={"id": "1"}, after={"id": "1", "amount": "92233720368547758070"},
                   full=False, at=at[1]),
        orders.row("DELETE", before={"id": "2"}, at=at[2]),
        orders.row("INSERT", after={"id": "4", "amount": "4", "note": "n4", "extra": "x"}, at=at[3],
                   types={**types, "extra": "STRING"}),
        logs.row("TRUNCATE", keys=[], at=at[4]),
        logs.row("INSERT", after={"id": "3"}, at=at[5]),
    ]
    return first, second


def _run_hour(spark: Any, config: Any, n: int, database: str) -> None:
    from spark_jobs import compact as compact_job
    from spark_jobs import publish
    from spark_jobs.tables import CHANGELOG, QUARANTINE

    branch = publish.begin_attempt(spark, hour(n))
    summary = compact_job.run(spark, config, hour(n), f"compact__{n}", branch)
    assert not summary.failures, summary.failures
    # The scenario's tables (the DAG passes every table; this test's other tables hold no branch).
    publish.publish(spark, [CHANGELOG, QUARANTINE, *_tables(database)], hour(n), f"publish__{n}")


def _tables(database: str) -> list[str]:
    return [f"current.{database}__{t}" for t in ("orders", "orders__tombstones", "logs", "logs__tombstones")]


def _state(spark: Any, database: str) -> dict[str, Any]:
    """The scenario's tables: schema and rows, by name without the database."""
    state = {}
    for name in _tables(database):
        suffix = name.split("__", 1)[1]
        frame = spark.table(name)
        rows = sorted((r.asDict() for r in frame.collect()), key=lambda r: str(r["_cdc_key"]))
        state[suffix] = ({f.name: f.dataType.simpleString() for f in frame.schema.fields}, rows)
    return state


def _first_hours(spark: Any, config: Any, n: int, databases: list[str]) -> None:
    write_hour(spark, n, [row for database in databases for row in _hours(database)[0]])
    from spark_jobs import compact as compact_job
    from spark_jobs import publish

    branch = publish.begin_attempt(spark, hour(n))
    assert not compact_job.run(spark, config, hour(n), f"compact__{n}", branch).failures
    publish.publish(spark, publish.audit_candidates(spark), hour(n), f"publish__{n}")


def _second_hour(spark: Any, config: Any, n: int, database: str, crash: int | None = None) -> CrashAt:
    """The second hour (killed at commit point ``crash``, then run again); without ``crash``, a
    run that counts the commit points."""
    write_hour(spark, n, _hours(database)[1])
    counting = CrashAt(spark, COMMIT, crash or 0)
    if crash is None:
        _run_hour(counting, config, n, database)
    else:
        with pytest.raises(InjectedCrash):
            _run_hour(counting, config, n, database)
        _run_hour(spark, config, n, database)  # the re-run
    return counting


def test_a_crash_at_any_commit_point_then_a_rerun_gives_the_uninterrupted_tables(
        spark, config, capsys) -> None:
    from spark_jobs import publish
    from spark_jobs.tables import ensure_tables

    ensure_tables(spark)
    # One first hour creates the golden tables and those of CI's crash runs (at most one per
    # kind and the last point); the second hours only touch their own database's tables.
    slots = [f"crash_{i}" for i in range(len(CI_KINDS) + 1)]
    _first_hours(spark, config, FIRST_HOUR, ["crash_gold", *slots])
    golden_run = _second_hour(spark, config, FIRST_HOUR + 1, "crash_gold")
    golden = _state(spark, "crash_gold")
    columns, rows = golden["orders"]
    assert not [c for c in columns if c.startswith("_cdc_widen_")]
    assert columns["amount"] == "decimal(20,0)"
    assert [(r["id"], r["amount"], r["note"], r["extra"]) for r in rows] == [
        (1, Decimal("92233720368547758070"), "n1", None), (3, Decimal(3), "n3", None),
        (4, Decimal(4), "n4", "x")]
    assert [r["_cdc_key"] for r in golden["orders__tombstones"][1]] == ['["2"]']
    assert [r["id"] for r in golden["logs"][1]] == [3]
    calls = golden_run.calls
    assert len(calls) >= 15, calls
    points = _chosen(calls)

    databases = {k: f"crash_{i}" for i, k in enumerate(points)}
    more = [database for database in databases.values() if database not in slots]
    if more:  # CDCLAKE_CRASH_POINTS=all: one hour creates the rest
        _first_hours(spark, config, FIRST_HOUR + 2, more)
    failed = []
    for k, database in databases.items():
        n = FIRST_HOUR + 2 + k
        _second_hour(spark, config, n, database, crash=k)
        left = publish.audited_tables(spark, hour(n), [*publish.AUDITED_TABLES, *_tables(database)])
        if _state(spark, database) != golden or left:
            failed.append((k, calls[k - 1], left))
        for table in _tables(database):  # a small namespace keeps the next scenario's scans short
            spark.sql(f"DROP TABLE {table} PURGE")
    for database in set(slots) - set(databases.values()):  # points of two kinds that coincide
        for table in _tables(database):
            spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
    with capsys.disabled():
        print(f"\n{len(calls)} commit points in the hour (compaction and publish); crashed at {len(points)}:")
        for k in points:
            print(f"  {k:3d} {'FAILED' if k in [f[0] for f in failed] else 'ok':6s} {calls[k - 1][:100]}")
    assert failed == []


# The points CI crashes at: the first of each kind that a fault here broke (a column swap, the
# truncate's record, a publish fast-forward), and the last point (the changelog's publish).
CI_KINDS = ("RENAME COLUMN", "cdc.truncated-before", "system.fast_forward")


def _chosen(calls: list[str]) -> list[int]:
    """Every commit point with ``CDCLAKE_CRASH_POINTS=all``; else the first of each of
    :data:`CI_KINDS` and the last point, which keeps the harness within CI's time."""
    if os.environ.get("CDCLAKE_CRASH_POINTS") == "all":
        return list(range(1, len(calls) + 1))
    chosen = {next(k for k, statement in enumerate(calls, start=1) if kind in statement)
              for kind in CI_KINDS}
    return sorted({*chosen, len(calls)})
