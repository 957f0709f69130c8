"""SCD2 history tables (``history.<db>__<table>``): every version of every row, the same whatever
the order hours run in, current versions equal to the current table after every hour, a gate that
fails when they differ, and a rebuild from the changelog alone."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.compaction.changes import BASE, Changes, hour, write_hour

TYPES = {"id": "LONG", "v": "STRING", "n": "LONG"}
N = 1200  # this module's hours


def at(minute: int) -> dt.datetime:
    return BASE + dt.timedelta(minutes=minute)


def _hours(database: str) -> list[list[dict[str, Any]]]:
    """Three hours of one table: inserts, partial and full updates, a late partial update of key 1
    (landed an hour after newer changes), a delete, a key move (3 -> 4), then a TRUNCATE."""
    t = Changes(database, "orders", keys=["id"], types=TYPES)
    first = [
        t.row("INSERT", after={"id": "1", "v": "a", "n": "1"}, at=at(1)),
        t.row("INSERT", after={"id": "2", "v": "b", "n": "2"}, at=at(2)),
        t.row("INSERT", after={"id": "3", "v": "c", "n": "3"}, at=at(3)),
        t.row("UPDATE", before={"id": "1"}, after={"id": "1", "v": "a2"}, full=False, at=at(5)),
    ]
    second = [
        t.row("UPDATE", before={"id": "1"}, after={"id": "1", "n": "7"}, full=False, at=at(4)),  # late
        t.row("DELETE", before={"id": "2", "v": "b", "n": "2"}, at=at(6)),
        t.row("UPDATE", before={"id": "3", "v": "c", "n": "3"}, after={"id": "4", "v": "c", "n": "3"},
              at=at(7)),
        t.row("UPDATE", before={"id": "1"}, after={"id": "1", "v": "a3", "n": "10"}, at=at(8)),
    ]
    third = [
        t.row("TRUNCATE", keys=[], at=at(9)),
        t.row("INSERT", after={"id": "6", "v": "f", "n": "6"}, at=at(10)),
    ]
    return [first, second, third]


# (id, v, n, valid_from, valid_to, is_current, ended_by, op)
EXPECTED = sorted([
    (1, "a", 1, at(1), at(4), False, "UPDATE", "INSERT"),
    (1, "a", 7, at(4), at(5), False, "UPDATE", "UPDATE"),
    (1, "a2", 7, at(5), at(8), False, "UPDATE", "UPDATE"),
    (1, "a3", 10, at(8), at(9), False, "TRUNCATE", "UPDATE"),
    (2, "b", 2, at(2), at(6), False, "DELETE", "INSERT"),
    (3, "c", 3, at(3), at(7), False, "UPDATE", "INSERT"),  # the key moved
    (4, "c", 3, at(7), at(9), False, "TRUNCATE", "UPDATE"),
    (6, "f", 6, at(10), None, True, None, "INSERT"),
], key=repr)
COLUMNS = ("id", "v", "n", "_cdc_valid_from", "_cdc_valid_to", "_cdc_is_current", "_cdc_ended_by", "_cdc_op")


def _history(spark: Any, database: str) -> list[tuple]:
    rows = spark.table(f"history.{database}__orders").select(*COLUMNS).collect()
    return sorted((tuple(r) for r in rows), key=repr)


def _current_equals_history(spark: Any, database: str) -> None:
    from spark_jobs.history import current_mismatches

    current = spark.table(f"current.{database}__orders")
    versions = spark.table(f"history.{database}__orders")
    assert current_mismatches(current, versions) == 0
    live = sorted(tuple(r) for r in current.select("id", "v", "n").collect())
    now = versions.where("_cdc_is_current").select("id", "v", "n").collect()
    assert live == sorted(tuple(r) for r in now)


def _compact(spark: Any, n: int) -> None:
    from spark_jobs.compact import compact_hour
    from spark_jobs.compaction.layout import CompactionOptions

    options = CompactionOptions(history={"cdc.test": ("orders",)})
    assert compact_hour(spark, hour(N + n), f"compact__{n}", options).failures == []


@pytest.mark.slow
def test_history_in_any_hour_order_and_re_runs_then_the_gate_and_a_rebuild(spark, config, capsys) -> None:
    """In landing order as the DAG runs an hour (compaction on the hour's audit branch, the current
    gate there, publish), then in another order with a re-run: the same history; then the gate
    fails on a damaged history, and a rebuild from the changelog repairs it."""
    import dataclasses

    from cdclake import cli
    from cdclake.config import TopicConfig
    from cdclake.exceptions import GateFailed
    from spark_jobs import compact as compact_job
    from spark_jobs import publish
    from spark_jobs.gates import HISTORY_EXPECTATION, run_gate

    topic = TopicConfig(name="cdc.test", history=("hist_a.orders",))
    configured = dataclasses.replace(config, topics=(topic,))
    table = ["current.hist_a__orders"]
    for n, rows in enumerate(_hours("hist_a")):
        write_hour(spark, N + n, rows)
        branch = publish.begin_attempt(spark, hour(N + n))
        assert compact_job.run(spark, configured, hour(N + n), f"compact__{n}", branch).failures == []
        assert publish.audited_tables(spark, hour(N + n), ["history.hist_a__orders"]) == [
            "history.hist_a__orders"]
        report = run_gate(spark, configured, "current", hour(N + n), f"gate__{n}", branch=branch,
                          tables=table)
        assert [o.success for o in report.outcomes if o.expectation == HISTORY_EXPECTATION] == [True]
        publish.publish(spark, publish.audit_candidates(spark), hour(N + n), f"publish__{n}")
        _current_equals_history(spark, "hist_a")
    assert _history(spark, "hist_a") == EXPECTED
    assert publish.audited_tables(spark, hour(N + 2)) == []

    shuffled = _hours("hist_b")
    for n in (2, 0, 1, 1):  # the TRUNCATE's hour first, then the others, one of them twice
        write_hour(spark, N + 10 + n, shuffled[n])
        _compact(spark, 10 + n)
        _current_equals_history(spark, "hist_b")
    assert _history(spark, "hist_b") == EXPECTED

    # The current gate compares the current versions with the table: it fails when they differ.
    spark.sql("DELETE FROM history.hist_a__orders WHERE id = 6 OR id = 2")
    with pytest.raises(GateFailed, match="history_current_versions_equal_current_table.*1 rows differ"):
        run_gate(spark, configured, "current", hour(N + 2), "gate__history", tables=table)

    assert cli.main(["history", "rebuild", "--table", "current.hist_a__orders"]) == 0
    rebuilt = f"history.hist_a__orders: {len(EXPECTED)} versions rebuilt from cdc.changelog\n"
    assert capsys.readouterr().out.endswith(rebuilt)
    assert _history(spark, "hist_a") == EXPECTED
    _current_equals_history(spark, "hist_a")


def test_versions_of_one_key_count_a_redelivery_once_and_a_partial_image_onto_nothing_is_the_row() -> None:
    from spark_jobs.compaction.events import order_key
    from spark_jobs.history import versions_of_key

    def event(offset: int, op: str, kind: str, image: str | None, minute: int) -> dict[str, Any]:
        us = int((at(minute) - dt.datetime(1970, 1, 1)).total_seconds() * 1_000_000)
        return {"key": '["1"]', "kind": kind, "image": image, "op": op, "event_us": us, "part": 0,
                "order_key": order_key(None, us, 0, offset, 0), "kafka_topic": "t", "kafka_partition": 0,
                "kafka_offset": offset, "record_index": 0, "run_id": "r"}

    partial = event(0, "UPDATE", "PARTIAL", '{"id": "1", "v": "x"}', 1)
    full = event(1, "UPDATE", "FULL", '{"id": "1", "v": "y", "n": "2"}', 2)
    got = versions_of_key([full, partial, dict(partial)])
    shown = [(v["vals"], v["valid_from_us"], v["valid_to_us"], v["is_current"], v["ended_by"]) for v in got]
    assert shown == [
        ('{"id": "1", "v": "x"}', partial["event_us"], full["event_us"], False, "UPDATE"),
        ('{"id": "1", "v": "y", "n": "2"}', full["event_us"], None, True, None)]
