"""A realistic mixed hour of traffic: seven formats, control messages and bad messages.

Used by the normalize tests (raw rows written directly, and landed from the real broker).
Each entry is (topic, key, value); topics map to formats in :data:`TOPIC_FORMATS`.
"""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

TOPIC_FORMATS = {
    "it.drs": "drs_json",
    "it.canal": "auto",
    "it.dataworks": "dataworks_json",
    "it.debezium": "debezium_json",
    "it.oms": "auto",
    "it.cloudcanal": "cloudcanal_json",
    "it.mongo": "drs_mongo",
}


def _lines(relative: str) -> list[bytes]:
    text = (FIXTURES / relative).read_bytes()
    return [line for line in text.split(b"\n") if line.strip() and not line.lstrip().startswith(b"#")]


def messages() -> list[tuple[str, bytes | None, bytes | None]]:
    """(topic, key, value) in production order."""
    out: list[tuple[str, bytes | None, bytes | None]] = []
    for line in _lines("drs_json/manual_update_en/input.jsonl"):
        out.append(("it.drs", None, line))
    for line in _lines("canal_json/insert_update_delete_batch/input.jsonl"):
        out.append(("it.canal", None, line))
    for line in _lines("dataworks_json/manual_update_two_messages/input.jsonl"):
        out.append(("it.dataworks", None, line))
    for line in _lines("dataworks_json/manual_heartbeat/input.jsonl"):
        out.append(("it.dataworks", None, line))  # control: MHEARTBEAT
    keys = _lines("debezium_json/mysql_schema_include/keys.jsonl")
    for key, line in zip(keys, _lines("debezium_json/mysql_schema_include/input.jsonl"), strict=True):
        out.append(("it.debezium", None if key == b"null" else key, line))
    out.append(("it.debezium", keys[0], None))  # control: tombstone
    for line in _lines("oms_default/manual_examples_corrected/input.jsonl"):
        out.append(("it.oms", None, line))
    for line in _lines("cloudcanal_json/batch_and_transaction_end/input.jsonl"):
        out.append(("it.cloudcanal", None, line))
    for line in _lines("drs_mongo/manual_examples/input.jsonl"):
        out.append(("it.mongo", None, line))
    # Bad messages, each must reach quarantine with its reason.
    out.append(("it.canal", None, b'{"data": [ {"id": "1"} '))                       # INVALID_JSON
    out.append(("it.oms", None, json.dumps({"hello": "world"}).encode()))           # UNKNOWN_FORMAT
    out.append(("it.drs", None, json.dumps({                                         # MISSING_KEY
        "mysqlType": {"id": "int", "name": "varchar(10)"}, "id": 99, "es": 1700000000000,
        "ts": 1700000000001, "database": "db1", "table": "t1", "type": "UPDATE", "isDdl": False,
        "sql": "", "sqlType": {"id": 4, "name": 12}, "data": [{"name": "x"}], "old": [{"name": "y"}],
        "pkNames": ["id"]}).encode()))
    out.append(("it.canal", None, b'{"data": "\xff\xfe not utf-8"}'))               # INVALID_ENCODING
    big = json.dumps({"data": [{"id": "1", "blob": "x" * (5 * 1024 * 1024)}], "database": "d",
                      "table": "t", "type": "INSERT", "isDdl": False, "pkNames": ["id"],
                      "mysqlType": {"id": "int", "blob": "longtext"}, "es": 1, "ts": 1}).encode()
    out.append(("it.canal", None, big))                                             # TOO_LARGE
    return out


EXPECTED_QUARANTINE_REASONS = sorted([
    ("it.canal", "INVALID_JSON"),
    ("it.oms", "UNKNOWN_FORMAT"),
    ("it.drs", "MISSING_KEY"),
    ("it.canal", "INVALID_ENCODING"),
    ("it.canal", "TOO_LARGE"),
])
