"""Changelog rows -> key events: each change becomes the events of the keys it touches (an
update that moves its key deletes the old one), each with its total-order key (see
``spark_jobs.compact``, "Design")."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdclake.formats.base import key_of
from spark_jobs.identifiers import (
    SOURCE_SCHEMA_SQL,
)

EVENT_SCHEMA = (
    "database string, source_schema string, table_name string, key string, keyless boolean, "
    "kind string, image string, "
    "order_key string, kafka_topic string, kafka_partition int, kafka_offset bigint, "
    "record_index int, part int, op string, event_us bigint, run_id string"
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
    """The key-level events of one change row (empty for DDL; one table-level for TRUNCATE): the
    reference :func:`change_events` is tested against (``tests/compaction/test_events_property``)."""
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


# JSON's short escapes (Python's json writes every other control character as \u00xx).
_SHORT_ESCAPES = {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}
_NEEDS_ESCAPE = '[\\x00-\\x1f"\\\\]'
_EMPTY_MAP = "cast(map() AS map<string,string>)"
_EVENT_OPS = ("INSERT", "UPDATE", "DELETE", "SNAPSHOT")
_EVENTS_TYPE = "array<struct<key:string,keyless:boolean,kind:string,image:map<string,string>,part:int>>"


def _json_string(text: Column) -> Column:
    """``text`` as a JSON string, as Python's ``json`` writes it (``ensure_ascii`` off); NULL:
    ``null``. Only text with a character to escape is taken apart (a character at a time)."""
    def escape(char: Column) -> Column:
        code = F.ascii(char)
        short = F.when(char == "\\", F.lit("\\\\")).when(char == '"', F.lit('\\"'))
        for number, written in _SHORT_ESCAPES.items():
            short = short.when(code == number, F.lit(written))
        return short.when(code < 32, F.concat(F.lit("\\u00"), F.lpad(F.lower(F.hex(code)), 2, "0"))) \
            .otherwise(char)

    chars = F.regexp_extract_all(text, F.lit("(?s)."), 0)
    plain = F.when(text.rlike(_NEEDS_ESCAPE), F.array_join(F.transform(chars, escape), "")).otherwise(text)
    return F.coalesce(F.concat(F.lit('"'), plain, F.lit('"')), F.lit("null"))


def _key_text(image: Column, pk: Column) -> Column:
    """:func:`cdclake.formats.base.key_of` in Spark: NULL unless the image has every key column."""
    has_key = (F.size(pk) > 0) & (F.size(image) > 0) & F.forall(pk, lambda c: F.map_contains_key(image, c))
    values = F.transform(pk, lambda c: _json_string(image[c]))
    text = F.concat(F.lit("["), F.array_join(values, ","), F.lit("]"))
    return F.when(image.isNotNull() & pk.isNotNull() & has_key, text)


def _row_hash(image: Column) -> Column:
    """:func:`row_hash` in Spark."""
    items = F.transform(F.array_sort(F.map_keys(image)), lambda k: F.concat(
        F.lit("["), _json_string(k), F.lit(","), _json_string(image[k]), F.lit("]")))
    return F.substring(F.sha2(F.concat(F.lit("["), F.array_join(items, ","), F.lit("]")), 256), 1, 32)


def _overlaid(under: Column, over: Column) -> Column:
    """``{**under, **over}`` of two maps (``under`` may be NULL)."""
    rest = F.map_filter(F.coalesce(under, F.expr(_EMPTY_MAP)), lambda k, _: ~F.map_contains_key(over, k))
    return F.map_concat(rest, over)


def change_events(changes: DataFrame) -> DataFrame:
    """Changelog rows -> key-level events, as :func:`events_of_change` gives them, in Spark
    expressions (no Python per change)."""
    op, before, after = F.col("op"), F.col("before"), F.col("after")
    pk = F.coalesce(F.col("primary_key_columns"), F.array().cast("array<string>"))
    full = F.coalesce(F.col("after_is_full"), F.lit(False))

    def event(key: Column, keyless: bool, kind: Column | str, image: Column | None, part: int = 0) -> Column:
        return F.struct(key.cast("string").alias("key"), F.lit(keyless).alias("keyless"),
                        (F.lit(kind) if isinstance(kind, str) else kind).alias("kind"),
                        (F.lit(None).cast("map<string,string>") if image is None else image).alias("image"),
                        F.lit(part).alias("part"))

    def present(*events: Column) -> Column:
        return F.filter(F.array(*events), lambda e: e.isNotNull())

    no_key = F.lit(None).cast("string")
    whole = F.when((op == "UPDATE") & ~full, _overlaid(before, after)).otherwise(after)
    keyless = present(
        F.when(op.isin("UPDATE", "DELETE") & before.isNotNull(),
               event(_row_hash(before), True, "DEC", before, 1)),
        F.when((op != "DELETE") & after.isNotNull(), event(_row_hash(whole), True, "INC", whole)))
    row_key = F.when(F.col("row_key") != "", F.col("row_key"))  # an empty one names no key
    key = F.coalesce(row_key, _key_text(after, pk), _key_text(before, pk))
    before_key = _key_text(before, pk)
    moved = before_key.isNotNull() & (before_key != key)
    image = F.coalesce(after, F.expr(_EMPTY_MAP))
    update = present(
        F.when(moved, event(before_key, False, "DELETE", None, 1)),
        event(key, False, F.when(full, "FULL").otherwise("PARTIAL"),
              F.when(moved & ~full, _overlaid(before, image)).otherwise(image)))
    events = (
        F.when(op == "TRUNCATE", F.array(event(no_key, False, "TRUNCATE", None)))
        .when(~op.isin(*_EVENT_OPS) | op.isNull(), F.array().cast(_EVENTS_TYPE))
        .when(F.col("row_key").isNull() & (F.size(pk) == 0), keyless)
        .when(key.isNull(), F.array(event(no_key, False, "UNKEYED", None)))
        .when(op == "DELETE", F.array(event(key, False, "DELETE", None)))
        .when(op.isin("INSERT", "SNAPSHOT"), F.array(event(key, False, "FULL", image)))
        .otherwise(update))
    event_us = F.unix_micros("event_time")
    partition = F.coalesce(F.col("kafka_partition"), F.lit(0))
    offset = F.coalesce(F.col("kafka_offset"), F.lit(0)).cast("bigint")
    record_index = F.coalesce(F.col("record_index"), F.lit(0))
    time = F.greatest(F.coalesce(event_us, F.lit(0)), F.lit(0))
    order = F.concat(  # see order_key
        F.lit(ORDER_KEY_LAYOUT), F.lpad(time.cast("string"), 20, "0"),
        F.lit("|"), F.coalesce(F.col("source_sequence"), F.lit("")),
        F.lit("|"), F.lpad(partition.cast("string"), 10, "0"),
        F.lit("|"), F.lpad(offset.cast("string"), 20, "0"),
        F.lit("|"), F.lpad(record_index.cast("string"), 10, "0"))
    exploded = changes.select(
        "database", F.expr(SOURCE_SCHEMA_SQL).alias("source_schema"), "table_name",
        F.explode(events).alias("e"), order.alias("order_key"), "kafka_topic",
        partition.alias("kafka_partition"), offset.alias("kafka_offset"), record_index.alias("record_index"),
        op.alias("op"), event_us.alias("event_us"), "run_id")
    return exploded.select(
        "database", "source_schema", "table_name", "e.key", "e.keyless", "e.kind",
        F.when(F.col("e.image").isNotNull(), F.to_json("e.image")).alias("image"),
        "order_key", "kafka_topic", "kafka_partition", "kafka_offset", "record_index", "e.part", "op",
        "event_us", "run_id")
