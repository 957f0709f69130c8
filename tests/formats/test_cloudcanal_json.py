"""CloudCanal Json: batches, key sources, control entries."""

from __future__ import annotations

import json

from cdclake.formats import get_decoder
from cdclake.formats.canonical import RawMessage
from cdclake.formats.decoding import decode_one

BASE = {"bid": 1, "db": "d", "schema": "s", "table": "t", "dbValType": {"k": "int"},
        "jdbcType": {"k": 4}, "entryType": "ROWDATA", "execTs": 1000, "sendTs": 2000, "sql": ""}


def decode(doc: dict):
    return decode_one(get_decoder("cloudcanal_json"), RawMessage(value=json.dumps(doc).encode()))


def test_primary_key_from_table_changes_when_pks_is_empty() -> None:
    doc = dict(BASE, action="INSERT", isDdl=False, pks=[], before=[], data=[{"k": "1"}],
               tableChanges={"table": {"primaryKeyColumnNames": ["k"]}})
    [row] = decode(doc).rows
    assert row["primary_key_columns"] == ["k"] and row["row_key"] == '["1"]'
    assert row["schema_name"] == "s" and row["database"] == "d"


def test_ddl_flag_may_be_spelled_ddl() -> None:
    doc = dict(BASE, action="CREATE_TABLE", ddl=True, pks=[], before=[], data=[],
               sql="create table t (k int)")
    [row] = decode(doc).rows
    assert row["op"] == "DDL" and row["ddl"] == "create table t (k int)"


def test_ddl_entry_type_as_ape_dts_writes_it() -> None:
    doc = dict(BASE, action="DDL", ddl=True, entryType="DDL", table="", pks=[], before=[], data=[],
               dbValType={}, jdbcType={}, sql="create table t1 (id int primary key)")
    [row] = decode(doc).rows
    assert (row["op"], row["table_name"], row["ddl"]) == ("DDL", None, "create table t1 (id int primary key)")
    rejected = decode(dict(BASE, action="INSERT", isDdl=False, entryType="DDL", pks=[], before=[],
                           data=[{"k": "1"}]))
    assert rejected.rejected is not None and rejected.rejected.reason == "INVALID_OP"


def test_transaction_end_is_a_control_message() -> None:
    outcome = decode(dict(BASE, action="COMMIT", entryType="TRANSACTIONEND", data=[]))
    assert outcome.control == "TRANSACTION_END" and not outcome.rows


def test_delete_row_from_before_when_data_is_empty() -> None:
    doc = dict(BASE, action="DELETE", isDdl=False, pks=["k"], before=[{"k": "7"}], data=[])
    [row] = decode(doc).rows
    assert row["op"] == "DELETE" and row["row_key"] == '["7"]' and row["after"] is None
