"""Canal JSON traffic for bench/hour's ``tables`` and ``big`` parts: hours of many tables with a few
changes each, few tables with many, and one large hour, as Canal (flat message) sends them."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

from cdclake.demo import DemoMessage

MYSQL_TYPES = {"id": "bigint(20)", "name": "varchar(64)", "amount": "decimal(12,2)", "qty": "int(11)"}
SQL_TYPES = {"id": -5, "name": 12, "amount": 3, "qty": 4}
# The current table's columns once Canal's types are mapped (the big part seeds them directly).
TABLE_COLUMNS = {"id": "bigint", "name": "string", "amount": "decimal(12,2)", "qty": "int"}


def _ms(moment: dt.datetime) -> int:
    return int(moment.replace(tzinfo=dt.UTC).timestamp() * 1000)


def row(key: int, version: int) -> dict[str, str]:
    return {"id": str(key), "name": f"name-{key}-{version}", "amount": f"{key % 1000}.{version % 100:02d}",
            "qty": str(version)}


def message(topic: str, database: str, table: str, op: str, rows: list[dict[str, str]],
            at: dt.datetime, serial: int, old: list[dict[str, str]] | None = None) -> DemoMessage:
    """One Canal flat message of ``rows`` (one operation on one table)."""
    doc = {"data": rows, "database": database, "es": _ms(at), "id": serial, "isDdl": False,
           "mysqlType": MYSQL_TYPES, "old": old, "pkNames": ["id"], "sql": "", "sqlType": SQL_TYPES,
           "table": table, "ts": _ms(at) + 100, "type": op}
    return DemoMessage(topic, None, json.dumps(doc, separators=(",", ":")).encode(), _ms(at))


def created(topic: str, database: str, tables: int, rows_per_table: int,
            hour: dt.datetime) -> list[DemoMessage]:
    """Each table's first rows (keys 0..rows_per_table-1), one message per table."""
    at = hour + dt.timedelta(minutes=1)
    return [message(topic, database, f"t{t}", "INSERT", [row(k, 0) for k in range(rows_per_table)], at, t)
            for t in range(tables)]


def changed(topic: str, database: str, tables: int, changes_per_table: int,
            hour: dt.datetime) -> list[DemoMessage]:
    """``changes_per_table`` changes of each table, one a message, in five kinds by turn: two updates of
    existing keys, a third update, a delete and an insert of a new key."""
    out = []
    for t in range(tables):
        for i in range(changes_per_table):
            at = hour + dt.timedelta(minutes=5, milliseconds=i * 10 + t)
            key, kind = i, i % 5
            if kind < 3:
                out.append(message(topic, database, f"t{t}", "UPDATE", [row(key, 1)], at, i,
                                   old=[{"name": row(key, 0)["name"]}]))
            elif kind == 3:
                out.append(message(topic, database, f"t{t}", "DELETE", [row(key, 0)], at, i))
            else:
                out.append(message(topic, database, f"t{t}", "INSERT", [row(changes_per_table * 10 + key, 1)],
                                   at, i))
    return out


def big_hour(topic: str, database: str, tables: int, rows_per_table: int, changes: int, hour: dt.datetime,
             rows_per_message: int = 10) -> Iterator[DemoMessage]:
    """``changes`` changes spread over ``tables`` seeded with ``rows_per_table`` rows each: 70% updates
    and 10% deletes of existing keys, 20% inserts of new keys; ``rows_per_message`` rows a message
    (Canal batches the rows of one statement)."""
    per_table = changes // tables
    serial = 0
    for t in range(tables):
        for start in range(0, per_table, rows_per_message):
            block = range(start, min(start + rows_per_message, per_table))
            kind = (start // rows_per_message) % 10
            # Spread over the table's keys (a stride coprime to the row count), one key once.
            keys = [(i * 7919) % rows_per_table for i in block]
            at = hour + dt.timedelta(minutes=5, microseconds=serial)
            serial += 1
            if kind < 7:
                yield message(topic, database, f"t{t}", "UPDATE", [row(k, 1) for k in keys], at, serial,
                              old=[{"qty": "0"} for _ in keys])
            elif kind == 7:
                yield message(topic, database, f"t{t}", "DELETE", [row(k, 0) for k in keys], at, serial)
            else:
                yield message(topic, database, f"t{t}", "INSERT", [row(rows_per_table + i, 1) for i in block],
                              at, serial)
