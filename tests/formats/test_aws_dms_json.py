"""aws_dms_json beyond the fixtures: before images, control records, times."""

from __future__ import annotations

import json

from spark_jobs.formats.aws_dms_json import AwsDmsJsonDecoder
from spark_jobs.formats.canonical import RawMessage
from spark_jobs.formats.detect import detect

META = {"timestamp": "2021-02-18T23:57:11.970360Z", "record-type": "data", "operation": "update",
        "partition-key-type": "schema-table", "schema-name": "s", "table-name": "t"}


def _decode(doc: dict, key: bytes | None = None):
    return AwsDmsJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode(), key=key))


def test_detection_needs_metadata_record_type_and_operation() -> None:
    assert detect({"data": {}, "metadata": META}) is AwsDmsJsonDecoder
    assert detect({"data": {}, "metadata": {"timestamp": "x"}}) is None


def test_before_image_object_inside_data_is_not_a_column() -> None:
    row = _decode({"data": {"id": 2, "before-image": {"id": 1}}, "metadata": META}).rows[0]
    assert row["after"] == {"id": "2"} and row["before"] == {"id": "1"}


def test_commit_timestamp_is_the_event_time() -> None:
    meta = dict(META, **{"commit-timestamp": "2021-02-18T23:57:11Z"})
    row = _decode({"data": {"id": 1}, "metadata": meta}).rows[0]
    assert row["event_time"] == 1613692631 * 1_000_000
    assert row["produced_time"] == 1613692631 * 1_000_000 + 970360


def test_control_records() -> None:
    control = {"metadata": dict(META, **{"record-type": "control", "operation": "drop-table"})}
    assert _decode(control).rows[0]["ddl"] == "drop-table"
    other = {"metadata": dict(META, **{"record-type": "control", "operation": "awsdms-status"})}
    assert _decode(other).control == "CONTROL"


def test_kafka_key_is_the_row_identity_only_for_primary_key_partitioning() -> None:
    meta = dict(META, **{"partition-key-type": "primary-key"})
    assert _decode({"data": {"id": 1}, "metadata": meta}, key=b"1").rows[0]["row_key"] == '["1"]'
    assert _decode({"data": {"id": 1}, "metadata": META}, key=b"1").rows[0]["row_key"] is None
