"""Writes the ``tests/fixtures/dts_avro/*/input.*`` datums with fastavro from the vendor schema.

Why generated: no DTS capture may be committed here, so realistic records are encoded from the
shipped ``Record`` schema (and, for one scenario, the legacy schema without ``bornTimestamp``).
The values mirror what DTS sends for a MySQL source (binlog type codes, MySQL charsets, the
``pk_uk_info`` tag). Run from the repository root::

    python -m tests.formats.dts_avro_fixture_maker

then regenerate ``expected.jsonl`` with ``cdclake decode --format dts_avro`` and check it by hand.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import fastavro

from cdclake.formats._avro import load_packaged_schema

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "dts_avro"
NS = "com.alibaba.dts.formats.avro."
CURRENT = load_packaged_schema("aliyun_dts_record.avsc")
LEGACY = load_packaged_schema("aliyun_dts_record_legacy_no_bornTimestamp.avsc")


def v(branch: str, value: Any) -> tuple[str, Any]:
    return (NS + branch, value)


def integer(text: str, precision: int = 8) -> tuple[str, Any]:
    return v("Integer", {"precision": precision, "value": text})


def chars(text: str, charset: str = "utf8mb4", raw: bytes | None = None) -> tuple[str, Any]:
    return v("Character", {"charset": charset, "value": raw if raw is not None else text.encode()})


def dt(**parts: int) -> tuple[str, Any]:
    full = dict.fromkeys(("year", "month", "day", "hour", "minute", "second", "millis"))
    full.update(parts)
    return v("DateTime", full)


def record(op: str, object_name: str | None, fields: Any, before: Any, after: Any, *,
           rid: int = 1, ts: int = 1696984408, pos: str = "72469@78", tags: dict | None = None,
           source: str = "MySQL", born: int | None = 1696984408, txid: str = "0") -> dict:
    datum = {
        "version": 0, "id": rid, "sourceTimestamp": ts, "sourcePosition": pos,
        "safeSourcePosition": pos, "sourceTxid": txid,
        "source": {"sourceType": source, "version": "8.0.28"}, "operation": op,
        "objectName": object_name, "processTimestamps": None,
        "tags": {"metaVersion": "1", "readerThroughoutTime": "1696984409001", **(tags or {})},
        "fields": None if fields is None else [{"name": n, "dataTypeNumber": c} for n, c in fields],
        "beforeImages": before, "afterImages": after,
    }
    if born is not None:
        datum["bornTimestamp"] = born
    return datum


def encode(datum: dict, legacy: bool = False) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, LEGACY if legacy else CURRENT, datum)
    return buf.getvalue()


def write(scenario: str, datums: list[bytes]) -> None:
    folder = OUT / scenario
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("input.*"):
        old.unlink()
    if len(datums) == 1:
        (folder / "input.bin").write_bytes(datums[0])
    else:
        (folder / "input.b64l").write_text(
            "".join(base64.b64encode(d).decode("ascii") + "\n" for d in datums))


PK = {"pk_uk_info": '{"PRIMARY":["id"]}'}
ORDERS = [("id", 8), ("customer", 253), ("amount", 246), ("created_at", 18), ("status", 254)]


def orders_image(oid: str, customer: str, amount: str, status: str) -> list:
    return [integer(oid), chars(customer), v("Decimal", {"value": amount, "precision": 10, "scale": 2}),
            dt(year=2023, month=10, day=11, hour=8, minute=33, second=28, millis=125000),
            chars(status)]


def main() -> None:
    # INSERT / UPDATE / DELETE on a keyed MySQL table (one datum each, binary files).
    write("insert", [encode(record("INSERT", "shop.orders", ORDERS, None,
                                   orders_image("1001", "Zhang San", "99.50", "NEW"), tags=PK))])
    write("update", [encode(record(
        "UPDATE", "shop.orders", ORDERS, orders_image("1001", "Zhang San", "99.50", "NEW"),
        orders_image("1001", "Zhang San", "120.00", "PAID"), rid=2, pos="72900@78", tags=PK))])
    write("delete", [encode(record("DELETE", "shop.orders", ORDERS,
                                   orders_image("1001", "Zhang San", "120.00", "PAID"), None,
                                   rid=3, pos="73311@78", tags=PK))])
    # DDL: objectName is the database, the statement is the afterImages string branch.
    write("ddl", [encode(record("DDL", "mydb", None, None,
                                "create table t1(a bigint primary key, b varchar(100))", rid=4))])
    # Keyless table (no pk_uk_info) and a table with only a unique key.
    log = [("ts", 7), ("message", 252)]
    write("keyless_and_unique_key", [
        encode(record("INSERT", "shop.audit_log", log, None,
                      [v("Timestamp", {"timestamp": 1696984408, "millis": 0}), chars("login")], rid=5)),
        encode(record("DELETE", "shop.audit_log", log,
                      [v("Timestamp", {"timestamp": 1696984408, "millis": 0}), chars("login")], None,
                      rid=6)),
        encode(record("UPDATE", "shop.tenants", [("tenant_id", 3), ("name", 253), ("plan", 253)],
                      [integer("7", 4), chars("acme"), chars("free")],
                      [integer("7", 4), chars("acme"), chars("pro")], rid=7,
                      tags={"pk_uk_info": '{"uk_tenant_name":["tenant_id","name"]}'})),
    ])
    # Every value-union branch, with the MySQL type codes DTS sends for the column.
    every = [
        ("id", 8), ("big_unsigned", 8), ("tiny", 1), ("name_utf8", 253), ("name_latin1", 254),
        ("name_gbk", 253), ("bin_col", 254), ("price", 246), ("long_dec", 246), ("nan_dec", 246),
        ("ratio", 5), ("updated_ts", 17), ("born_date", 10), ("zero_date", 10), ("dt_col", 18),
        ("zero_dt", 12), ("t_neg", 19), ("t_long", 19), ("yr", 13), ("tstz", 18), ("tstz_named", 18),
        ("geo_wkb", 255), ("geo_wkt", 255), ("blob_col", 252), ("text_blob", 252), ("doc", 245),
        ("color", 247), ("empty_null", 253), ("empty_none", 253), ("plain_null", 253),
    ]
    values = [
        integer("42"),
        integer("18446744073709551615"),
        integer("-128", 1),
        chars("中文 ünïcödé"),
        chars("", "latin1", raw=b"caf\xe9 \x80 \x81"),
        chars("", "gbk", raw="数据".encode("gbk")),
        chars("", "binary", raw=b"\x00\xff\x10"),
        v("Decimal", {"value": "1234.50", "precision": 10, "scale": 2}),
        v("Decimal", {"value": "-123456789012345678901234567890.123456789012345678901234567890",
                      "precision": 65, "scale": 30}),
        v("Decimal", {"value": "NaN", "precision": 10, "scale": 2}),
        v("Float", {"value": 3.140000104904175, "precision": 0, "scale": 0}),
        v("Timestamp", {"timestamp": 1696984408, "millis": 123456}),
        dt(year=1999, month=12, day=31),
        dt(year=0, month=0, day=0),
        dt(year=2023, month=10, day=11, hour=8, minute=33, second=28, millis=500),
        dt(year=0, month=0, day=0, hour=0, minute=0, second=0),
        # DTS negates every part of a negative TIME (subscribe_example MysqlFieldConverter).
        dt(hour=-12, minute=-30, second=-5, millis=-250000),
        dt(hour=838, minute=59, second=59),
        dt(year=2024),
        v("TimestampWithTimeZone", {"value": {"year": 2023, "month": 10, "day": 11, "hour": 16,
                                              "minute": 33, "second": 28, "millis": 1000},
                                    "timezone": "+08:00"}),
        v("TimestampWithTimeZone", {"value": {"year": 2023, "month": 1, "day": 1, "hour": 0,
                                              "minute": 0, "second": 0, "millis": None},
                                    "timezone": "Asia/Shanghai"}),
        v("BinaryGeometry", {"type": "POINT", "value": bytes.fromhex(
            "0101000000000000000000f03f0000000000000040")}),
        v("TextGeometry", {"type": "POINT", "value": "POINT(1 2)"}),
        v("BinaryObject", {"type": "BLOB", "value": b"\x89PNG\r\n"}),
        chars("long text in a TEXT column"),
        v("TextObject", {"type": "JSON", "value": '{"a": 1.10, "b": [true, null]}'}),
        v("TextObject", {"type": "ENUM", "value": "red"}),
        v("EmptyObject", "NULL"),
        v("EmptyObject", "NONE"),
        None,
    ]
    write("every_value_branch", [encode(record("INSERT", "shop.all_types", every, None, values,
                                               rid=8, tags=PK))])
    # Value rules of Alibaba's own consumers (see the folder's SOURCE.md): MySQL TIME with every
    # part negated, fractions in microseconds for DateTime and Timestamp, BIT/YEAR, MySQL-only
    # charset names, a zone with an hour of one digit.
    rules = [("id", 8), ("t_minus_half_hour", 19), ("t_neg", 19), ("t_min", 19), ("t_frac", 19),
             ("t_over_100", 11), ("dt_micro", 18), ("ts_micro", 17), ("bits", 16), ("yr", 13),
             ("koi8r", 253), ("latin5", 253), ("macce", 253), ("tstz_gmt", 18)]
    rules_values = [
        integer("1"),
        dt(hour=0, minute=-30, second=0),
        dt(hour=-1, minute=-2, second=-3, millis=-4),
        dt(hour=-838, minute=-59, second=-59),
        dt(hour=0, minute=0, second=0, millis=1),
        dt(hour=100, minute=0, second=0),
        dt(year=2023, month=10, day=11, hour=8, minute=33, second=28, millis=1),
        v("Timestamp", {"timestamp": 1696984408, "millis": 5}),
        integer("5", 1),
        dt(year=1901),
        chars("", "koi8r", raw="Привет".encode("koi8_r")),
        chars("", "latin5", raw="Ğış".encode("iso8859-9")),
        chars("", "macce", raw="Łódź".encode("mac_latin2")),
        v("TimestampWithTimeZone", {"value": {"year": 2023, "month": 10, "day": 11, "hour": 8,
                                              "minute": 33, "second": 28, "millis": 120000},
                                    "timezone": "GMT+8:00"}),
    ]
    write("vendor_value_rules", [encode(record("INSERT", "shop.rules", rules, None, rules_values,
                                               rid=17, tags=PK))])
    # A producer from before bornTimestamp existed: the datum ends after afterImages.
    write("legacy_schema", [encode(record("INSERT", "shop.orders", ORDERS, None,
                                          orders_image("1002", "Li Si", "5.00", "NEW"), rid=9,
                                          tags=PK, born=None), legacy=True)])
    # PostgreSQL source: db.schema.table, a dot inside a name, OIDs for bool / jsonb / timestamptz.
    pg_fields = [("id", 20), ("flag", 16), ("payload", 3802), ("seen_at", 1114)]
    write("postgresql_names_and_types", [encode(record(
        "INSERT", "app\\u002Ev2.public.events", pg_fields, None,
        [integer("5"), v("TextObject", {"type": "BOOL", "value": "t"}),
         v("BinaryObject", {"type": "JSONB", "value": b'{"k": "v"}'}),
         dt(year=2023, month=10, day=11, hour=8, minute=33, second=28, millis=120)],
        rid=10, source="PostgreSQL", pos="0/16B3748", txid="731", tags=PK))])
    # Oracle source: DateTime fractions are nanoseconds.
    write("oracle_nanos", [encode(record(
        "INSERT", "ORCL.HR.EMP", [("EMP_ID", 2), ("HIRED", 93)], None,
        [v("Decimal", {"value": "7", "precision": 0, "scale": 0}),
         dt(year=2020, month=2, day=29, hour=23, minute=59, second=59, millis=123456789)],
        rid=11, source="Oracle", pos="2851012", txid="0a001b00c3020000",
        tags={"pk_uk_info": '{"PRIMARY":["EMP_ID"]}'}))])
    # Control records are counted and dropped; one change between them.
    write("transaction_and_heartbeat", [
        encode(record("BEGIN", None, None, None, None, rid=12)),
        encode(record("INSERT", "shop.orders", ORDERS, None,
                      orders_image("1003", "Wang Wu", "1.00", "NEW"), rid=13, tags=PK)),
        encode(record("COMMIT", None, None, None, None, rid=14)),
        encode(record("HEARTBEAT", None, None, None, None, rid=15)),
    ])
    # Bad input: truncated datum, garbage, trailing bytes; the good datum still decodes.
    good = encode(record("INSERT", "shop.orders", ORDERS, None,
                         orders_image("1004", "Zhao Liu", "2.00", "NEW"), rid=16, tags=PK))
    write("bad_input", [good[: len(good) // 2], b"\x00\x02garbage\xff\xff\xff", good + b"\x00\x00",
                        good])
    write("truncated", [good[:-9]])


if __name__ == "__main__":
    main()
