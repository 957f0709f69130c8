"""The Spark path of decoding: raw Kafka records in, change rows / controls / rejections out.

Decoding runs the same Python decoders as ``cdclake decode`` (``decoding.decode_one``) inside
``mapInArrow``, one Arrow batch at a time, so the two paths give identical rows by construction;
the common shape of some formats is decoded in the JVM instead (:mod:`spark_jobs.jvm_decode`),
to the same rows, and everything it declines still goes to the Python decoders.
Everything around it is Spark-native: splitting the outcomes, pairing two-message updates (the
halves are hash-partitioned by their pair key and merged in one pass), lineage columns.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
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

from cdclake.formats import errors, get_decoder
from cdclake.formats.base import PAIR_KEY, PAIR_ROLE, Decoder, FormatOptions, pair_update_halves
from cdclake.formats.canonical import CHANGE_ROW_COLUMNS, CHANGE_ROW_FIELDS, RawMessage
from cdclake.formats.decoding import decode_one
from spark_jobs import jvm_decode

KIND_ROW, KIND_CONTROL, KIND_REJECTED = "row", "control", "rejected"

# Outcome columns besides the change row's: what the message became and, for controls and
# rejections, why. ``_first`` marks a message's first outcome (its messages are counted by it).
# ``msg_*`` carry the message's Kafka coordinates for every kind.
_OUTCOME_EXTRA_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_kind", "string"), ("_first", "boolean"), ("_pair_key", "string"), ("_pair_role", "string"),
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
    out.update(_kind=kind, _first=True, msg_topic=message.topic, msg_partition=message.partition,
               msg_offset=message.offset,
               msg_timestamp=None if message.timestamp_ms is None else message.timestamp_ms * 1000,
               msg_key=message.key)
    return out


def outcomes_of(decoder: Decoder, message: RawMessage) -> list[dict[str, Any]]:
    """One message -> its outcome records (several for multi-row messages).

    The record-at-a-time form of what :func:`_decode_batches` builds column by column (kept for
    callers that want dicts; both go through :func:`decode_one`)."""
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
    for index, row in enumerate(outcome.rows):
        record = _empty_outcome(message, KIND_ROW)
        record.update({k: v for k, v in row.items() if k in record}, _first=index == 0)
        records.append(record)
    return records


# Change-row columns plus the pairing columns a decoder may set: what an outcome's row gives.
_ROW_GIVEN = (*CHANGE_ROW_FIELDS, PAIR_KEY, PAIR_ROLE)
_NO_ROW: dict[str, Any] = {}
_ROW_STRUCT = pa.struct([field for field in _OUTCOME_ARROW if field.name in _ROW_GIVEN])


def _micros_column(column: pa.Array | pa.ChunkedArray) -> list[int | None]:
    """Arrow timestamps as integer epoch microseconds (no per-value ``datetime``)."""
    return column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_pylist()


def _decode_batches(topic_formats: dict[str, TopicFormat], default: TopicFormat) -> Any:
    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decoders: dict[str, Decoder] = {}
        for batch in batches:
            # The decoders make no reference cycles worth collecting mid-batch, only many short-lived
            # dicts, which set off the cyclic collector again and again (2-3 % of the decode time);
            # it runs once per batch instead.
            enabled = gc.isenabled()
            gc.disable()
            try:
                outcomes = _decode_batch(batch, decoders, topic_formats, default)
            finally:
                if enabled:
                    gc.enable()
            yield outcomes
    return decode


def _decode_batch(batch: pa.RecordBatch, decoders: dict[str, Decoder],
                  topic_formats: dict[str, TopicFormat], default: TopicFormat) -> pa.RecordBatch:
    """One Arrow batch of raw records -> one Arrow batch of outcomes, built column by column:
    per outcome only its row dict (or none), kind and message index are kept; the row columns
    are one Arrow struct conversion, the message columns are picked by index."""
    topics = batch.column("topic").to_pylist()
    partitions = batch.column("partition").to_pylist()
    offsets = batch.column("offset").to_pylist()
    micros = _micros_column(batch.column("timestamp"))
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    source: list[int] = []                 # outcome -> index of its message
    rows: list[dict[str, Any]] = []        # outcome -> its change row (_NO_ROW if none)
    kinds: list[str] = []
    extra: dict[int, tuple[str | None, str | None, str | None, str | None]] = {}
    for i, topic in enumerate(topics):
        decoder = decoders.get(topic)
        if decoder is None:
            spec = topic_formats.get(topic, default)
            decoder = decoders[topic] = get_decoder(spec.format_id, spec.options)
        stamp = micros[i]
        message = RawMessage(value=values[i], key=keys[i], topic=topic, partition=partitions[i],
                             offset=offsets[i], timestamp_ms=None if stamp is None else stamp // 1000)
        outcome = decode_one(decoder, message)
        if outcome.rejected is not None:
            rejected = outcome.rejected
            extra[len(rows)] = (None, rejected.format_id, rejected.reason, rejected.detail)
            source.append(i)
            rows.append(_NO_ROW)
            kinds.append(KIND_REJECTED)
        elif outcome.control is not None:
            extra[len(rows)] = (outcome.control, None, None, None)
            source.append(i)
            rows.append(_NO_ROW)
            kinds.append(KIND_CONTROL)
        else:
            for row in outcome.rows:
                source.append(i)
                rows.append(row)
                kinds.append(KIND_ROW)
    try:
        return _outcome_batch(rows, kinds, extra, source, topics, partitions, offsets, micros,
                              keys, values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, UnicodeError):
        pass
    # A row Arrow cannot hold (a decoder let a vendor value of the wrong type through): its
    # message goes to quarantine like any other bad input, instead of failing the whole task.
    unstorable: dict[int, str] = {}
    for row, i in zip(rows, source, strict=True):
        if row is not _NO_ROW and i not in unstorable:
            problem = _unstorable_field(row)
            if problem is not None:
                unstorable[i] = f"{row.get('source_format')}: the change row cannot be stored: {problem}"
    kept = [n for n, i in enumerate(source) if i not in unstorable]
    new_extra: dict[int, tuple[str | None, str | None, str | None, str | None]] = {}
    new_rows: list[dict[str, Any]] = []
    new_kinds: list[str] = []
    new_source: list[int] = []
    for n in kept:
        if n in extra:
            new_extra[len(new_rows)] = extra[n]
        new_rows.append(rows[n])
        new_kinds.append(kinds[n])
        new_source.append(source[n])
    for i, detail in unstorable.items():
        format_id = decoders[topics[i]].format_id
        new_extra[len(new_rows)] = (None, format_id, errors.INVALID_FIELD, detail)
        new_rows.append(_NO_ROW)
        new_kinds.append(KIND_REJECTED)
        new_source.append(i)
    return _outcome_batch(new_rows, new_kinds, new_extra, new_source, topics, partitions, offsets,
                          micros, keys, values)


def _unstorable_field(row: dict[str, Any]) -> str | None:
    """The first field of ``row`` its Arrow column type cannot hold, and why; None if none."""
    for field in _OUTCOME_ARROW:
        if field.name in row:
            try:
                pa.array([row[field.name]], type=field.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, UnicodeError) as exc:
                return f"'{field.name}': {exc}"
    return None


def _outcome_batch(rows: list[dict[str, Any]], kinds: list[str],
                   extra: dict[int, tuple[str | None, str | None, str | None, str | None]],
                   source: list[int], topics: list[Any], partitions: list[Any], offsets: list[Any],
                   micros: list[Any], keys: list[Any], values: list[Any]) -> pa.RecordBatch:
    # The row columns in one conversion (Arrow reads the dicts field by field, in C++).
    given = pa.array(rows, type=_ROW_STRUCT).flatten()
    arrays: dict[str, pa.Array] = dict(zip(_ROW_STRUCT.names, given, strict=True))
    columns: dict[str, list[Any]] = {"_kind": kinds}
    columns["_first"] = [n == 0 or source[n] != source[n - 1] for n in range(len(source))]
    for position, name in enumerate(("control_kind", "format_tried", "reason_code", "reason_message")):
        columns[name] = [None] * len(rows)
        for index, texts in extra.items():
            columns[name][index] = texts[position]
    columns["msg_topic"] = [topics[i] for i in source]
    columns["msg_partition"] = [partitions[i] for i in source]
    columns["msg_offset"] = [offsets[i] for i in source]
    columns["msg_timestamp"] = [None if micros[i] is None else micros[i] // 1000 * 1000 for i in source]
    columns["msg_key"] = [keys[i] for i in source]
    msg_value: list[bytes | None] = [None] * len(rows)
    for index, texts in extra.items():
        if texts[0] is None:  # rejected: the quarantine keeps the value
            msg_value[index] = values[source[index]]
    columns["msg_value"] = msg_value
    return pa.RecordBatch.from_arrays(
        [arrays[field.name] if field.name in arrays else pa.array(columns[field.name], type=field.type)
         for field in _OUTCOME_ARROW],
        schema=_OUTCOME_ARROW)


def decode_outcomes(raw: DataFrame, topic_formats: dict[str, TopicFormat],
                    default: TopicFormat | None = None, fast_path: bool = True) -> DataFrame:
    """Raw records (topic, partition, offset, timestamp, key, value) -> one outcome record per
    change row, control message or rejected message (``_kind``). The messages the JVM fast path
    decodes (:mod:`spark_jobs.jvm_decode`; ``fast_path=False`` or the Spark setting
    ``spark.cdclake.decode.fastPath=false`` turns it off) skip Python. Each read of the frame
    decodes again (the normalize job streams the fast path's rows into its write instead, see
    :func:`spark_jobs.normalize.normalize_hour`)."""
    source, python_decoded, fast = decode_plan(raw, topic_formats, default, fast_path)
    if not fast:
        return source.mapInArrow(python_decoded, OUTCOME_SCHEMA)
    # The messages the JVM fast path declines, and every other topic's, go to the Python decoders.
    tried = jvm_decode.with_fast_rows(source, fast)
    return (declined_outcomes(tried, python_decoded)
            .unionByName(jvm_decode.fast_outcomes(tried, OUTCOME_SCHEMA.fieldNames(), KIND_ROW)))


def declined_outcomes(tried: DataFrame, python_decoded: Any) -> DataFrame:
    """The Python decoders' outcomes of the messages of ``tried`` (:func:`jvm_decode.with_fast_rows`)
    that the fast path declined; ``python_decoded`` is :func:`decode_plan`'s function."""
    return (tried.where(jvm_decode.declined()).drop("_fast", "_fast_format")
            .mapInArrow(python_decoded, OUTCOME_SCHEMA))


def decode_plan(raw: DataFrame, topic_formats: dict[str, TopicFormat], default: TopicFormat | None = None,
                fast_path: bool = True) -> tuple[DataFrame, Any, dict[str, tuple[str, str, int]]]:
    """The raw columns decoding reads, the Python decoders' ``mapInArrow`` function, and the
    topics the JVM fast path takes (none when it is off or unavailable)."""
    fallback = default or TopicFormat("auto", FormatOptions())
    source = raw.select("topic", "partition", "offset", "timestamp", "key", "value")
    python_decoded = _decode_batches(dict(topic_formats), fallback)
    fast = {topic: (spec.format_id, spec.options.source_timezone, spec.options.max_value_bytes)
            for topic, spec in topic_formats.items() if jvm_decode.takes_topic(spec.format_id, spec.options)}
    spark = raw.sparkSession
    if not fast_path or not fast or not jvm_decode.enabled(spark) or not jvm_decode.register(spark):
        fast = {}
    return source, python_decoded, fast


def _pair_partition(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
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


def paired_updates(outcomes: DataFrame) -> DataFrame:
    """The halves of two-message updates, merged (same rule as the CLI): one row per pair."""
    halves = (outcomes.where((F.col("_kind") == KIND_ROW) & F.col(PAIR_KEY).isNotNull())
              .select(*ROW_SCHEMA.fieldNames(), PAIR_KEY, PAIR_ROLE)
              .repartition("kafka_topic", PAIR_KEY)
              .sortWithinPartitions("kafka_topic", PAIR_KEY, "kafka_partition", "kafka_offset",
                                    "record_index"))
    return halves.mapInArrow(_pair_partition, ROW_SCHEMA)


def change_rows(outcomes: DataFrame, paired: DataFrame | None = None) -> DataFrame:
    """The change rows of decoded outcomes, with two-message updates paired (same rule as the CLI).

    ``paired`` is :func:`paired_updates` of ``outcomes`` when the caller already has it (e.g.
    persisted, so that the pairing shuffle runs once for several uses)."""
    whole = (outcomes.where((F.col("_kind") == KIND_ROW) & F.col(PAIR_KEY).isNull())
             .select(*ROW_SCHEMA.fieldNames()))
    return whole.unionByName(paired if paired is not None else paired_updates(outcomes))


def controls(outcomes: DataFrame) -> DataFrame:
    return outcomes.where(F.col("_kind") == KIND_CONTROL)


def rejections(outcomes: DataFrame) -> DataFrame:
    return outcomes.where(F.col("_kind") == KIND_REJECTED)
