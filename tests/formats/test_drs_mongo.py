"""drs_mongo beyond the fixtures: the shell-syntax parser and its canonical text."""

from __future__ import annotations

import json

import pytest

from spark_jobs.formats import errors
from spark_jobs.formats._mongo_shell import (
    Binary,
    Int64,
    MongoShellSyntaxError,
    ObjectId,
    field_text,
    parse_document,
    to_ejson,
)
from spark_jobs.formats.canonical import RawMessage
from spark_jobs.formats.drs_mongo import DrsMongoDecoder
from spark_jobs.formats.errors import DecodeError
from spark_jobs.formats.values import dumps_compact


def test_parses_shell_constructors_quotes_and_unquoted_keys() -> None:
    doc = parse_document(
        "{_id: new ObjectId('64650CF67DC36A464E76E583'), 'a': NumberLong(-5),"
        " b: [1, {c: \"\\ud83d\\ude00\"}], d: HexData(0, '0001'),"
        " e: Timestamp(1, 2), f: MaxKey(), g: /x+/mi,}")
    assert doc["_id"] == ObjectId("64650cf67dc36a464e76e583")
    assert doc["a"] == Int64("-5")
    assert doc["b"][1]["c"] == "\U0001F600"
    assert doc["d"] == Binary(0, b"\x00\x01")
    assert dumps_compact(to_ejson(doc["e"])) == '{"$timestamp":{"t":1,"i":2}}'
    assert field_text(doc["f"]) == ('{"$maxKey":1}', "JSON")
    assert field_text(doc["g"]) == ('{"$regularExpression":{"pattern":"x+","options":"im"}}', "JSON")


@pytest.mark.parametrize(("text", "position"), [
    ('{"a": 1', 7),
    ('{"a": 1 "b": 2}', 8),
    ('{"a": Foo(1)}', 6),
    ('{"a": "open}', 6),
    ('{"a": ObjectId("12")}', 6),
    ('{"a": 1} trailing', 9),
])
def test_garbage_reports_its_position(text: str, position: int) -> None:
    with pytest.raises(MongoShellSyntaxError) as info:
        parse_document(text)
    assert info.value.position == position
    assert f"at position {position}" in str(info.value)


def test_extended_json_wrappers_equal_shell_constructors() -> None:
    shell = parse_document('{"a": ObjectId("64650cf67dc36a464e76e583"),'
                           ' "b": ISODate("2023-05-17T09:18:31.439Z"), "c": NumberDecimal("1.50"),'
                           ' "d": UUID("3b241101-e2bb-4255-8caf-4136c566a962")}')
    ejson = parse_document('{"a": {"$oid": "64650cf67dc36a464e76e583"},'
                           ' "b": {"$date": "2023-05-17T09:18:31.439Z"}, "c": {"$numberDecimal": "1.50"},'
                           ' "d": {"$uuid": "3b241101-e2bb-4255-8caf-4136c566a962"}}')
    assert shell == ejson
    assert field_text(shell["d"]) == field_text(parse_document(
        '{"d": BinData(4, "OyQRAeK7QlWMr0E2xWapYg==")}')["d"])


def _decode(doc: dict) -> dict:
    message = RawMessage(value=json.dumps(doc).encode())
    return DrsMongoDecoder().decode(message).rows[0]


def test_unset_fields_are_present_as_null_and_image_is_partial() -> None:
    row = _decode({"op": "UPDATE", "dbType": "MongoDB", "db": "d", "coll": "c", "recordType": "update",
                   "value": '{"$unset": {"gone": 1}}', "where": '{"_id": NumberInt(3)}',
                   "clusterTime": "5:6"})
    assert row["after"] == {"_id": "3", "gone": None}
    assert row["after_is_full"] is False
    assert row["source_sequence"] == "00000000000000000005:00000000000000000006"


def test_value_given_as_a_json_object_is_accepted() -> None:
    row = _decode({"op": "INSERT", "dbType": "MongoDB", "db": "d", "coll": "c", "recordType": "insert",
                   "value": {"_id": {"$oid": "64650cf67dc36a464e76e583"}, "n": 1}})
    assert row["row_key"] == '["64650cf67dc36a464e76e583"]'


def test_nested_diff_is_rejected_not_misapplied() -> None:
    with pytest.raises(DecodeError) as info:
        _decode({"op": "UPDATE", "dbType": "MongoDB", "db": "d", "coll": "c", "recordType": "update",
                 "value": '{"$v": 2, "diff": {"saddr": {"u": {"city": "x"}}}}', "where": '{"_id": 1}'})
    assert info.value.reason == errors.INVALID_FIELD


def test_signature_does_not_claim_other_formats() -> None:
    assert not DrsMongoDecoder.matches({"data": [], "type": "INSERT", "database": "d", "table": "t"})
    assert not DrsMongoDecoder.matches({"payload": {"op": "c"}, "schema": {}})
