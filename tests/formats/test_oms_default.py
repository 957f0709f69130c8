"""oms_default beyond the fixtures: detection, key identity, tenants, exact numbers."""

from __future__ import annotations

import json

import pytest

from cdclake.formats import errors
from cdclake.formats._oms import split_key_text, split_tenant
from cdclake.formats.canonical import RawMessage
from cdclake.formats.detect import detect
from cdclake.formats.errors import DecodeError
from cdclake.formats.oms_default import OmsDefaultDecoder
from cdclake.formats.oms_default_ext import OmsDefaultExtDecoder


def _decode(doc: dict) -> list[dict]:
    return OmsDefaultDecoder().decode(RawMessage(value=json.dumps(doc).encode())).rows


def _message(**overrides: object) -> dict:
    doc: dict = {
        "allMetaData": {"record_primary_key": "a\u0001b", "record_primary_value": "3\u0001129",
                        "dbType": "OB_MYSQL", "db": "tenant.database", "table_name": "t",
                        "timestamp": "1609344671"},
        "prevStruct": None, "recordType": "INSERT", "postStruct": {"c": 1},
    }
    doc.update(overrides)
    return doc


def test_detected_as_default_unless_an_image_carries_light_types() -> None:
    assert detect(_message()) is OmsDefaultDecoder
    typed = _message(postStruct={"c": 1, "__light_type": {"c": {"schemaType": "INT"}}})
    assert detect(typed) is OmsDefaultExtDecoder


def test_row_identified_by_record_primary_value_when_key_columns_are_not_in_the_image() -> None:
    row = _decode(_message(recordType="DELETE", prevStruct={"c": 1}, postStruct=None))[0]
    assert row["primary_key_columns"] == ["a", "b"]
    assert row["row_key"] == '["3","129"]'


def test_key_from_image_when_present() -> None:
    row = _decode(_message(postStruct={"a": 4, "b": 5}))[0]
    assert row["row_key"] == '["4","5"]'


def test_beyond_int64_and_long_decimals_keep_every_digit() -> None:
    text = ('{"allMetaData":{"timestamp":"1"},"recordType":"INSERT","prevStruct":null,'
            '"postStruct":{"big":10223372036854775806,"dec":1.50,"tiny":9.999E-30}}')
    row = OmsDefaultDecoder().decode(RawMessage(value=text.encode())).rows[0]
    assert row["after"] == {"big": "10223372036854775806", "dec": "1.50",
                            "tiny": "0.000000000000000000000000000009999"}


def test_heartbeat_is_a_control_message() -> None:
    decoded = OmsDefaultDecoder().decode(RawMessage(value=json.dumps(
        {"allMetaData": {}, "recordType": "HEARTBEAT", "prevStruct": None, "postStruct": None}).encode()))
    assert decoded.control == "HEARTBEAT" and decoded.rows == []


def test_tenant_split_only_for_oceanbase() -> None:
    assert split_tenant("tenant.database", "OB_MYSQL") == ("database", "tenant")
    assert split_tenant("ten.SCHEMA.X", "OB_ORACLE") == ("SCHEMA.X", "ten")
    assert split_tenant("shop.v1", "MYSQL") == ("shop.v1", None)
    assert split_key_text("a\\u0001b") == ["a", "b"]


def test_unknown_record_type_is_invalid_op() -> None:
    with pytest.raises(DecodeError) as caught:
        _decode(_message(recordType="MERGE"))
    assert caught.value.reason == errors.INVALID_OP


def test_heartbeat_without_images_is_detected_and_is_a_control() -> None:
    doc = {"allMetaData": {"checkpoint": "1730419200", "dbType": "OB_MYSQL"},
           "recordType": "HEARTBEAT"}
    assert detect(doc) is OmsDefaultDecoder
    decoded = OmsDefaultDecoder().decode(RawMessage(value=json.dumps(doc).encode()))
    assert decoded.rows == [] and decoded.control == "HEARTBEAT"


def test_trans_id_is_the_transaction_when_unique_id_is_absent() -> None:
    meta = {"record_primary_key": "c", "record_primary_value": "1", "dbType": "OB_MYSQL",
            "db": "t.d", "table_name": "t", "transId": "tx-1", "storeDataSequence": "17304192010003"}
    row = _decode(_message(allMetaData=meta))[0]
    assert row["transaction_id"] == "tx-1"
    assert row["source_sequence"] is not None and row["source_sequence"].endswith("17304192010003")
