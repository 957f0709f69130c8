"""debezium_json specifics beyond the fixtures: tombstones, detection, keys, logical types."""

from __future__ import annotations

import json

import pytest

from spark_jobs.formats import errors
from spark_jobs.formats.base import FormatOptions
from spark_jobs.formats.canonical import RawMessage
from spark_jobs.formats.debezium_json import DebeziumJsonDecoder, value_text
from spark_jobs.formats.errors import DecodeError

DECIMAL = "org.apache.kafka.connect.data.Decimal"
SOURCE = {"connector": "mysql", "db": "inventory", "table": "customers", "ts_ms": 1000,
          "file": "binlog.000001", "pos": 4}


def message(payload: dict, key: dict | None = None) -> RawMessage:
    return RawMessage(value=json.dumps(payload).encode(),
                      key=None if key is None else json.dumps(key).encode())


def test_null_value_is_a_tombstone_not_a_change() -> None:
    assert DebeziumJsonDecoder().decode(RawMessage(value=None)).control == "TOMBSTONE"


@pytest.mark.parametrize(("doc", "expected"), [
    ({"schema": {}, "payload": {"op": "c", "after": {}, "source": {}}}, True),
    ({"op": "u", "before": {}, "after": {}}, True),
    ({"payload": {"ddl": "x", "databaseName": "d", "source": {}}}, True),
    ({"status": "BEGIN", "id": "1", "event_count": None}, True),
    ({"op": "INSERT", "before": {}, "after": {}}, False),  # DataWorks/OMS style op names
    ({"type": "INSERT", "data": [], "old": None}, False),  # Canal
    ({"schema": {"dataColumn": []}, "payload": {"op": "INSERT", "after": {}}}, False),
])
def test_detection_signature(doc: dict, expected: bool) -> None:
    assert DebeziumJsonDecoder.matches(doc) is expected


def test_decimal_bytes_are_exact_far_beyond_float_precision() -> None:
    spec = {"type": "bytes", "name": DECIMAL, "parameters": {"scale": "40"}}
    unscaled = -(10**60) - 7
    raw = unscaled.to_bytes(26, "big", signed=True)
    import base64

    text = value_text(base64.b64encode(raw).decode(), spec)
    assert text == "-100000000000000000000." + "0" * 39 + "7"


def test_time_values_keep_sign_hours_and_fraction() -> None:
    micro_time = {"type": "int64", "name": "io.debezium.time.MicroTime"}
    assert value_text(-(3600 * 1_000_000 + 5), micro_time) == "-01:00:00.000005"
    nano_ts = {"type": "int64", "name": "io.debezium.time.NanoTimestamp"}
    assert value_text(-1, nano_ts) == "1969-12-31T23:59:59.999999999"


def test_configured_key_override_wins_over_the_message_key() -> None:
    decoder = DebeziumJsonDecoder(FormatOptions(primary_key_overrides={"inventory.customers": ("email",)}))
    row = decoder.decode(message({"op": "c", "after": {"id": 1, "email": "a@b"}, "source": SOURCE},
                                 key={"id": 1})).rows[0]
    assert row["primary_key_columns"] == ["email"] and row["row_key"] == '["a@b"]'


def test_delete_without_before_is_identified_by_the_message_key() -> None:
    key = {"schema": {"type": "struct", "fields": [{"type": "int64", "field": "id"}]},
           "payload": {"id": 42}}
    row = DebeziumJsonDecoder().decode(message({"op": "d", "before": None, "source": SOURCE},
                                               key=key)).rows[0]
    assert row["op"] == "DELETE" and row["row_key"] == '["42"]' and row["before"] is None


def test_update_on_a_keyed_table_without_the_key_is_missing_key() -> None:
    decoder = DebeziumJsonDecoder(FormatOptions(primary_key_overrides={"customers": ("id",)}))
    with pytest.raises(DecodeError) as info:
        decoder.decode(message({"op": "u", "after": {"name": "x"}, "source": SOURCE}))
    assert info.value.reason == errors.MISSING_KEY


def test_non_json_message_key_is_a_warning_not_a_failure() -> None:
    raw = RawMessage(value=json.dumps({"op": "c", "after": {"id": 1}, "source": SOURCE}).encode(),
                     key=b"\x00\x01binary-key")
    row = DebeziumJsonDecoder().decode(raw).rows[0]
    assert row["primary_key_columns"] == [] and row["warnings"]


def test_bad_logical_value_keeps_the_original_text_with_a_warning() -> None:
    schema = {"type": "struct", "fields": [
        {"field": "after", "type": "struct", "fields": [{"field": "doc", "type": "string",
                                                         "name": "io.debezium.data.Json"}]}]}
    doc = {"schema": schema, "payload": {"op": "c", "after": {"doc": "{broken"}, "source": SOURCE}}
    row = DebeziumJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode())).rows[0]
    assert row["after"] == {"doc": "{broken"} and "doc" in row["warnings"][0]
