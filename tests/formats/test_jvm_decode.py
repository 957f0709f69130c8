"""The JVM fast path gives exactly the Python decoders' outcomes, and declines what it should.

Every message is decoded twice per test: ``decode_outcomes`` with the fast path and without it
(Python only, the reference); the two outcome tables must be equal, whole rows. (The normalize
job's own way through the same decoders, streamed and observed, is checked against the CLI's rows
by ``tests/normalize``.)
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any, cast

import pytest

from cdclake.decode_cli import is_binary_format, read_keys, read_messages
from cdclake.formats.base import FormatOptions
from spark_jobs.jvm_decode import FAST_FORMATS
from tests.formats.fixture_cases import all_cases

pytestmark = pytest.mark.slow

RAW_DDL = ("topic string, `partition` int, `offset` bigint, `timestamp` timestamp, key binary, "
           "value binary")
STAMP = dt.datetime(2024, 6, 1, 12, 5, 0, 123456)


def _both_paths(spark, records: list[tuple], formats: dict[str, Any]) -> tuple[list[dict], list[dict], int]:
    """(outcomes with the fast path, outcomes Python only, messages the fast path decoded)."""
    from pyspark.sql import functions as F

    from spark_jobs import jvm_decode
    from spark_jobs.decode_spark import decode_outcomes

    raw = spark.createDataFrame(records, RAW_DDL).repartition(2)

    def ordered(outcomes) -> list[dict]:
        rows = [r.asDict(recursive=True) for r in outcomes.collect()]
        return sorted(rows, key=lambda r: (r["msg_topic"], r["msg_offset"], r["record_index"] or 0,
                                           r["_kind"]))

    def collected(fast_path: bool) -> list[dict]:
        return ordered(decode_outcomes(raw, formats, fast_path=fast_path))

    assert jvm_decode.register(spark)
    with_fast = collected(True)
    fast = {t: (f.format_id, f.options.source_timezone, f.options.max_value_bytes)
            for t, f in formats.items() if jvm_decode.takes_topic(f.format_id, f.options)}
    taken = jvm_decode.with_fast_rows(raw.select("topic", "partition", "offset", "timestamp", "key",
                                                 "value"), fast).where(F.col("_fast").isNotNull()).count()
    return with_fast, collected(False), taken


def _topic_format(format_id: str, **options: Any) -> Any:
    from spark_jobs.decode_spark import TopicFormat

    return TopicFormat(format_id, FormatOptions(**options))


def test_every_fixture_decodes_the_same_on_both_paths(spark) -> None:
    # Every format's fixtures, so that the topics without a fast path (all Python) are decoded
    # beside the fast ones, as in the normalize job.
    records, formats = [], {}
    for case in all_cases():
        formats[case.id] = _topic_format(case.format_id, **case.options())
        keys = read_keys(case.keys_path) if case.keys_path else None
        for _line, message in read_messages(case.input_path, is_binary_format(case.format_id), keys,
                                            case.whole_file):
            records.append((case.id, 0, message.offset, STAMP, message.key, message.value))
    with_fast, python_only, taken = _both_paths(spark, records, formats)
    assert with_fast == python_only
    # The fast path is not declining everything (the fixtures are mostly edge cases, which it
    # leaves to Python: keys from the Kafka key, DDL, TiCDC batches, camel-cased fields...).
    assert len(records) > 250
    assert taken > 90


def _maxwell(**fields: Any) -> dict[str, Any]:
    doc = {"database": "shop", "table": "orders", "type": "insert", "ts": 1700000000, "xid": 77,
           "position": "mysql-bin.000003:4567", "primary_key_columns": ["id"],
           "data": {"id": 1, "amount": "9.50"}}
    doc.update(fields)
    return doc


def _text(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode()


# (label, value bytes, taken by the fast path?)
MESSAGES: list[tuple[str, bytes, bool]] = [
    ("insert", _text(_maxwell()), True),
    ("decimals and exponents", b'{"database":"d","table":"t","type":"insert","ts":1700000000,'
     b'"primary_key_columns":["id"],"data":{"id":18446744073709551616,"a":4.2341,"b":1E+2,'
     b'"c":1.50e-5,"d":0.0,"e":0e5,"f":-12.500,"g":1e400000,"h":' + b"9" * 300 + b'.5}}', True),
    ("negative zero decimal", _text(_maxwell(data={"id": 1, "z": -0.0})), False),
    ("negative zero integer", b'{"database":"d","table":"t","type":"insert","ts":1700000000,'
     b'"primary_key_columns":["id"],"data":{"id":-0}}', True),
    ("nested JSON column, unicode and escapes", _text(_maxwell(data={
        "id": 2, "doc": {"b": [1, 2.50, None, True], "a": "x\"y\\z\n\t\u0001\u007f\u00e9\U0001f600",
                         "n": {}}, "flag": False, "txt": "caf\u00e9 \U0001f600"})), True),
    ("repeated column name", b'{"database":"d","table":"t","type":"insert","ts":1700000000,'
     b'"primary_key_columns":["id"],"data":{"id":1,"a":"first","b":2,"a":"last"}}', True),
    ("update with old", _text(_maxwell(type="update", data={"id": 1, "amount": "10.00"},
                                       old={"amount": "9.50", "gone": "x"})), True),
    ("update, old null", _text(_maxwell(type="update", old=None)), True),
    ("update, old not an object", _text(_maxwell(type="update", old=[1])), False),
    ("delete", _text(_maxwell(type="delete")), True),
    ("bootstrap-insert", _text(_maxwell(type="bootstrap-insert")), True),
    ("upper-case type", _text(_maxwell(type="DELETE")), True),
    ("mixed-case type", _text(_maxwell(type="Insert")), False),
    ("milliseconds ts", _text(_maxwell(ts=1700000000123)), True),
    ("negative ts", _text(_maxwell(ts=-86400)), True),
    ("ts out of range", _text(_maxwell(ts=999999999999999)), False),
    ("ts as text", _text(_maxwell(ts="1700000000")), False),
    ("ts missing", _text({k: v for k, v in _maxwell().items() if k != "ts"}), False),
    ("xid as text, position a number", _text(_maxwell(xid="abc", position=12)), True),
    ("xid an object", _text(_maxwell(xid={"a": 1})), False),
    ("database missing", _text({k: v for k, v in _maxwell().items() if k != "database"}), True),
    ("table empty", _text(_maxwell(table="")), False),
    ("data empty", _text(_maxwell(data={})), False),
    ("key column not in the row", _text(_maxwell(primary_key_columns=["ID"])), False),
    ("key from primary_key only", _text({k: v for k, v in _maxwell(primary_key=[1]).items()
                                         if k != "primary_key_columns"}), False),
    ("key value null", _text(_maxwell(data={"id": None, "amount": "1"})), True),
    ("DDL", _text(_maxwell(type="table-create", sql="create table t (id int)")), False),
    ("heartbeat", _text(_maxwell(type="heartbeat")), False),
    ("two documents (TiCDC batch)", _text(_maxwell()) + _text(_maxwell(type="delete")), False),
    ("byte-order mark", b"\xef\xbb\xbf" + _text(_maxwell()), False),
    ("overlong UTF-8", _text(_maxwell()).replace(b'"9.50"', b'"\xc0\xaf"'), False),
    ("encoded surrogate", _text(_maxwell()).replace(b'"9.50"', b'"\xed\xa0\x80"'), False),
    ("lone surrogate escape", _text(_maxwell()).replace(b'"9.50"', b'"\\ud800"'), False),
    ("lone surrogate escape in a name", _text(_maxwell()).replace(b'"amount"', b'"\\udc00"'), False),
    ("paired surrogate escapes", _text(_maxwell()).replace(b'"9.50"', b'"\\ud83d\\ude00"'), True),
    ("NaN", _text(_maxwell()).replace(b'"9.50"', b"NaN"), False),
    # The JSON reader's own edges (JsonReader.java): what it takes must read as Python reads it.
    ("whitespace of every kind", b" \r\n" + json.dumps(_maxwell(), indent="\t").encode() + b"\n\t ", True),
    ("escaped slash, upper-case hex, escapes", _text(_maxwell()).replace(
        b'"9.50"', b'"a\\/b\\u00E9\\u00e9\\"\\\\\\b\\f\\n\\r\\t\\u0000"'), True),
    ("escaped column name", _text(_maxwell()).replace(b'"amount"', b'"am\\u006funt"'), True),
    ("escaped name repeating another", _text(_maxwell(data={"id": 1, "a": "x", "b": "y"}))
     .replace(b'"b"', b'"\\u0061"'), True),
    ("number of 1,000 characters", _text(_maxwell()).replace(b'"9.50"', b"9" * 1000), True),
    ("number of 1,001 characters (left to Python)", _text(_maxwell()).replace(b'"9.50"', b"9" * 1001), False),
    ("nested 100 deep", _text(_maxwell()).replace(b'"9.50"', b"[" * 100 + b"1" + b"]" * 100), True),
    ("nested 600 deep (left to Python)", _text(_maxwell()).replace(b'"9.50"', b"[" * 600 + b"]" * 600),
     False),
    ("leading zero", _text(_maxwell()).replace(b'"9.50"', b"09.5"), False),
    ("number ending in a point", _text(_maxwell()).replace(b'"9.50"', b"9."), False),
    ("exponent without digits", _text(_maxwell()).replace(b'"9.50"', b"9e+"), False),
    ("plus sign", _text(_maxwell()).replace(b'"9.50"', b"+9"), False),
    ("minus alone", _text(_maxwell()).replace(b'"9.50"', b"-"), False),
    ("raw control character in a string", _text(_maxwell()).replace(b'"9.50"', b'"9\x01"'), False),
    ("raw tab in a string", _text(_maxwell()).replace(b'"9.50"', b'"9\t5"'), False),
    ("unknown escape", _text(_maxwell()).replace(b'"9.50"', b'"9\\x"'), False),
    ("short unicode escape", _text(_maxwell()).replace(b'"9.50"', b'"\\u12"'), False),
    ("cut literal", _text(_maxwell()).replace(b'"9.50"', b"tru"), False),
    ("literal with a tail", _text(_maxwell()).replace(b'"9.50"', b"nulls"), False),
    ("trailing comma", _text(_maxwell()).replace(b'"9.50"}', b'"9.50",}'), False),
    ("missing colon", _text(_maxwell()).replace(b'"amount": ', b'"amount" '), False),
    ("unterminated string", _text(_maxwell())[:-20], False),
    ("single quotes", _text(_maxwell()).replace(b'"9.50"', b"'9.50'"), False),
    ("non-ASCII text", _text(_maxwell()).replace(b'"9.50"', '"caf\u00e9 \u4e2d\U0001f600"'.encode()), True),
    ("invalid JSON", b'{"database":"d",', False),
    ("not an object", b"[1,2]", False),
    ("empty value", b"", False),
]


def _oms(record_type: str = "INSERT", **meta: Any) -> dict[str, Any]:
    all_meta = {"checkpoint": "1609344671", "record_primary_key": "id", "record_primary_value": "3",
                "dbType": "OB_MYSQL", "table_name": "orders", "db": "tenant.shop",
                "timestamp": "1609344671", "storeDataSequence": 160934467100000001}
    all_meta.update(meta)
    return {"allMetaData": all_meta, "recordType": record_type,
            "prevStruct": {"id": 3, "amount": 9.5, "note": "old"},
            "postStruct": {"id": 3, "amount": 10, "note": None}}


def _oms_with(doc: dict[str, Any], **fields: Any) -> bytes:
    return _text({**doc, **fields})


OMS_MESSAGES: list[tuple[str, bytes, bool]] = [
    ("insert", _text(_oms()), True),
    ("update", _text(_oms("UPDATE")), True),
    ("delete", _text(_oms("DELETE")), True),
    ("full load (ROW)", _text(_oms("ROW")), True),
    ("update without prevStruct", _oms_with(_oms("UPDATE"), prevStruct=None), True),
    ("delete without prevStruct", _oms_with(_oms("DELETE"), prevStruct=None), False),
    ("insert without postStruct", _oms_with(_oms(), postStruct=None), False),
    ("key not in the image: from record_primary_value",
     _text(_oms(record_primary_key="k1\u0001k2", record_primary_value="3\u0001129")), True),
    ("key named with the six characters \\u0001",
     _text(_oms(record_primary_key="k1\\u0001k2", record_primary_value="a\\u0001b")), True),
    ("keyless", _text(_oms(record_primary_key="", record_primary_value="")), True),
    ("keyless, a value given", _text(_oms(record_primary_key=None, record_primary_value="7")), True),
    ("key named, no values", _text(_oms(record_primary_key="k1", record_primary_value=None)), False),
    ("not OceanBase: db kept whole", _text(_oms(dbType="MYSQL")), True),
    ("lower-case OceanBase dbType", _text(_oms(dbType="ob_mysql")), True),
    ("timestamp with a fraction", _text(_oms(timestamp="1606233662.012345")), True),
    ("timestamp as a number", _text(_oms(timestamp=1606233662)), True),
    ("timestamp empty", _text(_oms(timestamp="")), False),
    ("timestamp with 7 fraction digits", _text(_oms(timestamp="1606233662.0123456")), False),
    ("sequence as text", _text(_oms(storeDataSequence="abc")), True),
    ("sequence empty", _text(_oms(storeDataSequence="")), True),
    ("sequence 'NULL'", _text(_oms(storeDataSequence="NULL")), True),
    ("sequence padded", _text(_oms(storeDataSequence=" 12")), False),
    ("transaction from transId", _text(_oms(uniqueId="", transId="tx-9")), True),
    ("checkpoint a number", _text(_oms(checkpoint=12345)), True),
    ("dbType a boolean", _text(_oms(dbType=True)), False),
    ("typed images (__light_type)", _oms_with(_oms(), postStruct={
        "id": 3, "__light_type": {"id": {"schemaType": "INT"}}}), False),
    ("table missing", _text(_oms(table_name=None)), False),
    ("heartbeat", _text({"allMetaData": {}, "recordType": "HEARTBEAT"}), False),
    ("DDL", _oms_with(_oms("DDL"), postStruct={"ddl": "create table t (id int)"}), False),
    ("lower-case recordType", _text(_oms("insert")), False),
    ("negative zero decimal", _oms_with(_oms(), postStruct={"id": 3, "z": -0.0}), False),
]
def _dataworks(op: str = "INSERT", before: dict[str, Any] | None = None,
               after: dict[str, Any] | None = None, columns: dict[str, Any] | None = None,
               primary_key: Any = ("id",), **payload: Any) -> dict[str, Any]:
    """A DataWorks message (``columns``: column -> DataWorks type)."""
    columns = columns or {"id": "LONG", "name": "STRING", "amount": "DOUBLE", "ok": "BOOLEAN",
                          "at": "DATE", "raw": "BYTES"}
    row = {"id": 7, "name": "caf\u00e9", "amount": 12.50, "ok": True, "at": 1620458077779,
           "raw": "AAEC/w=="}
    body = {"before": None if before is None else {"dataColumn": before},
            "after": None if after is None else {"dataColumn": after},
            "sequenceId": "1620457642589000001", "scn": None, "op": op,
            "timestamp": {"eventTime": 1620458077000, "systemTime": 1620458077779,
                          "checkpointTime": 1620458077000}, "ddl": None}
    if op == "INSERT" and after is None:
        body["after"] = {"dataColumn": row}
    body.update(payload)
    return {"schema": {"dataColumn": [{"name": n, "type": t} for n, t in columns.items()],
                       "primaryKey": None if primary_key is None else list(primary_key)
                       if isinstance(primary_key, tuple) else primary_key,
                       "source": {"dbType": "MySQL", "dbName": "shop", "tableName": "orders"}},
            "payload": body, "version": "0.0.1"}


_DW_ROW = {"id": 7, "name": "a", "amount": 1.5, "ok": False, "at": 0, "raw": ""}
DATAWORKS_MESSAGES: list[tuple[str, bytes, bool]] = [
    ("insert", _text(_dataworks()), True),
    ("update, both images", _text(_dataworks("UPDATE_AFTER", before=_DW_ROW,
                                             after={**_DW_ROW, "name": "b", "ok": True})), True),
    ("delete", _text(_dataworks("DELETE", before=_DW_ROW)), True),
    ("update, after only (a pair's half)", _text(_dataworks("UPDATE_AFTER", after=_DW_ROW)), True),
    ("update, before only (a pair's half)", _text(_dataworks("UPDATE_BEFOR", before=_DW_ROW)), True),
    ("update, corrected spelling", _text(_dataworks("UPDATE_BEFORE", before=_DW_ROW)), True),
    ("update, before half with both images", _text(_dataworks("UPDATE_BEFOR", before=_DW_ROW,
                                                              after=_DW_ROW)), True),
    ("update, before half without before", _text(_dataworks("UPDATE_BEFOR", after=_DW_ROW)), False),
    ("update half without sequenceId", _text(_dataworks("UPDATE_AFTER", after=_DW_ROW,
                                                        sequenceId=None)), True),
    ("update half, sequenceId a number", _text(_dataworks("UPDATE_AFTER", after=_DW_ROW,
                                                          sequenceId=27677)), True),
    ("update half, sequenceId 'null'", _text(_dataworks("UPDATE_BEFOR", before=_DW_ROW,
                                                        sequenceId="null")), True),
    ("update half, sequenceId a boolean", _text(_dataworks("UPDATE_AFTER", after=_DW_ROW,
                                                           sequenceId=True)), False),
    ("update half, no database", _text(_dataworks("UPDATE_AFTER", after=_DW_ROW) | {"schema": {
        **_dataworks()["schema"], "source": {"tableName": "t"}}}), True),
    ("update half, key missing", _text(_dataworks("UPDATE_BEFOR", before={"name": "x"})), False),
    ("insert without after", _text(_dataworks() | {"payload": {**_dataworks()["payload"],
                                                               "after": None}}), False),
    ("delete without before", _text(_dataworks("DELETE", after=_DW_ROW)), False),
    ("insert with a before image too", _text(_dataworks("INSERT", before={"id": 1, "zz": "x"},
                                                        after=_DW_ROW)), True),
    ("insert, a before value that warns", _text(_dataworks("INSERT", before={"id": "x"},
                                                           after=_DW_ROW)), False),
    ("lower-case op", _text(_dataworks("insert")), False),
    ("heartbeat", _text({"payload": {"op": "MHEARTBEAT"}}), False),
    ("transaction begin", _text(_dataworks("TRANSACTION_BEGIN")), False),
    ("DDL", _text(_dataworks("ALTER", ddl={"text": "alter table t add c int"})), False),
    ("truncate", _text(_dataworks("TRUNCATE")), False),
    ("keyless, RDS row id", _text(_dataworks(primary_key=None, after={
        "name": "n", "#alibaba_rds_row_id#": 15}, columns={"name": "STRING",
                                                          "#alibaba_rds_row_id#": "LONG"})), True),
    ("keyless, row id only in the before image of an insert", _text(_dataworks(
        primary_key=None, before={"rowid": "AAA"}, after={"name": "n"})), False),
    ("keyless, no row id", _text(_dataworks(primary_key=[], after={"name": "n"})), True),
    ("key as one string", _text(_dataworks(primary_key="id")), True),
    ("key an empty string", _text(_dataworks(primary_key="")), False),
    ("key not in the image", _text(_dataworks(primary_key=["ID"])), False),
    ("key of numbers", _text(_dataworks(primary_key=[1])), False),
    ("integers: text, bool, negative zero, int64 edge", _text(_dataworks(after={
        "id": "007", "a": True, "b": -0, "c": 999999999999999999, "d": -999999999999999999,
        "e": None}, columns={"id": "LONG", "a": "LONG", "b": "long", "c": "LONG", "d": "LONG",
                             "e": "LONG"})), True),
    ("integer beyond int64 (DECIMAL)", _text(_dataworks(after={"id": 18446744073709551615})), False),
    ("integer written as 1.0", b'{"schema":{"dataColumn":[{"name":"id","type":"LONG"}],'
     b'"primaryKey":["id"],"source":{"tableName":"t"}},"payload":{"op":"INSERT","after":'
     b'{"dataColumn":{"id":1.0}},"timestamp":{"eventTime":1}}}', False),
    ("integer not a number", _text(_dataworks(after={"id": "seven"})), False),
    ("doubles as written", b'{"schema":{"dataColumn":[{"name":"id","type":"LONG"},{"name":"d",'
     b'"type":"DOUBLE"}],"primaryKey":["id"],"source":{"tableName":"t"}},"payload":{"op":'
     b'"INSERT","after":{"dataColumn":{"id":1,"d":1.2510357E7,"e":-0.0,"f":1e400,"g":"NaN",'
     b'"h":[1,{"a":2.50}]}},"timestamp":{"eventTime":1}}}', True),
    ("booleans", _text(_dataworks(after={"id": 1, "a": "YES", "b": "off", "c": 0, "d": " t ",
                                         "e": False}, columns={
        "id": "LONG", "a": "BOOLEAN", "b": "BOOLEAN", "c": "BOOLEAN", "d": "BOOLEAN",
        "e": "BOOLEAN"})), True),
    ("boolean not one", _text(_dataworks(after={"id": 1, "ok": "maybe"})), False),
    ("dates: epoch ms, fraction, zero, year 9999", _text(_dataworks(after={
        "id": 1, "a": 1620458077500, "b": "1620458077001", "c": 0, "d": 253402300799999},
        columns={"id": "LONG", "a": "DATE", "b": "DATE", "c": "DATE", "d": "DATE"})), True),
    ("date before 1970", _text(_dataworks(after={"id": 1, "at": -1000})), False),
    ("date beyond 9999", _text(_dataworks(after={"id": 1, "at": 253402300800000})), False),
    ("date as ISO text", _text(_dataworks(after={"id": 1, "at": "2021-05-08 07:14:37"})), False),
    ("bytes: empty, padded, unpadded pair", _text(_dataworks(after={
        "id": 1, "a": "", "b": "QQ==", "c": "QUJD", "d": "QR=="}, columns={
        "id": "LONG", "a": "BYTES", "b": "BYTES", "c": "BYTES", "d": "BYTES"})), True),
    ("bytes not base64", _text(_dataworks(after={"id": 1, "raw": "[base64 string]"})), False),
    ("bytes missing padding", _text(_dataworks(after={"id": 1, "raw": "QQ"})), False),
    ("bytes as a number", _text(_dataworks(after={"id": 1, "raw": 1234})), False),
    ("unknown and missing types", _text(_dataworks(after={"id": 1, "x": 2.50, "y": {"k": [1]},
                                                          "z": "t"}, columns={
        "id": "LONG", "x": "DECIMAL", "y": ""})), True),
    ("type not text", _text(_dataworks(columns={"id": 5})), False),
    ("repeated column name", b'{"schema":{"dataColumn":[{"name":"id","type":"LONG"}],'
     b'"primaryKey":["id"],"source":{"tableName":"t"}},"payload":{"op":"INSERT","after":'
     b'{"dataColumn":{"id":1,"a":"x","a":"y"}},"timestamp":{"eventTime":1}}}', True),
    ("sequence a number", _text(_dataworks(sequenceId=27677)), True),
    ("sequence with leading zeros", _text(_dataworks(sequenceId="000123")), True),
    ("sequence as text", _text(_dataworks(sequenceId="a-1")), True),
    ("sequence NULL", _text(_dataworks(sequenceId="NULL")), True),
    ("sequence a decimal", _text(_dataworks(sequenceId=1.5)), False),
    ("sequence padded", _text(_dataworks(sequenceId=" 12")), False),
    ("scn a number", _text(_dataworks(scn=12345678)), True),
    ("scn 'null'", _text(_dataworks(scn="null")), True),
    ("scn an object", _text(_dataworks(scn={"a": 1})), False),
    ("no timestamp", _text(_dataworks(timestamp=None)), False),
    ("eventTime -1 (full load)", _text(_dataworks(timestamp={"eventTime": -1, "systemTime": 5})), False),
    ("systemTime -1", _text(_dataworks(timestamp={"eventTime": 1620458077000, "systemTime": -1})), True),
    ("systemTime missing", _text(_dataworks(timestamp={"eventTime": 1620458077000})), True),
    ("eventTime as text", _text(_dataworks(timestamp={"eventTime": "1620458077000"})), False),
    ("eventTime out of range", _text(_dataworks(timestamp={"eventTime": 999999999999999})), False),
    ("table empty", _text(_dataworks() | {"schema": {"source": {"tableName": ""}}}), False),
    ("database a number", _text(_dataworks() | {"schema": {
        **_dataworks()["schema"], "source": {"dbName": 5, "tableName": "t"}}}), False),
    ("schema and database names", _text(_dataworks() | {"schema": {
        **_dataworks()["schema"], "source": {"dbType": "Oracle", "dbName": "ORCL",
                                             "schemaName": "HR", "tableName": "EMP"}}}), True),
    ("image not an object", _text(_dataworks(after=None) | {"payload": {
        **_dataworks()["payload"], "after": {"dataColumn": [1]}}}), False),
]


def _debezium(op: str = "c", before: Any = None, after: Any = "row", **fields: Any) -> dict[str, Any]:
    """A schemaless Debezium MySQL change (``source`` fields overridden by ``source=...``)."""
    row = {"id": 1005, "name": "Sarah", "balance": "12345678901234567890.123456789",
           "visits": 18446744073709551615, "score": 1.2510357e7, "vip": True, "note": None}
    source = {"version": "2.5.0.Final", "connector": "mysql", "name": "dbserver1",
              "ts_ms": 1624614713000, "snapshot": "false", "db": "inventory", "table": "customers",
              "server_id": 223344, "gtid": "1c0d2e0f-1111-11ec-8000-0242ac110002:1017",
              "file": "mysql-bin.000004", "pos": 484, "row": 0, "thread": 12, "query": None}
    source.update(fields.pop("source", {}))
    doc = {"before": before, "after": row if after == "row" else after, "source": source, "op": op,
           "ts_ms": 1624614713201, "transaction": None}
    doc.update(fields)
    return doc


_PG_SOURCE = {"connector": "postgresql", "db": "postgres", "schema": "public", "table": "t",
              "ts_ms": 1700000000123, "ts_us": 1700000000123456, "ts_ns": 1700000000123456000,
              "lsn": 24023128, "txId": 555, "snapshot": "false", "file": None, "server_id": None}
_DBZ_ROW = {"id": 1, "v": "x"}
DEBEZIUM_MESSAGES: list[tuple[str, bytes, bool]] = [
    ("insert, no key", _text(_debezium()), True),
    ("insert, keyed", _text(_debezium()), True),
    ("update, keyed", _text(_debezium("u", before=_DBZ_ROW, after={**_DBZ_ROW, "v": "y"})), True),
    ("update, no before, keyed", _text(_debezium("u", after=_DBZ_ROW)), True),
    ("update, no before, no key", _text(_debezium("u", after=_DBZ_ROW)), False),
    ("delete, keyed", _text(_debezium("d", before=_DBZ_ROW, after=None)), True),
    ("delete, no before, keyed", _text(_debezium("d", before=None, after=None)), True),
    ("delete, no before, no key", _text(_debezium("d", before=None, after=None)), False),
    ("delete, empty after", _text(_debezium("d", before=_DBZ_ROW, after={})), True),
    ("snapshot read", _text(_debezium("r", source={"snapshot": "true"})), True),
    ("mysql create flagged snapshot", _text(_debezium("c", source={"snapshot": "last"})), True),
    ("mysql create, snapshot true", _text(_debezium("c", source={"snapshot": True})), True),
    ("upper-case op", _text(_debezium("U", before=_DBZ_ROW, after=_DBZ_ROW)), True),
    ("insert, empty before", _text(_debezium(before={})), True),
    ("insert, empty after", _text(_debezium(after={})), False),
    ("insert, null after", _text(_debezium(after=None)), False),
    ("key not in the image", _text(_debezium(after={"v": "x"})), True),
    ("key with a null value", _text(_debezium()), True),
    ("key as a bare number", _text(_debezium()), False),
    ("key with a schema", _text(_debezium()), True),
    ("key not JSON", _text(_debezium()), False),
    ("key an empty object", _text(_debezium()), True),
    ("Flink CDC key", _text(_debezium()), False),
    ("postgresql, ts_ns, ts_us, lsn, txId", _text(_debezium(source=_PG_SOURCE)), True),
    ("ts_ns a whole millisecond, ts_us finer", _text(_debezium(source={
        **_PG_SOURCE, "ts_ns": 1700000000123000000, "ts_us": 1700000000123456})), True),
    ("transaction block", _text(_debezium(transaction={"id": "tx:77", "total_order": 1})), True),
    ("transaction block without id", _text(_debezium(transaction={"total_order": 1})), True),
    ("Flink snapshot: empty file, pos 0",
     _text(_debezium(source={"file": "", "pos": 0, "gtid": None})), True),
    ("source ts_ms 0", _text(_debezium(source={"ts_ms": 0})), False),
    ("source ts_ms as text", _text(_debezium(source={"ts_ms": "1624614713000"})), False),
    ("source ts_ms beyond 9999", _text(_debezium(source={"ts_ms": 999999999999999})), False),
    ("envelope ts_ms missing", _text({k: v for k, v in _debezium().items() if k != "ts_ms"}), True),
    ("envelope ts_ms 0", _text(_debezium(ts_ms=0)), True),
    ("no source table", _text(_debezium(source={"table": None})), False),
    ("schema a number", _text(_debezium(source={"schema": 5})), False),
    ("gtid a boolean", _text(_debezium(source={"gtid": True})), False),
    ("connector in capitals", _text(_debezium(source={"connector": "MySQL"})), False),
    ("sqlserver connector", _text(_debezium(source={"connector": "sqlserver"})), False),
    ("mongodb connector", _text(_debezium(source={"connector": "mongodb"})), False),
    ("image as text (MongoDB)", _text(_debezium(after='{"_id": 1}')), False),
    ("placeholder value", _text(_debezium(after={"id": 1, "t": "__debezium_unavailable_value"})), False),
    ("array value", _text(_debezium(after={"id": 1, "a": [1, 2]})), False),
    ("variable-scale decimal", _text(_debezium(after={"id": 1, "d": {"scale": 2, "value": "AQ=="}})), False),
    ("cells", _text(_debezium(after={"id": {"value": 1, "set": True}})), False),
    ("decimals, exponents, negative zero as written", b'{"before":null,"after":{"id":1,"a":1.50,'
     b'"b":-0.0,"c":1E+400,"d":-0,"e":"caf\u00e9 \ud83d\ude00"},"source":{"connector":"mysql",'
     b'"db":"d","table":"t","ts_ms":1},"op":"c"}', True),
    ("repeated column name", b'{"before":null,"after":{"id":1,"a":"x","a":"y"},"source":'
     b'{"connector":"mysql","db":"d","table":"t","ts_ms":1},"op":"c"}', True),
    ("schema envelope", _text({"schema": {"type": "struct"}, "payload": _debezium()}), False),
    ("truncate", _text(_debezium("t", after=None)), False),
    ("message", _text(_debezium("m", after=None)), False),
    ("tombstone", b"null", False),
    ("transaction event", _text({"status": "BEGIN", "id": "x", "event_count": None}), False),
]
MESSAGE_KEYS = {"debezium_json": {
    "insert, keyed": b'{"id":1005}', "update, keyed": b'{"id":1}', "update, no before, keyed": b'{"id":1}',
    "delete, keyed": b'{"id":1}', "delete, no before, keyed": b'{"id":1}',
    "delete, empty after": b'{"id":1}', "key not in the image": b'{"id":7}',
    "key with a null value": b'{"id":null}', "key as a bare number": b"27",
    "key with a schema": b'{"schema":{"type":"struct"},"payload":{"id":1005}}', "key not JSON": b"\xff",
    "key an empty object": b"{}", "Flink CDC key": b'{"TableId":"inventory.customers","id":1005}',
    "upper-case op": b'{"id":1}', "postgresql, ts_ns, ts_us, lsn, txId": b'{"id":1005}',
}}


_CONNECT = "org.apache.kafka.connect.data."
_DBZ_TIME = "io.debezium.time."


def _col(kind: str, name: str | None = None, **spec: Any) -> dict[str, Any]:
    """A column's Connect schema: a type, a logical name, parameters (optional unless told)."""
    out: dict[str, Any] = {"type": kind, "optional": True}
    if name is not None:
        out["name"] = name
    out.update(spec)
    return out


def _decimal(scale: Any, precision: Any = "10") -> dict[str, Any]:
    params = {"scale": scale}
    if precision is not None:
        params["connect.decimal.precision"] = precision
    return _col("bytes", _CONNECT + "Decimal", version=1, parameters=params)


_TYPED_COLUMNS: dict[str, tuple[dict[str, Any], Any]] = {
    "id": (_col("int32", optional=False), 1),
    "name": (_col("string"), "Sarah"),
    "vip": (_col("boolean"), True),
    "tiny": (_col("int8"), -128),
    "small": (_col("int16"), 32767),
    "big": (_col("int64"), -9223372036854775808),
    "price": (_decimal("2"), "MDk="),  # 123.45
    "born": (_col("int32", _DBZ_TIME + "Date"), -25567),  # 1900-01-01
    "at": (_col("int64", _DBZ_TIME + "Timestamp"), 1624614713123),
    "at_us": (_col("int64", _DBZ_TIME + "MicroTimestamp"), 1624614713123456),
    "zoned": (_col("string", _DBZ_TIME + "ZonedTimestamp"), "2021-06-25T09:51:53.120+08:00"),
    "state": (_col("string", "io.debezium.data.Enum", parameters={"allowed": "a,b"}), "a"),
}


def _schema_envelope(payload: dict[str, Any], columns: list[tuple[str, dict[str, Any]]],
                     connector: str = "mysql") -> dict[str, Any]:
    """The {schema, payload} envelope of Debezium's JsonConverter (schemas.enable=true)."""
    row = {"type": "struct", "optional": True, "name": "dbserver1.inventory.customers.Value",
           "fields": [{**spec, "field": name} for name, spec in columns]}
    source = {"type": "struct", "optional": False, "name": f"io.debezium.connector.{connector}.Source",
              "fields": [{"type": "string", "optional": False, "field": "connector"}]}
    fields = [{**row, "field": "before"}, {**row, "field": "after"}, {**source, "field": "source"},
              {"type": "string", "optional": False, "field": "op"},
              {"type": "int64", "optional": True, "field": "ts_ms"}]
    schema = {"type": "struct", "optional": False, "name": "dbserver1.inventory.customers.Envelope",
              "version": 1, "fields": fields}
    return {"schema": schema, "payload": payload}


def _typed_dbz(op: str = "c", columns: dict[str, tuple[dict[str, Any], Any]] | None = None,
               before: Any = None, pg: bool = False, **fields: Any) -> bytes:
    """A Debezium change with schemas: ``columns`` name -> (schema, value) of the after image."""
    columns = _TYPED_COLUMNS if columns is None else columns
    row = {name: value for name, (_spec, value) in columns.items()}
    after = fields.pop("after", None if op == "d" else row)
    if op == "d" and before is None:
        before = row
    kwargs: dict[str, Any] = {"source": _PG_SOURCE} if pg else {}
    payload = _debezium(op, before=before, after=after, **kwargs, **fields)
    doc = _schema_envelope(payload, [(name, spec) for name, (spec, _value) in columns.items()],
                           "postgresql" if pg else "mysql")
    return _text(doc)


def _one(spec: dict[str, Any], value: Any) -> bytes:
    """A typed insert of the key column and one more column."""
    return _typed_dbz(columns={"id": _TYPED_COLUMNS["id"], "x": (spec, value)})


def _envelope_with(change: Callable[[dict[str, Any]], None]) -> bytes:
    doc = json.loads(_typed_dbz())
    change(doc)
    return _text(doc)


_KEY_SCHEMA = {"type": "struct", "optional": False, "name": "dbserver1.inventory.customers.Key",
               "fields": [{"type": "int32", "optional": False, "field": "id"}]}
_B64_MAX = "f/////////////////////8="  # 2^95 - 1 in 12 bytes
TYPED_DBZ_MESSAGES: list[tuple[str, bytes, bool]] = [
    ("schemas: insert of common types, no key", _typed_dbz(), True),
    ("schemas: insert, key envelope", _typed_dbz(), True),
    ("schemas: insert, plain JSON key", _typed_dbz(), True),
    ("schemas: update with before, key envelope", _typed_dbz("u", before={"id": 1, "name": "Old"}), True),
    ("schemas: update, no before, key envelope", _typed_dbz("u"), True),
    ("schemas: update, no before, no key", _typed_dbz("u"), False),
    ("schemas: delete, key envelope", _typed_dbz("d"), True),
    ("schemas: snapshot read, postgresql", _typed_dbz("r", pg=True), True),
    ("schemas: postgresql update", _typed_dbz("u", pg=True, before={"id": 1}), True),
    ("schemas: nulls in optional fields", _typed_dbz(columns={
        name: (spec, None) if name != "id" else (spec, value)
        for name, (spec, value) in _TYPED_COLUMNS.items()}),
     True),
    ("schemas: a required field null", _typed_dbz(columns={
        "id": _TYPED_COLUMNS["id"], "r": (_col("string", optional=False), None)}), True),
    ("schemas: image column without a schema", _typed_dbz(after={"id": 1, "name": "x", "free": 5}), True),
    ("schemas: schema column missing from the image", _typed_dbz(after={"id": 1}), True),
    ("int8 edges", _typed_dbz(columns={"id": _TYPED_COLUMNS["id"], "a": (_col("int8"), 127),
                                       "b": (_col("int8"), -128), "c": (_col("int8"), -0)}), True),
    ("int8 128", _one(_col("int8"), 128), False),
    ("int16 -32769", _one(_col("int16"), -32769), False),
    ("int32 edges", _typed_dbz(columns={"id": (_col("int32"), 2147483647),
                                        "b": (_col("int32"), -2147483648)}), True),
    ("int32 2147483648", _one(_col("int32"), 2147483648), False),
    ("int64 edges", _typed_dbz(columns={"id": (_col("int64"), 9223372036854775807),
                                        "b": (_col("int64"), -9223372036854775808)}), True),
    ("int64 9223372036854775808", _one(_col("int64"), 9223372036854775808), False),
    ("int as text", _one(_col("int32"), "12"), False),
    ("int written 1.0", _one(_col("int32"), 1.0), False),
    ("int a boolean", _one(_col("int8"), True), False),
    ("boolean false, string empty", _typed_dbz(columns={
        "id": _TYPED_COLUMNS["id"], "b": (_col("boolean"), False), "s": (_col("string"), "")}), True),
    ("boolean as 1", _one(_col("boolean"), 1), False),
    ("string a number", _one(_col("string"), 5), False),
    ("float64 text as sent", _typed_dbz(columns={
        "id": _TYPED_COLUMNS["id"], "f": (_col("double"), 1.2510357e7), "g": (_col("float32"), 0.1),
        "h": (_col("float64"), -0.0)}), True),
    ("decimal scale 0, negative", _one(_decimal("0"), "/w=="), True),  # -1
    ("decimal negative scale", _one(_decimal("-2", "5"), "MDk="), True),  # 1234500
    ("decimal zero at scale 3", _one(_decimal("3"), "AA=="), True),
    ("decimal zero at negative scale", _one(_decimal(-3), "AA=="), True),
    ("decimal large scale, large value", _one(_decimal("30", "38"), _B64_MAX), True),
    ("decimal negative value, no precision", _one(_decimal("4", None), "gA=="), True),  # -0.0128
    ("decimal scale a number", _one(_decimal(2, 5), "AQ=="), True),
    ("decimal scale not an integer", _one(_decimal("x"), "AQ=="), False),
    ("decimal bytes empty", _one(_decimal("2"), ""), False),
    ("decimal bytes not base64", _one(_decimal("2"), "A!=="), False),
    ("decimal bytes unpadded", _one(_decimal("2"), "AQ"), False),
    ("decimal as a number", _one(_decimal("2"), 1.25), False),
    ("variable-scale decimal", _one(_col("struct", "io.debezium.data.VariableScaleDecimal", fields=[]),
                                    {"scale": 2, "value": "AQ=="}), False),
    ("date 1969-12-31 and far future", _typed_dbz(columns={
        "id": _TYPED_COLUMNS["id"], "d": (_col("int32", _DBZ_TIME + "Date"), -1),
        "e": (_col("int32", _CONNECT + "Date"), 2932896),
        "f": (_col("int32", _DBZ_TIME + "Date"), -719162)}), True),
    ("date beyond 9999", _one(_col("int32", _DBZ_TIME + "Date"), 2932897), False),
    ("date as text", _one(_col("int32", _DBZ_TIME + "Date"), "2021-01-01"), False),
    ("timestamps with fractions", _typed_dbz(columns={
        "id": _TYPED_COLUMNS["id"], "a": (_col("int64", _DBZ_TIME + "Timestamp"), -1),
        "b": (_col("int64", _DBZ_TIME + "MicroTimestamp"), 1624614713000010),
        "c": (_col("int64", _CONNECT + "Timestamp", version=1), 1624614713100),
        "d": (_col("int64", _DBZ_TIME + "NanoTimestamp"), 1624614713123456789),
        "e": (_col("int64", _DBZ_TIME + "MicroTimestamp"), -62135596800000000)}), True),
    ("timestamp PostgreSQL infinity", _one(_col("int64", _DBZ_TIME + "MicroTimestamp"),
                                           9223372036825200000), False),
    ("times of day", _typed_dbz(columns={
        "id": _TYPED_COLUMNS["id"], "a": (_col("int32", _DBZ_TIME + "Time"), 3723004),
        "b": (_col("int64", _DBZ_TIME + "MicroTime"), -3723000001),
        "c": (_col("int64", _DBZ_TIME + "MicroTime"), 3600000000 * 150)}), True),
    ("zoned timestamps", _typed_dbz(columns={
        "id": _TYPED_COLUMNS["id"],
        "a": (_col("string", _DBZ_TIME + "ZonedTimestamp"), "2021-01-01T00:30:00Z"),
        "b": (_col("string", _DBZ_TIME + "ZonedTimestamp"), "2021-01-01 00:30:00.000100-0530"),
        "c": (_col("string", _DBZ_TIME + "ZonedTimestamp"), "0001-01-01T01:00:00+01:00")}), True),
    ("zoned timestamp without a zone", _one(_col("string", _DBZ_TIME + "ZonedTimestamp"),
                                            "2021-01-01T00:30:00"), False),
    ("zoned timestamp before year 1", _one(_col("string", _DBZ_TIME + "ZonedTimestamp"),
                                           "0001-01-01T00:30:00+01:00"), False),
    ("zoned timestamp, no such day", _one(_col("string", _DBZ_TIME + "ZonedTimestamp"),
                                          "2021-02-30T00:30:00Z"), False),
    ("placeholder in a typed column", _one(_col("string"), "__debezium_unavailable_value"), False),
    ("placeholder in a decimal column", _one(_decimal("2"), "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="),
     False),
    ("bytes column", _one(_col("bytes"), "AQID"), False),
    ("Json column", _one(_col("string", "io.debezium.data.Json"), '{"a":1}'), False),
    ("Geometry column", _one(_col("struct", "io.debezium.data.geometry.Point", fields=[]), {"x": 1}), False),
    ("struct column", _one(_col("struct", fields=[]), {"a": 1}), False),
    ("array column", _one(_col("array", items={"type": "int32"}), [1, 2]), False),
    ("map column", _one(_col("map", keySchema={"type": "string"}, valueSchema={"type": "string"}),
                        {"a": "b"}), False),
    ("Year column", _one(_col("int32", _DBZ_TIME + "Year"), 2021), False),
    ("logical name on another type", _one(_col("string", _DBZ_TIME + "Date"), "18000"), False),
    ("column type unknown", _one(_col("INT32"), 1), False),
    ("column name a number", _one({"type": "int32", "name": 5}, 1), False),
    ("column schema repeated", _envelope_with(lambda d: d["schema"]["fields"][1]["fields"].append(
        {"type": "string", "field": "id"})), False),
    ("envelope schema without op", _envelope_with(lambda d: d["schema"].update(
        fields=d["schema"]["fields"][:3])), False),
    ("envelope schema without after", _envelope_with(lambda d: d["schema"].update(
        fields=d["schema"]["fields"][2:])), False),
    ("envelope schema fields not an array", _envelope_with(lambda d: d["schema"].update(fields={})), False),
    ("schema null: the payload read schemaless", _envelope_with(lambda d: d.update(schema=None)), True),
    ("payload only", _envelope_with(lambda d: d.pop("schema")), True),
    ("envelope with another field", _envelope_with(lambda d: d.update(extra=1)), False),
    ("schema/payload mismatch: int column holds text", _typed_dbz(
        after={**{n: v for n, (_s, v) in _TYPED_COLUMNS.items()}, "tiny": "x"}), False),
    ("schema/payload mismatch: string column holds an object", _typed_dbz(
        after={**{n: v for n, (_s, v) in _TYPED_COLUMNS.items()}, "name": {"a": 1}}), False),
    ("schemas: sqlserver connector", _typed_dbz(source={"connector": "sqlserver"}), False),
    ("schemas: truncate", _typed_dbz("t", after=None), False),
    ("schemas: tombstone", b'{"schema":null,"payload":null}', False),
    ("schemas: heartbeat", _text({"schema": {
        "type": "struct", "name": "io.debezium.connector.common.Heartbeat", "fields": []},
        "payload": {"ts_ms": 1700000000000}}), False),
    ("schemas: transaction event", _text({"schema": {"type": "struct", "fields": []}, "payload": {
        "status": "END", "id": "571", "event_count": 2, "data_collections": []}}), False),
    ("schemas: key envelope with a decimal key", _typed_dbz(columns={
        "id": (_decimal("2"), "MDk="), "name": _TYPED_COLUMNS["name"]}), True),
    ("schemas: key envelope with no key schema fields", _typed_dbz(), True),
    ("schemas: key envelope of a bare number", _typed_dbz(), False),
    ("schemas: key envelope, payload null", _typed_dbz(), True),
    ("schemas: key envelope, int key out of range", _typed_dbz(), False),
    ("schemas: key envelope with a Flink table id", _typed_dbz(), False),
]
MESSAGE_KEYS["debezium_json"].update({
    "schemas: insert, key envelope": _text({"schema": _KEY_SCHEMA, "payload": {"id": 1}}),
    "schemas: insert, plain JSON key": b'{"id":1}',
    "schemas: update with before, key envelope": _text({"schema": _KEY_SCHEMA, "payload": {"id": 1}}),
    "schemas: update, no before, key envelope": _text({"schema": _KEY_SCHEMA, "payload": {"id": 1}}),
    "schemas: delete, key envelope": _text({"schema": _KEY_SCHEMA, "payload": {"id": 1}}),
    "schemas: snapshot read, postgresql": _text({"schema": _KEY_SCHEMA, "payload": {"id": 1}}),
    "schemas: postgresql update": _text({"schema": _KEY_SCHEMA, "payload": {"id": 1}}),
    "schemas: key envelope with a decimal key": _text({"schema": {"type": "struct", "fields": [
        {**_decimal("2"), "field": "id"}]}, "payload": {"id": "MDk="}}),
    "schemas: key envelope with no key schema fields": _text({"schema": {"type": "struct"},
                                                              "payload": {"id": 1}}),
    "schemas: key envelope of a bare number": _text({"schema": {"type": "int32"}, "payload": 1}),
    "schemas: key envelope, payload null": b'{"schema":null,"payload":null}',
    "schemas: key envelope, int key out of range": _text({"schema": {"type": "struct", "fields": [
        {"type": "int8", "field": "id"}]}, "payload": {"id": 1000}}),
    "schemas: key envelope with a Flink table id": _text({"schema": None, "payload": {
        "TableId": "inventory.customers", "id": 1}}),
})


def _canal(kind: str = "INSERT", types: dict[str, str] | None = None,
           rows: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    """A Canal flat message of one typed row (``types``: column -> mysqlType)."""
    types = types or {"id": "int(11)", "v": "varchar(20)"}
    doc = {"data": rows or [{"id": "1", "v": "a"}], "database": "shop", "es": 1700000000000,
           "id": 3, "isDdl": False, "mysqlType": types, "old": None, "pkNames": ["id"], "sql": "",
           "sqlType": dict.fromkeys(types, 12), "table": "orders", "ts": 1700000000421,
           "type": kind}
    doc.update(fields)
    return doc


def _typed(mysql_type: str, value: Any) -> bytes:
    """A Canal insert whose column ``c`` is ``mysql_type`` holding ``value``."""
    return _text(_canal(types={"id": "int(11)", "c": mysql_type}, rows=[{"id": "1", "c": value}]))


CANAL_MESSAGES: list[tuple[str, bytes, bool]] = [
    ("insert", _text(_canal()), True),
    ("two rows", _text(_canal(rows=[{"id": "1", "v": "a"}, {"id": "2", "v": None}])), True),
    ("update, old partial", _text(_canal("UPDATE", old=[{"v": "b"}])), True),
    ("update, two rows, one old (Canal's leading unchanged row)",
     _text(_canal("UPDATE", rows=[{"id": "1", "v": "a"}, {"id": "2", "v": "c"}], old=[{"v": "b"}])), False),
    ("update, old names a column data lacks", _text(_canal("UPDATE", old=[{"w": "b"}])), False),
    ("delete", _text(_canal("DELETE")), True),
    ("INIT", _text(_canal("INIT")), True),
    ("keyless insert", _text(_canal(pkNames=None)), True),
    ("keyless update without old", _text(_canal("UPDATE", pkNames=[])), False),
    ("key spelled otherwise", _text(_canal(pkNames=["ID"])), False),
    ("es missing", _text({k: v for k, v in _canal().items() if k != "es"}), False),
    ("es in seconds (Tencent CKafka)", _text(_canal(es=1700000000)), True),
    ("es in seconds as text", _text(_canal(es="1700000000")), True),
    ("es with a leading zero (milliseconds)", _text(_canal(es="01700000000")), True),
    ("es of 12 digits (milliseconds)", _text(_canal(es=170000000000)), True),
    ("ts 0 (TiCDC before v6.1)", _text(_canal(ts=0)), True),
    ("gtid", _text(_canal(gtid="3E11FA47-71CA-11E1-9E33-C80AA9429562:23")), True),
    ("TiCDC extension", _text(_canal(_tidb={"commitTs": 429918007904436226})), False),
    ("DDL", _text(_canal("ALTER", sql="alter table t add c int", data=None)), False),
    ("lower-case type", _text(_canal("insert")), False),
    ("column typed by sqlType alone", _text(_canal(sqlType={"id": 4, "v": 12, "w": 4})), False),
    ("untyped text column", _text(_canal(mysqlType={"id": "int"}, sqlType={"id": 4})), True),
    ("untyped number column", _text(_canal(mysqlType={"id": "int"}, sqlType={"id": 4},
                                           data=[{"id": "1", "v": 5}])), False),
    ("int with leading zeros and sign", _typed("bigint(20)", "-007"), True),
    ("int beyond int64", _typed("bigint(20)", "9223372036854775808"), False),
    ("unsigned bigint", _typed("bigint(20) unsigned", "1"), False),
    ("int as a JSON number", _typed("int", 5), True),
    ("int not a number", _typed("int", "x"), False),
    ("decimal", _typed("decimal(10,3)", "007.500"), True),
    ("decimal negative zero", _typed("decimal(10,2)", "-0.00"), True),
    ("decimal with exponent", _typed("decimal(10,2)", "1E+2"), False),
    ("double with exponent", _typed("double", "1.2510357E7"), True),
    ("double negative zero", _typed("double", "-0.0"), False),
    ("double NaN", _typed("double", "NaN"), False),
    ("float", _typed("float", "10357.0"), True),
    ("bit(1)", _typed("bit(1)", "1"), True),
    ("bit(1) not a boolean", _typed("bit(1)", "2"), False),
    ("bit(8)", _typed("bit(8)", "65"), False),
    ("date", _typed("date", "2024-02-29"), True),
    ("date invalid", _typed("date", "2023-02-29"), False),
    ("zero date", _typed("date", "0000-00-00"), False),
    ("datetime with fraction", _typed("datetime(6)", "2023-11-15 06:13:20.000100"), True),
    ("datetime whole seconds as fraction zeros", _typed("datetime(3)", "2023-11-15 06:13:20.000"), True),
    ("datetime invalid", _typed("datetime", "2023-11-31 06:13:20"), False),
    ("datetime with T and 9 fraction digits", _typed("datetime(6)", "2023-11-15T06:13:20.123456789"), True),
    ("datetime with 10 fraction digits", _typed("datetime(6)", "2023-11-15 06:13:20.1234567890"), False),
    ("datetime with a bare point", _typed("datetime", "2023-11-15 06:13:20."), False),
    ("datetime with a one-digit month", _typed("datetime", "2023-1-15 06:13:20"), False),
    ("datetime at hour 24", _typed("datetime", "2023-11-15 24:00:00"), False),
    ("datetime with Arabic-Indic digits", _typed("datetime", "\u0662023-11-15 06:13:20"), False),
    ("zero datetime", _typed("datetime", "0000-00-00 00:00:00"), False),
    ("timestamp wall clock (UTC topic)", _typed("timestamp(3)", "2023-11-15 06:13:20.123"), True),
    ("timestamp epoch seconds", _typed("timestamp", "1624614713.201"), True),
    ("timestamp with an offset", _typed("timestamp", "2021-05-17 07:22:42 +00:00"), False),
    ("time", _typed("time", "12:00:00"), False),
    ("blob as ISO-8859-1", _typed("blob", "\u00ff\u00d8\u0000A"), True),
    ("blob beyond ISO-8859-1", _typed("blob", "\u0100"), False),
    ("json", _typed("json", '{"b": [1, 2.50, null], "a": "\u00e9"}'), True),
    ("json repeating a name", _typed("json", '{"a": 1, "a": 2}'), False),
    ("json invalid", _typed("json", "{x"), False),
    ("json with escapes and whitespace",
     _typed("json", ' {\n "a\\u0062" : "\\ud83d\\ude00\\/",\t"c": [ ] } '), True),
    ("json repeating an escaped name", _typed("json", '{"a": 1, "\\u0061": 2}'), False),
    ("json scalar", _typed("json", "12.50"), True),
    ("enum", _typed("enum('a','b')", "1"), False),
    ("text with a character set", _typed("varchar(10) character set utf8mb4", "x"), False),
    ("varchar", _typed("VARCHAR(255)", "caf\u00e9 \U0001f600"), True),
]

DRS_MESSAGES: list[tuple[str, bytes, bool]] = [
    ("insert", _text(_canal(types={"id": "int", "b": "varbinary"},
                            rows=[{"id": "1", "b": "[106, 103, -1, 255, 0]"}])), True),
    ("empty byte list", _text(_canal(types={"id": "int", "b": "blob"}, rows=[{"id": "1", "b": "[]"}])), True),
    ("byte list with a byte out of range", _text(_canal(types={"id": "int", "b": "blob"},
                                                        rows=[{"id": "1", "b": "[256]"}])), False),
    ("byte list malformed", _text(_canal(types={"id": "int", "b": "blob"},
                                         rows=[{"id": "1", "b": "[1,]"}])), False),
    ("update, old the whole row", _text(_canal("UPDATE", old=[{"id": "1", "v": "b"}])), True),
    ("delete, row in old", _text(_canal("DELETE", data=None, old=[{"id": "1", "v": "a"}])), True),
    ("sequence as text", _text(_canal(id="0042")), True),
    ("sequence not digits", _text(_canal(id="x1")), False),
    ("sequence missing", _text({k: v for k, v in _canal().items() if k != "id"}), True),
    ("timestamp epoch seconds", _typed("timestamp", "1624614713.201000"), True),
]

CLOUDCANAL_MESSAGES: list[tuple[str, bytes, bool]] = [
    ("insert, keyless", _text({
        "bid": 0, "db": "db_test", "dbValType": {"c": "varchar(22)", "k": "varchar(22)"},
        "isDdl": False, "entryType": "ROWDATA", "execTs": 1669789152000, "jdbcType": {"c": 12, "k": 12},
        "pks": [], "schema": "db_test", "sendTs": 1669789153377, "sql": "", "table": "t",
        "action": "INSERT", "before": [], "data": [{"c": "11", "k": "1"}]}), True),
    ("update keyed", _text({
        "db": "d", "dbValType": {"c": "int", "k": "int"}, "execTs": 1669789152000,
        "jdbcType": {"c": 4, "k": 4}, "pks": ["k"], "schema": "s", "table": "t", "action": "UPDATE",
        "before": [{"c": "1", "k": "1"}], "data": [{"c": "2", "k": "1"}]}), True),
    ("transaction end", _text({"entryType": "TRANSACTIONEND", "action": "INSERT", "db": "d",
                               "table": "t", "execTs": 1669789152000}), False),
]
_OID = 'ObjectId("64650cf67dc36a464e76e583")'
_WHERE = '{"_id": ' + _OID + "}"


def _mongo(value: Any = '{"_id": ' + _OID + ', "c1": "baz", "tags": ["mongodb", "database", "NoSQL"]}',
           op: str = "INSERT", record_type: str | None = "insert", **fields: Any) -> dict[str, Any]:
    """A DRS DDS/MongoDB message (``value``: a shell-syntax document string)."""
    doc = {"id": 256, "op": op, "dbType": "MongoDB", "db": "ljx", "coll": "ljx", "value": value,
           "where": None, "recordType": record_type, "extra": record_type, "es": 1684315111439,
           "ts": 1684315111576, "clusterTime": "1684344064:1"}
    doc.update(fields)
    return doc


def _mongo_fields(body: str) -> bytes:
    """An insert of ``{_id: 1, <body>}``."""
    return _text(_mongo("{_id: 1, " + body + "}"))


def _mongo_update(value: str, **fields: Any) -> bytes:
    return _text(_mongo(value, "UPDATE", "update", **{"where": _WHERE, **fields}))


def _mongo_without(name: str, **fields: Any) -> bytes:
    return _text({k: v for k, v in _mongo(**fields).items() if k != name})


MONGO_MESSAGES: list[tuple[str, bytes, bool]] = [
    ("insert", _text(_mongo()), True),
    ("insert, bare names and spaces",
     _text(_mongo('{ _id :NumberLong( "42" ),\n\tname:"x", 12: true,\ufeff"e": "" }')), True),
    ("unicode and escapes in strings and names", _text(_mongo(
        '{"_id": 1, "caf\u00e9 \\"k\\"": "\\u00e9\\ud83d\\ude00 \U0001f600 \\x41\\v\\0\\/\\\''
        '\\n\\t\\b\\f\\r", '
        '"doc": {"k\\u0001\u00e9": "a\\"b\\\\c\\u001f\u007f\u2028", "": ""}}')), True),
    ("lone surrogate escape", _mongo_fields('"a": "\\ud800"'), False),
    ("bad escape", _mongo_fields('"a": "\\q"'), False),
    ("integers: big, signed, leading zeros, -0", _mongo_fields(
        '"a": 9223372036854775807, "b": -9223372036854775808, "c": 9223372036854775808, '
        '"d": +7, "e": -007, "f": -0, "g": 123456789012345678901234567890, '
        '"h": [007, -0, +5, 18446744073709551616]'), True),
    ("decimals and exponents", _mongo_fields('"a": 0.1, "b": -12.500, "c": 1E+2, "d": 1.50e-5, "e": -0.0, '
                                             '"f": 1e400000, "g": {"x": [2.50, -0E0, 1e-7]}'), True),
    ("number 1. (no fraction digits)", _mongo_fields('"a": 1.'), False),
    ("number .5", _mongo_fields('"a": .5'), False),
    ("NaN", _mongo_fields('"a": NaN'), False),
    ("-Infinity", _mongo_fields('"a": -Infinity'), False),
    ("NumberLong and NumberInt", _mongo_fields(
        '"a": NumberLong("-0009"), "b": NumberInt(7), "c": NumberLong(12), "d": [NumberInt("-5")], '
        '"e": NumberLong("9223372036854775807"), "f": new NumberLong("+3")'), True),
    ("NumberLong out of range", _mongo_fields('"a": NumberLong("9223372036854775808")'), False),
    ("NumberInt out of range", _mongo_fields('"a": NumberInt(2147483648)'), False),
    ("NumberLong not an integer", _mongo_fields('"a": NumberLong("1.5")'), False),
    ("ISODate forms", _mongo_fields(
        '"a": ISODate("2023-05-17T17:18:31.439+08:00"), "b": ISODate("2023-05-17"), '
        '"c": new Date(1684315111439), "d": ISODate("2023-05-17 09:18"), "e": Date(-1), '
        '"f": ISODate("2023-05-17T09:18:31.120000Z"), "g": {"at": ISODate("2020-01-01T00:00:00Z")}, '
        '"h": new ISODate("2023-05-17T09:18:31.123456789 -0530"), "i": ISODate("0001-01-01T00:00:00Z")'),
     True),
    ("ISODate invalid", _mongo_fields('"a": ISODate("2023-02-29")'), False),
    ("ISODate of year 0", _mongo_fields('"a": ISODate("0000-12-31T23:00:00-02:00")'), False),
    ("ISODate beyond year 9999", _mongo_fields('"a": ISODate("9999-12-31T23:00:00-02:00")'), False),
    ("Date beyond year 9999", _mongo_fields('"a": new Date(253402300800000)'), False),
    ("ObjectId upper case, nested", _mongo_fields('"a": ObjectId("64650CF67DC36A464E76E583"), '
                                                  '"b": [' + _OID + "]"), True),
    ("ObjectId not hex", _mongo_fields('"a": ObjectId("xyz")'), False),
    ("nested documents and arrays, empty", _mongo_fields(
        '"a": {}, "b": [], "c": {"d": {"e": [[], {}, null, true]}}, "f": [1, "x", false]'), True),
    ("_id a document", _text(_mongo('{"_id": {"tenant": 1, "no": "A-1"}, "v": null}')), True),
    ("_id null", _text(_mongo('{"_id": null}')), True),
    ("missing _id", _text(_mongo('{"c1": "x"}')), False),
    ("empty document", _text(_mongo("{}")), False),
    ("BinData", _mongo_fields('"a": BinData(0, "aGVsbG8=")'), False),
    ("UUID", _mongo_fields('"a": UUID("3b241101-e2bb-4255-8caf-4136c566a962")'), False),
    ("NumberDecimal", _mongo_fields('"a": NumberDecimal("1.10")'), False),
    ("Timestamp", _mongo_fields('"a": Timestamp(1684344064, 3)'), False),
    ("regular expression", _mongo_fields('"a": /ab+c/i'), False),
    ("MinKey", _mongo_fields('"a": MinKey'), False),
    ("single-quoted string", _mongo_fields("\"a\": 'x'"), False),
    ("extended-JSON wrapper", _mongo_fields('"a": {"$oid": "64650cf67dc36a464e76e583"}'), False),
    ("name starting with $, not first", _mongo_fields('"a": {"x": 1, "$y": 2}'), True),
    ("repeated name", _mongo_fields('"a": 1, "a": 2'), False),
    ("trailing comma", _mongo_fields('"a": [1, 2, ]'), False),
    ("text after the document", _text(_mongo('{"_id": 1} x')), False),
    ("nested too deeply", _mongo_fields('"a": ' + "[" * 100 + "]" * 100), False),
    ("value a JSON object", _text(_mongo({"_id": 1})), False),
    ("value blank", _text(_mongo("  ")), False),
    ("value null", _text(_mongo(None)), False),
    ("replace", _text(_mongo('{"_id": ' + _OID + ', "c1": "sss"}', "UPDATE", "replace", where=_WHERE)), True),
    ("replace without _id", _text(_mongo('{"c1": "x", "n": 1}', "UPDATE", "replace", where=_WHERE)), True),
    ("replace, no where", _text(_mongo('{"_id": 3, "c1": "x"}', "UPDATE", "replace")), True),
    ("replace, no _id anywhere", _text(_mongo('{"c1": "x"}', "UPDATE", "replace")), False),
    ("replace, where with more fields", _text(_mongo('{"c1": "x"}', "UPDATE", "replace",
                                                     where='{"_id": "k", "shard": NumberInt(3)}')), True),
    ("update of a whole document", _mongo_update('{"_id": ' + _OID + ', "c1": "x"}'), True),
    ("$set", _mongo_update('{"$set": {"c1": "aaa", "n": NumberLong(5), "d": {"x": [1]}}}'), True),
    ("$set and $unset", _mongo_update('{"$unset": {"c1": true}, "$set": {"column1": "aaa", "c1": 1}}'), True),
    ("$set of _id", _mongo_update('{"$set": {"_id": "other", "a": 1}}'), True),
    ("$set, where without _id", _mongo_update('{"$set": {"a": 1}}', where='{"k": 1}'), False),
    ("$set, no where", _mongo_update('{"$set": {"a": 1}}', where=None), False),
    ("$set of a dotted path", _mongo_update('{"$set": {"addr.city": "Bern"}}'), False),
    ("$unset of a dotted path", _mongo_update('{"$unset": {"addr.city": ""}}'), False),
    ("$set not a document", _mongo_update('{"$set": 1}'), False),
    ("$inc", _mongo_update('{"$inc": {"qty": 1}}'), False),
    ("oplog v2 diff", _mongo_update('{"$v": 2, "diff": {"u": {"qty": NumberInt(8)}, "i": {"gift": true}, '
                                    '"d": {"coupon": false}}}'), True),
    ("oplog v2 nested diff", _mongo_update('{"$v": 2, "diff": {"sa": {"u": {"b": 1}}}}'), False),
    ("$set under recordType replace", _text(_mongo('{"$set": {"a": 1}}', "UPDATE", "replace",
                                                   where=_WHERE)), False),
    ("recordType missing, extra update", _mongo_update('{"$set": {"a": 1}}', recordType=None), True),
    ("recordType upper case and padded", _mongo_update('{"$set": {"a": 1}}', recordType=" Update\t"), True),
    ("recordType a number", _mongo_update('{"$set": {"a": 1}}', recordType=5), False),
    ("delete", _text(_mongo('{"_id": ' + _OID + "}", "DELETE", "doc")), True),
    ("delete, key in where", _text(_mongo('{"x": 1}', "DELETE", "doc", where='{"_id": 7}')), True),
    ("delete, no key", _text(_mongo('{"c1": "no key"}', "DELETE", "doc")), False),
    ("where blank", _text(_mongo(where=" \n")), True),
    ("where not a document", _text(_mongo(where="[1]")), False),
    ("where a JSON object", _text(_mongo(where={"_id": 1})), False),
    ("op in lower case", _text(_mongo(op="insert")), True),
    ("op padded", _text(_mongo(op=" INSERT")), False),
    ("op UPSERT", _text(_mongo(op="UPSERT")), False),
    ("op missing", _mongo_without("op"), False),
    ("DDL", _text(_mongo('{"create": "orders_archive"}', "DDL", "ddl")), False),
    ("clusterTime padded", _text(_mongo(clusterTime=" 1684344064 : 0001 ")), True),
    ("clusterTime not seconds:increment", _text(_mongo(clusterTime="abc")), True),
    ("clusterTime a number", _text(_mongo(clusterTime=1684344064)), True),
    ("clusterTime null, id as text", _text(_mongo(clusterTime=None, id="0042")), True),
    ("clusterTime empty, id missing", _mongo_without("id", clusterTime=""), True),
    ("clusterTime a boolean", _text(_mongo(clusterTime=True)), False),
    ("clusterTime with non-ASCII digits", _text(_mongo(clusterTime="\u0661:2")), False),
    ("id not digits", _text(_mongo(clusterTime=None, id="x-1")), True),
    ("id padded", _text(_mongo(clusterTime=None, id=" 12")), False),
    ("id a boolean", _text(_mongo(clusterTime=None, id=True)), False),
    ("es as text", _text(_mongo(es="1684315111439")), True),
    ("es missing", _mongo_without("es"), False),
    ("es not a number", _text(_mongo(es="soon")), False),
    ("es a decimal", _text(_mongo(es=1684315111439.5)), False),
    ("es negative", _text(_mongo(es=-1000)), True),
    ("es out of range", _text(_mongo(es=999999999999999)), False),
    ("ts missing", _mongo_without("ts"), True),
    ("ts as text", _text(_mongo(ts="1684315111576")), True),
    ("ts not a number", _text(_mongo(ts="x")), False),
    ("dbType missing", _mongo_without("dbType"), True),
    ("dbType a number", _text(_mongo(dbType=5)), False),
    ("db missing", _mongo_without("db"), True),
    ("coll empty", _text(_mongo(coll="")), False),
    ("coll missing", _mongo_without("coll"), False),
    ("not UTF-8", _text(_mongo()).replace(b"baz", b"\xc0\xaf"), False),
]
FORMAT_MESSAGES = {"maxwell_json": MESSAGES, "oms_default": OMS_MESSAGES, "canal_json": CANAL_MESSAGES,
                   "drs_json": DRS_MESSAGES, "cloudcanal_json": CLOUDCANAL_MESSAGES,
                   "dataworks_json": DATAWORKS_MESSAGES,
                   "debezium_json": DEBEZIUM_MESSAGES + TYPED_DBZ_MESSAGES,
                   "drs_mongo": MONGO_MESSAGES}


def test_every_fast_format_has_its_tricky_messages() -> None:
    # FAST_FORMATS (Python) and FastDecode.DECODERS (Java) name the same formats: each format's
    # messages below include taken ones, which only a registered Java decoder can take.
    assert set(FORMAT_MESSAGES) == FAST_FORMATS
    assert all(any(taken for _label, _value, taken in messages) for messages in FORMAT_MESSAGES.values())


@pytest.mark.parametrize("format_id", sorted(FORMAT_MESSAGES))
def test_plain_and_tricky_messages_decode_the_same_on_both_paths(spark, format_id) -> None:
    messages = FORMAT_MESSAGES[format_id]
    keys = MESSAGE_KEYS.get(format_id, {})
    records: list[tuple] = [(f"m{n}", 0, n, STAMP, keys.get(label), value)
                            for n, (label, value, _taken) in enumerate(messages)]
    big = messages[0][1][:-1] + b', "pad": "' + b"x" * 2000 + b'"}'
    records.append(("m-big", 0, 999, STAMP, None, big))
    records.append(("m-none", 1, 5, None, None, messages[0][1]))
    formats = {topic: _topic_format(format_id) for topic, *_ in records}
    formats["m-big"] = _topic_format(format_id, max_value_bytes=1000)  # too large: Python rejects
    with_fast, python_only, taken = _both_paths(spark, records, formats)
    assert with_fast == python_only
    assert taken == sum(1 for _label, _value, fast in messages if fast) + 1  # + the null timestamp


@pytest.mark.parametrize("format_id", sorted(FORMAT_MESSAGES))
def test_each_message_is_taken_or_declined_as_its_shape_says(spark, format_id) -> None:
    from pyspark.sql import functions as F

    from spark_jobs import jvm_decode

    messages = FORMAT_MESSAGES[format_id]
    assert jvm_decode.register(spark)
    keys = MESSAGE_KEYS.get(format_id, {})
    frame = spark.createDataFrame([(label, value, keys.get(label)) for label, value, _ in messages],
                                  "label string, value binary, key binary")
    got = {row["label"]: row["taken"] for row in frame.select(
        "label", F.call_function(jvm_decode.FUNCTION, F.lit(format_id), F.col("value"), F.col("key"),
                            F.lit("UTC")).isNotNull()
        .alias("taken")).collect()}
    assert got == {label: taken for label, _value, taken in messages}


def test_a_taken_message_gives_the_whole_python_row(spark) -> None:
    value = _text(_maxwell(type="update", data={"id": 7, "amount": 12.5, "note": None},
                           old={"amount": 9.5, "status": "new"})).replace(b"12.5", b"12.50")
    with_fast, python_only, taken = _both_paths(spark, [("t", 3, 42, STAMP, b"k", value)],
                                                {"t": _topic_format("maxwell_json")})
    assert taken == 1
    assert with_fast == python_only
    row = {k: v for k, v in with_fast[0].items() if not k.startswith("msg_")}
    assert row == {
        "source_format": "maxwell_json", "kafka_topic": "t", "kafka_partition": 3, "kafka_offset": 42,
        "record_index": 0, "landed_hour": None, "run_id": None, "db_type": None, "database": "shop",
        "schema_name": None, "table_name": "orders", "op": "UPDATE", "primary_key_columns": ["id"],
        "row_key": '["7"]',
        "before": {"id": "7", "amount": "9.5", "note": None, "status": "new"},
        "after": {"id": "7", "amount": "12.50", "note": None, "status": None},
        "after_is_full": False, "column_types": {},
        "event_time": dt.datetime(2023, 11, 14, 22, 13, 20), "produced_time": None,
        "kafka_timestamp": dt.datetime(2024, 6, 1, 12, 5, 0, 123000), "source_sequence": None,
        "source_position": "mysql-bin.000003:4567", "transaction_id": "77", "ddl": None, "warnings": [],
        "_kind": "row", "_first": True, "_pair_key": None, "_pair_role": None, "control_kind": None,
        "format_tried": None, "reason_code": None, "reason_message": None,
    }


def test_a_topic_with_per_table_options_stays_on_the_python_path() -> None:
    from spark_jobs.jvm_decode import takes_topic

    assert takes_topic("maxwell_json", FormatOptions(source_timezone="Asia/Shanghai"))
    assert not takes_topic("maxwell_json", FormatOptions(primary_key_overrides={"d.t": ("id",)}))
    assert not takes_topic("maxwell_json", FormatOptions(string_columns={"d.t": ("a",)}))
    assert takes_topic("oms_default", FormatOptions())
    assert not takes_topic("oms_default_ext", FormatOptions())
    assert takes_topic("canal_json", FormatOptions(source_table="d.t", max_value_bytes=10))
    assert not takes_topic("canal_json", FormatOptions(binary_encoding="hex"))
    assert not takes_topic("drs_json", FormatOptions(update_images_swapped=True))
    assert takes_topic("debezium_json", FormatOptions())
    assert not takes_topic("debezium_json", FormatOptions(flattened=True))
    assert not takes_topic("debezium_json", FormatOptions(unavailable_value_placeholder="n/a"))
    assert takes_topic("drs_mongo", FormatOptions())
    assert not takes_topic("drs_avro", FormatOptions(schema_file="schema.avsc"))
    assert not takes_topic("auto", FormatOptions())


def test_a_wall_clock_timestamp_outside_utc_is_left_to_python(spark) -> None:
    value = _typed("timestamp(3)", "2023-11-15 06:13:20.123")
    records: list[tuple] = [("utc", 0, 0, STAMP, None, value), ("shanghai", 0, 0, STAMP, None, value)]
    formats = {"utc": _topic_format("canal_json"),
               "shanghai": _topic_format("canal_json", source_timezone="Asia/Shanghai")}
    with_fast, python_only, taken = _both_paths(spark, records, formats)
    assert with_fast == python_only
    assert taken == 1
    assert [row["after"]["c"] for row in with_fast] == ["2023-11-14T22:13:20.123Z",
                                                         "2023-11-15T06:13:20.123Z"]


def test_the_spark_setting_turns_the_fast_path_off(spark) -> None:
    from spark_jobs import jvm_decode
    from spark_jobs.decode_spark import decode_outcomes

    raw = spark.createDataFrame([("t", 0, 0, STAMP, None, _text(_maxwell()))], RAW_DDL)
    formats = {"t": _topic_format("maxwell_json")}

    def plan() -> str:  # the function shows as static_invoke(cdclake.jvm.FastDecode.invoke(...))
        return str(cast(Any, decode_outcomes(raw, formats))._explain_string(extended=True))

    assert "FastDecode.invoke" in plan()
    spark.conf.set(jvm_decode.SWITCH, "false")
    try:
        assert "FastDecode.invoke" not in plan()
        rows = decode_outcomes(raw, formats).collect()
        assert [(r["op"], r["row_key"]) for r in rows] == [("INSERT", '["1"]')]
    finally:
        spark.conf.unset(jvm_decode.SWITCH)
    assert "FastDecode.invoke" in plan()
