"""The Spark path's per-batch glue (``decode_spark._decode_batch``) without Spark: it builds Arrow
outcome batches column by column, and they must equal the record-at-a-time form (``outcomes_of``);
a message whose row Arrow cannot hold is quarantined instead of failing the batch."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow as pa

from cdclake.decode_cli import is_binary_format, read_keys, read_messages
from cdclake.formats import get_decoder
from cdclake.formats.base import FormatOptions
from cdclake.formats.canal_json import CanalJsonDecoder
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.decoding import decode_one
from cdclake.formats.drs_mongo import DrsMongoDecoder
from spark_jobs.decode_spark import (
    _OUTCOME_ARROW,
    KIND_REJECTED,
    KIND_ROW,
    TopicFormat,
    _decode_batches,
    outcomes_of,
)
from tests.formats.fixture_cases import all_cases

_RAW_ARROW = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                        ("timestamp", pa.timestamp("us", tz="UTC")), ("key", pa.binary()),
                        ("value", pa.binary())])
_STAMPS = [dt.datetime(2024, 6, 1, 12, 5, 1, 123456, tzinfo=dt.UTC), None,
           dt.datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=dt.UTC)]


def _raw_batch(messages: list[tuple[str, bytes | None, bytes | None]]) -> pa.RecordBatch:
    n = len(messages)
    return pa.RecordBatch.from_pydict({
        "topic": [t for t, _, _ in messages], "partition": [2] * n, "offset": list(range(n)),
        "timestamp": [_STAMPS[i % 3] for i in range(n)], "key": [k for _, k, _ in messages],
        "value": [v for _, _, v in messages]}, schema=_RAW_ARROW)


def _millis(stamp: dt.datetime | None) -> int | None:
    if stamp is None:
        return None
    return (stamp - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)


def _decode(formats: dict[str, TopicFormat], batch: pa.RecordBatch) -> list[dict[str, Any]]:
    decode = _decode_batches(formats, TopicFormat("auto", FormatOptions()))
    return [row for out in decode(iter([batch])) for row in out.to_pylist()]


def test_columnar_batches_equal_the_record_at_a_time_outcomes() -> None:
    formats: dict[str, TopicFormat] = {}
    messages: list[tuple[str, bytes | None, bytes | None]] = []
    for case in all_cases():
        formats[case.id] = TopicFormat(case.format_id, FormatOptions(**case.options()))
        keys = read_keys(case.keys_path) if case.keys_path else None
        for _, m in read_messages(case.input_path, is_binary_format(case.format_id), keys,
                                  case.whole_file):
            messages.append((case.id, m.key, m.value))
    messages += [("canal_json/bad_inputs", None, None), ("canal_json/bad_inputs", None, b"")]
    batch = _raw_batch(messages)
    got = _decode(formats, batch)
    expected: list[dict[str, Any]] = []
    for i, (topic, key, value) in enumerate(messages):
        spec = formats[topic]
        message = RawMessage(value=value, key=key, topic=topic, partition=2, offset=i,
                             timestamp_ms=_millis(_STAMPS[i % 3]))
        expected += outcomes_of(get_decoder(spec.format_id, spec.options), message)
    table = pa.Table.from_pylist(expected, schema=_OUTCOME_ARROW)
    assert got == table.to_pylist()
    assert {row["_kind"] for row in got} == {"row", "control", "rejected"}


def test_a_vendor_value_of_the_wrong_json_type_in_a_text_field_is_quarantined() -> None:
    doc = {"id": 256, "op": "INSERT", "dbType": "MongoDB", "db": "ljx", "coll": ["not", "a", "name"],
           "value": '{"_id": 1, "c": "a"}', "where": None, "es": 1684315111439, "ts": 1684315111576}
    good = dict(doc, coll="ljx")
    outcome = decode_one(DrsMongoDecoder(), RawMessage(value=json.dumps(doc).encode()))
    assert outcome.rejected is not None
    assert outcome.rejected.reason == "INVALID_FIELD"
    assert outcome.rejected.detail == "drs_mongo: 'table_name' must be text, got an array"
    formats = {"t": TopicFormat("drs_mongo", FormatOptions())}
    rows = _decode(formats, _raw_batch([("t", None, json.dumps(doc).encode()),
                                        ("t", None, json.dumps(good).encode())]))
    assert [r["_kind"] for r in rows] == [KIND_REJECTED, KIND_ROW]
    assert rows[0]["msg_value"] == json.dumps(doc).encode()
    assert rows[1]["table_name"] == "ljx"


class _UnstorableDecoder(CanalJsonDecoder):
    """A decoder bug: an image value that is not text (Arrow's map<string,string> refuses it)."""

    format_id = "canal_json"

    def decode(self, message: RawMessage) -> Decoded:
        decoded = super().decode(message)
        if message.offset == 0:
            for row in decoded.rows:
                row["after"] = {"id": 1}
        return decoded


def test_a_row_arrow_cannot_hold_quarantines_its_message_not_the_batch(monkeypatch) -> None:
    import spark_jobs.decode_spark as decode_spark

    monkeypatch.setattr(decode_spark, "get_decoder", lambda format_id, options: _UnstorableDecoder())
    doc = {"data": [{"id": "1"}, {"id": "2"}], "database": "d", "table": "t", "type": "INSERT",
           "isDdl": False, "mysqlType": {"id": "int"}, "pkNames": ["id"], "es": 1, "ts": 2, "id": 5}
    value = json.dumps(doc).encode()
    rows = _decode({"t": TopicFormat("canal_json", FormatOptions())},
                   _raw_batch([("t", b"k", value), ("t", None, value)]))
    assert [(r["_kind"], r["msg_offset"]) for r in rows] == [(KIND_ROW, 1), (KIND_ROW, 1),
                                                             (KIND_REJECTED, 0)]
    rejected = rows[2]
    assert rejected["format_tried"] == "canal_json" and rejected["reason_code"] == "INVALID_FIELD"
    assert "'after'" in rejected["reason_message"]
    assert rejected["msg_value"] == value and rejected["msg_key"] == b"k"
    assert rejected["after"] is None and rejected["kafka_topic"] is None


def test_a_lone_surrogate_escape_in_a_value_quarantines_its_message_not_the_batch() -> None:
    # "\ud800" is a valid JSON escape but no Unicode text: Python reads it into a str that no
    # UTF-8 column (Arrow, Iceberg) can hold. It failed the whole task before (UnicodeEncodeError).
    good = (b'{"database":"d","table":"t","type":"insert","ts":1700000000,'
            b'"data":{"id":1,"a":"\\ud83d\\ude00"}}')
    bad = good.replace(b"\\ud83d\\ude00", b"x\\ud800")
    rows = _decode({"t": TopicFormat("maxwell_json", FormatOptions())},
                   _raw_batch([("t", None, bad), ("t", None, good)]))
    assert [(r["_kind"], r["msg_offset"]) for r in rows] == [(KIND_ROW, 1), (KIND_REJECTED, 0)]
    assert rows[0]["after"] == [("id", "1"), ("a", "\U0001f600")]
    rejected = rows[1]
    assert (rejected["format_tried"], rejected["reason_code"]) == ("maxwell_json", "INVALID_FIELD")
    assert "cannot be stored" in rejected["reason_message"] and "'after'" in rejected["reason_message"]
    assert rejected["msg_value"] == bad
