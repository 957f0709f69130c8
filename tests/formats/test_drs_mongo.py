"""drs_mongo beyond the fixtures: the shell-syntax parser and its canonical text."""

from __future__ import annotations

import json

import pytest

from cdclake.formats import errors
from cdclake.formats._mongo_shell import (
    Binary,
    Int64,
    MongoShellSyntaxError,
    ObjectId,
    field_text,
    parse_document,
    to_ejson,
)
from cdclake.formats.canonical import RawMessage
from cdclake.formats.drs_mongo import DrsMongoDecoder
from cdclake.formats.errors import DecodeError
from cdclake.formats.values import dumps_compact


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


def test_java_driver_shell_forms_parse() -> None:
    """What ``JsonWriter`` in ``JsonMode.SHELL`` (mongo-java-driver) writes for each BSON type."""
    doc = parse_document(
        '{"_id": ObjectId("64650cf67dc36a464e76e583"), "l": NumberLong(7),'
        ' "big": NumberLong("9223372036854775807"), "b": new BinData(0, "AQID"),'
        ' "p": {"$ref": "db.c", "$id": ObjectId("64650cf67dc36a464e76e583")},'
        ' "r": /a\\/b/i, "u": undefined, "k": MinKey, "x": 1.0E10}')
    assert field_text(doc["l"]) == ("7", "LONG")
    assert field_text(doc["big"]) == ("9223372036854775807", "LONG")
    assert field_text(doc["b"]) == ("AQID", "BINARY")
    assert field_text(doc["p"]) == ('{"$ref":"db.c","$id":{"$oid":"64650cf67dc36a464e76e583"}}', "JSON")
    assert field_text(doc["r"]) == ('{"$regularExpression":{"pattern":"a\\\\/b","options":"i"}}', "JSON")
    assert field_text(doc["x"]) == ("1.0E10", "DOUBLE")


def test_dates_outside_iso_years_keep_their_text_with_a_warning() -> None:
    """The driver writes ``new Date(ms)`` outside 0100-9999; such a date must not reject the row."""
    doc = parse_document('{"a": new Date(253402300800000), "n": {"d": new Date(-62135596800001)},'
                         ' "y": new Date(-59014396800001)}')
    assert field_text(doc["a"]) == ("new Date(253402300800000)", "TIMESTAMP")
    assert field_text(doc["n"]) == ('{"d":{"$date":{"$numberLong":"-62135596800001"}}}', "JSON")
    assert field_text(doc["y"]) == ("0099-11-27T23:59:59.999Z", "TIMESTAMP")
    message = {"id": "1", "op": "INSERT", "dbType": "MongoDB", "db": "d", "coll": "c",
               "recordType": "insert", "es": 1684409911000, "clusterTime": "1684409911:1",
               "value": '{"_id": ObjectId("64650cf67dc36a464e76e583"), "a": new Date(253402300800000)}'}
    row = DrsMongoDecoder().decode(RawMessage(value=json.dumps(message).encode())).rows[0]
    assert row["after"]["a"] == "new Date(253402300800000)"
    assert row["warnings"] == ["field 'a': new Date(253402300800000) is outside years 1-9999; "
                               "original text kept"]


@pytest.mark.parametrize("text", ["", "   ", "{", "{a: [1, "])
def test_text_that_stops_inside_a_value_is_a_syntax_error(text: str) -> None:
    with pytest.raises(MongoShellSyntaxError, match="end of text|not closed"):
        parse_document(text)
