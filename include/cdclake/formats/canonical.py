"""The canonical change row: the one shape every decoder produces.

A row is a plain ``dict`` whose keys are exactly ``CHANGE_ROW_FIELDS`` (in that order). Decoders
build rows with :func:`new_change_row`; the changelog table, ``cdclake decode`` and the Spark path
all use this one definition. Times travel inside Python as integer microseconds since the Unix
epoch (UTC); they become ISO-8601 text in the CLI and ``TIMESTAMP`` in Spark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

OPS = ("INSERT", "UPDATE", "DELETE", "SNAPSHOT", "DDL", "TRUNCATE")
LOGICAL_TYPES = (
    "STRING", "LONG", "DECIMAL(p,s)", "DOUBLE", "BOOLEAN", "DATE", "TIME", "TIMESTAMP",
    "TIMESTAMP_NTZ", "BINARY", "JSON",
)

# (name, Spark SQL type). Order is the changelog table's column order.
CHANGE_ROW_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source_format", "string"),
    ("kafka_topic", "string"),
    ("kafka_partition", "int"),
    ("kafka_offset", "bigint"),
    ("record_index", "int"),
    ("landed_hour", "timestamp"),
    ("run_id", "string"),
    ("db_type", "string"),
    ("database", "string"),
    ("schema_name", "string"),
    ("table_name", "string"),
    ("op", "string"),
    ("primary_key_columns", "array<string>"),
    ("row_key", "string"),
    ("before", "map<string,string>"),
    ("after", "map<string,string>"),
    ("after_is_full", "boolean"),
    ("column_types", "map<string,string>"),
    ("event_time", "timestamp"),
    ("produced_time", "timestamp"),
    ("kafka_timestamp", "timestamp"),
    ("source_sequence", "string"),
    ("source_position", "string"),
    ("transaction_id", "string"),
    ("ddl", "string"),
    ("warnings", "array<string>"),
)
CHANGE_ROW_FIELDS: tuple[str, ...] = tuple(name for name, _ in CHANGE_ROW_COLUMNS)
TIME_FIELDS = ("landed_hour", "event_time", "produced_time", "kafka_timestamp")

# Spark DDL string for the row, e.g. for ``StructType.fromDDL``.
CHANGE_ROW_DDL = ", ".join(f"`{name}` {sql_type}" for name, sql_type in CHANGE_ROW_COLUMNS)


@dataclass(frozen=True)
class RawMessage:
    """One Kafka record as landed: coordinates plus key/value bytes."""

    value: bytes | None
    key: bytes | None = None
    topic: str = ""
    partition: int = 0
    offset: int = 0
    timestamp_ms: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] = field(default_factory=tuple)


@dataclass
class Decoded:
    """What a decoder makes of one message: change rows, or a control message (no rows)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    control: str | None = None  # e.g. "HEARTBEAT", "TRANSACTION_BEGIN", "TOMBSTONE"


def new_change_row(source_format: str, message: RawMessage, record_index: int = 0,
                   **values: Any) -> dict[str, Any]:
    """A change row with lineage filled from ``message`` and every other field defaulted."""
    if not _FIELD_SET.issuperset(values):
        raise TypeError(f"not change-row fields: {sorted(set(values) - _FIELD_SET)}")
    row: dict[str, Any] = _EMPTY_ROW.copy()
    row["source_format"] = source_format
    row["kafka_topic"] = message.topic
    row["kafka_partition"] = message.partition
    row["kafka_offset"] = message.offset
    row["record_index"] = record_index
    row["primary_key_columns"] = []
    row["after_is_full"] = False
    row["column_types"] = {}
    row["warnings"] = []
    row["kafka_timestamp"] = None if message.timestamp_ms is None else message.timestamp_ms * 1000
    row.update(values)
    return row


_FIELD_SET = frozenset(CHANGE_ROW_FIELDS)
_EMPTY_ROW: dict[str, Any] = dict.fromkeys(CHANGE_ROW_FIELDS)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros_to_iso(micros: int | None) -> str | None:
    """Integer epoch microseconds -> ``2021-06-25T09:51:53.201Z`` (fraction trimmed, never lost)."""
    if micros is None:
        return None
    moment = _EPOCH + timedelta(microseconds=micros)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = micros % 1_000_000
    if fraction:
        text += "." + f"{fraction:06d}".rstrip("0")
    return text + "Z"


def micros_to_datetime(micros: int | None) -> datetime | None:
    """Integer epoch microseconds -> naive UTC ``datetime`` (what Spark/Arrow timestamps take)."""
    if micros is None:
        return None
    return (_EPOCH + timedelta(microseconds=micros)).replace(tzinfo=None)


def row_to_json_dict(row: dict[str, Any]) -> dict[str, Any]:
    """A change row as printed by ``cdclake decode``: times as ISO text, field order kept."""
    out = {name: row.get(name) for name in CHANGE_ROW_FIELDS}
    for name in TIME_FIELDS:
        value = out[name]
        if isinstance(value, int):
            out[name] = micros_to_iso(value)
    return out
