"""debezium_json specifics beyond the fixtures: tombstones, detection, keys, logical types."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cdclake.formats import errors
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import RawMessage
from cdclake.formats.debezium import DebeziumJsonDecoder
from cdclake.formats.errors import DecodeError
from cdclake.formats.exact_json import loads_exact
from cdclake.formats.kafka_connect import value_text

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


def test_a_decimal_negative_zero_is_zero_and_a_double_keeps_its_sign() -> None:
    spec = {"type": "bytes", "name": DECIMAL, "parameters": {"scale": "2"}}
    assert value_text(loads_exact("-0.00"), spec) == "0.00"
    assert value_text(loads_exact("-0.0"), {"type": "double"}) == "-0.0"


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


def test_empty_images_that_would_wipe_or_miss_the_row_are_rejected() -> None:
    # mongo-kafka's RdbmsUpdateTest / RdbmsDeleteTest refuse these too: an update whose 'after' is
    # {} (before, a full image with no columns), and a keyless delete whose 'before' is {}.
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(message({"op": "u", "after": {}, "source": SOURCE}, key={"id": 1234}))
    assert info.value.reason == errors.MISSING_FIELD and "'after' is empty" in info.value.detail
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(message({"op": "d", "before": {}, "source": SOURCE}, key={}))
    assert info.value.reason == errors.MISSING_FIELD
    row = DebeziumJsonDecoder().decode(message({"op": "d", "before": {}, "source": SOURCE},
                                               key={"id": 1004})).rows[0]
    assert row["op"] == "DELETE" and row["row_key"] == '["1004"]'


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


def test_json_with_a_repeated_key_is_kept_as_sent_with_a_warning() -> None:
    # PostgreSQL ``json`` keeps both values of a repeated key; compacting would keep the last.
    schema = {"type": "struct", "fields": [
        {"field": "after", "type": "struct", "fields": [{"field": "doc", "type": "string",
                                                         "name": "io.debezium.data.Json"}]}]}
    sent = '{"a": 1, "b": {"c": 2.50, "c": 3}}'
    doc: dict[str, Any] = {"schema": schema, "payload": {"op": "c", "after": {"doc": sent}, "source": SOURCE}}
    row = DebeziumJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode())).rows[0]
    assert row["after"] == {"doc": sent}
    assert row["warnings"] == ["column 'doc': JSON object repeats key 'c'; compacting it would drop a "
                               "value; original text kept"]
    doc["payload"]["after"]["doc"] = '{"a": 1, "b": {"c": 2.50}}'
    row = DebeziumJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode())).rows[0]
    assert row["after"] == {"doc": '{"a":1,"b":{"c":2.50}}'} and row["warnings"] == []


BITS = {"type": "bytes", "name": "io.debezium.data.Bits", "parameters": {"length": "64"}}


def test_bits_little_endian_bytes_become_the_database_order() -> None:
    # Paimon's all-types BIT(64) b'11111000111': Debezium sends c7 07 00.., MySQL holds ..00 07 c7.
    assert value_text("xwcAAAAAAAA=", BITS) == "AAAAAAAAB8c="
    assert value_text("AQI=", {"type": "bytes", "name": "io.debezium.data.Bits"}) == "AgE="


def test_plain_bytes_keep_their_order() -> None:
    assert value_text("AQI=", {"type": "bytes"}) == "AQI="


def test_decimal_bytes_decode_exactly_even_where_a_test_expects_otherwise() -> None:
    spec = {"type": "bytes", "name": DECIMAL, "parameters": {"scale": "10"}}
    assert value_text("ELfYJWlzSHt+L+c1GgAAAA==", spec) == "2222222222222222400000000000.0000000000"


def test_empty_binlog_file_of_a_snapshot_row_is_no_position() -> None:
    source = dict(SOURCE, file="", pos=0, ts_ms=0)
    row = DebeziumJsonDecoder().decode(message({"op": "r", "after": {"id": 1}, "source": source,
                                                "ts_ms": 5})).rows[0]
    assert row["source_position"] is None


def test_update_without_before_on_a_keyless_table_is_rejected() -> None:
    payload = {"op": "u", "before": None, "after": {"id": 1}, "source": SOURCE}
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(message(payload))
    assert info.value.reason == errors.MISSING_FIELD and "REPLICA IDENTITY" in str(info.value)
    row = DebeziumJsonDecoder().decode(message(payload, key={"id": 1})).rows[0]
    assert row["op"] == "UPDATE" and row["row_key"] == '["1"]' and row["before"] is None
    with pytest.raises(DecodeError) as info:  # {} would make compaction retract an empty row
        DebeziumJsonDecoder().decode(message({**payload, "before": {}}))
    assert info.value.reason == errors.MISSING_FIELD and "null or empty" in str(info.value)


FLAT_SCHEMA = {"type": "struct", "name": "srv.inventory.orders.Value", "fields": [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "int32", "optional": False, "name": "io.debezium.time.Date", "field": "order_date"},
    {"type": "string", "optional": True, "field": "__op"},
    {"type": "string", "optional": True, "field": "__table"},
    {"type": "int64", "optional": True, "field": "__lsn"},
    {"type": "int64", "optional": True, "field": "__source_ts_ms"},
    {"type": "string", "optional": True, "field": "__deleted"}]}


def flat(payload: dict, key: dict | None = None) -> dict:
    doc = {"schema": FLAT_SCHEMA, "payload": payload}
    return DebeziumJsonDecoder().decode(message(doc, key)).rows[0]


def test_extract_new_record_state_row_takes_its_metadata_from_the_added_fields() -> None:
    row = flat({"id": 7, "order_date": 16850, "__op": "r", "__table": "orders", "__lsn": 33832960,
                "__source_ts_ms": 1596309876678, "__deleted": "false"})
    assert row["op"] == "SNAPSHOT" and row["table_name"] == "orders"
    assert row["after"] == {"id": "7", "order_date": "2016-02-19"} and row["after_is_full"]
    assert row["column_types"] == {"id": "LONG", "order_date": "DATE"}
    assert row["source_position"] == "33832960" and row["event_time"] == 1596309876678000


def test_rewritten_delete_is_a_delete_of_the_row_it_carries() -> None:
    row = flat({"id": 7, "order_date": 16850, "__op": "d", "__deleted": "true"}, key={"id": 7})
    assert row["op"] == "DELETE" and row["before"] == {"id": "7", "order_date": "2016-02-19"}
    assert row["after"] is None and row["row_key"] == '["7"]'
    assert flat({"id": 7, "__deleted": True})["op"] == "DELETE"


def test_flattened_row_without_op_is_an_upsert_with_a_warning() -> None:
    row = flat({"id": 7, "order_date": 1, "__deleted": "false"})
    assert row["op"] == "UPDATE" and row["before"] is None and "__op" in row["warnings"][0]


def test_flattened_row_with_unknown_op_is_rejected() -> None:
    with pytest.raises(DecodeError) as info:
        flat({"id": 7, "__op": "x", "__deleted": "false"})
    assert info.value.reason == errors.INVALID_OP


@pytest.mark.parametrize(("doc", "expected"), [
    ({"id": 1, "__op": "c", "__table": "t"}, True),
    ({"payload": {"id": 1, "__deleted": "false"}}, True),
    ({"id": 1, "__deleted": "maybe"}, False),
    ({"id": 1, "name": "x"}, False),
])
def test_flattened_detection(doc: dict, expected: bool) -> None:
    assert DebeziumJsonDecoder.matches(doc) is expected


# -- second pass: real input from SeaTunnel, TiCDC, RisingWave, Paimon, Hudi, Debezium docs -----

MONGO_SOURCE = {"connector": "mongodb", "db": "inventory", "collection": "customers",
                "ts_ms": 1558965508000, "ord": 6}


def test_schemaless_variable_scale_decimal_struct_is_decoded_exactly() -> None:
    # SeaTunnel's debezium-oracle.txt: NUMBER columns arrive as {"scale": 0, "value": "AQ=="}
    # without a schema; SeaTunnel reads them as BigDecimal 1.
    import base64

    unscaled = base64.b64encode((-1234567890123456789012345).to_bytes(11, "big", signed=True)).decode()
    payload = {"op": "r", "after": {"n": {"scale": 5, "value": unscaled},
                                    "one": {"scale": 0, "value": "AQ=="},
                                    "other": {"scale": 1, "value": "AQ==", "x": 1}},
               "source": dict(SOURCE, connector="oracle")}
    row = DebeziumJsonDecoder().decode(message(payload)).rows[0]
    assert row["after"]["n"] == "-12345678901234567890.12345"
    assert row["after"]["one"] == "1"
    assert row["after"]["other"] == '{"scale":1,"value":"AQ==","x":1}'  # not the struct: kept as JSON


def test_ticdc_commit_ts_is_the_position_and_the_transaction() -> None:
    source = dict(SOURCE, connector="TiCDC", file="", pos=0, commit_ts=449574451474759681)
    row = DebeziumJsonDecoder().decode(message({"op": "c", "after": {"id": 1}, "source": source,
                                                "ts_ms": 5})).rows[0]
    assert row["source_position"] == "449574451474759681"
    assert row["transaction_id"] == "449574451474759681"


def test_mongodb_document_text_is_parsed_and_keyed_by_id() -> None:
    after = '{"_id": {"$oid": "596e275826f08b2730779e1f"}, "n": {"$numberLong": "7"}, "tags": ["a"]}'
    row = DebeziumJsonDecoder().decode(message({"op": "c", "after": after, "source": MONGO_SOURCE})).rows[0]
    assert row["after"] == {"_id": "596e275826f08b2730779e1f", "n": "7", "tags": '["a"]'}
    assert row["primary_key_columns"] == ["_id"] and row["row_key"] == '["596e275826f08b2730779e1f"]'
    assert row["column_types"] == {"_id": "STRING", "n": "LONG", "tags": "JSON"}
    assert row["source_position"] == "1558965508:6"  # oplog seconds : ord


def test_mongodb_update_description_without_after_is_a_partial_image() -> None:
    payload = {"op": "u", "after": None, "source": MONGO_SOURCE,
               "updateDescription": {"updatedFields": '{"first_name": "Anne Marie"}',
                                     "removedFields": ["nick"], "truncatedArrays": None}}
    key = {"payload": {"id": '{"$numberLong": "1004"}'}}
    row = DebeziumJsonDecoder().decode(message(payload, key=key)).rows[0]
    assert row["op"] == "UPDATE" and row["after_is_full"] is False
    assert row["after"] == {"first_name": "Anne Marie", "nick": None}
    assert row["row_key"] == '["1004"]'


def test_mongodb_oplog_patch_applies_set_and_unset_and_rejects_other_operators() -> None:
    key = {"payload": {"id": '{ "$oid" : "55555505d648da1824d45a1d"}'}}
    patch = '{"$v": 1, "$set": {"e": false, "l": {"$date": 1587409165984}}, "$unset": {"x": true}}'
    row = DebeziumJsonDecoder().decode(message({"op": "u", "after": None, "patch": patch,
                                                "source": MONGO_SOURCE}, key=key)).rows[0]
    assert row["after"] == {"e": "false", "l": "2020-04-20T18:59:25.984Z", "x": None}
    assert row["row_key"] == '["55555505d648da1824d45a1d"]' and row["after_is_full"] is False
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(message({"op": "u", "patch": '{"$inc": {"n": 1}}',
                                              "source": MONGO_SOURCE}, key=key))
    assert info.value.reason == errors.INVALID_FIELD


def test_mongodb_oplog_replacement_patch_is_a_full_image_keyed_by_filter() -> None:
    payload = {"op": "u", "patch": '{"_id": 3, "a": 1}', "filter": '{"_id": 3}', "source": MONGO_SOURCE}
    row = DebeziumJsonDecoder().decode(message(payload)).rows[0]
    assert row["after"] == {"_id": "3", "a": "1"} and row["after_is_full"] is True
    assert row["row_key"] == '["3"]'


def test_mongodb_delete_needs_the_key_when_it_carries_no_document() -> None:
    payload = {"op": "d", "before": None, "after": None, "source": MONGO_SOURCE}
    row = DebeziumJsonDecoder().decode(message(payload, key={"payload": {"id": "1004"}})).rows[0]
    assert row["op"] == "DELETE" and row["row_key"] == '["1004"]' and row["before"] is None
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(message(payload))
    assert info.value.reason == errors.MISSING_KEY


def test_mongodb_empty_key_id_falls_back_to_the_document_with_a_warning() -> None:
    # Airbyte's DebeziumEventUtilsTest mocks the key {"id": ""}: before, the message failed with
    # "unexpected IndexError"; now the document's _id keys it, and a delete without one is refused.
    after = '{"_id": {"$oid": "64f24244f95155351c4185b1"}, "name": "Document 0"}'
    row = DebeziumJsonDecoder().decode(message({"op": "c", "after": after, "source": MONGO_SOURCE},
                                               key={"id": ""})).rows[0]
    assert row["row_key"] == '["64f24244f95155351c4185b1"]'
    assert row["warnings"] == ["message key 'id' is empty; '_id' taken from the document (or 'filter')"]
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(message({"op": "d", "before": None, "after": None,
                                              "source": MONGO_SOURCE}, key={"id": " "}))
    assert info.value.reason == errors.MISSING_KEY


def test_mongodb_document_text_decides_whatever_the_connector_is_named() -> None:
    # Apache Iceberg's TestMongoDebeziumTransform names the connector "mongo" and its source names
    # no collection: the document text still makes it a MongoDB event, keyed by _id, in the
    # topic's source_table (before, it was read as a relational row: _id '{"$numberLong":"1004"}').
    source = {"version": "2.5.2.final", "connector": "mongo", "ts_ms": 1558965508000}
    after = '{"_id" : {"$numberLong" : "1004"},"first_name" : "Anne"}'
    payload = {"op": "c", "after": after, "source": source}
    decoder = DebeziumJsonDecoder(FormatOptions(source_table="inventory.customers"))
    row = decoder.decode(message(payload, key={"id": 1004})).rows[0]
    assert row["after"] == {"_id": "1004", "first_name": "Anne"}
    assert row["column_types"] == {"_id": "LONG", "first_name": "STRING"}
    assert row["primary_key_columns"] == ["_id"] and row["row_key"] == '["1004"]'
    assert (row["database"], row["table_name"]) == ("inventory", "customers")
    update = {"op": "u", "source": source,
              "updateDescription": {"updatedFields": '{"first_name": "Anne Marie"}', "removedFields": None}}
    row = decoder.decode(message(update, key={"id": 1004})).rows[0]
    assert row["op"] == "UPDATE" and row["after"] == {"first_name": "Anne Marie"}
    assert row["row_key"] == '["1004"]' and row["after_is_full"] is False
    with pytest.raises(DecodeError) as info:  # no collection and no source_table: nowhere to apply
        DebeziumJsonDecoder().decode(message(payload, key={"id": 1004}))
    assert info.value.reason == errors.MISSING_FIELD


FLAT = FormatOptions(flattened=True, source_table="inventory.customers")


def test_flattened_topic_tombstone_is_the_delete_of_its_key() -> None:
    key = {"schema": {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}]},
           "payload": {"id": 1004}}
    tombstone = RawMessage(value=None, key=json.dumps(key).encode(), offset=9, timestamp_ms=1656746091521)
    [row] = DebeziumJsonDecoder(FLAT).decode(tombstone).rows
    assert (row["op"], row["database"], row["table_name"], row["row_key"]) == (
        "DELETE", "inventory", "customers", '["1004"]')
    assert (row["before"], row["after"], row["primary_key_columns"]) == (None, None, ["id"])
    assert row["event_time"] == 1656746091521 * 1000
    # without the option, or without a key, a tombstone stays a control message
    assert DebeziumJsonDecoder().decode(tombstone).control == "TOMBSTONE"
    assert DebeziumJsonDecoder(FLAT).decode(RawMessage(value=None)).control == "TOMBSTONE"


def test_flattened_row_takes_key_columns_its_value_leaves_out_from_the_kafka_key() -> None:
    # Upsert topics whose values exclude the key (Flink upsert-kafka EXCEPT_KEY, Materialize).
    key = {"tenant": "t1", "id": 98765432109876543210}
    value = {"email": "annek@noanswer.org", "id": 98765432109876543210}
    [row] = DebeziumJsonDecoder(FLAT).decode(RawMessage(
        value=json.dumps(value).encode(), key=json.dumps(key).encode(), timestamp_ms=1000)).rows
    assert row["primary_key_columns"] == ["tenant", "id"]
    assert row["row_key"] == '["t1","98765432109876543210"]'
    assert row["after"] == {"email": "annek@noanswer.org", "id": "98765432109876543210", "tenant": "t1"}


def test_flattened_row_naming_only_its_table_takes_the_configured_database() -> None:
    # ExtractNewRecordState add.fields=op,table (no db): the topic's source_table supplies it.
    def decoded(table: str) -> dict:
        value = {"id": 1, "__op": "c", "__table": table}
        return DebeziumJsonDecoder(FLAT).decode(RawMessage(value=json.dumps(value).encode(),
                                                           timestamp_ms=1000)).rows[0]
    row = decoded("customers")
    assert (row["database"], row["table_name"], row["op"]) == ("inventory", "customers", "INSERT")
    other = decoded("orders")  # another table on the topic: its database is not the configured one
    assert (other["database"], other["table_name"]) == (None, "orders")


def test_flattened_topic_tombstone_without_usable_key_is_rejected() -> None:
    with pytest.raises(DecodeError) as caught:
        DebeziumJsonDecoder(FLAT).decode(RawMessage(value=None, key=b"not json"))
    assert caught.value.reason == errors.MISSING_KEY


def test_flattened_topic_bare_row_is_an_upsert_of_the_configured_table() -> None:
    row_message = RawMessage(value=json.dumps({"id": 1004, "email": "annek@noanswer.org"}).encode(),
                             key=json.dumps({"id": 1004}).encode(), timestamp_ms=1000)
    [row] = DebeziumJsonDecoder(FLAT).decode(row_message).rows
    assert (row["op"], row["database"], row["table_name"], row["row_key"]) == (
        "UPDATE", "inventory", "customers", '["1004"]')
    assert row["after"] == {"id": "1004", "email": "annek@noanswer.org"}
    assert row["event_time"] == 1_000_000
    # an envelope topic does not take bare rows for changes
    with pytest.raises(DecodeError):
        DebeziumJsonDecoder().decode(row_message)


# -- third pass: the Debezium connector documentation (fixtures debezium_docs_*) --------------

# SQL Server and Db2 schema-change events ("ddl": null, "Always null for the SQL Server connector").
NULL_DDL_SCHEMA_CHANGE = {
    "source": {"connector": "sqlserver", "db": "testDB", "schema": "dbo", "table": "customers",
               "ts_ms": 0, "commit_lsn": "00000025:00000d98:00a2"},
    "ts_ms": 1588252618953, "databaseName": "testDB", "schemaName": "dbo", "ddl": None,
    "tableChanges": [{"type": "CREATE", "id": "\"testDB\".\"dbo\".\"customers\"", "table": {
        "primaryKeyColumnNames": ["id"], "columns": [
            {"name": "id", "jdbcType": 4, "typeName": "int identity", "typeExpression": "int identity",
             "length": 10, "scale": 0},
            {"name": "email", "jdbcType": 12, "typeName": "varchar", "typeExpression": "varchar",
             "length": 255, "scale": None}]}}]}


def test_schema_change_with_null_ddl_is_a_ddl_row_described_by_table_changes() -> None:
    assert DebeziumJsonDecoder.matches({"schema": {}, "payload": NULL_DDL_SCHEMA_CHANGE})
    [row] = DebeziumJsonDecoder().decode(message(NULL_DDL_SCHEMA_CHANGE)).rows
    assert (row["op"], row["ddl"], row["database"], row["schema_name"], row["table_name"]) == (
        "DDL", None, "testDB", "dbo", "customers")
    assert row["primary_key_columns"] == ["id"]
    # without tableChanges a null ddl says nothing: still rejected
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(message(dict(NULL_DDL_SCHEMA_CHANGE, tableChanges=[])))
    assert info.value.reason == errors.MISSING_FIELD


def test_type_name_unknown_as_sql_type_falls_back_to_the_jdbc_type() -> None:
    [row] = DebeziumJsonDecoder().decode(message(NULL_DDL_SCHEMA_CHANGE)).rows
    assert row["column_types"] == {"id": "LONG", "email": "STRING"}  # "int identity", jdbcType 4


def test_table_changes_types_agree_with_what_change_events_carry() -> None:
    # Oracle DATE has a time of day (jdbcType 93, events send io.debezium.time.Timestamp);
    # MySQL BIT(8) is sent as io.debezium.data.Bits bytes, BIT(1) as a boolean.
    columns = [
        {"name": "HIRED", "jdbcType": 93, "typeName": "DATE", "length": 7},
        {"name": "BORN", "jdbcType": 91, "typeName": "DATE"},
        {"name": "FLAGS", "jdbcType": -7, "typeName": "BIT", "length": 8},
        {"name": "ACTIVE", "jdbcType": -7, "typeName": "BIT", "length": 1},
    ]
    change = dict(NULL_DDL_SCHEMA_CHANGE, tableChanges=[
        {"type": "CREATE", "id": "t", "table": {"primaryKeyColumnNames": [], "columns": columns}}])
    [row] = DebeziumJsonDecoder().decode(message(change)).rows
    assert row["column_types"] == {"HIRED": "TIMESTAMP_NTZ", "BORN": "DATE", "FLAGS": "BINARY",
                                   "ACTIVE": "BOOLEAN"}


def test_postgres_infinity_timestamps_keep_their_text_instead_of_failing_the_message() -> None:
    micro_ts = {"type": "int64", "name": "io.debezium.time.MicroTimestamp"}
    schema = {"type": "struct", "fields": [{"field": "after", "type": "struct", "fields": [
        dict(micro_ts, field="hi"), dict(micro_ts, field="lo"), dict(micro_ts, field="ok")]}]}
    after = {"hi": 9223372036825200000, "lo": -9223372036832400000, "ok": 1529507596945104}
    doc = {"schema": schema, "payload": {"op": "c", "after": after, "source": SOURCE}}
    [row] = DebeziumJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode())).rows
    assert row["after"] == {"hi": "9223372036825200000", "lo": "-9223372036832400000",
                            "ok": "2018-06-20T15:13:16.945104"}
    assert len(row["warnings"]) == 2 and "outside years 1-9999" in row["warnings"][0]
    date = {"type": "int32", "name": "io.debezium.time.Date"}
    with pytest.raises(ValueError, match="outside years"):
        value_text(10**9, date)


def test_change_naming_no_table_is_rejected_unless_the_topic_names_it() -> None:
    # Oracle's documented create/update/delete carry no db/schema/table in 'source'.
    payload = {"op": "d", "before": {"ID": 1004}, "after": None,
               "source": {"name": "server1", "ts_ms": 1520085153000, "scn": "2122184"}}
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(message(payload))
    assert info.value.reason == errors.MISSING_FIELD and "source_table" in str(info.value)
    decoder = DebeziumJsonDecoder(FormatOptions(source_table="ORCLPDB1.DEBEZIUM.CUSTOMERS"))
    [row] = decoder.decode(message(payload, key={"ID": 1004})).rows
    assert (row["database"], row["schema_name"], row["table_name"], row["row_key"]) == (
        "ORCLPDB1", "DEBEZIUM", "CUSTOMERS", '["1004"]')


def test_negative_scale_decimal_is_an_integer_type() -> None:
    # Oracle NUMBER(20,-2): "a scale of -2 causes rounding to hundreds".
    spec = {"type": "bytes", "name": DECIMAL,
            "parameters": {"scale": "-2", "connect.decimal.precision": "20"}}
    schema = {"type": "struct", "fields": [{"field": "after", "type": "struct",
                                            "fields": [dict(spec, field="n")]}]}
    doc = {"schema": schema, "payload": {"op": "c", "after": {"n": "ew=="}, "source": SOURCE}}
    [row] = DebeziumJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode())).rows
    assert row["after"] == {"n": "12300"} and row["column_types"] == {"n": "DECIMAL(22,0)"}


def test_debezium_0x_source_times_ts_usec_and_ts_sec_are_the_event_time() -> None:
    # Debezium 0.9 (Apache Pulsar's docs): PostgreSQL source.ts_usec, MySQL source.ts_sec.
    pg = {"before": None, "after": {"id": 107}, "op": "u", "ts_ms": 1559208957692,
          "source": {"version": "0.9.2.Final", "connector": "postgresql", "name": "dbserver1",
                     "db": "postgres", "ts_usec": 1559208957661080, "txId": 577, "lsn": 23862872,
                     "schema": "inventory", "table": "products", "snapshot": False}}
    [row] = DebeziumJsonDecoder().decode(message(pg, key={"id": 107})).rows
    assert (row["event_time"], row["warnings"]) == (1559208957661080, [])
    mysql = {"before": None, "after": {"id": 1}, "op": "c", "ts_ms": 1559033904863,
             "source": {"version": "0.9.5.Final", "connector": "mysql", "name": "dbserver1",
                        "server_id": 223344, "ts_sec": 1559033904, "file": "mysql-bin.000003",
                        "pos": 154, "row": 0, "db": "inventory", "table": "customers"}}
    [row] = DebeziumJsonDecoder().decode(message(mysql, key={"id": 1})).rows
    assert row["event_time"] == 1559033904000000


def test_flink_cdc_table_id_in_the_message_key_is_no_key_column() -> None:
    # Flink CDC's Kafka sink (key.format json, its default): {"TableId": "<ns>.<schema>.<table>", pk...}.
    value = {"before": None, "after": {"col1": "1", "col2": "1"}, "op": "c",
             "source": {"db": "default_schema", "table": "table1"}}
    keyed = message(value, key={"TableId": "default_namespace.default_schema.table1", "col1": "1"})
    [row] = DebeziumJsonDecoder().decode(keyed).rows
    assert (row["primary_key_columns"], row["row_key"]) == (["col1"], '["1"]')
    keyless = message(value, key={"TableId": "default_namespace.default_schema.table1"})
    [row] = DebeziumJsonDecoder().decode(keyless).rows
    assert (row["primary_key_columns"], row["row_key"]) == ([], None)


def test_flink_cdc_schema_bits_are_plain_bytes() -> None:
    # Flink CDC's debezium-json schema (before/after only) names BINARY columns Bits, but the value
    # is the column's bytes as they are; a Debezium envelope schema (with op) keeps Bits semantics.
    after = {"type": "struct", "field": "after", "fields": [dict(BITS, field="b")]}
    flink = {"schema": {"type": "struct", "fields": [after]},
             "payload": {"op": "c", "after": {"b": "AQI="}, "source": {"db": "d", "table": "t"}}}
    [row] = DebeziumJsonDecoder().decode(RawMessage(value=json.dumps(flink).encode())).rows
    assert row["after"] == {"b": "AQI="} and row["column_types"] == {"b": "BINARY"}
    debezium = {"schema": {"type": "struct", "fields": [after, {"type": "string", "field": "op"}]},
                "payload": flink["payload"]}
    [row] = DebeziumJsonDecoder().decode(RawMessage(value=json.dumps(debezium).encode())).rows
    assert row["after"] == {"b": "AgE="}


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("io.debezium.time.Date", "1970-04-11", "1970-04-11"),
    ("io.debezium.time.Date", 100, "1970-04-11"),
    ("io.debezium.time.MicroTime", "12:30:00.250", "12:30:00.25"),
    ("io.debezium.time.MicroTimestamp", "2023-01-01 00:00:00", "2023-01-01T00:00:00"),
    ("io.debezium.time.Timestamp", "2023-01-01 00:00:00.120", "2023-01-01T00:00:00.12"),
])
def test_time_types_written_as_text_are_read_as_text(name: str, value: object, expected: str) -> None:
    # Flink CDC's Kafka sink labels DATE/TIME/TIMESTAMP columns io.debezium.time.* but writes text.
    assert value_text(loads_exact(json.dumps(value)), {"type": "int64", "name": name}) == expected


def test_mysql_snapshot_rows_sent_as_creates_are_snapshot_rows() -> None:
    # Debezium 0.7.3 (fixture wild_mysql073_team_sequence): boolean source.snapshot, no connector
    # field; Debezium 1.x: "true"/"last". Only MySQL sent snapshot rows as op "c" (DBZ-2775).
    legacy = {"before": None, "after": {"id": 1}, "op": "c", "ts_ms": 1519582917064,
              "source": {"version": "0.7.3", "name": "dbserver1", "server_id": 0, "ts_sec": 0,
                         "file": "mysql-bin.000003", "pos": 154, "row": 0, "snapshot": True,
                         "db": "mydb", "table": "team"}}
    [row] = DebeziumJsonDecoder().decode(message(legacy)).rows
    assert row["op"] == "SNAPSHOT"
    for flag, op in (("last", "SNAPSHOT"), ("false", "INSERT"), (None, "INSERT"), (False, "INSERT")):
        doc = {"before": None, "after": {"id": 1}, "op": "c", "source": dict(SOURCE, snapshot=flag)}
        assert DebeziumJsonDecoder().decode(message(doc)).rows[0]["op"] == op, flag
    pg = {"before": None, "after": {"id": 1}, "op": "c",
          "source": {"connector": "postgresql", "db": "d", "schema": "s", "table": "t",
                     "snapshot": "true"}}
    assert DebeziumJsonDecoder().decode(message(pg)).rows[0]["op"] == "INSERT"
    flat = {"id": 1, "__op": "c", "__source_snapshot": "true", "__source_connector": "mysql",
            "__table": "t", "__db": "d"}
    assert DebeziumJsonDecoder().decode(message(flat)).rows[0]["op"] == "SNAPSHOT"


def test_wal2json_ts_usec_in_nanoseconds_is_read_as_nanoseconds() -> None:
    # DBZ-1174: the PostgreSQL connector with wal2json wrote commit times in nanoseconds into
    # ts_usec (fixture wild_pg07_wal2json_ts_usec_nanos, magma/magma).
    doc: dict[str, Any] = {"before": None, "after": {"id": 1}, "op": "c", "ts_ms": 1528831778308,
           "source": {"version": "0.7.5", "name": "magma", "ts_usec": 1528753424430907000,
                      "txId": 601, "lsn": 22496127, "snapshot": False, "db": "d",
                      "schema": "public", "table": "t"}}
    [row] = DebeziumJsonDecoder().decode(message(doc)).rows
    assert row["event_time"] == 1528753424430907
    doc["source"]["ts_usec"] = 1528753424430907
    assert DebeziumJsonDecoder().decode(message(doc)).rows[0]["event_time"] == 1528753424430907


def test_ticdc_checkpoint_without_op_is_a_heartbeat() -> None:
    # tiflow's EncodeCheckpointEvent (codec_test.go TestCheckPointEvent) writes no "op": source
    # (connector TiCDC, empty db/table, commit_ts), ts_ms and transaction only.
    source = {"version": "2.4.0.Final", "connector": "TiCDC", "name": "c", "ts_ms": 0,
              "snapshot": "false", "db": "", "table": "", "commit_ts": 3, "cluster_id": "c"}
    doc = {"payload": {"source": source, "ts_ms": 1701326309000, "transaction": None}}
    assert DebeziumJsonDecoder.matches(doc)
    assert DebeziumJsonDecoder().decode(message(doc)).control == "HEARTBEAT"
    doc["payload"]["source"] = dict(source, connector="mysql")
    with pytest.raises(DecodeError):
        DebeziumJsonDecoder().decode(message(doc))


def test_ticdc_commit_ts_orders_changes_as_a_sequence() -> None:
    # TiCDC adds the commit TSO to the source block; rows of one key commit in TSO order.
    source = {"connector": "TiCDC", "db": "test", "table": "t", "ts_ms": 1640007049196,
              "commit_ts": 429918007904436226}
    doc = {"payload": {"source": source, "op": "c", "before": None, "after": {"id": 1}}}
    [row] = DebeziumJsonDecoder().decode(message(doc)).rows
    assert row["source_sequence"] == "00429918007904436226"
    assert row["source_position"] == row["transaction_id"] == "429918007904436226"
    doc["payload"]["source"] = dict(SOURCE, commit_ts=5)  # not TiCDC: no sequence
    assert DebeziumJsonDecoder().decode(message(doc)).rows[0]["source_sequence"] is None


def test_source_table_that_is_no_qualified_name_is_a_clear_error() -> None:
    payload = {"op": "d", "before": {"ID": 1}, "after": None, "source": {"ts_ms": 1520085153000}}
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder(FormatOptions(source_table="products")).decode(message(payload))
    assert info.value.reason == errors.INVALID_FIELD and "database.table" in str(info.value)


def test_vitess_database_is_the_keyspace_and_position_the_vgtid() -> None:
    vgtid = '[{"keyspace":"commerce","shard":"-80","gtid":"MySQL56/abc:1-5"}]'
    source = {"connector": "vitess", "db": "", "keyspace": "commerce", "shard": "-80",
              "table": "customers", "ts_ms": 1000, "vgtid": vgtid}
    row = DebeziumJsonDecoder().decode(message(
        {"op": "c", "before": None, "after": {"id": 1}, "source": source}, key={"id": 1})).rows[0]
    assert (row["database"], row["table_name"], row["source_position"]) == ("commerce", "customers", vgtid)


def test_spanner_transaction_is_the_server_transaction_id() -> None:
    source = {"connector": "spanner", "db": "database", "table": "Users", "ts_ms": 1000,
              "sequence": "1", "server_transaction_id": "tx-7", "snapshot": "false"}
    row = DebeziumJsonDecoder().decode(message(
        {"op": "c", "before": None, "after": {"id": 1}, "source": source}, key={"id": 1})).rows[0]
    assert (row["database"], row["transaction_id"], row["op"]) == ("database", "tx-7", "INSERT")


@pytest.mark.parametrize(("items", "raw", "expected"), [
    ({"type": "int32", "name": "io.debezium.time.Date"}, "[18000,null,-1]",
     '["2019-04-14",null,"1969-12-31"]'),
    ({"type": "bytes", "name": DECIMAL, "parameters": {"scale": "2"}}, '["AJY=","/2o="]', "[1.50,-1.50]"),
    ({"type": "struct", "name": "io.debezium.data.VariableScaleDecimal"},
     '[{"scale":3,"value":"MDk="}]', "[12.345]"),
    ({"type": "string", "name": "io.debezium.data.Json"}, '["{\\"a\\": 1}"]', '[{"a":1}]'),
    ({"type": "string", "name": "io.debezium.time.ZonedTimestamp"}, '["2020-01-01T00:00:00+01:00"]',
     '["2019-12-31T23:00:00Z"]'),
    ({"type": "string"}, '["a",null]', '["a",null]'),  # no logical type: as given
])
def test_array_elements_are_decoded_by_their_items_schema(items: dict, raw: str, expected: str) -> None:
    assert value_text(loads_exact(raw), {"type": "array", "items": items}) == expected


def test_array_element_that_cannot_convert_fails_the_whole_value() -> None:
    spec = {"type": "array", "items": {"type": "string", "name": "io.debezium.time.ZonedTimestamp"}}
    from cdclake.formats.values import ConversionWarning

    with pytest.raises(ConversionWarning):
        value_text(loads_exact('["infinity"]'), spec)


# -- column cells: YugabyteDB {value, set}, Cassandra {value, deletion_ts, set} -------------

YB_SOURCE = {"connector": "yugabytedb", "db": "yugabyte", "schema": "public", "table": "test",
             "ts_ms": 1000, "lsn": "1:4::0:0", "txId": ""}


def _decode_one(payload: dict, key: dict | None = None) -> dict:
    return DebeziumJsonDecoder().decode(message(payload, key)).rows[0]


def test_yugabytedb_null_cell_is_unknown_and_a_set_null_value_is_null() -> None:
    row = _decode_one({"op": "u", "source": YB_SOURCE, "before": None,
                       "after": {"id": {"value": 1, "set": True}, "name": None,
                                 "aura": {"value": None, "set": True}}},
                      key={"id": {"value": 1, "set": True}})
    assert row["after"] == {"id": "1", "aura": None}
    assert row["after_is_full"] is False
    assert row["row_key"] == '["1"]'
    assert row["transaction_id"] is None and row["source_position"] == "1:4::0:0"


def test_cell_schema_decodes_the_inner_value_and_types_the_column() -> None:
    def cell(name: str, inner: dict) -> dict:
        return {"type": "struct", "optional": True, "name": name, "field": name,
                "fields": [{**inner, "field": "value"},
                           {"type": "boolean", "optional": False, "field": "set"}]}
    columns = [cell("id", {"type": "int32"}),
               cell("born", {"type": "int32", "name": "io.debezium.time.Date"})]
    schema = {"type": "struct", "fields": [
        {"type": "struct", "fields": columns, "field": "before"},
        {"type": "struct", "fields": columns, "field": "after"},
        {"type": "string", "field": "op"}]}
    doc = {"schema": schema, "payload": {"op": "c", "source": {**YB_SOURCE, "connector": "YugabyteDB"},
                                         "before": None,
                                         "after": {"id": {"value": 7, "set": True},
                                                   "born": {"value": 18956, "set": True}}}}
    row = _decode_one(doc)
    assert row["after"] == {"id": "7", "born": "2021-11-25"}
    assert row["column_types"] == {"id": "LONG", "born": "DATE"}


def test_a_json_column_with_a_value_key_is_not_unwrapped() -> None:
    source = {**SOURCE, "connector": "postgresql"}
    row = _decode_one({"op": "c", "source": source, "before": None,
                       "after": {"id": 1, "doc": {"value": 2, "set": True}}})
    assert row["after"] == {"id": "1", "doc": '{"value":2,"set":true}'}


def test_schemaless_cells_without_connector_need_every_column_to_be_a_cell() -> None:
    row = _decode_one({"op": "u", "source": {"db": "d", "table": "t"}, "before": None,
                       "after": {"id": {"value": 1, "set": True}, "n": {"value": "x", "set": False}}},
                      key={"id": 1})
    assert row["after"] == {"id": "1"}
    assert row["after_is_full"] is False


def test_cassandra_delete_names_its_key_in_after_and_keyspace_is_the_database() -> None:
    def cell(value: object) -> dict:
        return {"value": value, "deletion_ts": 5, "set": True}
    source = {"connector": "cassandra", "db": "NULL", "keyspace": "ks", "table": "t",
              "ts_micro": 1562202942666382, "file": "CommitLog-7-1.log", "pos": 9}
    row = _decode_one({"op": "d", "ts_ms": 1, "source": source,
                       "after": {"id": cell(1), "v": None}}, key={"id": 1})
    assert (row["database"], row["before"], row["after"]) == ("ks", {"id": "1"}, None)
    assert row["event_time"] == 1562202942666382  # ts_micro: epoch microseconds


def test_cassandra_range_tombstone_is_rejected() -> None:
    with pytest.raises(DecodeError) as info:
        _decode_one({"op": "r", "ts_ms": 1, "source": {"connector": "cassandra", "keyspace": "ks",
                                                      "table": "t"},
                     "after": {"id": {"value": 1, "deletion_ts": None, "set": True},
                               ".range_start": "a", ".range_end": "b"}})
    assert info.value.reason == errors.INVALID_OP


# -- ScyllaDB CDC source connector (legacy output: non-key columns as {value} cells) ---------

SCYLLA_SOURCE = {"version": "1.2.6", "connector": "scylla", "name": "c", "ts_ms": 1755710756661,
                 "ts_us": 1755710756661369, "ts_ns": 1755710756661000000, "snapshot": "false",
                 "db": "ks", "keyspace_name": "ks", "table_name": "t"}


def test_scylla_unmodified_column_is_unknown_and_bare_columns_are_the_key() -> None:
    row = _decode_one({"op": "u", "source": SCYLLA_SOURCE, "before": None,
                       "after": {"ck": 2, "pk": 1, "a": {"value": 5}, "b": None,
                                 "c": {"value": None}}})
    assert (row["database"], row["table_name"], row["db_type"]) == ("ks", "t", "scylla")
    assert row["after"] == {"ck": "2", "pk": "1", "a": "5", "c": None}
    assert row["after_is_full"] is False
    assert (row["primary_key_columns"], row["row_key"]) == (["ck", "pk"], '["2","1"]')
    assert row["event_time"] == 1755710756661369  # ts_us: ts_ns is ts_ms padded with zeros


def test_scylla_message_key_wins_and_a_cell_schema_types_the_value() -> None:
    cell = {"type": "struct", "optional": True, "name": "c.ks.t.d.Cell", "field": "d",
            "fields": [{"type": "int32", "optional": True, "name": "org.apache.kafka.connect.data.Date",
                        "field": "value"}]}
    image = {"type": "struct", "fields": [{"type": "int32", "field": "pk"}, cell]}
    schema = {"type": "struct", "fields": [{**image, "field": "before"}, {**image, "field": "after"},
                                           {"type": "string", "field": "op"}]}
    payload = {"op": "c", "source": SCYLLA_SOURCE, "before": None,
               "after": {"pk": 1, "d": {"value": 19297}}}
    row = _decode_one({"schema": schema, "payload": payload}, key={"pk": 1})
    assert row["after"] == {"pk": "1", "d": "2022-11-01"}
    assert row["column_types"] == {"pk": "LONG", "d": "DATE"}
    assert row["after_is_full"] is True and row["row_key"] == '["1"]'


def test_scylla_advanced_output_without_cells_is_read_as_plain_values() -> None:
    row = _decode_one({"op": "u", "source": SCYLLA_SOURCE, "before": {"pk": 1, "v": "a"},
                       "after": {"pk": 1, "v": None}}, key={"pk": 1})
    assert row["after"] == {"pk": "1", "v": None} and row["after_is_full"] is True


def test_scylla_advanced_partition_delete_is_keyed_by_the_payload_key() -> None:
    row = _decode_one({"op": "d", "source": SCYLLA_SOURCE, "before": None, "after": None,
                       "key": {"id": 7}})
    assert (row["op"], row["primary_key_columns"], row["row_key"]) == ("DELETE", ["id"], '["7"]')


def test_ts_ns_is_kept_when_finer_than_its_millisecond() -> None:
    source = {**SOURCE, "connector": "postgresql", "ts_us": 1755710756661369,
              "ts_ns": 1755710756661369123}
    row = _decode_one({"op": "c", "source": source, "before": None, "after": {"id": 1}})
    assert row["event_time"] == 1755710756661369


# -- CloudEvents (CloudEventsConverter, JSON envelope and data) ------------------------------

CE_BITS = {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits", "version": 1,
           "parameters": {"length": "16"}, "field": "flags"}
ROW_SCHEMA = {"type": "struct", "optional": True, "name": "srv.inventory.t.Value", "fields": [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "bytes", "optional": True, "name": DECIMAL, "parameters": {"scale": "2"}, "field": "price"},
    CE_BITS]}
ROW = {"id": 7, "price": "AOY=", "flags": "AQI="}
PG_SOURCE = {"version": "2.5.0.Final", "connector": "postgresql", "name": "srv", "ts_ms": 1700000000123,
             "snapshot": "false", "db": "inventory", "sequence": "[null,\"100\"]", "schema": "public",
             "table": "t", "txId": 900, "lsn": 100, "xmin": None}
DATA_SCHEMA = {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Data",
               "fields": [{**ROW_SCHEMA, "field": "before"}, {**ROW_SCHEMA, "field": "after"}]}
TRANSACTION = {"id": "900:100", "total_order": 2, "data_collection_order": 1}


def _cloudevent(op: str, before: dict | None, after: dict | None) -> dict:
    """What CloudEventsConverter writes for the envelope ``_envelope`` gives (json.schemas.enable)."""
    attributes = {"iodebezium" + "".join(c for c in name if c.isalnum()):
                  str(value) if name in ("ts_ms", "txId", "lsn") else value
                  for name, value in PG_SOURCE.items()}
    return {"id": "name:srv;lsn:100;txId:900;sequence:[null,\"100\"]", "source": "/debezium/postgresql/srv",
            "specversion": "1.0", "type": "io.debezium.connector.postgresql.DataChangeEvent",
            "time": "2023-11-14T22:13:20.123Z", "datacontenttype": "application/json",
            "iodebeziumop": op, **attributes, "iodebeziumtxid": "900:100", "iodebeziumtxtotalorder": "2",
            "iodebeziumtxdatacollectionorder": "1",
            "data": {"schema": DATA_SCHEMA, "payload": {"before": before, "after": after}}}


def _envelope(op: str, before: dict | None, after: dict | None) -> dict:
    schema = {"type": "struct", "optional": False, "name": "srv.inventory.t.Envelope", "fields": [
        {**ROW_SCHEMA, "field": "before"}, {**ROW_SCHEMA, "field": "after"},
        {"type": "struct", "fields": [], "field": "source"}, {"type": "string", "field": "op"}]}
    return {"schema": schema, "payload": {"before": before, "after": after, "source": PG_SOURCE, "op": op,
                                          "transaction": TRANSACTION}}


@pytest.mark.parametrize(("op", "before", "after"), [
    ("c", None, ROW), ("u", ROW, {**ROW, "price": "AU0="}), ("d", ROW, None), ("r", None, ROW)])
def test_cloudevent_gives_the_row_of_its_envelope(op: str, before: dict | None, after: dict | None) -> None:
    key = {"id": 7}
    from_event = DebeziumJsonDecoder().decode(message(_cloudevent(op, before, after), key)).rows[0]
    from_envelope = DebeziumJsonDecoder().decode(message(_envelope(op, before, after), key)).rows[0]
    assert from_event == from_envelope
    assert from_event["transaction_id"] == "900:100" and from_event["source_position"] == "100"
    image = from_event["after"] or from_event["before"]
    assert image["flags"] == "AgE=" and image["price"] in ("2.30", "3.33")  # Bits read big-endian


@pytest.mark.parametrize(("doc", "expected"), [
    ({"specversion": "1.0", "type": "io.debezium.connector.mysql.DataChangeEvent", "data": {}}, True),
    ({"specversion": "1.0", "type": "io.debezium.mysql.datachangeevent", "data": {}}, True),
    ({"specversion": "1.0", "type": "UserCreated", "iodebeziumop": "c", "data": {}}, True),
    ({"specversion": "1.0", "type": "com.example.order.created", "data": {}}, False),
    ({"type": "io.debezium.connector.mysql.DataChangeEvent", "data": {}}, False),
])
def test_cloudevent_detection(doc: dict, expected: bool) -> None:
    assert DebeziumJsonDecoder.matches(doc) is expected


@pytest.mark.parametrize(("change", "reason", "words"), [
    ({"iodebeziumop": None}, errors.MISSING_FIELD, "extension.attributes.enable=false"),
    ({"datacontenttype": "application/avro", "data": "AAAAAAEAAgICAg=="}, errors.INVALID_FIELD,
     "data.serializer.type=avro"),
    ({"type": "UserCreated", "data": {"someField1": "some value 1"}}, errors.MISSING_FIELD, "no row images"),
])
def test_cloudevent_without_a_decodable_change_is_rejected_saying_why(change: dict, reason: str,
                                                                      words: str) -> None:
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(message({**_cloudevent("c", None, ROW), **change}))
    assert info.value.reason == reason and words in info.value.detail


def test_flink_cdc_history_record_is_the_schema_change_it_carries() -> None:
    history = {"source": {"file": "binlog.000001", "pos": 4, "server_id": 1},
               "databaseName": "inventory", "ddl": "ALTER TABLE customers ADD c DECIMAL(40,2)",
               "tableChanges": [{"type": "ALTER", "id": "\"inventory\".\"customers\"",
                                 "table": {"primaryKeyColumnNames": ["id"], "columns": [
                                     {"name": "id", "jdbcType": 4, "typeName": "INT"},
                                     {"name": "c", "jdbcType": 3, "typeName": "DECIMAL",
                                      "length": 40, "scale": 2}]}}]}
    doc = {"source": SOURCE, "historyRecord": json.dumps(history)}
    assert DebeziumJsonDecoder.matches(doc)
    [row] = DebeziumJsonDecoder().decode(message(doc)).rows
    assert (row["op"], row["database"], row["table_name"], row["ddl"]) == (
        "DDL", "inventory", "customers", "ALTER TABLE customers ADD c DECIMAL(40,2)")
    assert row["primary_key_columns"] == ["id"]
    assert row["column_types"] == {"id": "LONG", "c": "DECIMAL(40,2)"}
    assert row["event_time"] == 1_000_000  # source.ts_ms 1000, in microseconds
    assert row["source_position"] == "binlog.000001:4"


@pytest.mark.parametrize(("history", "reason"), [
    ("{not json", errors.INVALID_FIELD),
    ("[1, 2]", errors.INVALID_FIELD),
    (json.dumps({"databaseName": "inventory"}), errors.MISSING_FIELD),  # no ddl, no tableChanges
])
def test_unreadable_history_record_is_quarantined(history: str, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        DebeziumJsonDecoder().decode(message({"source": SOURCE, "historyRecord": history}))
    assert caught.value.reason == reason


def test_oracle_number_ddl_types_agree_with_the_change_events() -> None:
    def column(name: str, length: int | None, scale: int | None) -> dict:
        return {"name": name, "jdbcType": 2, "typeName": "NUMBER", "length": length, "scale": scale}

    columns = [column("SMALL", 9, 0), column("WIDE", 18, 0), column("INT19", 19, 0),
               column("NEG", 16, -2), column("NEG_WIDE", 20, -2), column("MONEY", 10, 2),
               column("ANY", None, None)]
    doc = {"source": {"connector": "oracle", "db": "ORCL", "schema": "S", "table": "T", "ts_ms": 0},
           "databaseName": "ORCL", "schemaName": "S", "ddl": "CREATE TABLE T (...)",
           "tableChanges": [{"type": "CREATE", "id": "\"ORCL\".\"S\".\"T\"",
                             "table": {"primaryKeyColumnNames": [], "columns": columns}}]}
    [row] = DebeziumJsonDecoder().decode(message(doc)).rows
    # NUMBER(p, s <= 0) with p - s < 19 is sent as int8/16/32/64; wider ones as Decimal.
    assert row["column_types"] == {"SMALL": "LONG", "WIDE": "LONG", "INT19": "DECIMAL(19,0)",
                                   "NEG": "LONG", "NEG_WIDE": "DECIMAL(22,0)",
                                   "MONEY": "DECIMAL(10,2)", "ANY": "DECIMAL"}


def test_bare_value_kafka_key_names_no_column_and_says_so() -> None:
    payload = {"op": "c", "before": None, "after": {"id": 27}, "source": SOURCE}
    [row] = DebeziumJsonDecoder().decode(RawMessage(value=json.dumps(payload).encode(),
                                                    key=b'{"payload": 27, "schema": {}}')).rows
    assert (row["primary_key_columns"], row["row_key"]) == ([], None)
    assert "message key is not a struct of key columns; key columns taken from elsewhere" in row["warnings"]


@pytest.mark.parametrize(("source_schema", "source", "db_type"), [
    ("io.debezium.connector.mysql.Source", {"db": "inventory", "table": "customers"}, "mysql"),
    ("io.debezium.connector.mongo.Source", {"db": "inventory", "table": "customers"}, "mongodb"),
    ("io.debezium.connector.mysql.Source", {**SOURCE, "connector": "TiCDC"}, "TiCDC"),
    ("my.own.Source", {"db": "inventory", "table": "customers"}, None),
])
def test_db_type_of_a_source_without_connector_is_named_by_its_schema(
        source_schema: str, source: dict, db_type: str | None) -> None:
    # Debezium before 0.10 (e.g. the 0.4 tutorial's MySQL events) wrote no source.connector.
    schema = {"type": "struct", "name": "dbserver1.inventory.customers.Envelope", "fields": [
        {"type": "struct", "optional": True, "field": "after",
         "fields": [{"type": "int32", "optional": False, "field": "id"}]},
        {"type": "struct", "optional": False, "field": "source", "name": source_schema,
         "fields": [{"type": "string", "optional": True, "field": "db"}]},
        {"type": "string", "optional": False, "field": "op"}]}
    payload = {"before": None, "after": {"id": 1004}, "source": source, "op": "u", "ts_ms": 1486501486308}
    row = DebeziumJsonDecoder().decode(message({"schema": schema, "payload": payload},
                                               key={"id": 1004})).rows[0]
    assert row["db_type"] == db_type
    assert row["after"] == {"id": "1004"}


@pytest.mark.parametrize(("source", "db_type"), [
    ({"name": "dbserver1", "server_id": 0, "ts_sec": 0, "file": "mysql-bin.000003", "pos": 154,
      "row": 0, "snapshot": True, "db": "inventory", "table": "customers"}, "mysql"),
    ({"name": "dbserver1", "ts_usec": 1559033904863123, "txId": 556, "lsn": 24023128,
      "snapshot": False, "db": "postgres", "schema": "public", "table": "customers"}, "postgresql"),
    ({"name": "dbserver1", "db": "inventory", "table": "customers"}, None),
])
def test_db_type_of_a_schemaless_source_without_connector_is_named_by_its_fields(
        source: dict, db_type: str | None) -> None:
    payload = {"before": None, "after": {"id": 1004}, "source": source, "op": "u", "ts_ms": 1486501486308}
    row = DebeziumJsonDecoder().decode(message(payload, key={"id": 1004})).rows[0]
    assert row["db_type"] == db_type


def test_null_envelope_is_a_tombstone_under_auto_too() -> None:
    from cdclake.formats.detect import AutoDecoder

    value = RawMessage(value=b'{"schema":null,"payload":null}')
    assert AutoDecoder().decode(value).control == DebeziumJsonDecoder().decode(value).control == "TOMBSTONE"


@pytest.mark.parametrize("value", [b"null", b" null\n"])
def test_json_null_text_is_a_tombstone_under_auto_too(value: bytes) -> None:
    # Kafka consoles print a tombstone as the text null; debezium_json reads it so, and auto too.
    from cdclake.formats.detect import AutoDecoder

    raw = RawMessage(value=value)
    assert AutoDecoder().decode(raw).control == DebeziumJsonDecoder().decode(raw).control == "TOMBSTONE"


@pytest.mark.parametrize(("value", "kind"), [(b"[1, 2]", "array"), (b'"text"', "string"),
                                             (b"12.50", "number"), (b"true", "boolean")])
def test_auto_names_a_document_that_is_not_an_object(value: bytes, kind: str) -> None:
    from cdclake.formats.detect import AutoDecoder

    with pytest.raises(DecodeError) as caught:
        AutoDecoder().decode(RawMessage(value=value))
    assert caught.value.reason == errors.UNKNOWN_FORMAT
    assert caught.value.detail == f"the message is a JSON {kind}, not an object: no format sends that"


def test_avro_json_encoding_is_named_in_the_rejection() -> None:
    payload = {"before": None, "after": {"Value": {"id": {"int": 1}}}, "op": "r",
               "source": {"connector": "postgresql", "db": "d", "table": "t",
                          "ts_ms": {"long": 1601531771652}},
               "ts_ms": {"long": 1601531771652}}
    with pytest.raises(DecodeError) as caught:
        DebeziumJsonDecoder().decode(message(payload))
    assert caught.value.reason == errors.INVALID_FIELD
    assert "Avro's JSON encoding" in caught.value.detail


OMS_SOURCE = {"connector": "OB_MYSQL", "pos": "703223@1668491621", "name": "OMS", "version": "",
              "ts_ms": 1668491621000, "db": "test", "table": "t"}
OMS_SCHEMA = {"optional": False, "type": "STRUCT", "fields": [
    {"field": "after", "optional": False, "type": "struct", "fields": [
        {"field": "c04", "optional": False, "type": "bytes"},
        {"field": "c19", "optional": False, "type": "bytes"},
        {"field": "c03", "optional": False, "type": "string"}]},
    {"field": "op", "optional": False, "type": "string"}]}


def test_oms_bytes_are_base16_text_not_base64() -> None:
    # OMS data-format page, Debezium type mapping: BINARY/BLOB/BIT -> BYTES, "An array of bytes
    # encoded in base16" ("c04": "61" is 'a'; read as base64 it would be the byte 0xEB).
    payload = {"op": "c", "source": OMS_SOURCE, "ts_ms": 1668495423594,
               "after": {"c04": "61", "c19": "69" + "00" * 254, "c03": "1241.41000"}}
    row = DebeziumJsonDecoder().decode(message({"schema": OMS_SCHEMA, "payload": payload})).rows[0]
    assert row["after"] == {"c04": "YQ==", "c19": "aQ" + "A" * 338, "c03": "1241.41000"}
    assert row["column_types"] == {"c04": "BINARY", "c19": "BINARY", "c03": "STRING"}
    assert row["source_position"] == "703223@1668491621"
    assert row["warnings"] == []


def test_oms_bytes_that_are_not_hex_keep_their_text_with_a_warning() -> None:
    payload = {"op": "c", "source": OMS_SOURCE, "after": {"c04": "6", "c19": "zz", "c03": "x"}}
    row = DebeziumJsonDecoder().decode(message({"schema": OMS_SCHEMA, "payload": payload})).rows[0]
    assert row["after"] == {"c04": "6", "c19": "zz", "c03": "x"}
    assert len(row["warnings"]) == 2 and "not hex" in row["warnings"][0]


def test_debezium_bytes_stay_base64_without_the_oms_source() -> None:
    source = {**OMS_SOURCE, "name": "dbserver1", "connector": "mysql"}
    payload = {"op": "c", "source": source, "after": {"c04": "YQ==", "c19": "aQ==", "c03": "x"}}
    row = DebeziumJsonDecoder().decode(message({"schema": OMS_SCHEMA, "payload": payload})).rows[0]
    assert row["after"] == {"c04": "YQ==", "c19": "aQ==", "c03": "x"}


@pytest.mark.parametrize("wrapped", [True, False])
def test_oms_heartbeat_is_a_control(wrapped: bool) -> None:
    heartbeat = {"source": {"version": "2.0.1.Final", "connector": "OB_MYSQL", "name": "OMS",
                            "ts_ms": 1744180390000, "pos": 1744180390},
                 "op": "HEARTBEAT", "ts_ms": 1744180390881, "before": {}, "after": {}}
    doc = {"payload": heartbeat} if wrapped else heartbeat
    assert DebeziumJsonDecoder.matches(doc) is True
    decoded = DebeziumJsonDecoder().decode(message(doc))
    assert decoded.control == "HEARTBEAT" and decoded.rows == []


def test_heartbeat_op_is_rejected_unless_oms_and_without_rows() -> None:
    other = {"op": "HEARTBEAT", "source": {**SOURCE}, "before": {}, "after": {}}
    assert DebeziumJsonDecoder.matches(other) is False
    with pytest.raises(DecodeError) as exc:
        DebeziumJsonDecoder().decode(message(other))
    assert exc.value.reason == errors.INVALID_OP
    with_row = {"op": "HEARTBEAT", "source": OMS_SOURCE, "before": {}, "after": {"c04": "61"}}
    with pytest.raises(DecodeError) as exc:
        DebeziumJsonDecoder().decode(message(with_row))
    assert exc.value.reason == errors.INVALID_FIELD


def test_toast_placeholders_in_every_type_rendering_are_left_out_not_written() -> None:
    # Debezium's PostgreSQL connector renders an unchanged TOAST value's placeholder in the
    # column's type (UnchangedToastedPlaceholder, ReselectColumnsPostProcessor): writing these as
    # values would overwrite the real column with the placeholder.
    import hashlib
    import uuid

    placeholder = "__debezium_unavailable_value"
    name_uuid = str(uuid.UUID(bytes=hashlib.md5(placeholder.encode()).digest(), version=3))
    assert name_uuid == "b68a35a7-17ad-35b3-af2a-ae46edb4545a"
    after = {
        "id": 7,
        "text_col": placeholder,
        "bytea_col": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==",
        "bytea_hex": "5f5f646562657a69756d5f756e617661696c61626c655f76616c7565",
        "text_arr": [placeholder],
        "bytea_arr": ["X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="],
        "uuid_arr": [name_uuid],
        "int_arr": list(placeholder.encode()),
        "hstore_map": {placeholder: placeholder},
        "hstore_json": '{"__debezium_unavailable_value":"__debezium_unavailable_value"}',
        # look-alikes that are real values and must be kept
        "text_arr_two": [placeholder, "x"],
        "str_bytes": [str(b) for b in placeholder.encode()],
        "one_number": [95],
        "other_map": {placeholder: "x"},
    }
    source = {"connector": "postgresql", "db": "d", "schema": "public", "table": "t",
              "ts_ms": 1000, "lsn": 1}
    row = DebeziumJsonDecoder().decode(message(
        {"op": "u", "before": None, "after": after, "source": source}, key={"id": 7})).rows[0]
    assert row["after"] == {
        "id": "7",
        "text_arr_two": '["__debezium_unavailable_value","x"]',
        "str_bytes": json.dumps([str(b) for b in placeholder.encode()], separators=(",", ":")),
        "one_number": "[95]",
        "other_map": '{"__debezium_unavailable_value":"x"}',
    }
    assert row["after_is_full"] is False
    left_out = [w.split("'")[1] for w in row["warnings"] if "placeholder" in w]
    assert left_out == ["text_col", "bytea_col", "bytea_hex", "text_arr", "bytea_arr", "uuid_arr",
                        "int_arr", "hstore_map", "hstore_json"]


def test_a_configured_placeholder_is_recognised_in_every_rendering_and_the_default_is_then_data() -> None:
    # unavailable.value.placeholder set on the connector (Debezium reads "hex:..." as bytes).
    import base64
    import hashlib
    import uuid

    custom = "<<toast>>"
    raw = custom.encode()
    after = {
        "id": 7,
        "text_col": custom,
        "bytea_col": base64.b64encode(raw).decode(),
        "text_arr": [custom],
        "uuid_arr": [str(uuid.UUID(bytes=hashlib.md5(raw).digest(), version=3))],
        "int_arr": list(raw),
        "hstore_map": {custom: custom},
        "hstore_json": '{"<<toast>>":"<<toast>>"}',
        # with a custom placeholder configured, Debezium's default text is an ordinary value
        "default_text": "__debezium_unavailable_value",
    }
    source = {"connector": "postgresql", "db": "d", "schema": "public", "table": "t",
              "ts_ms": 1000, "lsn": 1}
    doc = {"op": "u", "before": None, "after": after, "source": source}
    for setting in (custom, "hex:" + raw.hex()):
        decoder = DebeziumJsonDecoder(FormatOptions(unavailable_value_placeholder=setting))
        row = decoder.decode(message(doc, key={"id": 7})).rows[0]
        assert row["after"] == {"id": "7", "default_text": "__debezium_unavailable_value"}
        assert row["after_is_full"] is False
        left_out = [w.split("'")[1] for w in row["warnings"] if "placeholder" in w]
        assert left_out == ["text_col", "bytea_col", "text_arr", "uuid_arr", "int_arr", "hstore_map",
                            "hstore_json"]
    # Without the setting the custom text is data, and Debezium's default is the placeholder.
    row = DebeziumJsonDecoder().decode(message(doc, key={"id": 7})).rows[0]
    assert row["after"]["text_col"] == custom and "default_text" not in row["after"]
    assert [w.split("'")[1] for w in row["warnings"]] == ["default_text"]


def test_a_bad_placeholder_setting_fails_when_the_decoder_is_made() -> None:
    with pytest.raises(ValueError, match="hexadecimal"):
        DebeziumJsonDecoder(FormatOptions(unavailable_value_placeholder="hex:zz"))


def _int_message(kind: str, value: str) -> RawMessage:
    schema = {"type": "struct", "fields": [
        {"field": "after", "type": "struct", "fields": [{"field": "k", "type": kind}]}]}
    # The value is spliced in as written: a JSON number token, not a Python number.
    text = (f'{{"schema": {json.dumps(schema)}, "payload": {{"op": "c", "after": {{"k": {value}}}, '
            f'"source": {json.dumps(SOURCE)}}}}}')
    return RawMessage(value=text.encode())


@pytest.mark.parametrize(("kind", "value"), [
    ("int64", "9223372036854775807"), ("int64", "-9223372036854775808"), ("int32", "-2147483648"),
    ("int16", "32767"), ("int8", "-128"), ("int64", "-1"),  # TiCDC's BIGINT UNSIGNED 2^64-1, wrapped
])
def test_integers_at_the_ends_of_their_type_are_exact(kind: str, value: str) -> None:
    row = DebeziumJsonDecoder().decode(_int_message(kind, value)).rows[0]
    assert row["after"] == {"k": value} and row["column_types"] == {"k": "LONG"} and not row["warnings"]


@pytest.mark.parametrize(("kind", "value", "shown"), [
    # RisingWave's simd_json_parser overflow tests (int64, int16, int32, a double in an int64):
    # each must fail, not load a number the schema cannot hold.
    ("int64", "9223372036854775808", "9223372036854775808"),
    ("int16", "32768", "32768"),
    ("int32", "2147483648", "2147483648"),
    ("int64", "1.797695E308", "17976950000000000000...(309 digits)"),
    ("int64", "18446744073709551615", "18446744073709551615"),
    ("int64", "-9223372036854775809", "-9223372036854775809"),
    ("int8", "-129", "-129"),
])
def test_integers_beyond_their_schema_type_are_quarantined(kind: str, value: str, shown: str) -> None:
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(_int_message(kind, value))
    assert info.value.reason == errors.INVALID_FIELD
    assert info.value.detail == f"column 'k': {shown} does not fit {kind}, its schema type"


def test_an_empty_decimal_is_quarantined_not_read_as_zero() -> None:
    schema = {"type": "struct", "fields": [{"field": "after", "type": "struct", "fields": [
        {"field": "price", "type": "bytes", "name": DECIMAL, "parameters": {"scale": "2"}}]}]}
    doc = {"schema": schema, "payload": {"op": "c", "after": {"price": ""}, "source": SOURCE}}
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode()))
    assert info.value.reason == errors.INVALID_FIELD
    assert info.value.detail == ("column 'price': empty bytes are no Connect Decimal (an unscaled "
                                 "value has at least one byte)")


def test_an_envelope_with_extra_top_level_fields_says_so() -> None:
    # RisingWave's handling_mode.slt writes {"case": ..., "payload": {...}}: no Connect envelope.
    doc = {"case": "0 number small", "payload": {"after": {"case": "0 number small", "at": 100},
                                                  "op": "r"}}
    with pytest.raises(DecodeError) as info:
        DebeziumJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode()))
    assert info.value.reason == errors.INVALID_FIELD
    assert info.value.detail == ("'payload' holds the change, but the message has fields besides "
                                 "'schema' and 'payload' (['case']), so it is no Kafka Connect envelope")
