"""Landing hours from the real broker into raw.kafka_messages and ops.offset_ledger."""

from __future__ import annotations

import datetime as dt

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from cdclake.exceptions import OffsetContinuityError, RetentionGapError
from cdclake.hourly import plan_hour
from spark_jobs.land import ledger_discontinuities, run
from spark_jobs.tables import OFFSET_LEDGER, RAW_MESSAGES
from tests.landing.kafka_helpers import H0, HOUR, Record, make_topic, send

pytestmark = pytest.mark.slow

M = dt.timedelta(minutes=1)
CREATE_TIME = 0  # Kafka's timestamp type of producer-set timestamps


def _land(spark, config, topic: str, hour: dt.datetime, run_id: str = "run-1", *,
          now: dt.datetime | None = None, accept_gaps: bool = False):
    plan = plan_hour(config, hour, (topic,), now=now)
    return run(spark, config, hour, run_id, plan, accept_gaps=accept_gaps)


def _bytes(value):
    return None if value is None else bytes(value)


def _raw(spark, topic: str, with_run_id: bool = True) -> list[tuple]:
    rows = spark.table(RAW_MESSAGES).where(f"topic = '{topic}'").collect()
    return sorted(
        (r["topic"], r["partition"], r["offset"], r["timestamp"], r["timestamp_type"], _bytes(r["key"]),
         _bytes(r["value"]), tuple((h["key"], _bytes(h["value"])) for h in r["headers"] or []),
         r["landed_hour"], r["run_id"] if with_run_id else None)
        for r in rows)


def _ledger(spark, topic: str) -> list[tuple]:
    rows = spark.table(OFFSET_LEDGER).where(f"topic = '{topic}'").collect()
    return sorted((r["topic"], r["partition"], r["landed_hour"], r["planned_start"], r["planned_end"],
                   r["landed_count"], r["first_offset"], r["last_offset"], r["run_id"], r["status"],
                   r["message"]) for r in rows)


def _expected(topic: str, records: list[Record], offsets: list[int], hours: list[dt.datetime],
              run_id: str | None = "run-1") -> list[tuple]:
    return sorted((topic, r.partition, off, r.at, CREATE_TIME, r.key, r.value, r.headers, hour, run_id)
                  for r, off, hour in zip(records, offsets, hours, strict=True))


def _three_hours(kafka_bootstrap: str, prefix: str) -> tuple[str, list[Record], list[int], list[dt.datetime]]:
    topic = make_topic(kafka_bootstrap, prefix, partitions=2)
    records = [
        Record(0, H0 + M, b'{"id":1}', b'{"op":"c"}', (("trace", b"t1"), ("source", b"db1"))),
        Record(1, H0 + 20 * M, b'{"id":2}', b'{"op":"c"}'),
        Record(0, H0 + 59 * M, b'{"id":1}', b'{"op":"d"}'),
        Record(0, H0 + 59 * M + dt.timedelta(seconds=1), b'{"id":1}', None),  # Debezium tombstone
        Record(1, H0 + HOUR, None, b"boundary"),  # exactly on the hour: the second hour
        Record(0, H0 + HOUR + 30 * M, b'{"id":3}', b'{"op":"u"}'),
        Record(1, H0 + 2 * HOUR + M, b'{"id":4}', b'{"op":"c"}', (("h", b""),)),
        Record(1, H0 + 2 * HOUR + 2 * M, b'{"id":4}', b'{"op":"u"}'),
    ]
    offsets = send(kafka_bootstrap, topic, records)
    hours = [H0 + (r.at - H0) // HOUR * HOUR for r in records]
    return topic, records, offsets, hours


def test_three_hours_land_into_three_hour_partitions_with_exact_offsets(spark, config,
                                                                        kafka_bootstrap) -> None:
    topic, records, offsets, hours = _three_hours(kafka_bootstrap, "land.three")
    assert offsets == [0, 0, 1, 2, 1, 3, 2, 3]
    summaries = [_land(spark, config, topic, H0 + i * HOUR) for i in range(3)]
    assert [s.messages for s in summaries] == [4, 2, 2]
    assert _raw(spark, topic) == _expected(topic, records, offsets, hours)
    assert _ledger(spark, topic) == [
        (topic, 0, H0, 0, 3, 3, 0, 2, "run-1", "landed", None),
        (topic, 0, H0 + HOUR, 3, 4, 1, 3, 3, "run-1", "landed", None),
        (topic, 0, H0 + 2 * HOUR, 4, 4, 0, None, None, "run-1", "empty", None),
        (topic, 1, H0, 0, 1, 1, 0, 0, "run-1", "landed", None),
        (topic, 1, H0 + HOUR, 1, 2, 1, 1, 1, "run-1", "landed", None),
        (topic, 1, H0 + 2 * HOUR, 2, 4, 2, 2, 3, "run-1", "landed", None),
    ]
    assert ledger_discontinuities(spark, [topic]) == []


def test_relanding_the_middle_hour_leaves_the_tables_unchanged(spark, config, kafka_bootstrap) -> None:
    topic, records, offsets, hours = _three_hours(kafka_bootstrap, "land.rerun")
    for i in range(3):
        _land(spark, config, topic, H0 + i * HOUR)
    raw_before, ledger_before = _raw(spark, topic), _ledger(spark, topic)
    _land(spark, config, topic, H0 + HOUR)  # the same run again (Airflow "clear")
    assert _raw(spark, topic) == raw_before
    assert _ledger(spark, topic) == ledger_before
    _land(spark, config, topic, H0 + HOUR, run_id="run-2")  # a new run keeps the raw copy
    assert _raw(spark, topic) == raw_before
    assert _ledger(spark, topic) == ledger_before
    run(spark, config, H0 + HOUR, "run-3", plan_hour(config, H0 + HOUR, (topic,)), reland=True)
    assert _raw(spark, topic, with_run_id=False) == _expected(topic, records, offsets, hours, run_id=None)
    assert {(r[8], r[9]) for r in _raw(spark, topic)} == {
        (H0, "run-1"), (H0 + HOUR, "run-3"), (H0 + 2 * HOUR, "run-1")}
    assert [(r[2], r[8]) for r in _ledger(spark, topic)] == [
        (H0, "run-1"), (H0 + HOUR, "run-3"), (H0 + 2 * HOUR, "run-1")] * 2
    assert ledger_discontinuities(spark, [topic]) == []


def test_an_hour_without_messages_lands_nothing_and_succeeds(spark, config, kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "land.empty")
    send(kafka_bootstrap, topic, [Record(0, H0 + 2 * HOUR, None, b"later")])
    summary = _land(spark, config, topic, H0)
    assert summary.messages == 0
    assert _raw(spark, topic) == []
    assert _ledger(spark, topic) == [(topic, 0, H0, 0, 0, 0, None, None, "run-1", "empty", None)]


def _delete_before(bootstrap: str, topic: str, offset: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, offset)])
    for future in futures.values():
        future.result(30)


def test_landing_an_hour_deleted_by_retention_fails_naming_the_gap(spark, config, kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "land.retention")
    records = [Record(0, H0 + i * HOUR + j * M, None, f"{i}-{j}".encode()) for i in range(3) for j in (1, 2)]
    send(kafka_bootstrap, topic, records)
    _land(spark, config, topic, H0)  # offsets [0, 2)
    _delete_before(kafka_bootstrap, topic, 4)  # the second hour's [2, 4) is gone, never landed
    gap = rf"{topic}/0: offsets \[2, 4\) are gone \(log start offset is 4\)"
    with pytest.raises(RetentionGapError, match=gap):
        _land(spark, config, topic, H0 + HOUR)
    assert _ledger(spark, topic) == [(topic, 0, H0, 0, 2, 2, 0, 1, "run-1", "landed", None)]
    # The hour after cannot land over the hole.
    with pytest.raises(OffsetContinuityError, match=r"hour 2023-07-15T11:00:00Z is not landed"):
        _land(spark, config, topic, H0 + 2 * HOUR)
    # An operator accepts the loss explicitly: recorded, then the next hour continues cleanly.
    _land(spark, config, topic, H0 + HOUR, accept_gaps=True)
    _land(spark, config, topic, H0 + 2 * HOUR)
    ledger = _ledger(spark, topic)
    assert [row[:10] for row in ledger] == [
        (topic, 0, H0, 0, 2, 2, 0, 1, "run-1", "landed"),
        (topic, 0, H0 + HOUR, 4, 4, 0, None, None, "run-1", "landed_with_gap"),
        (topic, 0, H0 + 2 * HOUR, 4, 6, 2, 4, 5, "run-1", "landed"),
    ]
    assert "offsets [2, 4) are gone" in ledger[1][10]
    assert ledger_discontinuities(spark, [topic]) == [
        {"topic": topic, "partition": 0, "landed_hour": H0 + HOUR, "previous_end": 2, "planned_start": 4,
         "kind": "gap"}]
    assert [(r[2], r[6]) for r in _raw(spark, topic)] == [(0, b"0-1"), (1, b"0-2"), (4, b"2-1"), (5, b"2-2")]


def test_first_hour_at_a_truncated_log_start_fails(spark, config, kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "land.truncated")
    send(kafka_bootstrap, topic, [Record(0, H0 + M, None, b"a"), Record(0, H0 + 2 * M, None, b"b"),
                                  Record(0, H0 + HOUR + M, None, b"c")])
    _delete_before(kafka_bootstrap, topic, 2)
    with pytest.raises(RetentionGapError, match=rf"{topic}/0: offsets before 2 are gone"):
        _land(spark, config, topic, H0)
    assert _raw(spark, topic) == [] and _ledger(spark, topic) == []


def test_transactional_messages_land_without_markers_or_aborted_rows(spark, config, kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "land.txn")
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"{topic}-producer"})
    producer.init_transactions(60)
    batches = [("commit", [b"c0", b"c1", b"c2"]), ("abort", [b"a0", b"a1"]), ("commit", [b"c3", b"c4"])]
    for outcome, values in batches:
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, key=b"k", value=value, partition=0)  # broker-side time: now
        producer.flush(30)
        if outcome == "commit":
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)
    # Transaction markers carry the broker's clock, so the data are "now": land this hour and the
    # next (pretending both are over) to cover every offset whatever the boundary.
    hour = dt.datetime.now(dt.UTC).replace(tzinfo=None, minute=0, second=0, microsecond=0) - HOUR
    now = hour + 3 * HOUR
    for h in (hour, hour + HOUR, hour + 2 * HOUR):
        _land(spark, config, topic, h, now=now)
    landed = [(r[2], r[5], r[6]) for r in _raw(spark, topic)]
    # offsets: 0-2 committed, 3 commit marker, 4-5 aborted, 6 abort marker, 7-8 committed, 9 marker
    assert landed == [(0, b"k", b"c0"), (1, b"k", b"c1"), (2, b"k", b"c2"),
                      (7, b"k", b"c3"), (8, b"k", b"c4")]
    ledger = _ledger(spark, topic)
    assert sum(row[5] for row in ledger) == 5
    assert (ledger[0][3], ledger[-1][4]) == (0, 10)
    assert ledger_discontinuities(spark, [topic]) == []
