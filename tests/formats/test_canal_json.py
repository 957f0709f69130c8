"""Canal-family behaviour beyond the fixtures: detection precedence, value rules, robustness."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from cdclake.formats import get_decoder
from cdclake.formats._canal_family import column_logical_type, instant_text
from cdclake.formats.base import FormatOptions
from cdclake.formats.canal_json import CanalJsonDecoder
from cdclake.formats.canonical import RawMessage
from cdclake.formats.decoding import decode_one
from cdclake.formats.detect import detect
from cdclake.formats.errors import DecodeError
from cdclake.formats.exact_json import loads_exact
from cdclake.formats.oms_canal import OmsCanalDecoder
from cdclake.formats.values import ConversionWarning


def canal(**overrides: object) -> dict:
    """A classic Canal UPDATE of one row; keyword arguments replace top-level fields."""
    doc = {
        "data": [{"id": "1", "name": "b", "ts": "2024-01-01 08:00:00", "bin": "AB"}],
        "database": "db", "es": 1704067200000, "id": 12, "isDdl": False,
        "mysqlType": {"id": "int", "name": "varchar(8)", "ts": "timestamp", "bin": "varbinary(4)"},
        "old": [{"name": "a"}], "pkNames": ["id"], "sql": "",
        "sqlType": {"id": 4, "name": 12, "ts": 93, "bin": -3},
        "table": "t", "ts": 1704067200100, "type": "UPDATE",
    }
    doc.update(overrides)
    return doc


def decode(format_id: str, doc: dict, **options: object) -> list[dict]:
    decoder = get_decoder(format_id, FormatOptions(**options))  # type: ignore[arg-type]
    value = json.dumps(doc, ensure_ascii=False).encode()
    return decoder.decode(RawMessage(value=value)).rows


def detected(doc: dict) -> str | None:
    found = detect(loads_exact(json.dumps(doc)))
    return found.format_id if found else None


# ---------------------------------------------------------------- detection precedence

@pytest.mark.parametrize(("doc", "expected"), [
    (canal(), "canal_json"),
    # DRS-only shapes
    (canal(type="INIT", old=None,  # INIT with a text TIMESTAMP: JSON-C
           data=[{"id": "1", "name": "b", "ts": "2024-01-01 08:00:00", "bin": "[65, 66]"}]),
     "drs_json_c"),
    # ... unless a binary value is no byte list: DRS sends none such; Alibaba Cloud DTS Canal
    # Json shares INIT and DDL with DRS but sends binary as Canal does
    (canal(type="INIT", old=None), "canal_json"),
    (canal(type="INIT", old=None, data=[{"id": "1", "name": "b", "ts": None, "bin": "AB"}]),
     "canal_json"),
    (canal(type="INIT", old=None, data=[{"id": "1", "name": "b", "ts": None, "bin": None}]),
     "drs_json"),
    (canal(type="DDL", data=None, old=None, sql="ALTER TABLE t ADD c int"), "drs_json"),
    (canal(data=[{"id": "1", "name": "b", "ts": "1704067200.5", "bin": "[65, 66]"}]), "drs_json"),
    (canal(type="DELETE", data=None, old=[{"id": "1", "name": "b", "ts": None, "bin": None}]),
     "drs_json"),
    # DRS-only shape plus a JSON-C shape
    (canal(type="DELETE", old=None,
           data=[{"id": "1", "name": "b", "ts": "2024-01-01 08:00:00", "bin": "[65]"}]),
     "drs_json_c"),
    # OMS: typed values, or no id
    (canal(data=[{"id": 1, "name": "b", "ts": "1704067200", "bin": "QUI="}]), "oms_canal"),
    ({k: v for k, v in canal().items() if k != "id"}, "oms_canal"),
    # CloudCanal
    ({"action": "INSERT", "entryType": "ROWDATA", "db": "d", "table": "t", "data": []},
     "cloudcanal_json"),
    # not ours: Maxwell (data object, no Canal metadata), DRS for other databases
    ({"database": "d", "table": "t", "type": "insert", "ts": 1, "data": {"id": 1}}, None),
])
def test_detection_precedence(doc: dict, expected: str | None) -> None:
    found = detected(doc)
    if expected is None:
        assert found not in {"canal_json", "drs_json", "drs_json_c", "oms_canal",
                             "cloudcanal_json"}
    else:
        assert found == expected


def test_drs_generic_shape_is_not_canal() -> None:
    doc = canal(opType="UPDATE", dbType="PostgreSQL", columnType={"id": "int4"})
    assert detected(doc) not in {"canal_json", "drs_json", "drs_json_c", "oms_canal"}


# ---------------------------------------------------------------- semantics

def test_before_image_is_data_overlaid_with_old_and_null_old_means_null() -> None:
    [row] = decode("canal_json", canal(old=[{"name": None}]))
    assert row["before"]["name"] is None
    assert row["after"]["name"] == "b"
    assert row["before"]["id"] == "1"


def test_short_old_belongs_to_the_last_data_rows() -> None:
    """Canal's MQMessageUtils.messageConverter adds an ``old`` row only when it is non-empty and
    collects the updated columns over the whole batch, so only leading rows that changed no
    column lack one: ``old[0]`` here is row 1's, and row 0's before image is unknown."""
    doc = canal(data=[{"id": "1", "name": "b", "ts": None, "bin": None},
                      {"id": "2", "name": "c", "ts": None, "bin": None}], old=[{"name": "a"}])
    rows = decode("canal_json", doc)
    assert [r["record_index"] for r in rows] == [0, 1]
    assert rows[0]["before"] is None
    assert rows[1]["before"]["name"] == "a"
    assert rows[1]["after"]["name"] == "c"
    assert rows[1]["row_key"] == '["2"]'


def test_enum_index_without_declared_labels_is_kept_and_warned() -> None:
    # TiCDC's default canal-json: mysqlType "enum"/"set" alone, the value the index/bitmask.
    doc = canal(data=[{"id": "1", "e": "2", "s": "3", "l": "b"}], old=None, type="INSERT",
                mysqlType={"id": "int", "e": "enum", "s": "set", "l": "enum"},
                sqlType={"id": 4, "e": 4, "s": -7, "l": 4})
    (row,) = decode("canal_json", doc)
    assert row["after"] == {"id": "1", "e": "2", "s": "3", "l": "b"}
    assert row["warnings"] == [
        "column 'e': ENUM index 2 with no labels declared (mysqlType names the type alone); "
        "original text kept",
        "column 's': SET bitmask 3 with no labels declared (mysqlType names the type alone); "
        "original text kept"]


def test_enum_index_and_set_bitmask_become_labels() -> None:
    """Canal's RowsLogBuffer sends ENUM as its index (sqlType 4), SET as its bitmask (-7)."""
    doc = canal(data=[{"id": "1", "e": "2", "s": "5", "z": "0", "q": "1"}], old=None,
                type="INSERT",
                mysqlType={"id": "int", "e": "enum('a','b,c')", "s": "set('x','y','z')",
                           "z": "enum('a')", "q": "enum('it''s')"},
                sqlType={"id": 4, "e": 4, "s": -7, "z": 4, "q": 4})
    (row,) = decode("canal_json", doc)
    assert row["after"] == {"id": "1", "e": "b,c", "s": "x,z", "z": "", "q": "it's"}
    assert row["column_types"]["e"] == "STRING"
    assert not row["warnings"]
    # A label already (text sqlType), or an index beyond the labels: kept, the latter warned.
    doc["sqlType"]["e"] = 12
    doc["data"] = [{"id": "1", "e": "2", "s": "9", "z": "0", "q": "1"}]
    (row,) = decode("canal_json", doc)
    assert row["after"]["e"] == "2" and row["after"]["s"] == "9"
    assert any("'s'" in w for w in row["warnings"])
    # Other Canal-family vendors send labels: untouched.
    doc["sqlType"]["e"] = 4
    (row,) = decode("drs_json", doc)
    assert row["after"]["e"] == "2"


def test_geometry_wkb_is_binary() -> None:
    """Canal sends GEOMETRY as its bytes in ISO-8859-1 (sqlType 2004, BLOB): base64 here."""
    wkb = bytes.fromhex("000000000101000000000000000000f03f0000000000000040")
    doc = canal(data=[{"id": "1", "g": wkb.decode("latin-1")}], old=None, type="INSERT",
                mysqlType={"id": "int", "g": "point"}, sqlType={"id": 4, "g": 2004})
    (row,) = decode("canal_json", doc)
    assert row["column_types"]["g"] == "BINARY"
    assert base64.b64decode(row["after"]["g"]) == wkb


def test_latin1_binary_round_trips_every_byte() -> None:
    every = bytes(range(256))
    doc = canal(data=[{"id": "1", "name": "b", "ts": None, "bin": every.decode("latin-1")}],
                old=None, type="INSERT")
    [row] = decode("canal_json", doc)
    assert base64.b64decode(row["after"]["bin"]) == every
    assert row["warnings"] == []


def test_text_timestamp_uses_the_configured_source_zone() -> None:
    [row] = decode("canal_json", canal(), source_timezone="Asia/Shanghai")
    assert row["after"]["ts"] == "2024-01-01T00:00:00Z"
    [row] = decode("canal_json", canal())
    assert row["after"]["ts"] == "2024-01-01T08:00:00Z"


def test_a_decimal_negative_zero_is_zero_and_a_double_keeps_its_sign() -> None:
    doc = canal(data=[{"id": "-0.00", "amount": "-0", "ratio": "-0.0"}], old=None,
                type="INSERT", mysqlType={"id": "decimal(5,2)", "amount": "decimal(5,0)",
                                          "ratio": "double"},
                sqlType={"id": 3, "amount": 3, "ratio": 8})
    [row] = decode("canal_json", doc)
    assert row["after"] == {"id": "0.00", "amount": "0", "ratio": "-0.0"}
    assert row["row_key"] == '["0.00"]'
    assert row["warnings"] == []


def test_key_override_wins_over_pk_names() -> None:
    [row] = decode("canal_json", canal(), primary_key_overrides={"db.t": ("name",)})
    assert row["primary_key_columns"] == ["name"]
    assert row["row_key"] == '["b"]'


def test_drs_sequence_is_zero_padded_for_text_order() -> None:
    [low] = decode("drs_json", canal(id=9))
    [high] = decode("drs_json", canal(id=10))
    assert low["source_sequence"] < high["source_sequence"]
    assert high["source_sequence"] == "00000000000000000010"


def test_canal_batch_id_is_not_an_ordering_key() -> None:
    # Canal's id restarts from 1 with the Canal server: after a restart, batch 3 is newer than
    # batch 500 before it. Ordering falls back to ``es`` and Kafka coordinates.
    [before_restart] = decode("canal_json", canal(id=500, es=1704067200000))
    [after_restart] = decode("canal_json", canal(id=3, es=1704067260000))
    assert before_restart["source_sequence"] is None
    assert after_restart["source_sequence"] is None
    assert after_restart["event_time"] > before_restart["event_time"]


def test_ticdc_commit_ts_is_the_sequence() -> None:
    # TiCDC sends id 0 on every message; its commitTs is a TSO, monotonic per cluster.
    [older] = decode("canal_json", canal(id=0, _tidb={"commitTs": 429918007904436226}))
    [newer] = decode("canal_json", canal(id=0, _tidb={"commitTs": 1429918007904436226}))
    assert older["source_sequence"] == "00429918007904436226"
    assert newer["source_sequence"] == "01429918007904436226"
    assert older["source_sequence"] < newer["source_sequence"]


def test_ticdc_bare_bit_is_the_unsigned_integer() -> None:
    # TiCDC's encoder test table (pingcap/tiflow pkg/sink/codec/canal/canal_test_util.go):
    # a BIT(64) holding b'1000001' is written {"mysqlType": "bit", "sqlType": -7, value "65"}.
    doc = canal(type="INSERT", old=None, id=0, data=[{"id": "1", "b": "65"}],
                mysqlType={"id": "int", "b": "bit"}, sqlType={"id": 4, "b": -7})
    [row] = decode("canal_json", doc)
    assert row["after"]["b"] == "65"
    assert row["column_types"]["b"] == "LONG"
    assert row["warnings"] == []


@pytest.mark.parametrize("tidb", [
    {"commitTs": 417318403368288260, "onlyHandleKey": True},
    {"commitTs": 417318403368288260,
     "claimCheckLocation": "file:///tmp/canal-json-claim-check/0f.json"},
])
def test_ticdc_large_message_images_hold_only_the_handle_key(tidb: dict) -> None:
    # pingcap/tiflow canal_json_row_event_encoder.go newJSONMessageForDML(messageTooLarge=true):
    # only handle-key columns in data/old, flagged _tidb.onlyHandleKey or claimCheckLocation
    # (TestNewCanalJSONMessageHandleKeyOnly4LargeMessage: "NotContains(decoded.Data[0], ...)");
    # TiCDC's own decoder re-reads the row upstream. The image is partial, never the full row.
    key_only = {"data": [{"id": "1"}], "mysqlType": {"id": "int"}, "sqlType": {"id": 4}}
    for kind, old in (("INSERT", None), ("UPDATE", [{"id": "1"}]), ("DELETE", None)):
        [row] = decode("canal_json", canal(type=kind, old=old, id=0, _tidb=tidb, **key_only))
        image = row["before"] if kind == "DELETE" else row["after"]
        assert image == {"id": "1"} and row["row_key"] == '["1"]'
        assert row["after_is_full"] is False
        assert len(row["warnings"]) == 1 and "only the handle-key columns" in row["warnings"][0]
    [row] = decode("canal_json", canal(type="INSERT", old=None, id=0,
                                       _tidb={"commitTs": 417318403368288260}))
    assert row["after_is_full"] is True and row["warnings"] == []


def test_database_level_ddl_names_no_table() -> None:
    # TiCDC (bis-code/cdcfresh internal/canaljson/testdata/ddl_query.json) and Canal send
    # "table": "" for CREATE/DROP DATABASE; the DDL row has no table, not a table named "".
    doc = canal(type="QUERY", isDdl=True, table="", data=None, old=None, mysqlType=None,
                sqlType=None, pkNames=None, sql="CREATE DATABASE IF NOT EXISTS `demo`")
    [row] = decode("canal_json", doc)
    assert row["op"] == "DDL" and row["table_name"] is None and row["database"] == "db"
    [row] = decode("canal_json", canal(type="CREATE", isDdl=True, data=None, old=None,
                                       sql="CREATE TABLE t (id int)"))
    assert row["table_name"] == "t"


def test_control_types_are_not_changes() -> None:
    for kind, control in (("MHEARTBEAT", "HEARTBEAT"), ("GTID", "GTID"),
                          ("XACOMMIT", "TRANSACTION_END"), ("TIDB_WATERMARK", "HEARTBEAT")):
        decoder = get_decoder("canal_json")
        doc = canal(type=kind, data=None, old=None)
        outcome = decode_one(decoder, RawMessage(value=json.dumps(doc).encode()))
        assert outcome.control == control and not outcome.rows


def test_ticdc_watermark_and_extension_are_detected_as_canal_json() -> None:
    # TiCDC's own tests (pingcap/ticdc storage reader, codec collector) write the watermark so.
    for doc in ({"isDdl": False, "type": "TIDB_WATERMARK", "_tidb": {"watermarkTs": 10}},
                {"database": "", "table": "", "isDdl": False, "type": "TIDB_WATERMARK",
                 "_tidb": {"watermarkTs": 123}}):
        outcome = decode_one(get_decoder("auto"), RawMessage(value=json.dumps(doc).encode()))
        assert (outcome.control, outcome.rows) == ("HEARTBEAT", [])
        assert detect(doc) is CanalJsonDecoder
    # An INSERT without id is ambiguous with OMS's Canal, unless TiCDC's extension names TiCDC.
    insert = {"database": "d", "table": "users", "pkNames": ["id"], "isDdl": False,
              "type": "INSERT", "data": [{"id": "1"}]}
    assert detect(insert) is OmsCanalDecoder
    assert detect(dict(insert, _tidb={"commitTs": 441})) is CanalJsonDecoder


@pytest.mark.parametrize("doc", [
    canal(data="x"), canal(old={"name": "a"}), canal(mysqlType=[1]), canal(sqlType="4"),
    canal(pkNames=[1]), canal(type=5), canal(database=7), canal(es={"ms": 1}), canal(id="a"),
    canal(data=[None]), canal(old=["a"]), canal(data=[{"id": {"nested": [1]}, "name": 2}]),
    canal(mysqlType={"id": 5, "name": None}, sqlType={"id": "x"}),
    canal(type="DELETE", data=[], old=[]),
])
def test_malformed_messages_are_rejected_or_decoded_never_crash(doc: dict) -> None:
    for format_id in ("canal_json", "drs_json", "drs_json_c", "oms_canal"):
        outcome = decode_one(get_decoder(format_id), RawMessage(value=json.dumps(doc).encode()))
        if outcome.rejected is not None:
            assert "unexpected" not in outcome.rejected.detail, outcome.rejected.detail


# ---------------------------------------------------------------- helpers

@pytest.mark.parametrize(("name", "code", "expected"), [
    ("int64", -5, "LONG"),            # OMS name unknown to MySQL: sqlType decides
    ("bit(8)", -7, "LONG"),           # Canal writes bit(n>1) as a number
    ("bit(1)", -7, "BOOLEAN"),
    ("bit", -7, "LONG"),              # TiCDC drops the length and writes the unsigned integer
    ("bigint(20) unsigned", -5, "DECIMAL(20,0)"),
    ("varchar(10)", 12, "STRING"),
    ("enum('a','b')", 4, "STRING"),   # Canal: the label
    ("enum", 4, "STRING"),            # TiCDC: the index ("1"), kept as the vendor's text
    ("timestamp(3)", 93, "TIMESTAMP"),
    ("datetime", 93, "TIMESTAMP_NTZ"),
    (None, 3, "DECIMAL"),
    ("mystery", None, "STRING"),
    (None, None, None),
])
def test_column_logical_type(name: str | None, code: int | None, expected: str | None) -> None:
    assert column_logical_type(name, code) == expected


@pytest.mark.parametrize(("text", "zone", "expected"), [
    ("1624614713.201", "UTC", "2021-06-25T09:51:53.201Z"),
    ("1624614713", "Asia/Shanghai", "2021-06-25T09:51:53Z"),
    ("2021-06-25 17:51:53.201", "Asia/Shanghai", "2021-06-25T09:51:53.201Z"),
    ("2021-06-25T17:51:53+08:00", "UTC", "2021-06-25T09:51:53Z"),
    ("2021-06-25 17:51:53.1234567", "UTC", "2021-06-25T17:51:53.1234567Z"),
])
def test_instant_text(text: str, zone: str, expected: str) -> None:
    assert instant_text(text, zone) == expected


def test_instant_text_rejects_invalid_values_as_warnings() -> None:
    for text, zone in (("0000-00-00 00:00:00", "UTC"), ("2021-06-25 17:51:53", "Nowhere/City")):
        with pytest.raises(ConversionWarning):
            instant_text(text, zone)


def test_ddl_flag_without_type_is_a_ddl_row() -> None:
    # Flink CDC's canal-json reader test (testDdlWithoutTypeField): isDdl says it all.
    doc = {"isDdl": True, "sql": "CREATE TABLE products (id INT PRIMARY KEY)", "database": "mydb",
           "table": "products"}
    [row] = decode("canal_json", doc)
    assert (row["op"], row["table_name"], row["ddl"]) == ("DDL", "products", doc["sql"])


def test_zero_epoch_times_are_unset_not_1970() -> None:
    # TiCDC before v6.1 wrote "ts": 0 on every message (fixture wild_ticdc_dispatch_ts_zero); a
    # 1970 produced_time would fail the changelog's event-vs-produced time gate for the hour.
    [row] = decode("canal_json", canal(ts=0))
    assert row["produced_time"] is None and row["event_time"] == 1704067200000000
    [row] = decode("canal_json", canal(es=0, ts="0"))
    assert (row["event_time"], row["produced_time"]) == (None, None)


def test_epoch_seconds_are_read_as_seconds() -> None:
    # Tencent Cloud's CKafka connector writes es/ts in seconds; as milliseconds 1655812326 would
    # be 1970-01-20. Thirteen-digit values stay milliseconds.
    [row] = decode("canal_json", canal(es=1655812326, ts="1655812326.5"))
    assert (row["event_time"], row["produced_time"]) == (1655812326000000, 1655812326500000)
    [row] = decode("canal_json", canal(es=99_999_999_999, ts=100_000_000_000))
    assert (row["event_time"], row["produced_time"]) == (99_999_999_999_000_000, 100_000_000_000_000)


def test_statement_only_dml_is_rejected_with_the_reason() -> None:
    # Canal on a statement-based binlog (fixture wild_canal_statement_binlog_update): the DML
    # comes as its SQL text with "data": null; no row can be applied.
    doc = canal(data=None, old=None, mysqlType=None, sqlType=None, pkNames=None,
                sql="update `db`.`t` set `name` = 'b' where `id` = '1'")
    outcome = decode_one(get_decoder("canal_json"), RawMessage(value=json.dumps(doc).encode()))
    assert outcome.rejected is not None and outcome.rejected.reason == "MISSING_FIELD"
    assert "statement-based binlog" in outcome.rejected.detail


def test_query_entry_that_is_no_ddl_is_a_control_message() -> None:
    # Canal sends rows-query events as type QUERY with isDdl false: the statement of rows that come
    # in their own messages, not a schema change.
    doc = {"data": None, "database": "d", "es": 1700000000000, "id": 3, "isDdl": False,
           "mysqlType": None, "old": None, "pkNames": None, "sql": "update t set v = 1 where id = 2",
           "sqlType": None, "table": "t", "ts": 1700000000100, "type": "QUERY"}
    decoder = get_decoder("canal_json", FormatOptions())
    assert decoder.decode(RawMessage(value=json.dumps(doc).encode())).control == "QUERY"
    doc["isDdl"] = True
    doc["sql"] = "alter table t add column w int"
    [row] = decoder.decode(RawMessage(value=json.dumps(doc).encode())).rows
    assert (row["op"], row["ddl"]) == ("DDL", "alter table t add column w int")


def test_canal_114_query_ddl_with_isddl_false_is_a_ddl_row() -> None:
    # Canal up to 1.1.4 set isDdl only when its DDL parser named the type, so CREATE DATABASE
    # came as QUERY with isDdl false (fixture wild_canal114_query_ddl_isddl_false).
    doc = {"data": None, "database": "`test`", "es": 1583143732000, "id": 1, "isDdl": False,
           "mysqlType": None, "old": None, "pkNames": None,
           "sql": "CREATE DATABASE `test` CHARSET `utf8mb4` COLLATE `utf8mb4_unicode_ci`",
           "sqlType": None, "table": "", "ts": 1583143930177, "type": "QUERY"}
    [row] = decode("canal_json", doc)
    assert (row["op"], row["database"], row["table_name"], row["ddl"], row["event_time"]) == (
        "DDL", "`test`", None,
        "CREATE DATABASE `test` CHARSET `utf8mb4` COLLATE `utf8mb4_unicode_ci`", 1583143732000000)
    for sql in ("/* app */ DROP DATABASE IF EXISTS d", "create view v as select * from t"):
        [row] = decode("canal_json", {**doc, "sql": sql})
        assert (row["op"], row["ddl"]) == ("DDL", sql)
    # rows-query events keep their DML text, CREATE TABLE ... SELECT included (Canal types a
    # real CREATE TABLE as CREATE): no schema change of their own
    decoder = get_decoder("canal_json", FormatOptions())
    for sql in ("CREATE TABLE t2 SELECT * FROM t1", "insert into t values (1)",
                "SET INSERT_ID=5", ""):
        value = json.dumps({**doc, "sql": sql}).encode()
        assert decoder.decode(RawMessage(value=value)).control == "QUERY"


def tencent(**overrides: object) -> dict:
    """Tencent DTS Canal JSON, not-fully-compatible mode: HexString binary, UTC-offset
    TIMESTAMP, empty sqlType, parameterless mysqlType."""
    fields: dict[str, object] = {
        "data": [{"id": "1", "name": "b", "ts": "2021-05-17 07:22:42 +00:00", "bin": "CAFE",
                  "geo": "0101000000000000000000F03F0000000000000040"}],
        "old": None, "type": "INSERT", "sqlType": None,
        "mysqlType": {"id": "int", "name": "varchar", "ts": "timestamp", "bin": "varbinary",
                      "geo": "geometry"}}
    return canal(**{**fields, **overrides})


def test_tencent_offset_timestamp_keeps_its_instant_whatever_the_zone() -> None:
    for zone in ("UTC", "Asia/Shanghai"):
        [row] = decode("canal_json", tencent(), source_timezone=zone)
        assert row["after"]["ts"] == "2021-05-17T07:22:42Z"
        assert row["column_types"]["ts"] == "TIMESTAMP"


def test_tencent_hexstring_binary_needs_the_hex_option() -> None:
    [row] = decode("canal_json", tencent(), binary_encoding="hex")
    assert base64.b64decode(row["after"]["bin"]) == b"\xca\xfe"
    assert base64.b64decode(row["after"]["geo"]) == bytes.fromhex(
        "0101000000000000000000F03F0000000000000040")
    assert row["column_types"]["geo"] == "BINARY" and row["warnings"] == []
    [row] = decode("canal_json", tencent())  # Canal's ISO-8859-1 reading: the text's own bytes
    assert base64.b64decode(row["after"]["bin"]) == b"CAFE"
    assert row["column_types"]["geo"] == "STRING"


def test_hex_option_reports_non_hex_binary_as_a_warning() -> None:
    [row] = decode("canal_json", tencent(data=[{"id": "1", "bin": "xyz"}]), binary_encoding="hex")
    assert row["after"]["bin"] == "xyz"
    assert "not hex" in row["warnings"][0]


def test_unknown_binary_encoding_is_refused() -> None:
    with pytest.raises(ValueError, match="binary_encoding"):
        get_decoder("canal_json", FormatOptions(binary_encoding="utf8"))


@pytest.mark.parametrize("empty", [None, {}, ""])
def test_empty_sql_type_is_no_type_information(empty: object) -> None:
    [row] = decode("canal_json", tencent(sqlType=empty))
    assert row["column_types"]["id"] == "LONG" and row["after"]["id"] == "1"


def test_full_load_init_is_a_snapshot_row() -> None:
    [row] = decode("canal_json", tencent(type="INIT"))
    assert row["op"] == "SNAPSHOT" and row["after"]["id"] == "1"


def test_update_images_swapped_reads_legacy_alibaba_dts_updates() -> None:
    # Alibaba Cloud DTS Canal Json, instances created before 2022-03-20: UPDATE "data" is the
    # before image and "old" the after image, both whole rows; DELETE rows come in "old".
    legacy = canal(data=[{"id": "1", "name": "a", "ts": "2024-01-01 08:00:00", "bin": "AB"}],
                   old=[{"id": "1", "name": "b", "ts": "2024-01-01 09:00:00", "bin": "AB"}])
    [row] = decode("canal_json", legacy, update_images_swapped=True)
    assert row["before"]["name"] == "a" and row["after"]["name"] == "b"
    assert row["after"]["ts"] == "2024-01-01T09:00:00Z" and row["after_is_full"]
    [unswapped] = decode("canal_json", legacy)
    assert unswapped["before"]["name"] == "b" and unswapped["after"]["name"] == "a"
    deleted = canal(type="DELETE", data=None, old=[{"id": "7", "name": "z", "ts": None, "bin": None}])
    [row] = decode("canal_json", deleted, update_images_swapped=True)
    assert (row["op"], row["row_key"], row["before"]["name"]) == ("DELETE", '["7"]', "z")


def test_a_change_naming_no_table_goes_to_the_topics_source_table() -> None:
    # Flink SQL's canal-json sink writes {"data": [...], "type": ...} and nothing else.
    message = RawMessage(value=b'{"data":[{"k":"7","v":"x"}],"type":"DELETE"}')
    options = FormatOptions(source_table="db.sch.t", primary_key_overrides={"db.t": ("k",)})
    [row] = decode_one(get_decoder("canal_json", options), message).rows
    assert (row["database"], row["schema_name"], row["table_name"]) == ("db", "sch", "t")
    assert (row["op"], row["primary_key_columns"], row["row_key"]) == ("DELETE", ["k"], '["7"]')
    rejected = decode_one(get_decoder("canal_json"), message).rejected
    assert rejected is not None and rejected.reason == "MISSING_FIELD"
    assert "names no table" in rejected.detail
    # Under auto the rejection names the format that was detected and tried, not "auto".
    tableless = RawMessage(value=json.dumps(canal(table=None)).encode())
    under_auto = decode_one(get_decoder("auto"), tableless).rejected
    assert under_auto is not None and under_auto.format_id == "canal_json"
    assert under_auto.detail == ("canal_json: the update names no table and the topic sets no "
                                 "'source_table' (database.table; `--source-table` in cdclake "
                                 "decode) to apply it to")


def test_keyless_update_without_old_row_is_warned_as_possibly_minimal_row_image() -> None:
    # alibaba/canal #1834: binlog_row_image=MINIMAL; data holds the changed column only, no
    # pkNames, "old": null. Kept as sent, but flagged: nothing identifies the row.
    doc = canal(data=[{"update_time": "2019-05-22 18:20:25"}], old=None, pkNames=None,
                mysqlType={"update_time": "datetime"}, sqlType={"update_time": 93})
    [row] = decode("canal_json", doc)
    assert (row["op"], row["before"], row["after"]) == (
        "UPDATE", None, {"update_time": "2019-05-22T18:20:25"})
    assert len(row["warnings"]) == 1 and "binlog_row_image=MINIMAL" in row["warnings"][0]
    # the table's real key configured: the message names no value of it, so it is quarantined
    with pytest.raises(DecodeError) as caught:
        decode("canal_json", doc, primary_key_overrides={"db.t": ("id",)})
    assert caught.value.reason == "MISSING_KEY"
    # a key (pkNames or configured) or an old row: no warning
    assert decode("canal_json", canal(old=None))[0]["warnings"] == []
    assert decode("canal_json", canal(pkNames=None))[0]["warnings"] == []
    # only canal_json warns (its Canal renderings); the DRS formats are left as they were
    assert decode("drs_json_c", dict(doc, type="UPDATE"))[0]["warnings"] == []


def test_a_json_column_repeating_a_key_is_kept_as_sent_with_a_warning() -> None:
    sent = '{"k": 1, "k": 2}'
    doc = canal(type="INSERT", old=None, data=[{"id": "1", "doc": sent}],
                mysqlType={"id": "int", "doc": "json"}, sqlType={"id": 4, "doc": 12})
    [row] = decode("canal_json", doc)
    assert row["after"] == {"id": "1", "doc": sent}
    assert row["warnings"] == ["column 'doc': JSON object repeats key 'k'; compacting it would drop a "
                               "value; original text kept"]


def test_canal_adapter_dml_without_id_is_canal_not_oms() -> None:
    # Canal's client adapter logs its Dml with destination/groupId and no id (canal #3222, #1408).
    adapter: dict[str, Any] = {
        "data": None, "database": "db", "destination": "example", "groupId": "g1",
        "es": 1606999495000, "isDdl": False, "old": None, "pkNames": [],
        "sql": "ALTER TABLE `db`.`t` ADD COLUMN c int", "table": "t", "ts": 1607000161626,
        "type": "ALTER"}
    assert detected(adapter) == "canal_json"
    assert detected({k: v for k, v in adapter.items() if k not in ("destination", "groupId")}) == "oms_canal"
