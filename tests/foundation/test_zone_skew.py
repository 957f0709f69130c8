"""A skew of whole zone offsets is diagnosed: by the gate's failure line and by `cdclake decode`."""

from __future__ import annotations

import io

from cdclake.zone_skew import zone_hint, zone_offset


def test_whole_zone_offsets_are_recognised_within_two_minutes() -> None:
    assert [zone_offset(m) for m in (120.5, 118.2, 480, 330.9, 345, -60.4)] == [120, 120, 480, 330, 345, -60]
    assert [zone_offset(m) for m in (10, 50, 125, 97.5)] == [None, None, None, None]


def test_a_hint_needs_one_offset_for_every_sampled_row() -> None:
    column = "event_time_minutes_after_kafka_timestamp"
    assert zone_hint(column, [480.2, 479.9], ["t1", "t1"]) is not None
    assert "(+08:00 h)" in str(zone_hint(column, [480.2], ["t1"]))
    assert zone_hint(column, [480.2, 120.0]) is None  # two different offsets: no single cause
    assert zone_hint(column, [33.0]) is None
    assert zone_hint("event_time", [480.0]) is None  # a column the hint does not explain


def test_cdclake_decode_warns_before_the_first_hour_runs(tmp_path) -> None:
    from cdclake.decode_cli import run_decode

    message = ('{"table":"S.T","op_type":"I","op_ts":"2024-01-01 10:00:30.000000",'
               '"current_ts":"2024-01-01T08:00:00.000000","pos":"00000000000000001000","after":{"ID":1}}')
    path = tmp_path / "ogg.jsonl"
    path.write_text(message + "\n")
    out, err = io.StringIO(), io.StringIO()
    assert run_decode([str(path)], "ogg_json", None, None, "UTC", out, err) == 0
    assert err.getvalue() == (
        f"{path}: warning: 1 row(s) with event_time ahead of produced_time: likely cause: the event time "
        "is ahead of the time the change was produced by a whole time-zone offset (+02:00 h), so times "
        "are read in the wrong zone; set produced_timezone (ogg_json: the zone of current_ts) or "
        "source_timezone (the zone of the source's zone-less event times) to the zone that offset "
        "implies rather than raising the threshold\n")
    path.write_text(message.replace("08:00:00", "10:00:00") + "\n")
    err = io.StringIO()
    run_decode([str(path)], "ogg_json", None, None, "UTC", io.StringIO(), err)
    assert err.getvalue() == ""
