"""oms_shareplex beyond the fixtures: rowid identity and detection."""

from __future__ import annotations

import json

import pytest

from cdclake.formats import errors
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import RawMessage
from cdclake.formats.detect import detect
from cdclake.formats.errors import DecodeError
from cdclake.formats.oms_shareplex import OmsSharePlexDecoder

UPD = {"data": {"v": 2}, "key": {"id": "a-b", "v": 1},
       "meta": {"op": "upd", "time": "2020-11-25T08:00:00", "table": "db.t-x", "rowid": "db.t-x-a-b\u00017"}}


def test_rowid_values_after_the_table_prefix_identify_the_row() -> None:
    decoder = OmsSharePlexDecoder(FormatOptions(source_timezone="Asia/Shanghai"))
    row = decoder.decode(RawMessage(value=json.dumps(UPD).encode())).rows[0]
    assert row["row_key"] == '["a-b","7"]'
    assert (row["database"], row["table_name"]) == ("db", "t-x")
    assert row["after"] == {"v": "2"} and row["after_is_full"] is False
    assert row["event_time"] == 1606262400 * 1_000_000  # 2020-11-25T00:00:00Z


def test_detection_needs_meta_op_and_data() -> None:
    assert detect(UPD) is OmsSharePlexDecoder
    assert detect({"data": {}, "meta": {"op": "merge", "rowid": "x"}}) is not OmsSharePlexDecoder


def test_update_without_rowid_is_missing_key() -> None:
    doc = json.loads(json.dumps(UPD))
    del doc["meta"]["rowid"]
    with pytest.raises(DecodeError) as caught:
        OmsSharePlexDecoder().decode(RawMessage(value=json.dumps(doc).encode()))
    assert caught.value.reason == errors.MISSING_KEY


DTS_INS = {"meta": {"time": "2017-06-16T14:24:34", "userid": 84, "op": "ins",
                    "scn": "14589063118712", "rowid": "AAATGpAAIAAItcIAAA",
                    "table": "CL_BIZ1.MIO_LOG"},
           "data": {"MIO_LOG_ID": "32539737"}}


def _decode(doc: dict, **options: object) -> dict:
    decoder = OmsSharePlexDecoder(FormatOptions(**options))  # type: ignore[arg-type]
    return decoder.decode(RawMessage(value=json.dumps(doc).encode())).rows[0]


def test_alibaba_dts_oracle_rowid_identifies_the_row() -> None:
    row = _decode(DTS_INS)
    assert row["row_key"] == '["AAATGpAAIAAItcIAAA"]'
    assert row["event_time"] == 1497623074 * 1_000_000  # meta.time is UTC for DTS


def test_restricted_oracle_rowid_is_accepted_and_other_rowids_are_not() -> None:
    doc = json.loads(json.dumps(DTS_INS))
    doc["meta"]["rowid"] = "00000DD5.0000.0001"
    assert _decode(doc)["row_key"] == '["00000DD5.0000.0001"]'
    doc["meta"]["rowid"] = "OTHER.TABLE-1"
    with pytest.raises(DecodeError) as caught:
        _decode(doc)
    assert caught.value.reason == errors.INVALID_FIELD


@pytest.mark.parametrize(("op", "expected"), [("INSERT", "INSERT"), ("Delete", "DELETE")])
def test_documented_long_op_names_are_read(op: str, expected: str) -> None:
    doc = json.loads(json.dumps(DTS_INS))
    doc["meta"]["op"] = op
    assert _decode(doc)["op"] == expected


def test_truncate_is_a_truncate_row_of_the_table() -> None:
    doc = {"meta": {"time": "2017-06-16T14:24:34", "op": "TRUNCATE", "table": "CL_BIZ1.MIO_LOG"}}
    assert detect(doc) is OmsSharePlexDecoder
    row = _decode(doc)
    assert (row["op"], row["database"], row["table_name"]) == ("TRUNCATE", "CL_BIZ1", "MIO_LOG")
    assert row["before"] is None and row["after"] is None


def test_undocumented_dts_ops_are_rejected() -> None:
    doc = json.loads(json.dumps(DTS_INS))
    doc["meta"]["op"] = "UPDATE BEFORE"
    with pytest.raises(DecodeError) as caught:
        _decode(doc)
    assert caught.value.reason == errors.INVALID_OP


OMS_DDL = {"data": {},
           "meta": {"posttime": "2022-12-16T15:54:51", "op": "ddl", "size": 0,
                    "time": "2022-12-16T15:53:29", "idx": "0/0", "seq": 0,
                    "table": "connector_test.all_mysql_type_test",
                    "rowid": "connector_test.all_mysql_type_test-", "trans": None, "scn": "null"},
           "sql": {"ddl": "alter table connector_test.all_mysql_type_test add column c90 int"}}


def test_oms_ddl_is_a_ddl_row_with_the_statement_from_sql_ddl() -> None:
    assert detect(OMS_DDL) is OmsSharePlexDecoder
    row = _decode(OMS_DDL, source_timezone="Asia/Shanghai")
    assert row["op"] == "DDL"
    assert row["ddl"] == "alter table connector_test.all_mysql_type_test add column c90 int"
    assert (row["database"], row["table_name"]) == ("connector_test", "all_mysql_type_test")
    assert row["row_key"] is None and row["before"] is None and row["after"] is None
    assert row["event_time"] == 1671177209 * 1_000_000  # 2022-12-16T07:53:29Z
    assert row["produced_time"] == 1671177291 * 1_000_000
    assert row["source_sequence"] is None  # scn "null"


def test_oms_ddl_without_its_statement_is_rejected() -> None:
    doc = json.loads(json.dumps(OMS_DDL))
    del doc["sql"]["ddl"]
    with pytest.raises(DecodeError) as caught:
        OmsSharePlexDecoder().decode(RawMessage(value=json.dumps(doc).encode()))
    assert caught.value.reason == errors.MISSING_FIELD


OMS_HEARTBEAT = {"meta": {"time": "2025-04-09T14:17:19", "op": "heartbeat", "rowid": None,
                          "trans": None, "seq": 0, "size": 0, "table": None, "idx": "0/0",
                          "posttime": "2025-04-09T14:17:19", "scn": "174417943989400000"},
                 "data": {}}


def test_oms_heartbeat_is_a_control_and_is_detected() -> None:
    decoded = OmsSharePlexDecoder().decode(RawMessage(value=json.dumps(OMS_HEARTBEAT).encode()))
    assert decoded.rows == [] and decoded.control == "HEARTBEAT"
    assert detect(OMS_HEARTBEAT) is OmsSharePlexDecoder
    # a heartbeat shape without OMS's meta fields is not claimed
    assert detect({"data": {}, "meta": {"op": "heartbeat"}}) is not OmsSharePlexDecoder
