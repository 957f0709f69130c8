"""Changelog rows -> key events: each change becomes the events of the keys it touches (an
update that moves its key deletes the old one), each with its total-order key (see
``spark_jobs.compact``, "Design")."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql import DataFrame

from cdclake.formats.base import key_of
from spark_jobs.identifiers import (
    SOURCE_SCHEMA_SQL,
)

if TYPE_CHECKING:
    pass

EVENT_SCHEMA = (
    "database string, source_schema string, table_name string, key string, keyless boolean, "
    "kind string, image string, "
    "order_key string, kafka_topic string, kafka_partition int, kafka_offset bigint, "
    "record_index int, part int, op string, event_us bigint, run_id string"
)
_CHANGE_INPUT = (
    "database", f"{SOURCE_SCHEMA_SQL} AS source_schema", "table_name", "op", "row_key",
    "after_is_full", "source_sequence", "kafka_topic",
    "kafka_partition", "kafka_offset", "record_index", "run_id",
    "to_json(primary_key_columns) AS pk_json", "to_json(before) AS before_json",
    "to_json(after) AS after_json", "unix_micros(event_time) AS event_us",
)
# Marks the order key's layout. Keys of the earlier layout (``S<sequence>|...``, ``T<time>|...``)
# sort before every key of this one, as the older changes they are.
ORDER_KEY_LAYOUT = "V"


def order_key(source_sequence: str | None, event_us: int | None, partition: int | None,
              offset: int | None, record_index: int | None) -> str:
    """Sortable text: event time, then vendor sequence (none after any), then Kafka partition,
    offset and record index. A time before 1970 or none counts as 0: such changes come first."""
    time = max(event_us or 0, 0)
    return (f"{ORDER_KEY_LAYOUT}{time:020d}|{source_sequence or ''}|{partition or 0:010d}"
            f"|{offset or 0:020d}|{record_index or 0:010d}")


def row_hash(image: dict[str, Any]) -> str:
    """Identity of a whole row of a keyless table (its values, column order ignored)."""
    text = json.dumps(sorted(image.items()), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def loads_or_none(text: Any) -> dict[str, Any] | None:
    if text is None or (isinstance(text, float) and pd.isna(text)):
        return None
    value = json.loads(text)
    return value if isinstance(value, dict) else None


def none_if_nan(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else value


def events_of_change(change: dict[str, Any]) -> list[dict[str, Any]]:
    """The key-level events of one change row (empty for DDL; one table-level for TRUNCATE)."""
    op = change["op"]
    before, after = loads_or_none(change.get("before_json")), loads_or_none(change.get("after_json"))
    pk = json.loads(change["pk_json"]) if none_if_nan(change.get("pk_json")) else []
    row_key = none_if_nan(change.get("row_key"))
    event_us = none_if_nan(change.get("event_us"))
    event_us = None if event_us is None else int(event_us)
    partition, offset = int(change["kafka_partition"] or 0), int(change["kafka_offset"] or 0)
    record_index = int(none_if_nan(change.get("record_index")) or 0)
    base = {
        "database": change["database"], "source_schema": none_if_nan(change.get("source_schema")),
        "table_name": change["table_name"],
        "order_key": order_key(none_if_nan(change.get("source_sequence")), event_us, partition,
                               offset, record_index),
        "kafka_topic": change["kafka_topic"], "kafka_partition": partition, "kafka_offset": offset,
        "record_index": record_index, "op": op, "event_us": event_us, "run_id": change["run_id"],
    }

    def event(key: str | None, keyless: bool, kind: str, image: dict[str, Any] | None,
              part: int = 0) -> dict[str, Any]:
        return {**base, "key": key, "keyless": keyless, "kind": kind, "part": part,
                "image": None if image is None else json.dumps(image, ensure_ascii=False)}

    if op == "TRUNCATE":
        return [event(None, False, "TRUNCATE", None)]
    if op not in ("INSERT", "UPDATE", "DELETE", "SNAPSHOT"):
        return []
    if row_key is None and not pk:  # keyless: a multiset of whole rows
        out = []
        if op in ("UPDATE", "DELETE") and before is not None:
            out.append(event(row_hash(before), True, "DEC", before, part=1))
        if op != "DELETE" and after is not None:
            whole = {**(before or {}), **after} if op == "UPDATE" and not change["after_is_full"] else after
            out.append(event(row_hash(whole), True, "INC", whole))
        return out
    key = row_key or key_of(after, pk) or key_of(before, pk)
    if key is None:
        return [event(None, False, "UNKEYED", None)]
    if op == "DELETE":
        return [event(key, False, "DELETE", None)]
    if op in ("INSERT", "SNAPSHOT"):
        return [event(key, False, "FULL", after or {})]
    out = []
    before_key = key_of(before, pk) if pk else None
    image, full = after or {}, bool(change["after_is_full"])
    if before_key is not None and before_key != key:  # the update moved the row to a new key
        out.append(event(before_key, False, "DELETE", None, part=1))
        if not full:
            image = {**(before or {}), **image}
    out.append(event(key, False, "FULL" if full else "PARTIAL", image))
    return out


def _events_udf(frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    columns = [c.strip().split(" ")[0] for c in EVENT_SCHEMA.split(",")]
    for frame in frames:
        rows = [e for change in frame.to_dict("records") for e in events_of_change(change)]
        yield pd.DataFrame(rows, columns=columns)


def change_events(changes: DataFrame) -> DataFrame:
    """Changelog rows -> key-level events (see :func:`events_of_change`)."""
    return changes.selectExpr(*_CHANGE_INPUT).mapInPandas(_events_udf, EVENT_SCHEMA)
