"""dataworks_json beyond the fixtures: update pairing across batches, op case, detection."""

from __future__ import annotations

import json

import pytest

from cdclake.formats import errors
from cdclake.formats.canonical import RawMessage
from cdclake.formats.dataworks_json import DataWorksJsonDecoder
from cdclake.formats.decoding import decode_batch
from cdclake.formats.errors import DecodeError

SCHEMA = {"dataColumn": [{"name": "id", "type": "LONG"}, {"name": "v", "type": "STRING"}],
          "primaryKey": ["id"], "source": {"dbType": "MySQL", "dbName": "d", "tableName": "t"}}


def _message(op: str, before: dict | None, after: dict | None, seq: str, offset: int) -> RawMessage:
    payload = {"before": before and {"dataColumn": before}, "after": after and {"dataColumn": after},
               "sequenceId": seq, "op": op, "timestamp": {"eventTime": 1620458077000}}
    return RawMessage(value=json.dumps({"schema": SCHEMA, "payload": payload}).encode(), offset=offset)


def test_halves_pair_by_sequence_id_and_survive_a_split_batch() -> None:
    before = _message("UPDATE_BEFOR", {"id": 1, "v": "a"}, None, "7", 0)
    after = _message("UPDATE_AFTER", None, {"id": 1, "v": "b"}, "7", 1)
    other = _message("INSERT", None, {"id": 2, "v": "z"}, "8", 2)
    merged = decode_batch(DataWorksJsonDecoder(), [before, after, other]).rows
    assert [r["op"] for r in merged] == ["UPDATE", "INSERT"]
    assert merged[0]["before"] == {"id": "1", "v": "a"} and merged[0]["after"] == {"id": "1", "v": "b"}
    assert merged[0]["kafka_offset"] == 1
    assert all("_pair_key" not in r for r in merged)
    lone = decode_batch(DataWorksJsonDecoder(), [after]).rows
    assert lone[0]["op"] == "UPDATE" and lone[0]["before"] is None and lone[0]["row_key"] == '["1"]'


def test_op_names_are_case_sensitive() -> None:
    with pytest.raises(DecodeError) as info:
        DataWorksJsonDecoder().decode(_message("update_after", None, {"id": 1}, "1", 0))
    assert info.value.reason == errors.INVALID_OP
    assert "case-sensitive" in info.value.detail


@pytest.mark.parametrize("op", ["MHEARTBEAT", "TRANSACTION_BEGIN", "TRANSACTION_END", "GTID", "XACOMMIT",
                                "XAROLLBACK"])
def test_control_ops_are_not_rows(op: str) -> None:
    decoded = DataWorksJsonDecoder().decode(_message(op, None, None, "1", 0))
    assert decoded.rows == [] and decoded.control


def test_signature() -> None:
    assert DataWorksJsonDecoder.matches({"schema": SCHEMA, "payload": {"op": "INSERT"}})
    assert not DataWorksJsonDecoder.matches({"schema": {"type": "struct", "fields": []},
                                             "payload": {"op": "c", "after": {}}})
    assert not DataWorksJsonDecoder.matches({"version": "2.0", "schema": {"column": [], "source": {}},
                                             "payload": {"op": "INSERT"}})


def test_minus_one_times_are_unset() -> None:
    """Full-load rows carry ``eventTime``/``checkpointTime`` -1: no source time, not 1969."""
    payload = {"after": {"dataColumn": {"id": 2, "v": "a"}}, "before": None, "op": "INSERT",
               "sequenceId": "-1",
               "timestamp": {"eventTime": -1, "checkpointTime": -1, "systemTime": 1731661820245}}
    message = RawMessage(value=json.dumps({"schema": SCHEMA, "payload": payload}).encode(), offset=0)
    row = decode_batch(DataWorksJsonDecoder(), [message]).rows[0]
    assert row["produced_time"] == 1731661820245000
    assert row["event_time"] == 1731661820245000  # falls back to the sync task's time
    assert row["warnings"] == ["event_time: the message carries no source commit time; produced_time used"]
    assert row["source_sequence"] == "-1"
