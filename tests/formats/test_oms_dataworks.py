"""oms_dataworks beyond the fixtures: time forms, heartbeat, detection."""

from __future__ import annotations

import json

from cdclake.formats.canonical import RawMessage
from cdclake.formats.oms_dataworks import OmsDataWorksDecoder, epoch_instant_text, zoned_instant_text


def test_millisecond_epoch_with_nanosecond_fraction() -> None:
    assert epoch_instant_text("1590315269000.123456789", "ms") == "2020-05-24T10:14:29.123456789Z"
    assert epoch_instant_text("1590315269123", "ms") == "2020-05-24T10:14:29.123Z"
    assert epoch_instant_text("1606233662.012345", "s") == "2020-11-24T16:01:02.012345Z"


def test_zoned_datetimes() -> None:
    shanghai = "2020-11-25 00:01:02.012345 Asia/Shanghai"
    assert zoned_instant_text(shanghai, "UTC") == "2020-11-24T16:01:02.012345Z"
    assert zoned_instant_text("2020-11-25 00:01:02 +05:30", "UTC") == "2020-11-24T18:31:02Z"
    assert zoned_instant_text("2020-11-25 00:01:02", "Asia/Shanghai") == "2020-11-24T16:01:02Z"


def test_heartbeat_is_control() -> None:
    value = json.dumps({"version": "2.0", "payload": {"timestamp": {"eventTime": 1}, "op": "HEARTBEAT"}})
    decoded = OmsDataWorksDecoder().decode(RawMessage(value=value.encode()))
    assert decoded.control == "HEARTBEAT" and decoded.rows == []


def test_signature() -> None:
    assert OmsDataWorksDecoder.matches({"version": "2.0", "payload": {"op": "HEARTBEAT"}})
    assert not OmsDataWorksDecoder.matches({"prevStruct": None, "postStruct": {}, "allMetaData": {}})
    assert not OmsDataWorksDecoder.matches({"schema": {"type": "struct"}, "payload": {"op": "c"}})


def test_early_years_are_zero_padded() -> None:
    assert zoned_instant_text("0900-01-01 08:00:00 +08:00", "UTC") == "0900-01-01T00:00:00Z"


def test_bit_with_width_is_padded_like_the_default_format() -> None:
    from cdclake.formats.oms_dataworks import value_rule

    convert, logical = value_rule("bit(16)", "Bw==", "UTC")
    assert (convert("Bw=="), logical) == ("AAc=", "BINARY")
