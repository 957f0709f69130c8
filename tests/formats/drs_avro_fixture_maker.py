"""Writes ``tests/fixtures/drs_avro/*/input.*`` from the TEST STAND-IN schema.

The vendor's DRS schema (``record.rar``) is not public, so these datums are encoded with
``tests/formats/drs_avro_test_schema.avsc``, a stand-in that only borrows the known field names.
They test the decoder's mechanics (single-object header, fingerprint check, bare datums, field
mapping), not the vendor's exact types. Run from the repository root::

    python -m tests.formats.drs_avro_fixture_maker
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import fastavro

from cdclake.formats._avro import SINGLE_OBJECT_MAGIC, load_schema_file, schema_fingerprint

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = "tests/formats/drs_avro_test_schema.avsc"
OUT = ROOT / "tests" / "fixtures" / "drs_avro"
SCHEMA = load_schema_file(ROOT / SCHEMA_PATH)
OPTIONS = {"schema_file": SCHEMA_PATH, "primary_key_overrides": {"shop.orders": ["id"]}}
FIELDS = [{"name": "id", "type": "bigint"}, {"name": "customer", "type": "varchar"},
          {"name": "note", "type": "text"}]
IMAGE = "cdclake.test.drs_stand_in.Image"


def image(*values: str | None) -> list:
    return [None if v is None else (IMAGE, {"name": f["name"], "value": v})
            for f, v in zip(FIELDS, values, strict=True)]


def record(op: str, seqno: int, before: list | None, after: list | None,
           table: str = '"shop"."orders"', ts: int = 1696984408123) -> dict:
    return {"version": "1.0", "seqno": seqno, "shardId": "0", "eventid": f"mysql-bin.000012:{4000 + seqno}",
            "updateTimestamp": ts, "tableName": table, "operation": op, "columnCount": len(FIELDS),
            "fields": FIELDS, "beforeImages": before, "afterImages": after}


def bare(datum: dict) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, SCHEMA, datum)
    return buf.getvalue()


def single_object(datum: dict, fingerprint: bytes | None = None) -> bytes:
    return SINGLE_OBJECT_MAGIC + (fingerprint or schema_fingerprint(SCHEMA)) + bare(datum)


def write(scenario: str, datums: list[bytes], options: dict | None = OPTIONS) -> None:
    folder = OUT / scenario
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("input.*"):
        old.unlink()
    if len(datums) == 1:
        (folder / "input.bin").write_bytes(datums[0])
    else:
        (folder / "input.b64l").write_text("".join(base64.b64encode(d).decode() + "\n" for d in datums))
    if options is not None:
        (folder / "options.json").write_text(json.dumps(options) + "\n")


def main() -> None:
    insert = record("INSERT", 101, None, image("1", "Zhang San", None))
    update = record("UPDATE", 102, image("1", "Zhang San", None), image("1", "Zhang San", "VIP"))
    delete = record("DELETE", 103, image("1", "Zhang San", "VIP"), None)
    write("single_object_encoding", [single_object(d) for d in (insert, update, delete)])
    write("bare_datums_keyless", [bare(record("INSERT", 104, None, image("2", "李四", "备注"),
                                              table='"shop"."audit"', ts=1696984409))])
    write("fingerprint_mismatch", [single_object(insert, fingerprint=bytes(8))])
    write("missing_schema", [single_object(insert)], options=None)
    write("truncated", [single_object(insert)[:-5]])
    write("controls_and_unknown_op", [single_object(record("BEGIN", 105, None, None)),
                                      single_object(record("COMMIT", 106, None, None)),
                                      single_object(record("MERGE", 107, None, None))])


if __name__ == "__main__":
    main()
