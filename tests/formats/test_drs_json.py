"""DRS JSON and JSON-C: one decoder, both variants, same rows."""

from __future__ import annotations

import json

import pytest

from cdclake.formats import get_decoder
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import RawMessage

BASE = {
    "mysqlType": {"id": "int", "b": "varbinary", "t": "timestamp"},
    "id": 5, "es": 1624614713000, "ts": 1625058726990, "database": "d", "table": "test ",
    "isDdl": False, "sql": "", "sqlType": {"id": 4, "b": -3, "t": 93}, "pkNames": ["id"],
}
ROW_JSON = {"id": "103", "b": "[106, 103]", "t": "1624614713.201"}
ROW_JSON_C = {"id": "103", "b": "[106, 103]", "t": "2021-06-25 17:51:53.201"}


def rows(format_id: str, doc: dict) -> list[dict]:
    decoder = get_decoder(format_id, FormatOptions(source_timezone="Asia/Shanghai"))
    return decoder.decode(RawMessage(value=json.dumps(doc).encode())).rows


@pytest.mark.parametrize("format_id", ["drs_json", "drs_json_c"])
def test_both_delete_shapes_give_the_same_row(format_id: str) -> None:
    json_delete = dict(BASE, type="DELETE", data=None, old=[ROW_JSON])
    json_c_delete = dict(BASE, type="DELETE", data=[ROW_JSON_C], old=None)
    [a] = rows(format_id, json_delete)
    [b] = rows(format_id, json_c_delete)
    assert a["before"] == b["before"] == {"id": "103", "b": "amc=",
                                          "t": "2021-06-25T09:51:53.201Z"}
    assert a["row_key"] == b["row_key"] == '["103"]'
    assert a["op"] == b["op"] == "DELETE"


def test_key_change_keeps_both_keys() -> None:
    doc = dict(BASE, type="UPDATE", data=[dict(ROW_JSON, id="104")], old=[ROW_JSON])
    [row] = rows("drs_json", doc)
    assert row["op"] == "UPDATE"
    assert row["row_key"] == '["104"]'
    assert row["before"]["id"] == "103"


def test_init_is_a_snapshot_and_init_ddl_a_ddl() -> None:
    [snap] = rows("drs_json", dict(BASE, type="INIT", data=[ROW_JSON], old=None))
    assert snap["op"] == "SNAPSHOT" and snap["after_is_full"]
    [ddl] = rows("drs_json", dict(BASE, type="INIT_DDL", data=None, old=None, isDdl=True,
                                  sql="CREATE TABLE t (id int)"))
    assert ddl["op"] == "DDL" and ddl["ddl"] == "CREATE TABLE t (id int)"


def test_date_value_is_never_shortened() -> None:
    # The DRS manual's MySQL-shaped table says `database` holds the schema for Oracle sources: an
    # Oracle DATE (year..second) under a "date" type name must not lose its time of day.
    doc = {**BASE, "mysqlType": {"id": "int", "d": "date"}, "sqlType": {"id": 4, "d": 91},
           "type": "INSERT", "data": [{"id": "1", "d": "1980-12-17 09:30:00"},
                                      {"id": "2", "d": "1980-12-17 00:00:00"},
                                      {"id": "3", "d": "1980-12-17"}], "old": None}
    out = rows("drs_json", doc)
    assert [r["after"]["d"] for r in out] == ["1980-12-17 09:30:00", "1980-12-17", "1980-12-17"]
    assert "original text kept" in out[0]["warnings"][0]
    assert out[1]["warnings"] == [] and out[2]["warnings"] == []
