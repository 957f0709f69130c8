"""Where each topic's history begins, and the check that no hour lands over a hole from there.

The offset ledger shows a hole between two landed hours of a topic, but not before its first
one: a fresh lake whose ``schedule.start_date`` is 10:00 would land hour 11 alone as the topic's
first hour, and hour 10's changes would be missing from the tables with nothing said. So each
topic has a **start**, recorded in ``ops.topic_starts``:

- ``topics[].start_date`` when the topic sets one (the user says where it begins);
- else, for the topics a lake lands first, the explicit ``schedule.start_date``;
- else (no start date, or a topic added to a running lake) the first hour landed for it, which
  needs no record: the ledger shows it, and an earlier hour landed later moves it back.

An hour at or after its topic's start is refused while the topic has no landed (or skipped) hour
between the start and it. Hours before the start are backfills and land as before.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdclake.exceptions import OffsetContinuityError

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

SCHEDULE = "schedule.start_date"
TOPIC = "topics[].start_date"


@dataclass(frozen=True)
class TopicStart:
    topic: str
    hour: dt.datetime  # naive UTC, on the hour
    origin: str


@dataclass(frozen=True)
class StartRules:
    """What the configuration says about starts (see the module docstring)."""

    lake_start: dt.datetime | None = None  # the explicit schedule.start_date, naive UTC
    topic_starts: Mapping[str, dt.datetime] | None = None
    configured: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: PipelineConfig) -> StartRules:
        def naive(moment: dt.datetime) -> dt.datetime:
            return moment.astimezone(dt.UTC).replace(tzinfo=None) if moment.tzinfo else moment

        return cls(lake_start=naive(config.start_date) if config.start_date_explicit else None,
                   topic_starts={t.name: naive(t.start_date) for t in config.topics if t.start_date},
                   configured=tuple(t.name for t in config.topics))


def new_starts(rules: StartRules, recorded: Mapping[str, TopicStart], topics: Iterable[str],
               fresh_lake: bool) -> list[TopicStart]:
    """The starts to record before landing ``topics``: on a fresh lake (nothing landed or
    recorded yet) every configured topic's, and a ``topics[].start_date`` new or changed."""
    chosen = dict(rules.topic_starts or {})
    out: dict[str, TopicStart] = {}
    if fresh_lake and rules.lake_start is not None:
        for topic in (*rules.configured, *topics):
            out[topic] = TopicStart(topic, chosen.get(topic, rules.lake_start),
                                    TOPIC if topic in chosen else SCHEDULE)
    for topic in topics:
        have = recorded.get(topic)
        if topic not in out and topic in chosen and (have is None or (have.hour, have.origin) != (
                chosen[topic], TOPIC)):
            out[topic] = TopicStart(topic, chosen[topic], TOPIC)
    return list(out.values())


def check_start(hour: dt.datetime, starts: Mapping[str, TopicStart],
                latest_landed: Mapping[str, dt.datetime | None]) -> None:
    """Refuse ``hour`` for a topic whose start is earlier while no hour of the topic from its start
    on is landed (``latest_landed``: the topic's latest landed hour before ``hour``). Later holes
    are the ledger's check (``offsets.check_continuity``)."""
    holes: list[str] = []
    firsts: list[dt.datetime] = []
    for topic, start in sorted(starts.items()):
        latest = latest_landed.get(topic)
        if start.hour >= hour or (latest is not None and latest >= start.hour):
            continue
        last = hour - dt.timedelta(hours=1)
        missing = (f"hour {_text(start.hour)} is" if start.hour == last
                   else f"hours {_text(start.hour)} .. {_text(last)} are")
        firsts.append(start.hour)
        holes.append(f"{topic}: {missing} not landed, and the topic begins at {_text(start.hour)} "
                     f"({start.origin}, recorded in ops.topic_starts)")
    if holes:
        first, after = min(firsts), hour + dt.timedelta(hours=1)
        raise OffsetContinuityError(
            f"hour {_text(hour)}: the hours before it are not all landed: " + "; ".join(holes)
            + f". Land the hours in order (`cdclake run --start {first:%Y-%m-%dT%H} "
              f"--end {after:%Y-%m-%dT%H}` runs them and this one, or a backfill from there), "
              "or record one as skipped (`cdclake land --hour H --skip REASON`)")


def _text(hour: dt.datetime) -> str:
    return hour.strftime("%Y-%m-%dT%H:00:00Z")
