"""Offset planning against the real broker, the continuity rules, and the Kafka settings."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

from cdclake.exceptions import (
    HourNotOverError,
    OffsetContinuityError,
    RetentionGapError,
    TopicNotFoundError,
)
from cdclake.kafka_settings import kafka_client_config, spark_kafka_options
from cdclake.offsets import (
    LedgerNeighbours,
    OffsetPlan,
    PartitionRange,
    anchor_to_ledger,
    check_continuity,
    plan_offset_ranges,
)
from tests.landing.kafka_helpers import H0, HOUR, Record, make_topic, send

M = dt.timedelta(minutes=1)


def _plan(bootstrap: str, topic: str, hour: dt.datetime) -> list[tuple[int, int, int]]:
    plan = plan_offset_ranges({"bootstrap.servers": bootstrap}, [topic], hour, hour + HOUR)
    return [(r.partition, r.start, r.end) for r in plan.ranges]


@pytest.mark.slow
def test_three_hours_are_contiguous_and_empty_hours_are_empty_ranges(kafka_bootstrap: str) -> None:
    topic = make_topic(kafka_bootstrap, "plan.hours", partitions=2)
    send(kafka_bootstrap, topic, [
        Record(0, H0 + M, b"k", b"a"), Record(0, H0 + 30 * M, b"k", b"b"),
        Record(1, H0 + 59 * M, None, b"c"),
        Record(0, H0 + HOUR, b"k", b"d"),  # exactly on the boundary: belongs to the next hour
        Record(0, H0 + 2 * HOUR + 5 * M, b"k", b"e"), Record(1, H0 + 2 * HOUR + 6 * M, None, None),
    ])
    assert _plan(kafka_bootstrap, topic, H0 - HOUR) == [(0, 0, 0), (1, 0, 0)]
    assert _plan(kafka_bootstrap, topic, H0) == [(0, 0, 2), (1, 0, 1)]
    assert _plan(kafka_bootstrap, topic, H0 + HOUR) == [(0, 2, 3), (1, 1, 1)]
    assert _plan(kafka_bootstrap, topic, H0 + 2 * HOUR) == [(0, 3, 4), (1, 1, 2)]
    # after the newest message: bounded by the high watermark
    assert _plan(kafka_bootstrap, topic, H0 + 3 * HOUR) == [(0, 4, 4), (1, 2, 2)]


@pytest.mark.slow
def test_partition_added_later_plans_from_zero(kafka_bootstrap: str) -> None:
    topic = make_topic(kafka_bootstrap, "plan.grow", partitions=1)
    send(kafka_bootstrap, topic, [Record(0, H0 + M, None, b"a")])
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_partitions([NewPartitions(topic, 2)])[topic].result(30)
    send(kafka_bootstrap, topic, [Record(1, H0 + HOUR + M, None, b"b"), Record(0, H0 + HOUR + M, None, b"c")])
    assert _plan(kafka_bootstrap, topic, H0) == [(0, 0, 1), (1, 0, 0)]
    assert _plan(kafka_bootstrap, topic, H0 + HOUR) == [(0, 1, 2), (1, 0, 1)]


@pytest.mark.slow
def test_plan_records_watermarks_and_round_trips_through_json(kafka_bootstrap: str) -> None:
    topic = make_topic(kafka_bootstrap, "plan.json")
    send(kafka_bootstrap, topic, [Record(0, H0 + M, None, b"a"), Record(0, H0 + HOUR + M, None, b"b")])
    plan = plan_offset_ranges({"bootstrap.servers": kafka_bootstrap}, [topic], H0, H0 + HOUR,
                              now=dt.datetime(2025, 1, 1))
    assert plan.ranges == (PartitionRange(topic, 0, 0, 1, 0, 2),)
    assert (plan.start, plan.end, plan.planned_at, plan.topics) == (
        "2023-07-15T10:00:00Z", "2023-07-15T11:00:00Z", "2025-01-01T00:00:00Z", (topic,))
    assert plan.hour == H0
    assert OffsetPlan.from_json(json.dumps(json.loads(plan.to_json()))) == plan


@pytest.mark.slow
def test_missing_topic_is_named(kafka_bootstrap: str) -> None:
    with pytest.raises(TopicNotFoundError, match=r"topic 'plan\.no-such-topic' does not exist"):
        plan_offset_ranges({"bootstrap.servers": kafka_bootstrap}, ["plan.no-such-topic"], H0, H0 + HOUR)


def test_hour_not_over_is_refused() -> None:
    # Refused before any Kafka call: no broker needed.
    start = dt.datetime(2030, 1, 1, 10)
    with pytest.raises(HourNotOverError, match=r"2030-01-01T11:00:00Z"):
        plan_offset_ranges({"bootstrap.servers": "localhost:1"}, ["t"], start, start + HOUR,
                           now=dt.datetime(2030, 1, 1, 10, 59))


def _one(start: int, end: int, low: int) -> OffsetPlan:
    return OffsetPlan("2024-03-01T11:00:00Z", "2024-03-01T12:00:00Z",
                      (PartitionRange("t", 0, start, end, low, 100),), topics=("t",))


def test_continuity_first_hour_and_contiguous_hours_pass() -> None:
    assert check_continuity(_one(0, 5, 0), {}) == {}
    assert check_continuity(_one(7, 9, 3), {}) == {}  # offsets below 7 are older than the hour
    assert check_continuity(_one(5, 9, 0), {("t", 0): LedgerNeighbours(previous_end=5, latest_end=5)}) == {}
    assert check_continuity(_one(5, 5, 5), {("t", 0): LedgerNeighbours(previous_end=5, latest_end=5)}) == {}


def test_continuity_gap_and_overlap_with_previous_hour_fail() -> None:
    with pytest.raises(OffsetContinuityError, match=r"t/0: gap: offsets \[4, 5\)"):
        check_continuity(_one(5, 9, 0), {("t", 0): LedgerNeighbours(previous_end=4, latest_end=4)})
    with pytest.raises(OffsetContinuityError, match=r"t/0: overlap: offsets \[5, 6\)"):
        check_continuity(_one(5, 9, 0), {("t", 0): LedgerNeighbours(previous_end=6, latest_end=6)})


def test_continuity_mismatch_with_next_hour_is_a_note() -> None:
    notes = check_continuity(_one(5, 9, 0), {("t", 0): LedgerNeighbours(next_start=10)})
    assert notes == {("t", 0): "gap with the next landed hour, which starts at 10 while this hour ends at 9: "
                               "rerun the next hour"}


def test_ranges_are_anchored_to_the_ledger() -> None:
    plan = OffsetPlan("2024-03-01T11:00:00Z", "2024-03-01T12:00:00Z", (
        PartitionRange("t", 0, 7, 9, 0, 9),    # the previous hour ended at 5: starts there
        PartitionRange("t", 1, 4, 4, 0, 6),    # new to the topic: from its first offset, to its time end
        PartitionRange("t", 2, 3, 8, 0, 8),    # the next hour is landed and starts at 6
        PartitionRange("u", 0, 2, 3, 0, 3),    # a topic the ledger does not know: by time
    ), topics=("t", "u"))
    anchored = anchor_to_ledger(plan, {
        ("t", 0): LedgerNeighbours(previous_end=5, latest_end=5, latest_hour="2024-03-01T10:00:00Z"),
        ("t", 2): LedgerNeighbours(next_start=6)})
    assert [(r.topic, r.partition, r.start, r.end) for r in anchored.ranges] == [
        ("t", 0, 5, 9), ("t", 1, 0, 4), ("t", 2, 3, 6), ("u", 0, 2, 3)]


def test_retention_gaps_are_named() -> None:
    # range starts at the log start offset and the ledger's previous hour ended before it
    with pytest.raises(RetentionGapError, match=r"t/0: offsets \[4, 6\) are gone \(log start offset 6\)"):
        check_continuity(_one(6, 6, 6), {("t", 0): LedgerNeighbours(previous_end=4, latest_end=4)})
    # the latest landed hour is not the previous one: a hole, whatever Kafka still holds
    with pytest.raises(OffsetContinuityError, match=r"t/0: hours 2024-03-01T09:00:00Z \.\. "
                                                    r"2024-03-01T10:00:00Z are not landed"):
        check_continuity(_one(6, 8, 6), {("t", 0): LedgerNeighbours(latest_end=2,
                                                                     latest_hour="2024-03-01T08:00:00Z")},
                         accept_gaps=True)
    # nothing in the ledger accounts for the deleted offsets
    with pytest.raises(RetentionGapError, match=r"offsets before 6 are gone"):
        check_continuity(_one(6, 6, 6), {})
    # a stale plan that starts below the log start
    with pytest.raises(RetentionGapError, match=r"offsets \[3, 6\) are gone"):
        check_continuity(_one(3, 8, 6), {})
    # the operator accepts the gap: it becomes a note
    notes = check_continuity(_one(6, 6, 6), {}, accept_gaps=True)
    assert list(notes) == [("t", 0)] and "gone" in notes[("t", 0)]


def test_kafka_settings_from_config_file_and_airflow_connection(config) -> None:
    assert kafka_client_config(config, env={}) == {"bootstrap.servers": config.bootstrap_servers,
                                                   **config.kafka_options}
    extra = {"bootstrap.servers": "broker:9093", "security.protocol": "SASL_SSL",
             "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": 'p"w'}
    env = {"AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps({"conn_type": "kafka", "extra": extra})}
    assert kafka_client_config(config, env=env) == extra
    uri_env = {"AIRFLOW_CONN_KAFKA_DEFAULT": "kafka://?bootstrap.servers=b1%3A9092&security.protocol=SSL"}
    assert kafka_client_config(config, env=uri_env) == {"bootstrap.servers": "b1:9092",
                                                        "security.protocol": "SSL"}
    assert spark_kafka_options(extra) == {
        "kafka.bootstrap.servers": "broker:9093",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  'username="u" password="p\\"w";',
    }
