"""aws_dms_json beyond the fixtures: before images, control records, times."""

from __future__ import annotations

import json

import pytest

from cdclake.formats import errors
from cdclake.formats.aws_dms_json import AwsDmsJsonDecoder
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import RawMessage
from cdclake.formats.detect import detect

META = {"timestamp": "2021-02-18T23:57:11.970360Z", "record-type": "data", "operation": "update",
        "partition-key-type": "schema-table", "schema-name": "s", "table-name": "t"}


def _decode(doc: dict, key: bytes | None = None, keys: list[str] | None = None):
    options = FormatOptions(primary_key_overrides={"s.t": tuple(keys)} if keys else {})
    return AwsDmsJsonDecoder(options).decode(RawMessage(value=json.dumps(doc).encode(), key=key))


def test_detection_needs_metadata_record_type_and_operation() -> None:
    assert detect({"data": {}, "metadata": META}) is AwsDmsJsonDecoder
    assert detect({"data": {}, "metadata": {"timestamp": "x"}}) is None


def test_before_image_object_inside_data_is_not_a_column() -> None:
    row = _decode({"data": {"id": 2, "before-image": {"id": 1}}, "metadata": META}).rows[0]
    assert row["after"] == {"id": "2"} and row["before"] == {"id": "1"}


def test_commit_timestamp_is_the_event_time() -> None:
    meta = dict(META, **{"commit-timestamp": "2021-02-18T23:57:11Z"})
    row = _decode({"data": {"id": 1}, "metadata": meta}, keys=["id"]).rows[0]
    assert row["event_time"] == 1613692631 * 1_000_000
    assert row["produced_time"] == 1613692631 * 1_000_000 + 970360


def test_control_records() -> None:
    control = {"metadata": dict(META, **{"record-type": "control", "operation": "drop-table"})}
    assert _decode(control).rows[0]["ddl"] == "drop-table"
    other = {"metadata": dict(META, **{"record-type": "control", "operation": "awsdms-status"})}
    assert _decode(other).control == "CONTROL"


def test_truncate_table_control_truncates_and_camel_case_operations_are_read() -> None:
    for spelling in ("truncate-table", "TruncateTable"):
        control = {"metadata": dict(META, **{"record-type": "control", "operation": spelling})}
        [row] = _decode(control).rows
        assert (row["op"], row["schema_name"], row["table_name"]) == ("TRUNCATE", "s", "t")
    legacy = {"metadata": dict(META, **{"record-type": "control", "operation": "DropTable"})}
    [row] = _decode(legacy).rows
    assert (row["op"], row["ddl"]) == ("DDL", "drop-table")


def test_kafka_key_is_the_row_identity_only_for_primary_key_partitioning() -> None:
    meta = dict(META, **{"partition-key-type": "primary-key"})
    assert _decode({"data": {"id": 1}, "metadata": meta}, key=b"1").rows[0]["row_key"] == '["1"]'
    insert = dict(META, operation="insert")
    assert _decode({"data": {"id": 1}, "metadata": insert}, key=b"1").rows[0]["row_key"] is None


def test_keyless_update_without_before_image_is_quarantined() -> None:
    # Nothing says which row it replaces: applied, it would leave the old row beside the new one.
    with pytest.raises(errors.DecodeError) as info:
        _decode({"data": {"id": 1, "n": "x"}, "metadata": META})
    assert info.value.reason == errors.MISSING_KEY and "primary_keys" in str(info.value)
    assert _decode({"data": {"id": 1, "n": "x"}, "metadata": META}, keys=["id"]).rows[0]["row_key"] == '["1"]'
    with_before = {"before-image": {"id": 1, "n": "w"}, "data": {"id": 1, "n": "x"}, "metadata": META}
    assert _decode(with_before).rows[0]["before"] == {"id": "1", "n": "w"}


def test_create_table_control_gives_key_columns_and_only_unambiguous_types() -> None:
    # Shape of a real create-table record (crate/commons-codec tests/transform/test_aws_dms.py).
    columns = {"id": {"nullable": False, "type": "INT32"}, "name": {"type": "STRING"},
               "price": {"type": "NUMERIC", "precision": 10, "scale": 2},
               "odd": {"type": "NUMERIC", "precision": None}, "at": {"type": "TIMESTAMP"},
               "big": {"type": "UINT64"}}
    control = {"control": {"table-def": {"columns": columns, "primary-key": ["id"]}},
               "metadata": dict(META, **{"record-type": "control", "operation": "create-table"})}
    row = _decode(control).rows[0]
    assert (row["op"], row["ddl"], row["primary_key_columns"]) == ("DDL", "create-table", ["id"])
    assert row["column_types"] == {"id": "LONG", "name": "STRING", "price": "DECIMAL(10,2)",
                                   "big": "DECIMAL(20,0)"}


def test_empty_before_image_and_key_change_before_image() -> None:
    # DMS sends "before-image": {} when no before column qualifies, and only the key
    # columns (ColumnFilter pk-only) when the key changed.
    empty = {"before-image": {}, "data": {"id": 1}, "metadata": META}
    assert _decode(empty, keys=["id"]).rows[0]["before"] is None
    moved = {"before-image": {"id": 46}, "data": {"id": 45, "n": "x"}, "metadata": META}
    row = _decode(moved, keys=["id"]).rows[0]
    assert (row["before"], row["after"], row["row_key"]) == ({"id": "46"}, {"id": "45", "n": "x"}, '["45"]')
    # Keyless, that pk-only before image would match no stored whole row: quarantined.
    with pytest.raises(errors.DecodeError) as info:
        _decode(moved)
    assert info.value.reason == errors.MISSING_KEY and "pk-only" in info.value.detail


def test_partition_key_value_is_the_row_identity_for_primary_key_partitioning() -> None:
    # IncludePartitionValue + PartitionIncludeSchemaTable (README sample: "test_db.product.2").
    meta = dict(META, **{"partition-key-type": "primary-key", "partition-key-value": "s.t.2"})
    row = _decode({"data": {"id": 2, "n": "x"}, "metadata": meta}).rows[0]
    assert row["row_key"] == '["s.t.2"]'
    other = dict(META, **{"partition-key-type": "task-id", "partition-key-value": "AACC"})
    with pytest.raises(errors.DecodeError):
        _decode({"data": {"id": 2, "n": "x"}, "metadata": other})


def test_pretty_printed_json_message_format_decodes_the_same() -> None:
    doc = {"data": {"id": 1}, "metadata": dict(META, operation="insert")}
    pretty = AwsDmsJsonDecoder().decode(RawMessage(value=json.dumps(doc, indent=4).encode())).rows
    assert pretty == _decode(doc).rows


def test_table_alter_operations_are_ddl_rows() -> None:
    # IncludeTableAlterOperations: rename-table, drop-table, add-column, drop-column, rename-column;
    # DMS also replicates "change column data type".
    for operation in ("rename-table", "drop-table", "add-column", "drop-column", "rename-column",
                      "column-type-change", "change-columns"):
        control = {"metadata": dict(META, **{"record-type": "control", "operation": operation})}
        [row] = _decode(control).rows
        assert (row["op"], row["ddl"]) == ("DDL", operation)
    awsdms = {"metadata": dict(META, **{"record-type": "control", "operation": "awsdms-status"})}
    assert _decode(awsdms).control == "CONTROL"
