"""The normalize story end to end on real components: a mixed hour produced to the real Kafka
broker, landed by the Spark landing job, normalized twice into the Iceberg changelog."""

from __future__ import annotations

import datetime as dt

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from cdclake.formats import get_decoder
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import RawMessage
from cdclake.formats.decoding import decode_batch
from spark_jobs import jvm_decode
from spark_jobs.decode_spark import TopicFormat
from tests.normalize import mixed_traffic
from tests.normalize.test_normalize_raw import _comparable

pytestmark = pytest.mark.slow

HOUR = dt.datetime(2023, 5, 1, 10)
OPTIONS = FormatOptions(max_value_bytes=4 * 1024 * 1024)


def _produce(bootstrap: str) -> dict[tuple[str, int], tuple[bytes | None, bytes | None, int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in mixed_traffic.TOPIC_FORMATS]).values():
        future.result()
    # Idempotent: a retried batch (a slow, shared machine) is neither duplicated nor reordered,
    # so the offsets below are the ones the broker assigns.
    producer = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 16 * 1024 * 1024,
                         "linger.ms": 5, "enable.idempotence": True})
    sent: dict[tuple[str, int], tuple[bytes | None, bytes | None, int]] = {}
    offsets: dict[str, int] = {}
    base_ms = int(HOUR.replace(tzinfo=dt.UTC).timestamp() * 1000) + 60_000
    for i, (topic, key, value) in enumerate(mixed_traffic.messages()):
        ts = base_ms + i * 1000
        producer.produce(topic, key=key, value=value, timestamp=ts)
        offset = offsets.get(topic, 0)
        offsets[topic] = offset + 1
        sent[(topic, offset)] = (key, value, ts)
    assert producer.flush(30) == 0
    return sent


def test_landed_mixed_hour_normalizes_exactly_and_reruns_identically(spark, config, kafka_bootstrap) -> None:
    from cdclake.hourly import plan_hour
    from spark_jobs.land import run as land
    from spark_jobs.normalize import normalize_hour
    from spark_jobs.tables import CHANGELOG, QUARANTINE, RUN_STATS

    sent = _produce(kafka_bootstrap)
    topics = tuple(mixed_traffic.TOPIC_FORMATS)
    landed = land(spark, config, HOUR, "land-1", plan_hour(config, HOUR, topics))
    assert sum(p.landed_count for p in landed.partitions) == len(sent)

    formats = {t: TopicFormat(f, OPTIONS) for t, f in mixed_traffic.TOPIC_FORMATS.items()}
    first = normalize_hour(spark, formats, HOUR, "norm-1")
    where = f"landed_hour = '{HOUR}'"
    rows_1 = sorted(_comparable(r.asDict(recursive=True) | {"run_id": None})
                    for r in spark.table(CHANGELOG).where(where).collect())
    second = normalize_hour(spark, formats, HOUR, "norm-2")
    rows_2 = [r.asDict(recursive=True) for r in spark.table(CHANGELOG).where(where).collect()]

    # The CLI path over the same messages and coordinates gives exactly the changelog rows.
    expected = []
    for topic, fmt in mixed_traffic.TOPIC_FORMATS.items():
        messages = [RawMessage(value=v, key=k, topic=topic, partition=0, offset=o, timestamp_ms=ts)
                    for (t, o), (k, v, ts) in sorted(sent.items()) if t == topic]
        expected += [r | {"landed_hour": HOUR, "run_id": None}
                     for r in decode_batch(get_decoder(fmt, OPTIONS), messages).rows]
    assert sorted(_comparable(r | {"run_id": None}) for r in rows_2) == sorted(map(_comparable, expected))
    assert sorted(_comparable(r | {"run_id": None}) for r in rows_2) == rows_1  # rerun: identical

    quarantine = spark.table(QUARANTINE).where(where).collect()
    assert sorted((r["kafka_topic"], r["reason_code"]) for r in quarantine) == \
        mixed_traffic.EXPECTED_QUARANTINE_REASONS
    for r in quarantine:  # Kafka coordinates and the raw bytes, exactly as produced
        key, value, ts = sent[(r["kafka_topic"], r["kafka_offset"])]
        assert (bytes(r["value"]), r["kafka_partition"]) == (value, 0)
        assert r["kafka_timestamp"] == dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ts)

    assert (first.raw_messages, second.raw_messages) == (len(sent), len(sent))
    assert list(second.step_seconds) == ["python_decode", "changelog_write", "declined_pairs",
                                         "quarantine_write", "stats_write"]
    assert all(seconds > 0 for seconds in second.step_seconds.values())
    assert (second.decoded_messages, second.control_messages, second.quarantined_messages) == \
        (len(sent) - 8, 3, 5)
    stats = spark.table(RUN_STATS).where(where).collect()
    per_metric: dict[str, int] = {}
    for r in stats:
        per_metric[r["metric"]] = per_metric.get(r["metric"], 0) + r["value"]
    warned = sorted((r["topic"], r["reason_code"], r["value"]) for r in stats if r["metric"] == "warnings")
    assert warned == sorted((topic, code, n) for (topic, code), n in _warning_codes(rows_2).items())
    # The fast path: every message of a topic whose format has one is decoded or declined there.
    fast = {(r["topic"], r["metric"]): r["value"] for r in stats if r["metric"].startswith("fast_")}
    fast_topics = [t for t, f in mixed_traffic.TOPIC_FORMATS.items() if f in jvm_decode.FAST_FORMATS]
    raw_of = {t: sum(1 for topic, _offset in sent if topic == t) for t in fast_topics}
    assert {t: fast.get((t, "fast_decoded_messages"), 0) + fast.get((t, "fast_declined_messages"), 0)
            for t in fast_topics} == raw_of
    assert {topic for topic, _ in fast} == set(fast_topics)
    assert not any(metric == "fast_failed_messages" for _, metric in fast)
    assert per_metric == {"raw_messages": len(sent), "decoded_messages": len(sent) - 8,
                          "control_messages": 3, "quarantined_messages": 5, "change_rows": len(rows_2),
                          "warnings": sum(n for *_, n in warned), "fast_decoded_messages": 8,
                          "fast_declined_messages": 10}


def _warning_codes(rows: list[dict]) -> dict[tuple[str, str], int]:
    """The changelog rows' warnings per (topic, code), as a reader of the rows counts them."""
    import re
    from collections import Counter

    codes: Counter[tuple[str, str]] = Counter()
    for row in rows:
        for text in row["warnings"] or []:
            code = re.match(r"([A-Z][A-Z0-9_]*): ", text)
            codes[(row["kafka_topic"], code.group(1) if code else "OTHER")] += 1
    return dict(codes)
