"""Offset planning: which Kafka offsets make up one landing hour, and are they all still there.

Planning by time: for a topic-partition, ``offset_for_time(T)`` is the earliest offset whose
timestamp is >= T (Kafka's ``offsetsForTimes``), or the high watermark when no message is that
recent. The plan of an hour ``[start, end)`` is ``[offset_for_time(start), offset_for_time(end))``.

Landing by the ledger: time only decides where an hour *ends*, and where the first hour of a
topic starts. :func:`anchor_to_ledger` makes every other range start where the offset ledger says
the previous landed hour of that partition ended, so consecutive hours meet by construction
whatever was written after an hour was planned:

- a straggler (a CreateTime inside an hour, written after that hour was landed: producer retries,
  a lagging clock) lands in the next hour, which records it as late (``late_messages``,
  ``max_lateness_ms`` in the ledger);
- a partition the topic gained after its first landed hour starts at its first offset (its
  messages may carry any timestamp);
- an hour whose previous hour is not landed is refused (:func:`check_continuity`), naming the
  missing hour: it is filled first (a backfill runs hours in order) or recorded as skipped, and a
  skipped hour's offsets land in the hour after it.

Transactions: commit/abort markers take offsets and carry the *broker's* clock. Offsets of
markers and aborted messages are inside the ranges but never land (``read_committed``), so landed
counts can be below ``end - start``. An open transaction holds the last stable offset still, and
every hour would land short of it while looking green: when the first message it holds back is
older than ``landing.max_transaction_stall_hours`` at the hour's end, planning fails naming the
partition (:class:`TransactionStalledError`).

Retention: ``offsetsForTimes`` on a truncated log answers with the first offset still held, so a
deleted hour plans as an empty range. :func:`check_continuity` therefore compares each range with
the low watermark *and* with the ledger: a range that begins at the log start offset while the
ledger cannot account for the offsets before it means messages of this hour may be gone, and
landing fails naming them.

The plan is a JSON-serialisable dataclass (Airflow XCom, a CLI argument, a file).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from cdclake.exceptions import (
    HourNotOverError,
    LandingError,
    OffsetContinuityError,
    RetentionGapError,
    TopicNotFoundError,
    TransactionStalledError,
)

if TYPE_CHECKING:
    from confluent_kafka import Consumer

TIMEOUT_S = 30.0


def _utc(moment: dt.datetime) -> dt.datetime:
    """Aware UTC from naive-UTC or aware datetimes."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch_ms(moment: dt.datetime) -> int:
    return int(_utc(moment).timestamp() * 1000)


@dataclass(frozen=True)
class PartitionRange:
    """One topic-partition's offsets for the hour: ``[start, end)``; watermarks when planned."""

    topic: str
    partition: int
    start: int
    end: int
    low_watermark: int
    high_watermark: int

    @property
    def is_empty(self) -> bool:
        return self.start >= self.end


@dataclass(frozen=True)
class OffsetPlan:
    """The offset ranges of one hour ``[start, end)`` (ISO UTC texts), every partition of every topic."""

    start: str
    end: str
    ranges: tuple[PartitionRange, ...]
    planned_at: str = ""
    topics: tuple[str, ...] = field(default=())

    @property
    def hour(self) -> dt.datetime:
        """The landing hour as a naive UTC datetime (Spark's convention)."""
        return dt.datetime.fromisoformat(self.start.replace("Z", "+00:00")).replace(tzinfo=None)

    def for_topic(self, topic: str) -> tuple[PartitionRange, ...]:
        return tuple(r for r in self.ranges if r.topic == topic)

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, raw: Mapping) -> OffsetPlan:
        try:
            ranges = tuple(PartitionRange(**r) for r in raw["ranges"])
            return cls(start=str(raw["start"]), end=str(raw["end"]), ranges=ranges,
                       planned_at=str(raw.get("planned_at", "")),
                       topics=tuple(raw.get("topics") or sorted({r.topic for r in ranges})))
        except (KeyError, TypeError) as exc:
            raise LandingError(f"not an offset plan ({exc}); produce one with plan_offset_ranges") from None

    @classmethod
    def from_json(cls, text: str) -> OffsetPlan:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise LandingError(f"offset plan is not valid JSON: {exc}") from None


DEFAULT_TRANSACTION_STALL = dt.timedelta(hours=2)


def plan_offset_ranges(settings: Mapping[str, str], topics: Sequence[str], start: dt.datetime,
                       end: dt.datetime, *, now: dt.datetime | None = None, timeout_s: float = TIMEOUT_S,
                       max_transaction_stall: dt.timedelta = DEFAULT_TRANSACTION_STALL) -> OffsetPlan:
    """Plan ``[offset_for_time(start), offset_for_time(end))`` for every partition of ``topics``.

    ``settings`` is a confluent-kafka client configuration (see ``cdclake.kafka_settings``).
    Raises :class:`HourNotOverError` when ``end`` is after ``now`` (the hour's offsets are not
    final yet), :class:`TopicNotFoundError` for a topic the cluster does not have.
    """
    from confluent_kafka import Consumer, KafkaException

    start_utc, end_utc = _utc(start), _utc(end)
    now_utc = _utc(now or dt.datetime.now(dt.UTC))
    if end_utc <= start_utc:
        raise LandingError(f"empty interval [{_iso(start)}, {_iso(end)}): end must be after start")
    if end_utc > now_utc:
        raise HourNotOverError(
            f"hour [{_iso(start)}, {_iso(end)}) is not over yet (now {_iso(now_utc)}); its offsets are "
            f"not final. Land it after {_iso(end)}.")
    if not topics:
        raise LandingError("no topics to plan; list them under 'topics' in the pipeline configuration")
    consumer = Consumer({**settings, "group.id": "cdclake-offset-planner", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    stalls = _StallCheck(settings, end_utc, max_transaction_stall, timeout_s)
    try:
        metadata = consumer.list_topics(timeout=timeout_s)
        ranges: list[PartitionRange] = []
        for topic in topics:
            described = metadata.topics.get(topic)
            if described is None or described.error is not None or not described.partitions:
                known = ", ".join(sorted(t for t in metadata.topics if not t.startswith("__"))) or "none"
                raise TopicNotFoundError(
                    f"topic {topic!r} does not exist on {settings.get('bootstrap.servers')} (topics there: "
                    f"{known}); create it or remove it from the pipeline configuration")
            ranges.extend(_plan_topic(consumer, topic, sorted(described.partitions), start_utc, end_utc,
                                      timeout_s))
        stalls.check(ranges)
    except KafkaException as exc:
        raise LandingError(f"Kafka did not answer while planning offsets ({exc}); check that the broker "
                           f"at {settings.get('bootstrap.servers')} is reachable") from None
    finally:
        consumer.close()
        stalls.close()
    return OffsetPlan(start=_iso(start_utc), end=_iso(end_utc), ranges=tuple(ranges),
                      planned_at=_iso(now_utc), topics=tuple(topics))


def _plan_topic(consumer: Consumer, topic: str, partitions: list[int], start: dt.datetime, end: dt.datetime,
                timeout_s: float) -> list[PartitionRange]:
    from confluent_kafka import TopicPartition

    starts = _offsets_for_time(consumer, topic, partitions, _epoch_ms(start), timeout_s)
    ends = _offsets_for_time(consumer, topic, partitions, _epoch_ms(end), timeout_s)
    planned = []
    for partition in partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s,
                                                   cached=False)
        # -1: no message at or after T -> the high watermark (what the next message will get).
        first = high if starts[partition] < 0 else min(starts[partition], high)
        last = high if ends[partition] < 0 else min(ends[partition], high)
        planned.append(PartitionRange(topic, partition, first, max(first, last), low, high))
    return planned


class _StallCheck:
    """Finds partitions whose last stable offset an open transaction has held for too long."""

    def __init__(self, settings: Mapping[str, str], end: dt.datetime, allowed: dt.timedelta,
                 timeout_s: float) -> None:
        self.settings, self.end, self.allowed, self.timeout_s = settings, end, allowed, timeout_s
        self.reader: Consumer | None = None

    def check(self, ranges: Sequence[PartitionRange]) -> None:
        from confluent_kafka import Consumer, TopicPartition

        stalled = []
        for r in ranges:
            if r.end < r.high_watermark:  # the hour ends before the last stable offset
                continue
            if self.reader is None:  # sees uncommitted messages: the log end and what is held back
                self.reader = Consumer({**self.settings, "group.id": "cdclake-offset-planner",
                                        "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
            tp = TopicPartition(r.topic, r.partition)
            log_end = self.reader.get_watermark_offsets(tp, timeout=self.timeout_s, cached=False)[1]
            if log_end <= r.high_watermark:
                continue
            since = self._timestamp_at(r.topic, r.partition, r.high_watermark)
            if since is not None and self.end - since > self.allowed:
                stalled.append(f"{r.topic}/{r.partition}: offset {r.high_watermark} (written {_iso(since)}) "
                               f"and the {log_end - r.high_watermark - 1} offsets after it are held back "
                               "by a transaction still open")
        if stalled:
            raise TransactionStalledError(
                f"hour ending {_iso(self.end)}: the last stable offset has not moved for more than "
                f"{self.allowed} (landing.max_transaction_stall_hours): " + "; ".join(stalled)
                + ". Commit or abort the producer's transaction (kafka-transactions.sh), then re-run.")

    def _timestamp_at(self, topic: str, partition: int, offset: int) -> dt.datetime | None:
        from confluent_kafka import TopicPartition

        assert self.reader is not None
        self.reader.assign([TopicPartition(topic, partition, offset)])
        message = self.reader.poll(self.timeout_s)
        self.reader.unassign()
        if message is None or message.error() is not None:
            return None
        return dt.datetime.fromtimestamp(message.timestamp()[1] / 1000, dt.UTC)

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


def _offsets_for_time(consumer: Consumer, topic: str, partitions: list[int], epoch_ms: int,
                      timeout_s: float) -> dict[int, int]:
    from confluent_kafka import TopicPartition

    found = consumer.offsets_for_times([TopicPartition(topic, p, epoch_ms) for p in partitions],
                                       timeout=timeout_s)
    for tp in found:
        if tp.error is not None:
            raise LandingError(f"offsets_for_times failed for {topic}/{tp.partition}: {tp.error}")
    return {tp.partition: tp.offset for tp in found}


@dataclass(frozen=True)
class LedgerNeighbours:
    """What the offset ledger says around an hour for one topic-partition."""

    previous_end: int | None = None  # planned_end of the hour just before, if landed
    latest_end: int | None = None  # planned_end of the latest earlier landed hour
    latest_hour: str | None = None
    next_start: int | None = None  # planned_start of the hour just after, if landed


def anchor_to_ledger(plan: OffsetPlan,
                     neighbours: Mapping[tuple[str, int], LedgerNeighbours]) -> OffsetPlan:
    """``plan`` with each range continuing the ledger: it starts where the previous landed hour of
    its partition ended (a partition new to a topic the ledger knows: at its first offset), and
    ends where the next landed hour starts, if that one is landed already."""
    known_topics = {topic for topic, _partition in neighbours}
    ranges = []
    for r in plan.ranges:
        around = neighbours.get((r.topic, r.partition))
        start, end = r.start, r.end
        if around is not None and around.previous_end is not None:
            start = around.previous_end
        elif around is None and r.topic in known_topics:
            start = r.low_watermark
        if around is not None and around.next_start is not None:
            end = around.next_start
        ranges.append(replace(r, start=start, end=max(start, end)))
    return replace(plan, ranges=tuple(ranges))


def _hole(plan: OffsetPlan, around: LedgerNeighbours) -> str | None:
    """The hours missing between the latest landed hour before this one and this one."""
    if around.previous_end is not None or around.latest_hour is None:
        return None
    first = dt.datetime.fromisoformat(around.latest_hour.replace("Z", "+00:00")) + dt.timedelta(hours=1)
    last = _utc(plan.hour) - dt.timedelta(hours=1)
    missing = (f"hour {_iso(first)} is not landed" if first == last
               else f"hours {_iso(first)} .. {_iso(last)} are not landed")
    return (f"{missing} (the latest landed hour before this one is {around.latest_hour}): land the "
            f"hours in order (`cdclake land --hour {first:%Y-%m-%dT%H}`, `cdclake run` or a backfill "
            f"from there), or record one as skipped (`cdclake land --hour H --skip REASON`)")


def check_continuity(plan: OffsetPlan, neighbours: Mapping[tuple[str, int], LedgerNeighbours], *,
                     accept_gaps: bool = False) -> dict[tuple[str, int], str]:
    """Check ``plan`` against the low watermarks and the ledger; returns notes per partition.

    Fails with :class:`RetentionGapError` when offsets this hour may own are no longer held by
    Kafka, and with :class:`OffsetContinuityError` when the previous hour is not landed (a hole)
    or the range does not start where it ended. ``accept_gaps`` (an operator's explicit decision)
    turns retention and range mismatches into notes; a hole is never accepted. A mismatch with
    the *next* landed hour is only a note: that hour needs a rerun.
    """
    retention: list[str] = []
    continuity: list[str] = []
    holes: list[str] = []
    notes: dict[tuple[str, int], str] = {}
    for r in plan.ranges:
        around = neighbours.get((r.topic, r.partition), LedgerNeighbours())
        where = f"{r.topic}/{r.partition}"
        hole = _hole(plan, around)
        if hole:
            holes.append(f"{where}: {hole}")
            continue
        problem = _retention_problem(r, around)
        if problem:
            retention.append(f"{where}: {problem}")
            notes[(r.topic, r.partition)] = problem
        elif around.previous_end is not None and around.previous_end != r.start:
            if around.previous_end < r.start:
                text = (f"gap: offsets [{around.previous_end}, {r.start}) are in no landed hour (the "
                        "previous hour was landed before they arrived, or its plan was stale); rerun the "
                        "previous hour first")
            else:
                text = (f"overlap: offsets [{r.start}, {around.previous_end}) were already landed by the "
                        "previous hour; rerun the previous hour first")
            continuity.append(f"{where}: {text}")
            notes[(r.topic, r.partition)] = text
        if around.next_start is not None and around.next_start != r.end:
            kind = "gap" if around.next_start > r.end else "overlap"
            text = (f"{kind} with the next landed hour, which starts at {around.next_start} while this "
                    f"hour ends at {r.end}: rerun the next hour")
            notes[(r.topic, r.partition)] = "; ".join(filter(None, [notes.get((r.topic, r.partition)), text]))
    hour = f"hour {plan.start}"
    if holes:
        raise OffsetContinuityError(f"{hour}: the hours before it are not all landed: " + "; ".join(holes))
    if retention and not accept_gaps:
        raise RetentionGapError(
            f"{hour}: Kafka no longer holds offsets this hour may own (retention or delete_records): "
            + "; ".join(retention)
            + ". The messages are lost from Kafka; restore them (re-produce) or land with "
              "--accept-retention-gap to record the gap in ops.offset_ledger and move on.")
    if continuity and not accept_gaps:
        raise OffsetContinuityError(f"{hour}: range does not continue the previous hour: "
                                    + "; ".join(continuity))
    return notes


def _retention_problem(r: PartitionRange, around: LedgerNeighbours) -> str | None:
    low = r.low_watermark
    if r.start < low:
        return f"offsets [{r.start}, {low}) are gone (log start offset is {low})"
    if around.previous_end is not None and around.previous_end < low:
        return (f"offsets [{around.previous_end}, {low}) are gone (log start offset {low}); the previous "
                f"hour ended at {around.previous_end}")
    if r.start > low or low == 0:
        # offsets below start all have timestamps before the hour: nothing of ours was deleted.
        return None
    # The range begins at the log start offset: whatever was deleted just before it may be ours,
    # unless the ledger shows the offsets before it were landed.
    accounted = around.previous_end if around.previous_end is not None else around.latest_end
    if accounted is None:
        return (f"offsets before {low} are gone (log start offset {low}) and no earlier hour of this "
                "partition is in ops.offset_ledger to show they were landed")
    if accounted < low:
        return (f"offsets [{accounted}, {low}) are gone (log start offset {low}); the latest landed "
                f"hour {around.latest_hour} ended at {accounted}")
    return None


def summarise(plan: OffsetPlan) -> Iterable[str]:
    """One line per partition, for logs and the CLI."""
    for r in plan.ranges:
        yield (f"{r.topic}/{r.partition}: [{r.start}, {r.end}) "
               f"(watermarks {r.low_watermark}..{r.high_watermark})")
