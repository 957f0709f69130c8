"""oms_shareplex beyond the fixtures: rowid identity and detection."""

from __future__ import annotations

import json

import pytest

from spark_jobs.formats import errors
from spark_jobs.formats.base import FormatOptions
from spark_jobs.formats.canonical import RawMessage
from spark_jobs.formats.detect import detect
from spark_jobs.formats.errors import DecodeError
from spark_jobs.formats.oms_shareplex import OmsSharePlexDecoder

UPD = {"data": {"v": 2}, "key": {"id": "a-b", "v": 1},
       "meta": {"op": "upd", "time": "2020-11-25T08:00:00", "table": "db.t-x", "rowid": "db.t-x-a-b\u00017"}}


def test_rowid_values_after_the_table_prefix_identify_the_row() -> None:
    decoder = OmsSharePlexDecoder(FormatOptions(source_timezone="Asia/Shanghai"))
    row = decoder.decode(RawMessage(value=json.dumps(UPD).encode())).rows[0]
    assert row["row_key"] == '["a-b","7"]'
    assert (row["database"], row["table_name"]) == ("db", "t-x")
    assert row["after"] == {"v": "2"} and row["after_is_full"] is False
    assert row["event_time"] == 1606262400 * 1_000_000  # 2020-11-25T00:00:00Z


def test_detection_needs_meta_op_and_data() -> None:
    assert detect(UPD) is OmsSharePlexDecoder
    assert detect({"data": {}, "meta": {"op": "merge", "rowid": "x"}}) is not OmsSharePlexDecoder


def test_update_without_rowid_is_missing_key() -> None:
    doc = json.loads(json.dumps(UPD))
    del doc["meta"]["rowid"]
    with pytest.raises(DecodeError) as caught:
        OmsSharePlexDecoder().decode(RawMessage(value=json.dumps(doc).encode()))
    assert caught.value.reason == errors.MISSING_KEY
