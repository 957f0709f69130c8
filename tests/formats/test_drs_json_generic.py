"""drs_json_generic beyond the fixtures: detection, es units, sqlType ignored, key overrides."""

from __future__ import annotations

import json

from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import RawMessage
from cdclake.formats.drs_json_generic import DrsJsonGenericDecoder, instant_text, logical_type_of


def _decode(doc: dict, options: FormatOptions | None = None) -> list[dict]:
    return DrsJsonGenericDecoder(options).decode(RawMessage(value=json.dumps(doc).encode())).rows


def test_mysql_flavour_and_mongo_are_not_claimed() -> None:
    mysql = {"mysqlType": {"id": "int"}, "sqlType": {"id": 4}, "data": [{"id": "1"}], "type": "INSERT",
             "database": "d", "table": "t", "pkNames": ["id"], "isDdl": False}
    assert not DrsJsonGenericDecoder.matches(mysql)
    mongo = {"op": "INSERT", "dbType": "MongoDB", "coll": "c", "value": "{}"}
    assert not DrsJsonGenericDecoder.matches(mongo)
    assert DrsJsonGenericDecoder.matches({"columnType": "", "opType": "INSERT", "type": "INSERT", "data": []})


def test_es_unit_is_decided_by_magnitude() -> None:
    base = {"columnType": None, "opType": "INSERT", "type": "INSERT", "data": [{"id": "1"}],
            "pkNames": ["id"], "table": "t", "database": "d"}
    assert _decode({**base, "es": 1639626187})[0]["event_time"] == 1639626187 * 1_000_000
    assert _decode({**base, "es": 1639626187000})[0]["event_time"] == 1639626187 * 1_000_000


def test_sqltype_codes_are_not_java_sql_types() -> None:
    # 16 would be BOOLEAN in java.sql.Types; here it is DRS's code for a timestamp column.
    row = _decode({"columnType": "", "sqlType": {"c": 16}, "opType": "INSERT", "type": "INSERT",
                   "data": [{"c": "2021-12-16 12:31:49.344365"}], "pkNames": None, "table": "t"})[0]
    assert row["after"] == {"c": "2021-12-16 12:31:49.344365"}
    assert row["column_types"] == {}


def test_key_override_wins_over_missing_pknames() -> None:
    options = FormatOptions(primary_key_overrides={"public.t": ("a",)})
    row = _decode({"columnType": {"a": "integer"}, "opType": "DELETE", "type": "DELETE", "schema": "public",
                   "database": "db", "table": "t", "old": [{"a": "7"}], "pkNames": None}, options)[0]
    assert row["primary_key_columns"] == ["a"]
    assert row["row_key"] == '["7"]'


def test_type_names_and_timestamptz_offsets() -> None:
    assert logical_type_of("timestamp without time zone") == "TIMESTAMP_NTZ"
    assert logical_type_of("int4range") == "STRING"
    assert logical_type_of("_int4") == "STRING"
    assert logical_type_of("numeric") == "DECIMAL"
    assert instant_text("2010-01-01 14:30:00+08", "UTC") == "2010-01-01T06:30:00Z"
    assert instant_text("2010-01-01 14:30:00.25-03:30", "UTC") == "2010-01-01T18:00:00.25Z"


def test_engine_specific_type_names() -> None:
    assert logical_type_of("DATE", "oracle") == "TIMESTAMP_NTZ"  # Oracle DATE is year..second
    assert logical_type_of("date") == "DATE"
    assert logical_type_of("timestamp", "sqlserver") == "STRING"  # rowversion, not a time
    assert logical_type_of("timestamp") == "TIMESTAMP_NTZ"


def test_date_values_are_kept_whole() -> None:
    base = {"columnType": {"id": "integer", "d": "date"}, "dbType": "PostgreSQL", "opType": "INSERT",
            "type": "INSERT", "pkNames": ["id"], "table": "t", "database": "d"}
    kept = _decode({**base, "data": [{"id": "1", "d": "2021-12-16 12:31:49"}]})[0]
    assert kept["after"]["d"] == "2021-12-16 12:31:49"
    assert kept["warnings"] and "original text kept" in kept["warnings"][0]
    oracle = _decode({**base, "dbType": "Oracle", "data": [{"id": "1", "d": "2021-12-16 12:31:49"}]})[0]
    assert oracle["after"]["d"] == "2021-12-16T12:31:49"
    assert oracle["column_types"]["d"] == "TIMESTAMP_NTZ" and oracle["warnings"] == []
