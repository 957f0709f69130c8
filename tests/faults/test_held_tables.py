"""One table's failed compaction never stops the others: they compact and publish, the failed one
is held back (``cdc.held_tables``), named in the summary, the current gate and the hour status,
and catches up once it compacts again.

Three source tables over three hours, each compacted on the hour's audit branch and published:
``good`` always compacts; ``flaky`` fails once (a Spark error injected in the second hour) and
catches up in the third hour, which has none of its changes; ``bad`` receives a value its
``bigint`` column cannot hold in the second hour and stays held.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.compaction.changes import BASE, Changes, hour, write_hour

pytestmark = pytest.mark.slow

DB = "held"
N = 1100  # this test's hours
TABLES = [f"current.{DB}__{t}" for t in ("good", "flaky", "bad")]


def _changes() -> tuple[list[dict], list[dict], list[dict]]:
    types = {"id": "LONG", "v": "LONG"}
    good, flaky, bad = (Changes(DB, t, keys=["id"], types=types) for t in ("good", "flaky", "bad"))
    at = [BASE + dt.timedelta(minutes=m) for m in range(10)]
    first = [t.row("INSERT", after={"id": "1", "v": "1"}, at=at[0]) for t in (good, flaky, bad)]
    second = [
        good.row("INSERT", after={"id": "2", "v": "2"}, at=at[1]),
        flaky.row("UPDATE", before={"id": "1"}, after={"id": "1", "v": "10"}, full=False, at=at[1]),
        flaky.row("INSERT", after={"id": "2", "v": "2"}, at=at[2]),
        flaky.row("DELETE", before={"id": "1"}, at=at[3]),
        bad.row("UPDATE", before={"id": "1"}, after={"id": "1", "v": "ten"}, at=at[1],
                types={"id": "LONG", "v": "STRING"}),
    ]
    third = [good.row("INSERT", after={"id": "3", "v": "3"}, at=at[4]),
             bad.row("INSERT", after={"id": "3", "v": "3"}, at=at[4])]
    return first, second, third


def _rows(spark: Any, table: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.table(table).select("id", "v").collect())


def _hour(spark: Any, config: Any, n: int) -> Any:
    from spark_jobs import compact as compact_job
    from spark_jobs import publish
    from spark_jobs.gates import run_gate

    branch = publish.begin_attempt(spark, hour(n))
    summary = compact_job.run(spark, config, hour(n), f"compact__{n}", branch)
    report = run_gate(spark, config, "current", hour(n), f"gate__{n}", branch=branch, tables=TABLES)
    publish.publish(spark, publish.audit_candidates(spark), hour(n), f"publish__{n}")
    return summary, report


def test_a_failed_table_is_held_back_while_the_others_publish_then_catches_up(spark, config,
                                                                                monkeypatch) -> None:
    from cdclake import hours_cli
    from cdclake.cli_args import hour_text
    from spark_jobs import compact, hour_status, publish
    from spark_jobs import held_tables as held
    from spark_jobs.gates import HELD_EXPECTATION

    first, second, third = _changes()
    for n, rows in zip((N, N + 1, N + 2), (first, second, third), strict=True):
        write_hour(spark, n, rows)
    try:
        summary, _ = _hour(spark, config, N)
        assert not summary.failures and held.read(spark) == {}

        real = compact.compact_table

        def flaky_once(spark: Any, source_table: Any, *args: Any, **kwargs: Any) -> Any:
            if source_table[2] == "flaky":
                raise RuntimeError("injected: executor lost")
            return real(spark, source_table, *args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(compact, "compact_table", flaky_once)
            summary, report = _hour(spark, config, N + 1)
        assert {t.table: t.status for t in summary.tables} == {
            "current.held__good": "OK", "current.held__flaky": "FAILED", "current.held__bad": "FAILED"}
        # The gate passes for the tables it validated and names the held ones.
        assert report.success
        assert sorted((o.target, o.expectation, o.success) for o in report.outcomes if not o.success) == [
            ("current.held__bad", HELD_EXPECTATION, False),
            ("current.held__flaky", HELD_EXPECTATION, False)]
        assert hour_status.recorded(spark, hour(N + 1), hour_status.COMPACT) == (
            "PARTIAL", ["current.held__good"])
        published = hour_status.recorded(spark, hour(N + 1), hour_status.PUBLISH)
        assert published is not None and published[0] == hour_status.PUBLISHED
        # Published: good's hour and the whole changelog; the failed tables as they were.
        assert _rows(spark, "current.held__good") == [(1, 1), (2, 2)]
        assert _rows(spark, "current.held__flaky") == [(1, 1)]
        assert _rows(spark, "current.held__bad") == [(1, 1)]
        assert spark.table("cdc.changelog").where(f"database = '{DB}' AND landed_hour = "
                                                  f"TIMESTAMP '{hour(N + 1)}'").count() == len(second)
        holds = held.read(spark)
        assert sorted((h.table, h.since, h.failed_hour) for h in holds.values()) == [
            ("current.held__bad", hour(N + 1), hour(N + 1)),
            ("current.held__flaky", hour(N + 1), hour(N + 1))]
        assert holds[(DB, None, "flaky")].message == "RuntimeError: injected: executor lost"
        assert "bigint cannot change to string" in holds[(DB, None, "bad")].message

        summary, report = _hour(spark, config, N + 2)
        # flaky has no change in the third hour: it catches up with the second's all the same.
        assert {t.table: t.status for t in summary.tables} == {
            "current.held__good": "OK", "current.held__flaky": "OK", "current.held__bad": "FAILED"}
        assert _rows(spark, "current.held__good") == [(1, 1), (2, 2), (3, 3)]
        assert _rows(spark, "current.held__flaky") == [(2, 2)]
        assert _rows(spark, "current.held__bad") == [(1, 1)]
        [bad] = held.read(spark).values()
        assert (bad.table, bad.since, bad.failed_hour) == ("current.held__bad", hour(N + 1), hour(N + 2))
        assert [o.target for o in report.outcomes if not o.success] == ["current.held__bad"]
        assert publish.audited_tables(spark, hour(N + 2)) == []
        flaky_props = dict(spark.sql("SHOW TBLPROPERTIES current.held__flaky").collect())
        assert flaky_props[compact.COMPACTED_THROUGH_PROPERTY] == hour(N + 2).strftime("%Y-%m-%dT%H:00:00Z")
        # cdclake hours: compaction PARTIAL and the current gate passed with tables held back.
        columns = hours_cli.COLUMNS
        shown = {r[0]: dict(zip(columns, r, strict=True))
                 for r in hours_cli.hour_rows(config, hour(N), hour(N + 3))}
        assert [(r["hour"], r["compact"], r["current_gate"], r["publish"]) for r in shown.values()] == [
            (hour_text(hour(N + 2)), "PARTIAL", "PASSED_HELD", "PUBLISHED"),
            (hour_text(hour(N + 1)), "PARTIAL", "PASSED_HELD", "PUBLISHED"),
            (hour_text(hour(N)), "OK", "PASSED", "PUBLISHED")]
        assert hours_cli.HELD_EXPECTATION == HELD_EXPECTATION
    finally:
        held.write(spark, [])
