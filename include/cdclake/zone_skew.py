"""A time skew that is a whole time-zone offset: the likely cause, and the setting that fixes it.

GoldenGate's ``current_ts`` two hours behind ``op_ts``, or zone-less source times read as UTC
eight hours off, show up as a skew within a minute or two of a whole number of hours (or of a
zone's quarter hour). The changelog gate and ``cdclake decode`` name that cause instead of only
the threshold.
"""

from __future__ import annotations

from collections.abc import Iterable

# A skew this close to a multiple of a quarter hour, of at least an hour, reads as a zone offset.
_TOLERANCE_MINUTES = 2.0
_QUARTER = 15

# What each gate column measures, and the topic setting that moves it.
_SETTINGS = {
    "event_time_minutes_after_produced_time": (
        "event time is ahead of the time the change was produced",
        "produced_timezone (ogg_json: the zone of current_ts) or source_timezone (the zone of the "
        "source's zone-less event times)"),
    "event_time_minutes_after_kafka_timestamp": (
        "event time is ahead of the Kafka timestamp",
        "source_timezone (the zone of the source's zone-less event times)"),
    "event_time_minutes_past_hour_end": (
        "event time is past the landing hour",
        "source_timezone (the zone of the source's zone-less event times)"),
}


def zone_offset(minutes: float) -> int | None:
    """The whole zone offset (in minutes) that ``minutes`` of skew is, if it is one."""
    nearest = round(minutes / _QUARTER) * _QUARTER
    if abs(nearest) >= 60 and abs(minutes - nearest) <= _TOLERANCE_MINUTES:
        return int(nearest)
    return None


def _offset_text(minutes: int) -> str:
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def zone_hint(column: str | None, skews: Iterable[float], topics: Iterable[str] = ()) -> str | None:
    """The likely time-zone cause of ``skews`` (minutes) on a gate ``column``, or None."""
    if column not in _SETTINGS:
        return None
    offsets = {zone_offset(float(s)) for s in skews}
    if len(offsets) != 1 or None in offsets:
        return None
    offset = offsets.pop()
    assert offset is not None
    what, setting = _SETTINGS[column]
    named = sorted(set(topics))
    where = f" of topic(s) {', '.join(named)}" if named else ""
    return (f"likely cause: the {what} by a whole time-zone offset ({_offset_text(offset)} h), so times "
            f"are read in the wrong zone; set {setting}{where} to the zone that offset implies "
            "rather than raising the threshold")
