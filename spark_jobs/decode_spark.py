"""The Spark path of decoding: raw Kafka records in, change rows / controls / rejections out.

Decoding runs the same Python decoders as ``cdclake decode`` (``decoding.decode_one``) inside
``mapInArrow``, one Arrow batch at a time, so the two paths give identical rows by construction.
Everything around it is Spark-native: splitting the outcomes, pairing two-message updates (the
halves are hash-partitioned by their pair key and merged in one pass), lineage columns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_jobs.formats import get_decoder
from spark_jobs.formats.base import PAIR_KEY, PAIR_ROLE, Decoder, FormatOptions, pair_update_halves
from spark_jobs.formats.canonical import CHANGE_ROW_COLUMNS, RawMessage
from spark_jobs.formats.decoding import decode_one

KIND_ROW, KIND_CONTROL, KIND_REJECTED = "row", "control", "rejected"

# Outcome columns besides the change row's: what the message became and, for controls and
# rejections, why. ``msg_*`` carry the message's Kafka coordinates for every kind.
_OUTCOME_EXTRA_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_kind", "string"), ("_pair_key", "string"), ("_pair_role", "string"),
    ("control_kind", "string"), ("format_tried", "string"), ("reason_code", "string"),
    ("reason_message", "string"), ("msg_topic", "string"), ("msg_partition", "int"),
    ("msg_offset", "bigint"), ("msg_timestamp", "timestamp"), ("msg_key", "binary"),
    ("msg_value", "binary"),
)


def _spark_type(sql_type: str) -> DataType:
    return {
        "string": StringType(), "int": IntegerType(), "bigint": LongType(), "boolean": BooleanType(),
        "timestamp": TimestampType(), "binary": BinaryType(),
        "array<string>": ArrayType(StringType()), "map<string,string>": MapType(StringType(), StringType()),
    }[sql_type]


def _arrow_type(sql_type: str) -> pa.DataType:
    return {
        "string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "boolean": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"), "binary": pa.binary(),
        "array<string>": pa.list_(pa.string()), "map<string,string>": pa.map_(pa.string(), pa.string()),
    }[sql_type]


# Built without DDL parsing: workers import this module with no SparkSession.
ROW_SCHEMA = StructType([StructField(n, _spark_type(t)) for n, t in CHANGE_ROW_COLUMNS])
OUTCOME_SCHEMA = StructType([StructField(n, _spark_type(t))
                             for n, t in CHANGE_ROW_COLUMNS + _OUTCOME_EXTRA_COLUMNS])
_ROW_ARROW = pa.schema([pa.field(n, _arrow_type(t)) for n, t in CHANGE_ROW_COLUMNS])
_OUTCOME_ARROW = pa.schema([pa.field(n, _arrow_type(t))
                            for n, t in CHANGE_ROW_COLUMNS + _OUTCOME_EXTRA_COLUMNS])


@dataclass(frozen=True)
class TopicFormat:
    """How one topic's messages are decoded (from the pipeline configuration)."""

    format_id: str
    options: FormatOptions


def _empty_outcome(message: RawMessage, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(_OUTCOME_ARROW.names)
    out.update(_kind=kind, msg_topic=message.topic, msg_partition=message.partition,
               msg_offset=message.offset,
               msg_timestamp=None if message.timestamp_ms is None else message.timestamp_ms * 1000,
               msg_key=message.key)
    return out


def outcomes_of(decoder: Decoder, message: RawMessage) -> list[dict[str, Any]]:
    """One message -> its outcome records (several for multi-row messages)."""
    outcome = decode_one(decoder, message)
    if outcome.rejected is not None:
        record = _empty_outcome(message, KIND_REJECTED)
        record.update(format_tried=outcome.rejected.format_id, reason_code=outcome.rejected.reason,
                      reason_message=outcome.rejected.detail, msg_value=message.value)
        return [record]
    if outcome.control is not None:
        record = _empty_outcome(message, KIND_CONTROL)
        record.update(control_kind=outcome.control)
        return [record]
    records = []
    for row in outcome.rows:
        record = _empty_outcome(message, KIND_ROW)
        record.update({k: v for k, v in row.items() if k in record})
        records.append(record)
    return records


def _decode_batches(topic_formats: dict[str, TopicFormat], default: TopicFormat) -> Any:
    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decoders: dict[str, Decoder] = {}
        for batch in batches:
            columns = batch.to_pydict()
            out: list[dict[str, Any]] = []
            for i in range(batch.num_rows):
                topic = columns["topic"][i]
                decoder = decoders.get(topic)
                if decoder is None:
                    spec = topic_formats.get(topic, default)
                    decoder = decoders[topic] = get_decoder(spec.format_id, spec.options)
                timestamp = columns["timestamp"][i]
                message = RawMessage(
                    value=columns["value"][i], key=columns["key"][i], topic=topic,
                    partition=columns["partition"][i], offset=columns["offset"][i],
                    timestamp_ms=None if timestamp is None else _millis(timestamp))
                out.extend(outcomes_of(decoder, message))
            yield pa.RecordBatch.from_pylist(out, schema=_OUTCOME_ARROW)
    return decode


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _millis(value: dt.datetime | int) -> int:
    """Arrow hands timestamps to Python as (UTC) datetimes; Kafka timestamps are milliseconds."""
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return (moment - _EPOCH) // dt.timedelta(milliseconds=1)
    return int(value)


def decode_outcomes(raw: DataFrame, topic_formats: dict[str, TopicFormat],
                    default: TopicFormat | None = None) -> DataFrame:
    """Raw records (topic, partition, offset, timestamp, key, value) -> one outcome record per
    change row, control message or rejected message (``_kind``)."""
    fallback = default or TopicFormat("auto", FormatOptions())
    source = raw.select("topic", "partition", "offset", "timestamp", "key", "value")
    return source.mapInArrow(_decode_batches(dict(topic_formats), fallback), OUTCOME_SCHEMA)


def _pair_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Merge update halves; input is sorted by (topic, pair key), so each pair's halves are
    adjacent. Pairs never cross topics (two topics may carry the same vendor sequence)."""
    group: list[dict[str, Any]] = []
    current: tuple[str, str] | None = None
    out: list[dict[str, Any]] = []
    for batch in batches:
        for row in batch.to_pylist():
            scope = (row["kafka_topic"], row[PAIR_KEY])
            if scope != current and group:
                out.extend(pair_update_halves(group))
                group = []
            current = scope
            group.append(row)
        if len(out) >= 1024:
            yield pa.RecordBatch.from_pylist([_row_only(r) for r in out], schema=_ROW_ARROW)
            out = []
    if group:
        out.extend(pair_update_halves(group))
    if out:
        yield pa.RecordBatch.from_pylist([_row_only(r) for r in out], schema=_ROW_ARROW)


def _row_only(row: dict[str, Any]) -> dict[str, Any]:
    return {name: row.get(name) for name in _ROW_ARROW.names}


def change_rows(outcomes: DataFrame) -> DataFrame:
    """The change rows of decoded outcomes, with two-message updates paired (same rule as the CLI)."""
    rows = outcomes.where(F.col("_kind") == KIND_ROW)
    whole = rows.where(F.col(PAIR_KEY).isNull()).select(*ROW_SCHEMA.fieldNames())
    halves = (rows.where(F.col(PAIR_KEY).isNotNull())
              .select(*ROW_SCHEMA.fieldNames(), PAIR_KEY, PAIR_ROLE)
              .repartition("kafka_topic", PAIR_KEY)
              .sortWithinPartitions("kafka_topic", PAIR_KEY, "kafka_partition", "kafka_offset",
                                    "record_index"))
    paired = halves.mapInArrow(_pair_partition, ROW_SCHEMA)
    return whole.unionByName(paired)


def controls(outcomes: DataFrame) -> DataFrame:
    return outcomes.where(F.col("_kind") == KIND_CONTROL)


def rejections(outcomes: DataFrame) -> DataFrame:
    return outcomes.where(F.col("_kind") == KIND_REJECTED)
