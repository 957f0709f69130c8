"""Normalize on real Spark + Iceberg, from raw rows of a mixed hour (seven formats, controls, bad input).

The landed-from-Kafka version of this story is tests/normalize/test_normalize_landed.py.
"""

from __future__ import annotations

import datetime as dt

import pytest

from cdclake.formats import get_decoder
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import RawMessage
from cdclake.formats.decoding import decode_batch
from tests.normalize import mixed_traffic

pytestmark = pytest.mark.slow

# An hour no other test writes (tests share one catalog; the gates tests expect 2024-03-01 to
# be theirs alone).
HOUR = dt.datetime(2024, 3, 5, 10)
BASE_MS = int((HOUR + dt.timedelta(minutes=5)).replace(tzinfo=dt.UTC).timestamp() * 1000)


def _raw_records() -> list[tuple]:
    offsets: dict[str, int] = {}
    records: list[tuple] = []
    for i, (topic, key, value) in enumerate(mixed_traffic.messages()):
        offset = offsets.get(topic, 0)
        offsets[topic] = offset + 1
        records.append((topic, 0, offset, HOUR + dt.timedelta(minutes=5, seconds=i), 0,
                        key, value, [], HOUR, "land-run", None))
    return records


def _config_formats():
    from spark_jobs.decode_spark import TopicFormat

    return {t: TopicFormat(f, FormatOptions(max_value_bytes=4 * 1024 * 1024))
            for t, f in mixed_traffic.TOPIC_FORMATS.items()}


def _expected_rows_by_cli_path() -> list[dict]:
    """The rows `cdclake decode` makes of the same messages, topic by topic."""
    by_topic: dict[str, list[RawMessage]] = {}
    for topic, _p, offset, ts, _t, key, value, *_ in _raw_records():
        by_topic.setdefault(topic, []).append(RawMessage(
            value=value, key=key, topic=topic, partition=0, offset=offset,
            timestamp_ms=int(ts.replace(tzinfo=dt.UTC).timestamp() * 1000)))
    rows = []
    for topic, messages in by_topic.items():
        fmt = mixed_traffic.TOPIC_FORMATS[topic]
        decoder = get_decoder(fmt, FormatOptions(max_value_bytes=4 * 1024 * 1024))
        rows.extend(decode_batch(decoder, messages).rows)
    return rows


def _comparable(row: dict) -> tuple:
    from cdclake.formats.canonical import CHANGE_ROW_FIELDS

    epoch = dt.datetime(1970, 1, 1)
    out = []
    for name in CHANGE_ROW_FIELDS:
        value = row[name]
        if isinstance(value, dt.datetime):
            value = (value - epoch) // dt.timedelta(microseconds=1)
        if isinstance(value, dict):
            value = tuple(sorted(value.items()))
        if isinstance(value, list):
            value = tuple(value)
        out.append((name, value))
    return tuple(out)


def test_normalize_mixed_hour_twice_gives_exact_rows_quarantine_and_reconciliation(spark) -> None:
    from pyspark.sql.types import StructType

    from spark_jobs.normalize import normalize_hour
    from spark_jobs.tables import CHANGELOG, QUARANTINE, RAW_MESSAGES, RUN_STATS, ensure_tables

    ensure_tables(spark)
    raw_schema = StructType.fromDDL(
        "topic string, `partition` int, `offset` bigint, `timestamp` timestamp, timestamp_type int, "
        "key binary, value binary, headers array<struct<key: string, value: binary>>, "
        "landed_hour timestamp, run_id string, landed_at timestamp")
    records = _raw_records()
    spark.createDataFrame(records, raw_schema).writeTo(RAW_MESSAGES).overwrite(
        __import__("pyspark.sql.functions", fromlist=["col"]).col("landed_hour") == HOUR)

    first = normalize_hour(spark, _config_formats(), HOUR, "run-1")
    changelog_1 = sorted(_comparable(r.asDict(recursive=True) | {"run_id": None, "landed_hour": None})
                         for r in spark.table(CHANGELOG).where(f"landed_hour = '{HOUR}'").collect())
    second = normalize_hour(spark, _config_formats(), HOUR, "run-2")
    changelog_rows = [r.asDict(recursive=True) for r in
                      spark.table(CHANGELOG).where(f"landed_hour = '{HOUR}'").collect()]

    # Exact rows: the Spark job's rows equal the CLI path's, field by field, and a rerun is identical.
    expected = sorted(_comparable(r | {"kafka_timestamp": r["kafka_timestamp"]}) for r in
                      _expected_rows_by_cli_path())
    got = sorted(_comparable(r | {"run_id": None, "landed_hour": None}) for r in changelog_rows)
    assert got == expected
    assert got == changelog_1
    assert {r["run_id"] for r in changelog_rows} == {"run-2"}

    # Spot checks a user would make: the DRS key change and exact values.
    drs = [r for r in changelog_rows if r["kafka_topic"] == "it.drs"]
    assert [(r["op"], r["before"]["id"], r["after"]["id"]) for r in drs] == [("UPDATE", "103", "104")]

    quarantine = spark.table(QUARANTINE).where(f"landed_hour = '{HOUR}'").collect()
    assert sorted((r["kafka_topic"], r["reason_code"]) for r in quarantine) == \
        mixed_traffic.EXPECTED_QUARANTINE_REASONS
    by_reason = {r["reason_code"]: r for r in quarantine}
    assert bytes(by_reason["INVALID_ENCODING"]["value"]) == b'{"data": "\xff\xfe not utf-8"}'
    assert len(by_reason["TOO_LARGE"]["value"]) > 5 * 1024 * 1024
    assert all(r["message"] and r["format_tried"] for r in quarantine)

    total_raw = len(records)
    assert (first.raw_messages, second.raw_messages) == (total_raw, total_raw)
    assert second.quarantined_messages == 5
    assert second.control_messages == 3  # MHEARTBEAT, tombstone, TRANSACTIONEND
    assert second.decoded_messages + second.control_messages + second.quarantined_messages == total_raw
    assert second.change_rows == len(changelog_rows)

    stats = spark.table(RUN_STATS).where(f"landed_hour = '{HOUR}' AND stage = 'normalize'").collect()
    assert {r["run_id"] for r in stats} == {"run-2"}
    raw_by_topic = {r["topic"]: r["value"] for r in stats if r["metric"] == "raw_messages"}
    assert raw_by_topic == {t: sum(1 for m in mixed_traffic.messages() if m[0] == t)
                            for t in mixed_traffic.TOPIC_FORMATS}

    # The layout per-table reads rely on: each data file of the hour holds its rows sorted by
    # table, event time and Kafka position (the table's locally ordered write), read in file order.
    order = ("database", "table_name", "event_time", "kafka_partition", "kafka_offset", "record_index")
    in_files: dict[str, list[tuple]] = {}
    for r in spark.sql(f"SELECT _file, _pos, {', '.join(order)} FROM {CHANGELOG} "
                       f"WHERE landed_hour = '{HOUR}' ORDER BY _file, _pos").collect():
        in_files.setdefault(r["_file"], []).append(tuple(r[c] for c in order))

    def sort_key(row: tuple) -> tuple:
        return tuple((value is not None, value) for value in row)  # nulls first, as Iceberg sorts
    assert sum(len(rows) for rows in in_files.values()) == len(changelog_rows)
    assert all(rows == sorted(rows, key=sort_key) for rows in in_files.values())
    properties = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {CHANGELOG}").collect()}
    assert properties["write.distribution-mode"] == "none"
