"""Where a topic's history begins (``cdclake.topic_starts``): which start is recorded, and which
hours are refused, without Spark."""

from __future__ import annotations

import datetime as dt

import pytest

from cdclake.exceptions import OffsetContinuityError
from cdclake.topic_starts import (
    SCHEDULE,
    TOPIC,
    StartRules,
    TopicStart,
    check_start,
    new_starts,
)

H = dt.datetime(2025, 3, 1, 10)
HOUR = dt.timedelta(hours=1)
LAKE = StartRules(lake_start=H, configured=("a", "b"))


def test_a_fresh_lake_starts_every_configured_topic_at_the_schedule_start() -> None:
    assert new_starts(LAKE, {}, ["a"], True) == [TopicStart("a", H, SCHEDULE), TopicStart("b", H, SCHEDULE)]
    # Not on a lake that has landed or recorded anything: a topic added later begins at its first
    # landed hour, which the ledger shows without a record.
    assert new_starts(LAKE, {"a": TopicStart("a", H, SCHEDULE)}, ["c"], False) == []
    assert new_starts(StartRules(configured=("a",)), {}, ["a"], True) == []


def test_a_topic_start_wins_over_the_schedule_and_is_recorded_again_when_it_changes() -> None:
    rules = StartRules(lake_start=H, topic_starts={"b": H + 5 * HOUR}, configured=("a", "b"))
    assert new_starts(rules, {}, ["a"], True) == [TopicStart("a", H, SCHEDULE),
                                                  TopicStart("b", H + 5 * HOUR, TOPIC)]
    recorded = {"b": TopicStart("b", H + 5 * HOUR, TOPIC)}
    assert new_starts(rules, recorded, ["b"], False) == []
    moved = StartRules(topic_starts={"b": H + 2 * HOUR})
    assert new_starts(moved, recorded, ["b"], False) == [TopicStart("b", H + 2 * HOUR, TOPIC)]
    assert new_starts(moved, {}, ["b", "c"], False) == [TopicStart("b", H + 2 * HOUR, TOPIC)]


def test_an_hour_after_the_start_is_refused_until_an_hour_since_the_start_is_landed() -> None:
    starts = {"a": TopicStart("a", H, SCHEDULE), "b": TopicStart("b", H, SCHEDULE)}
    with pytest.raises(OffsetContinuityError) as refused:
        check_start(H + 2 * HOUR, starts, {"b": H + HOUR})
    assert str(refused.value) == (
        "hour 2025-03-01T12:00:00Z: the hours before it are not all landed: a: hours 2025-03-01T10:00:00Z .. "
        "2025-03-01T11:00:00Z are not landed, and the topic begins at 2025-03-01T10:00:00Z "
        "(schedule.start_date, recorded in ops.topic_starts). Land the hours in order "
        "(`cdclake run --start 2025-03-01T10 --end 2025-03-01T13` runs them and this one, or a backfill "
        "from there), or record one as skipped (`cdclake land --hour H --skip REASON`)")
    with pytest.raises(OffsetContinuityError, match="a: hour 2025-03-01T10:00:00Z is not landed"):
        check_start(H + HOUR, starts, {})
    # A landed hour before the start does not count; the start hour itself and backfills before it land.
    with pytest.raises(OffsetContinuityError, match="a: hour 2025-03-01T10:00:00Z is not landed"):
        check_start(H + HOUR, starts, {"a": H - HOUR, "b": H})
    check_start(H, starts, {})
    check_start(H - 5 * HOUR, starts, {})
    check_start(H + 3 * HOUR, starts, {"a": H, "b": H + 2 * HOUR})
