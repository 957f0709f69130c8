"""No hour silently skipped, against the real broker: ranges continue the ledger (stragglers and
partitions added late land in the next hour, with their lateness), holes are refused until filled
or skipped, and re-runs keep the raw copy unless a re-land is asked for and holds everything."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from cdclake.config import TopicConfig
from cdclake.exceptions import LandingError, OffsetContinuityError, TransactionStalledError
from cdclake.hourly import plan_hour
from spark_jobs.land import ledger_discontinuities, run, skip_hour
from spark_jobs.tables import OFFSET_LEDGER, RAW_MESSAGES, TOPIC_STARTS
from tests.landing.kafka_helpers import HOUR, Record, epoch_ms, make_topic, send

pytestmark = pytest.mark.slow

H0 = dt.datetime(2023, 8, 20, 10)  # hours of these tests only
M = dt.timedelta(minutes=1)


def _land(spark, config, topic: str, hour: dt.datetime, run_id: str = "run-1", *,
          now: dt.datetime | None = None, **options):
    return run(spark, config, hour, run_id, plan_hour(config, hour, (topic,), now=now), **options)


def _raw(spark, topic: str) -> list[tuple]:
    rows = spark.table(RAW_MESSAGES).where(f"topic = '{topic}'").collect()
    return sorted((r["partition"], r["offset"], bytes(r["value"]), r["landed_hour"], r["run_id"])
                  for r in rows)


def _ledger(spark, topic: str) -> list[tuple]:
    rows = spark.table(OFFSET_LEDGER).where(f"topic = '{topic}'").collect()
    return sorted((r["partition"], r["landed_hour"], r["planned_start"], r["planned_end"], r["landed_count"],
                   r["status"], r["late_messages"], r["max_lateness_ms"]) for r in rows)


def test_a_straggler_written_after_its_hour_landed_lands_in_the_next_hour(spark, config,
                                                                         kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "integrity.straggler")
    send(kafka_bootstrap, topic, [Record(0, H0 + M, None, b"a"), Record(0, H0 + 30 * M, None, b"b")])
    # The first hour is planned while nothing newer exists: it ends at the high watermark (2).
    _land(spark, config, topic, H0)
    # A producer retry writes a message stamped inside the first hour, after it was landed.
    send(kafka_bootstrap, topic, [Record(0, H0 + 59 * M, None, b"late"),
                                  Record(0, H0 + HOUR + 5 * M, None, b"c")])
    summary = _land(spark, config, topic, H0 + HOUR)
    assert summary.messages == 2
    assert _raw(spark, topic) == [(0, 0, b"a", H0, "run-1"), (0, 1, b"b", H0, "run-1"),
                                  (0, 2, b"late", H0 + HOUR, "run-1"), (0, 3, b"c", H0 + HOUR, "run-1")]
    # The ledger balances (2 + 2 messages, ranges meet) and names the lateness: one message,
    # stamped 1 minute before its landing hour.
    assert _ledger(spark, topic) == [(0, H0, 0, 2, 2, "landed", 0, None),
                                     (0, H0 + HOUR, 2, 4, 2, "landed", 1, 60_000)]
    assert ledger_discontinuities(spark, [topic]) == []


def test_a_partition_added_after_planning_with_old_timestamps_is_landed(spark, config,
                                                                        kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "integrity.partition")
    send(kafka_bootstrap, topic, [Record(0, H0 + M, None, b"p0")])
    _land(spark, config, topic, H0)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_partitions([NewPartitions(topic, 2)])[topic].result(30)
    # The new partition holds a message stamped inside the hour already landed.
    send(kafka_bootstrap, topic, [Record(1, H0 + 10 * M, None, b"p1-old"),
                                  Record(1, H0 + HOUR + M, None, b"p1-new")])
    _land(spark, config, topic, H0 + HOUR)
    assert [(p, o, v, h) for p, o, v, h, _ in _raw(spark, topic)] == [
        (0, 0, b"p0", H0), (1, 0, b"p1-old", H0 + HOUR), (1, 1, b"p1-new", H0 + HOUR)]
    assert _ledger(spark, topic)[-1] == (1, H0 + HOUR, 0, 2, 2, "landed", 1, 50 * 60_000)


def test_a_broker_outage_across_an_hour_is_refused_until_filled_then_equals_an_uninterrupted_run(
        spark, config, kafka_bootstrap, tmp_path) -> None:
    """A broker of its own is stopped across an hour boundary and restarted."""

    from cdclake import kafka_broker
    from cdclake.offsets import plan_offset_ranges

    records = [Record(0, H0 + i * HOUR + M, None, f"h{i}".encode()) for i in range(3)]
    uninterrupted = make_topic(kafka_bootstrap, "integrity.whole")
    send(kafka_bootstrap, uninterrupted, records)
    for i in range(3):
        _land(spark, config, uninterrupted, H0 + i * HOUR)

    port = kafka_broker.free_port()
    bootstrap = kafka_broker.start(port, tmp_path)
    outage = dataclasses.replace(config, bootstrap_servers=bootstrap, kafka_options={})
    try:
        topic = make_topic(bootstrap, "integrity.outage")
        send(bootstrap, topic, records)
        _land(spark, outage, topic, H0)
        kafka_broker.stop(tmp_path)
        with pytest.raises(LandingError, match="Kafka did not answer"):  # past the task's retries
            plan_offset_ranges({"bootstrap.servers": bootstrap}, [topic], H0 + HOUR, H0 + 2 * HOUR,
                               timeout_s=3)
        kafka_broker.start(port, tmp_path)
        with pytest.raises(OffsetContinuityError, match=rf"{topic}/0: hour 2023-08-20T11:00:00Z is "
                                                        r"not landed .*cdclake land --hour 2023-08-20T11"):
            _land(spark, outage, topic, H0 + 2 * HOUR)
        assert [row[1] for row in _ledger(spark, topic)] == [H0]
        _land(spark, outage, topic, H0 + HOUR)  # the backfill fills the hours in order
        _land(spark, outage, topic, H0 + 2 * HOUR)
    finally:
        kafka_broker.stop(tmp_path)

    def values(name: str) -> list[tuple]:
        return [row[:4] for row in _raw(spark, name)]

    assert values(topic) == values(uninterrupted) == [
        (0, i, f"h{i}".encode(), H0 + i * HOUR) for i in range(3)]
    assert _ledger(spark, topic) == _ledger(spark, uninterrupted)


def test_a_skipped_hour_is_recorded_and_its_messages_land_in_the_next(spark, config,
                                                                      kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "integrity.skip")
    send(kafka_bootstrap, topic, [Record(0, H0 + i * HOUR + M, None, f"h{i}".encode()) for i in range(3)])
    _land(spark, config, topic, H0)
    skip_hour(spark, plan_hour(config, H0 + HOUR, (topic,)), "run-skip", "source database under repair")
    _land(spark, config, topic, H0 + 2 * HOUR)
    ledger = spark.table(OFFSET_LEDGER).where(f"topic = '{topic}'").orderBy("landed_hour").collect()
    assert [(r["landed_hour"], r["planned_start"], r["planned_end"], r["status"], r["message"])
            for r in ledger] == [
        (H0, 0, 1, "landed", None),
        (H0 + HOUR, 1, 1, "skipped", "source database under repair"),
        (H0 + 2 * HOUR, 1, 3, "landed", None)]
    assert [(o, v, h) for _, o, v, h, _ in _raw(spark, topic)] == [
        (0, b"h0", H0), (1, b"h1", H0 + 2 * HOUR), (2, b"h2", H0 + 2 * HOUR)]


def test_a_topic_whose_start_hour_is_not_landed_refuses_the_next_hour_until_it_is(spark, config,
                                                                                 kafka_bootstrap) -> None:
    """A topic's first hour is its start, not the first hour someone runs: the snapshot reads of
    hour 10 are never silently left out by landing hour 11 first."""
    topic = make_topic(kafka_bootstrap, "integrity.start")
    send(kafka_bootstrap, topic, [Record(0, H0 + M, None, b"snapshot"),
                                  Record(0, H0 + HOUR + M, None, b"stream")])
    started = dataclasses.replace(config, topics=(TopicConfig(name=topic, start_date=_utc(H0)),))
    refused = (rf"hour 2023-08-20T11:00:00Z: .*{topic}: hour 2023-08-20T10:00:00Z is not landed, and the "
               r"topic begins at 2023-08-20T10:00:00Z \(topics\[\]\.start_date, recorded in "
               r"ops\.topic_starts\)"
               r".*cdclake run --start 2023-08-20T10 --end 2023-08-20T12")
    with pytest.raises(OffsetContinuityError, match=refused):
        _land(spark, started, topic, H0 + HOUR)
    with pytest.raises(OffsetContinuityError, match=refused):  # nor recorded as skipped over it
        run(spark, started, H0 + HOUR, "run-skip", plan_hour(started, H0 + HOUR, (topic,)), skip="hole")
    assert _ledger(spark, topic) == [] and _raw(spark, topic) == []
    assert [(r["topic"], r["start_hour"], r["origin"]) for r in
            spark.table(TOPIC_STARTS).where(f"topic = '{topic}'").collect()] == [
        (topic, H0, "topics[].start_date")]
    _land(spark, started, topic, H0)
    _land(spark, started, topic, H0 + HOUR)
    assert [(o, v, h) for _, o, v, h, _ in _raw(spark, topic)] == [(0, b"snapshot", H0),
                                                                   (1, b"stream", H0 + HOUR)]
    assert _ledger(spark, topic) == [(0, H0, 0, 1, 1, "landed", 0, None),
                                     (0, H0 + HOUR, 1, 2, 1, "landed", 0, None)]


def _utc(hour: dt.datetime) -> dt.datetime:
    return hour.replace(tzinfo=dt.UTC)


def test_an_open_transaction_fails_the_hour_after_the_configured_stall(spark, config,
                                                                       kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "integrity.txn")
    send(kafka_bootstrap, topic, [Record(0, H0 + M, None, b"before")])
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"{topic}-producer",
                         "transaction.timeout.ms": 600_000})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0, timestamp=epoch_ms(H0 + 10 * M))
    producer.flush(30)
    send(kafka_bootstrap, topic, [Record(0, H0 + HOUR + 5 * M, None, b"after-1"),
                                  Record(0, H0 + 2 * HOUR + 5 * M, None, b"after-2")])
    try:
        # Within the allowed stall (2 hours): the hours land up to the last stable offset.
        assert [_land(spark, config, topic, H0 + i * HOUR).messages for i in range(2)] == [1, 0]
        stalled = rf"{topic}/0: offset 1 \(written 2023-08-20T10:10:00Z\) and the 2 offsets after it"
        with pytest.raises(TransactionStalledError, match=stalled):
            _land(spark, config, topic, H0 + 2 * HOUR)
    finally:
        producer.abort_transaction(60)
    _land(spark, config, topic, H0 + 2 * HOUR)  # the transaction is over: nothing was lost
    assert [row[1:4] for row in _raw(spark, topic)] == [
        (0, b"before", H0), (2, b"after-1", H0 + 2 * HOUR), (3, b"after-2", H0 + 2 * HOUR)]


def _compact_away(bootstrap: str, topic: str, before: int) -> None:
    """What a log cleaner or retention does to the offsets below ``before``."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, before)]).values():
        future.result(30)


def test_re_runs_keep_the_raw_copy_and_a_short_re_land_is_refused(spark, config, kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "integrity.rerun")
    send(kafka_bootstrap, topic, [Record(0, H0 + i * M, None, f"m{i}".encode()) for i in range(3)]
         + [Record(0, H0 + HOUR + M, None, b"next")])
    _land(spark, config, topic, H0)
    landed = _raw(spark, topic)
    _compact_away(kafka_bootstrap, topic, 2)  # Kafka no longer holds offsets 0 and 1
    # A plain re-run (Airflow clear, a new run) keeps what was landed: no Kafka read, no write.
    summary = _land(spark, config, topic, H0, "run-2")
    assert summary.messages == 3
    assert _raw(spark, topic) == landed
    # --accept-retention-gap is for hours never landed: it would replace a complete copy.
    with pytest.raises(LandingError, match=r"--accept-retention-gap .* never landed.*\(3 messages\)"):
        _land(spark, config, topic, H0, "run-3", accept_gaps=True)
    # A re-land reads the recorded range again and refuses to hold fewer messages than recorded.
    with pytest.raises(LandingError, match=rf"{topic}/0: .*1 message.* ledger records 3"):
        _land(spark, config, topic, H0, "run-4", reland=True)
    assert _raw(spark, topic) == landed
    # The next hour continues where the landed one ended.
    _land(spark, config, topic, H0 + HOUR)
    assert _raw(spark, topic)[-1][:4] == (0, 3, b"next", H0 + HOUR)


def _compacted_topic(bootstrap: str) -> str:
    """A topic kept whole until :func:`_start_compacting`: its segments roll at once."""
    import uuid

    from confluent_kafka.admin import NewTopic

    name = f"integrity.compacted.{uuid.uuid4().hex[:8]}"
    settings = {"cleanup.policy": "delete", "retention.ms": "-1", "segment.ms": "100"}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=settings)])[name].result(30)
    return name


def _start_compacting(bootstrap: str, topic: str) -> None:
    """Turn the log cleaner on for ``topic``, so that it runs within seconds (after the landing:
    a cleaner that ran first would change what is landed)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    settings = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                "min.compaction.lag.ms": "0", "delete.retention.ms": "100"}
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in settings.items()])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _held(bootstrap: str, topic: str, end: int) -> int:
    """How many messages Kafka still holds in offsets [0, end)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "integrity-held",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    held = 0
    while (message := consumer.poll(5)) is not None and (message.offset() or 0) < end:
        held += 1
    consumer.close()
    return held


def test_a_compacted_topic_keeps_its_raw_copy_and_refuses_a_re_land(spark, config, kafka_bootstrap) -> None:
    import time

    topic = _compacted_topic(kafka_bootstrap)
    send(kafka_bootstrap, topic, [Record(0, H0 + i * M, b"k", f"v{i}".encode()) for i in range(3)])
    assert _land(spark, config, topic, H0).messages == 3
    landed = _raw(spark, topic)
    _start_compacting(kafka_bootstrap, topic)
    # Later messages roll the segment; the log cleaner then keeps only the last value of key k.
    deadline = time.monotonic() + 120
    while _held(kafka_bootstrap, topic, 3) > 1:
        assert time.monotonic() < deadline, "the log cleaner did not compact the topic within 2 minutes"
        send(kafka_bootstrap, topic, [Record(0, H0 + HOUR + M, b"other", b"x")])
        time.sleep(2)
    assert _land(spark, config, topic, H0, "run-2").messages == 3  # the raw copy is kept
    assert _raw(spark, topic) == landed
    with pytest.raises(LandingError, match=rf"{topic}/0: Kafka now holds 1 message\(s\) of the recorded "
                                           r"range \[0, 3\), the ledger records 3"):
        _land(spark, config, topic, H0, "run-3", reland=True)
    assert _raw(spark, topic) == landed


def test_a_re_land_that_holds_everything_replaces_the_copy(spark, config, kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "integrity.reland")
    send(kafka_bootstrap, topic, [Record(0, H0 + M, None, b"a"), Record(0, H0 + 2 * M, None, b"b")])
    _land(spark, config, topic, H0)
    _land(spark, config, topic, H0, "run-2", reland=True)
    assert [(o, v, r) for _, o, v, _, r in _raw(spark, topic)] == [(0, b"a", "run-2"), (1, b"b", "run-2")]


def test_plan_and_land_read_the_same_kafka_settings_from_the_connection(
        spark, config, kafka_bootstrap, kafka_sasl_settings, monkeypatch) -> None:
    """The file names an unreachable broker; the Airflow connection (SASL, with a password) the
    real one: planning and landing both succeed, so both read the connection."""

    from cdclake.kafka_settings import kafka_client_config

    topic = make_topic(kafka_bootstrap, "integrity.settings")
    send(kafka_bootstrap, topic, [Record(0, H0 + M, None, b"x")])
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_DEFAULT",
                       json.dumps({"conn_type": "kafka", "extra": kafka_sasl_settings}))
    elsewhere = dataclasses.replace(config, bootstrap_servers="localhost:1", kafka_options={})
    assert kafka_client_config(elsewhere) == kafka_sasl_settings
    assert _land(spark, elsewhere, topic, H0).messages == 1
