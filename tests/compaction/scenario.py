"""One changelog story over three hours, built with ``new_change_row``, for several source tables.

``scenario(prefix)`` returns ``{hour_number: [change rows]}``; the database of every row is
``<prefix>_...`` so the same story can be compacted twice (in order and shuffled) side by side.
Each table exercises one part of the current-state semantics; see the test module for the
expected final rows.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from tests.compaction.changes import BASE, Changes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ORDER_TYPES = {
    "id": "LONG",
    "name": "STRING",
    "amount": "DECIMAL(10,2)",
    "ts": "TIMESTAMP",
    "local": "TIMESTAMP_NTZ",
    "blob": "BINARY",
    "flag": "BOOLEAN",
    "big": "LONG",
}


def t(minutes: int) -> dt.datetime:
    return BASE + dt.timedelta(minutes=minutes)


def fixture_rows(path: str, database: str) -> list[dict[str, Any]]:
    """Canonical rows from a decoder fixture's expected output, moved to ``database``."""
    rows = []
    for line in (FIXTURES / path).read_text().splitlines():
        row = json.loads(line)
        for name in ("event_time", "produced_time", "kafka_timestamp", "landed_hour"):
            if isinstance(row.get(name), str):
                moment = dt.datetime.fromisoformat(row[name].replace("Z", "+00:00"))
                row[name] = int(moment.timestamp() * 1_000_000)
        row["database"] = database
        rows.append(row)
    return rows


def scenario(prefix: str) -> dict[int, list[dict[str, Any]]]:
    o = Changes(f"{prefix}_shop", "Orders", keys=["id"], types=ORDER_TYPES)
    h1 = [
        # k1: several changes in one hour collapse
        o.row(
            "INSERT",
            after={
                "id": "1",
                "name": "a",
                "amount": "1.50",
                "ts": "2024-01-01T10:00:00.123456Z",
                "local": "2024-01-01T10:00:00",
                "blob": "aGk=",
                "flag": "true",
            },
            at=t(1),
        ),
        o.row("UPDATE", before={"id": "1"}, after={"id": "1", "name": "b", "amount": "2.50"}, at=t(2)),
        o.row("UPDATE", before={"id": "1"}, after={"id": "1", "name": "c"}, full=False, at=t(3)),
        # k2: newer state first ...
        o.row("INSERT", after={"id": "2", "name": "new"}, at=t(20)),
        # k3: insert, deleted in hour 2, a late update in hour 3
        o.row("INSERT", after={"id": "3", "name": "x"}, at=t(1)),
        # k4: partial updates merge over hours
        o.row("INSERT", after={"id": "4", "name": "p", "amount": "4.00", "flag": "false"}, at=t(1)),
        # k5 -> k6: an update that changes the key
        o.row("INSERT", after={"id": "5", "name": "mover", "amount": "5.00"}, at=t(1)),
        # k7: snapshot rows upsert
        o.row("SNAPSHOT", after={"id": "7", "name": "snap1"}, at=t(1)),
        # k8: original delivery (offset 100) ...
    ]
    k8_insert = o.row("INSERT", after={"id": "8", "name": "v1"}, at=t(5), offset=100)
    h1.append(k8_insert)
    h2 = [
        o.row("UPDATE", before={"id": "2"}, after={"id": "2", "name": "old"}, at=t(10)),  # older: ignored
        o.row("DELETE", before={"id": "3", "name": "x"}, at=t(30)),
        o.row("UPDATE", before={"id": "4"}, after={"id": "4", "amount": "4.50"}, full=False, at=t(31)),
        o.row(
            "UPDATE",
            before={"id": "5", "name": "mover", "amount": "5.00"},
            after={"id": "6", "name": "mover", "amount": "5.00"},
            at=t(32),
        ),
        o.row("SNAPSHOT", after={"id": "7", "name": "snap2"}, at=t(33)),
        o.row("UPDATE", before={"id": "8"}, after={"id": "8", "name": "v2"}, at=t(34), offset=101),
    ]
    h3 = [
        o.row(
            "UPDATE", before={"id": "3"}, after={"id": "3", "name": "zombie"}, at=t(20)
        ),  # late: stays deleted
        o.row(
            "UPDATE", before={"id": "4"}, after={"id": "4", "name": "p2", "flag": None}, full=False, at=t(50)
        ),
        dict(k8_insert),  # redelivered duplicate (same Kafka coordinates): applies once, never overwrites v2
        o.row("INSERT", after={"id": "9", "name": "huge", "big": "18446744073709551615"}, at=t(51)),
    ]

    k = Changes(f"{prefix}_shop", "audit log", types={"who": "STRING", "n": "LONG"})
    h1 += [
        k.row("INSERT", after={"who": "ann", "n": "1"}, at=t(1)),
        k.row("INSERT", after={"who": "ann", "n": "1"}, at=t(2)),
        k.row("INSERT", after={"who": "bob", "n": "2"}, at=t(3)),
    ]
    dup = k.row("DELETE", before={"who": "ann", "n": "1"}, at=t(40))
    h2 += [dup, dict(dup)]  # a duplicate delete removes one copy only
    h3 += [k.row("UPDATE", before={"who": "bob", "n": "2"}, after={"who": "bob", "n": "3"}, at=t(60))]

    tr = Changes(f"{prefix}_shop", "trunc", keys=["id"], types={"id": "LONG", "v": "STRING"})
    h1 += [
        tr.row("INSERT", after={"id": "1", "v": "a"}, at=t(1)),
        tr.row("INSERT", after={"id": "2", "v": "b"}, at=t(2)),
    ]
    h2 += [tr.row("TRUNCATE", at=t(50), keys=[]), tr.row("INSERT", after={"id": "3", "v": "c"}, at=t(55))]
    h3 += [
        tr.row("UPDATE", before={"id": "1"}, after={"id": "1", "v": "late"}, at=t(40))
    ]  # before the truncate

    ev = Changes(
        f"{prefix}_shop", "evolve", keys=["id"], types={"id": "LONG", "a": "STRING", "d": "DECIMAL(10,2)"}
    )
    h1 += [ev.row("INSERT", after={"id": "1", "a": "x", "d": "1.25"}, at=t(1))]
    h2 += [
        ev.row("DDL", ddl="ALTER TABLE evolve ADD COLUMN b INT", keys=[], at=t(2), types={}),
        ev.row(
            "INSERT",
            after={"id": "2", "a": "y", "b": "7", "d": "2.50"},
            at=t(3),
            types={"id": "LONG", "a": "STRING", "b": "LONG", "d": "DECIMAL(12,2)"},
        ),
    ]
    h3 += [
        ev.row(
            "UPDATE",
            before={"id": "1"},
            after={"id": "1", "b": "5"},
            full=False,
            at=t(4),
            types={"id": "LONG", "b": "LONG"},
        )
    ]

    # The manuals' examples, as the decoders produce them.
    h1 += fixture_rows("drs_json/manual_update_en/expected.jsonl", f"{prefix}_drs")
    h1 += fixture_rows("drs_mongo/manual_examples/expected.jsonl", f"{prefix}_mongo")[:4]
    h2 += fixture_rows("oms_shareplex/key_override/expected.jsonl", f"{prefix}_splex")
    return {1: h1, 2: h2, 3: h3}
