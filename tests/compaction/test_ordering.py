"""One total order per source table on real Spark, when some changes carry a vendor sequence and
some only a time: the same table on a first run, a re-run and a shuffled run."""

from __future__ import annotations

import datetime as dt

import pytest

from spark_jobs.compact import compact_hour
from tests.compaction.changes import BASE, Changes, hour, write_hour

pytestmark = pytest.mark.slow

def _hours(prefix: str) -> dict[int, list[dict]]:
    """Key 1: a full-load row (no sequence), then updates with and without a sequence, landing out
    of order (the unsequenced update of 00:02 lands an hour after the sequenced one of 00:03)."""
    t = Changes(prefix, "orders", keys=["id"], types={"id": "LONG", "v": "STRING"})
    at = [BASE + dt.timedelta(minutes=m) for m in range(6)]
    return {
        0: [t.row("SNAPSHOT", after={"id": "1", "v": "loaded"}, at=at[0]),
            t.row("UPDATE", before={"id": "1"}, after={"id": "1", "v": "seq 5"}, at=at[1], seq=5),
            t.row("UPDATE", before={"id": "1"}, after={"id": "1", "v": "seq 6"}, at=at[3], seq=6),
            # Two changes of one transaction (one time): the sequence orders them, not Kafka.
            t.row("INSERT", after={"id": "2", "v": "second"}, at=at[4], seq=9, offset=50),
            t.row("UPDATE", before={"id": "2"}, after={"id": "2", "v": "first"}, at=at[4], seq=8,
                  offset=51)],
        1: [t.row("UPDATE", before={"id": "1"}, after={"id": "1", "v": "no seq"}, at=at[2]),
            t.row("UPDATE", before={"id": "2"}, after={"id": "2", "v": "no seq, later"}, at=at[5])],
    }


def _table(spark, name: str) -> list[tuple]:
    return sorted((r["id"], r["v"]) for r in spark.table(name).collect())


def test_sequenced_and_unsequenced_changes_compare_by_time_in_any_run_order(spark) -> None:
    expected = [(1, "seq 6"), (2, "no seq, later")]
    for prefix, first in (("mixed", 70), ("mixedshuf", 72)):
        for n, rows in _hours(prefix).items():
            write_hour(spark, first + n, rows, run_id=f"normalize__{first + n}")
    for n in (70, 71):  # in landing order
        compact_hour(spark, hour(n), f"compact__{n}")
    assert _table(spark, "current.mixed__orders") == expected
    compact_hour(spark, hour(70), "compact__70__again")  # a re-run
    assert _table(spark, "current.mixed__orders") == expected
    for n in (73, 72):  # shuffled
        compact_hour(spark, hour(n), f"compact__{n}")
    assert _table(spark, "current.mixedshuf__orders") == expected
