"""Erased stays erased, nothing else is lost: after an erasure of one key (simulated here by hand:
its messages' coordinates recorded in ops.erased_messages, those raw messages and the key's
change rows deleted), re-normalizing the hour keeps the other keys' rows those messages carried,
and re-landing the hour from Kafka (which still holds the messages) does not bring them back.
Real broker, Spark and catalog; one topic decoded by the JVM fast path, one by the Python
decoders."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from pyspark.sql import functions as F

from cdclake.formats.base import FormatOptions
from cdclake.hourly import plan_hour
from spark_jobs import gate_frames
from spark_jobs.decode_spark import TopicFormat
from spark_jobs.land import run as land
from spark_jobs.normalize import STAGE, normalize_hour, reconcile
from spark_jobs.session import local_frame
from spark_jobs.tables import CHANGELOG, ERASED_MESSAGES, OFFSET_LEDGER, RAW_MESSAGES, RUN_STATS, in_catalog
from tests.landing.kafka_helpers import Record, epoch_ms, make_topic, send

pytestmark = pytest.mark.slow

H0 = dt.datetime(2023, 9, 3, 10)  # an hour of this test only
M = dt.timedelta(minutes=1)
OPTIONS = FormatOptions(max_value_bytes=4 * 1024 * 1024)
ERASED_KEY = "2"


def _canal(i: int, op: str, rows: list[dict], old: list[dict] | None = None) -> bytes:
    at = epoch_ms(H0 + i * M)
    return json.dumps({"data": rows, "old": old, "database": "shop", "table": "people", "pkNames": ["id"],
                       "isDdl": False, "type": op, "es": at, "ts": at + 1, "id": i,
                       "mysqlType": {"id": "int", "name": "varchar(10)"},
                       "sqlType": {"id": 4, "name": 12}}).encode()


def _person(key: str, name: str) -> dict[str, str]:
    return {"id": key, "name": name}


# Messages 0 and 2 carry rows of several keys; key 2 is in messages 0, 1 and 2.
MESSAGES = [
    _canal(0, "INSERT", [_person("1", "a"), _person("2", "b"), _person("3", "c")]),
    _canal(1, "UPDATE", [_person("2", "b2")], [{"name": "b"}]),
    _canal(2, "DELETE", [_person("3", "c"), _person("2", "b2")]),
    _canal(3, "INSERT", [_person("4", "d")]),
    _canal(4, "UPDATE", [_person("1", "a2")], [{"name": "a"}]),
]
ERASED_OFFSETS = (0, 1, 2)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _plain(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    return value


def _changelog(spark, topics) -> list[dict]:
    """The hour's whole changelog rows of ``topics``, sorted."""
    rows = [r.asDict(recursive=True) for r in spark.table(CHANGELOG)
            .where(f"landed_hour = '{H0}'").where(F.col("kafka_topic").isin(list(topics)))
            .collect()]
    return sorted(rows, key=lambda r: (r["kafka_topic"], r["kafka_offset"], r["record_index"]))


def _key(row: dict) -> str | None:
    return (row["after"] or {}).get("id") or (row["before"] or {}).get("id")


def _without_run(rows: list[dict]) -> list[tuple]:
    return [_plain({k: v for k, v in r.items() if k != "run_id"}) for r in rows]


def _raw_offsets(spark, topic: str) -> list[tuple[int, bytes]]:
    rows = spark.table(RAW_MESSAGES).where(f"topic = '{topic}' AND landed_hour = '{H0}'").collect()
    return sorted((r["offset"], bytes(r["value"])) for r in rows)


def _erase(spark, topics) -> None:
    """What the erasure of key 2 does to the lake: record its messages, delete them from raw and
    the key's rows from the changelog."""
    records = [("erasure-1", topic, 0, offset, H0) for topic in topics for offset in ERASED_OFFSETS]
    local_frame(spark, records, spark.table(ERASED_MESSAGES).schema).writeTo(ERASED_MESSAGES).append()
    names = ", ".join(f"'{t}'" for t in topics)
    offsets = ", ".join(map(str, ERASED_OFFSETS))
    spark.sql(f"DELETE FROM {in_catalog(spark, RAW_MESSAGES)} WHERE landed_hour = TIMESTAMP '{H0}' "
              f"AND topic IN ({names}) AND `offset` IN ({offsets})")
    spark.sql(f"DELETE FROM {in_catalog(spark, CHANGELOG)} WHERE landed_hour = TIMESTAMP '{H0}' "
              f"AND kafka_topic IN ({names}) AND coalesce(after['id'], before['id']) = '{ERASED_KEY}'")


def _stats(spark, topics) -> list[dict]:
    return [r.asDict() for r in spark.table(RUN_STATS)
            .where(f"landed_hour = '{H0}' AND stage = '{STAGE}'").collect() if r["topic"] in topics]


def _assert_gates_reconcile(spark, topics) -> None:
    """The raw and changelog gates' reconciliations (expectations/*.json) hold for ``topics``."""
    changelog = [r for r in gate_frames.changelog_topics(spark, H0, None, {}, 1.0).collect()
                 if r["topic"] in topics]
    assert len(changelog) == len(topics)
    for r in changelog:
        assert (r["raw_messages"], r["change_rows"]) == (r["accounted_messages"], r["changelog_rows"]), r
    partitions = [r for r in gate_frames.raw_partitions(spark, H0).collect() if r["topic"] in topics]
    assert [(r["ledger_landed_count"], r["landed_messages"], r["erased_messages"]) for r in partitions] == \
        [(len(MESSAGES), len(MESSAGES), len(ERASED_OFFSETS))] * len(topics)


def test_an_erased_key_stays_erased_and_the_other_keys_rows_survive(spark, config, kafka_bootstrap) -> None:
    formats = {make_topic(kafka_bootstrap, "erased.fast"): "canal_json",
               make_topic(kafka_bootstrap, "erased.python"): "auto"}
    topics = tuple(formats)
    decoders = {t: TopicFormat(f, OPTIONS) for t, f in formats.items()}
    for topic in topics:
        send(kafka_bootstrap, topic, [Record(0, H0 + i * M, None, value) for i, value in enumerate(MESSAGES)])
    land(spark, config, H0, "land-1", plan_hour(config, H0, topics))
    normalize_hour(spark, decoders, H0, "norm-1")
    before = _changelog(spark, topics)
    assert len(before) == 2 * 8 and {_key(r) for r in before} == {"1", "2", "3", "4"}
    erased_raw = spark.table(RAW_MESSAGES).where(f"landed_hour = '{H0}'") \
        .where(F.col("topic").isin(list(topics))) \
        .where(f"`offset` IN ({', '.join(map(str, ERASED_OFFSETS))})").localCheckpoint()
    _erase(spark, topics)
    kept = [r for r in before if _key(r) != ERASED_KEY]
    carried = [r for r in kept if r["kafka_offset"] in ERASED_OFFSETS]
    assert len(carried) == 2 * 3  # keys 1 and 3 of message 0, key 3 of message 2
    assert _changelog(spark, topics) == kept

    # Re-normalizing: the carried rows exactly as they were (run id too), the others decoded again.
    summary = normalize_hour(spark, decoders, H0, "norm-2")
    after = _changelog(spark, topics)
    assert _without_run(after) == _without_run(kept)
    assert [r for r in after if r["kafka_offset"] in ERASED_OFFSETS] == carried
    assert {r["run_id"] for r in after if r["kafka_offset"] not in ERASED_OFFSETS} == {"norm-2"}
    assert (summary.erased_messages, summary.carried_change_rows) == (2 * 3, 2 * 3)
    stats = _stats(spark, topics)
    assert sorted((r["topic"], r["metric"], r["value"]) for r in stats
                  if r["metric"] in ("erased_messages", "carried_change_rows")) == sorted(
        (t, metric, 3) for t in topics for metric in ("erased_messages", "carried_change_rows"))
    totals = reconcile(stats)
    assert {t: (v["raw_messages"], v["change_rows"]) for t, v in totals.items()} == \
        dict.fromkeys(topics, (2, 2))
    _assert_gates_reconcile(spark, topics)

    # Re-landing from Kafka, which still holds the erased messages: they stay out of raw.
    relanded = land(spark, config, H0, "land-2", plan_hour(config, H0, topics), reland=True)
    assert {(p.topic, p.landed_count, p.erased_messages) for p in relanded.partitions} == \
        {(t, len(MESSAGES), len(ERASED_OFFSETS)) for t in topics}
    assert relanded.messages == 2 * 2
    for topic in topics:
        assert _raw_offsets(spark, topic) == [(3, MESSAGES[3]), (4, MESSAGES[4])]
    ledger = spark.table(OFFSET_LEDGER).where(f"landed_hour = '{H0}'").collect()
    assert sorted((r["topic"], r["landed_count"], r["erased_messages"], r["status"]) for r in ledger
                  if r["topic"] in topics) == sorted((t, 5, 3, "landed") for t in topics)
    normalize_hour(spark, decoders, H0, "norm-3")
    again = _changelog(spark, topics)
    assert _without_run(again) == _without_run(kept)
    assert [r for r in again if r["kafka_offset"] in ERASED_OFFSETS] == carried
    _assert_gates_reconcile(spark, topics)

    # Should an erased message be in raw again somehow, its rows are not decoded from it.
    erased_raw.writeTo(RAW_MESSAGES).append()
    assert len(_raw_offsets(spark, topics[0])) == len(MESSAGES)
    normalize_hour(spark, decoders, H0, "norm-4")
    assert _without_run(_changelog(spark, topics)) == _without_run(kept)
    assert [r for r in _changelog(spark, topics) if r["kafka_offset"] in ERASED_OFFSETS] == carried
    reconcile(_stats(spark, topics))
