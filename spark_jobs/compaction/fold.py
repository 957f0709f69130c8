"""Folding a key's events in order into its state: the stored row, a tombstone or (keyless
tables) a row's number of copies."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_jobs.compaction.events import loads_or_none, none_if_nan

FOLD_SCHEMA = (
    "key string, keyless boolean, deleted boolean, replace boolean, set_cols string, "
    "vals string, count bigint, stored_count bigint, op string, event_us bigint, "
    "order_key string, kafka_topic string, kafka_partition int, kafka_offset bigint, run_id string"
)


def in_order(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events in total order, a redelivered one (same Kafka coordinates) once."""
    seen: set[tuple[Any, ...]] = set()
    ordered = []
    for ev in sorted(events, key=lambda e: (e["order_key"], e["part"], e["kind"])):
        identity = (ev["kafka_topic"], ev["kafka_partition"], ev["kafka_offset"], ev["record_index"],
                    ev["part"])
        if identity not in seen:
            seen.add(identity)
            ordered.append(ev)
    return ordered


def fold_key(events: list[dict[str, Any]], base: str, stored_count: int = 0) -> dict[str, Any]:
    """The state of one key after ``events`` (any order; duplicates once) on top of ``base``: the
    reference :func:`fold_events` is tested against (``tests/compaction/test_fold_property``).

    ``base`` is ``PRESENT`` (a stored live row, values unknown here: partial changes then set
    only their columns, ``replace`` stays False) or ``ABSENT`` (nothing, or a tombstone).
    """
    ordered = in_order(events)
    last = ordered[-1]
    keyless = bool(last["keyless"])
    result = {"key": last["key"], "keyless": keyless, "stored_count": stored_count, "op": last["op"],
              "event_us": last["event_us"], "order_key": last["order_key"],
              "kafka_topic": last["kafka_topic"], "kafka_partition": last["kafka_partition"],
              "kafka_offset": last["kafka_offset"], "run_id": last["run_id"]}
    if keyless:
        count = stored_count if base == "PRESENT" else 0
        image = None
        for ev in ordered:
            image = ev["image"] if ev["image"] is not None else image
            count = count + 1 if ev["kind"] == "INC" else max(count - 1, 0)
        return {**result, "deleted": count == 0, "replace": True, "set_cols": None,
                "vals": image, "count": count}
    exists: bool | None = None if base == "PRESENT" else False  # None: present, values unknown
    replace = base != "PRESENT"
    values: dict[str, Any] = {}
    set_cols: set[str] = set()
    for ev in ordered:
        image = loads_or_none(ev["image"]) or {}
        if ev["kind"] == "DELETE":
            exists, values, replace, set_cols = False, {}, True, set()
        elif ev["kind"] == "FULL" or exists is False:
            exists, values, replace = True, dict(image), True
        else:  # partial image onto a present row
            values.update(image)
            set_cols |= set(image)
    if exists is False:
        result["op"] = "DELETE"  # a tombstone, whether a DELETE or a key-moving UPDATE made it
    return {**result, "deleted": exists is False, "replace": replace,
            "set_cols": None if replace else json.dumps(sorted(set_cols)),
            "vals": json.dumps(values, ensure_ascii=False), "count": 0 if exists is False else 1}


def events_by_key(frames: Iterable[pd.DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """A partition's events (pandas batches) as plain records grouped by key."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for frame in frames:
        for record in frame.to_dict("records"):
            record["event_us"] = none_if_nan(record["event_us"])
            record["image"] = none_if_nan(record["image"])
            groups.setdefault(record["key"], []).append(record)
    return groups


IDENTITY = ("kafka_topic", "kafka_partition", "kafka_offset", "record_index", "part")
# The last event's fields the state keeps (after ``keyless``, ``kind`` and ``op``: as they are).
_LAST = ("keyless", "kind", "op", "event_us", "order_key", "kafka_topic", "kafka_partition",
         "kafka_offset", "run_id")
_EMPTY_MAP = "cast(map() AS map<string,string>)"


def _by_seq(a: Column, b: Column) -> Column:
    return F.when(a["seq"] < b["seq"], -1).when(a["seq"] > b["seq"], 1).otherwise(0)


def fold_events(events: DataFrame, within: Sequence[str] = ()) -> DataFrame:
    """Events with ``base`` and ``stored_count`` columns -> one state row per key, as
    :func:`fold_key` gives it, in Spark expressions (no Python per change). ``within``: columns
    that, with the key, name a key (several tables' keys folded at once); they lead the result.

    A keyed key's state is its last FULL image or DELETE (or, with neither, its base) with the
    later partial images laid over it column by column. A keyless row's number of copies is a walk
    of +1/-1 steps that never goes below zero: the unclamped sum minus the lowest point it reached
    below zero.
    """
    order = [F.col("order_key"), F.col("part"), F.col("kind"), F.col("kafka_topic")]
    keys = [*within, "key"]
    by_key = Window.partitionBy(*keys).orderBy(*order)
    identity = Window.partitionBy(*keys, *IDENTITY).orderBy(*order)
    whole_key = Window.partitionBy(*keys)
    kind = F.col("kind")
    step = F.when(kind == "INC", 1).otherwise(-1)
    ordered = (events.repartition(*keys)
               .withColumn("_copy", F.row_number().over(identity)).where(F.col("_copy") == 1)
               .withColumn("_seq", F.row_number().over(by_key))
               .withColumn("_walk", F.sum(step).over(by_key.rowsBetween(Window.unboundedPreceding, 0)))
               .withColumn("_last_reset", F.max(F.when(kind.isin("FULL", "DELETE"), F.col("_seq")))
                           .over(whole_key))
               .withColumn("_image", F.when(
                   F.col("_seq") >= F.coalesce(F.col("_last_reset"), F.lit(0)),
                   F.struct(F.col("_seq").alias("seq"), F.coalesce(
                       F.from_json("image", "map<string,string>"), F.expr(_EMPTY_MAP)).alias("m")))))
    last = F.max_by(F.struct(*_LAST), F.col("_seq"))
    per_key = ordered.groupBy(*keys).agg(
        last.alias("last"), F.first("base").alias("base"),
        F.coalesce(F.first("stored_count"), F.lit(0)).cast("bigint").alias("stored_count"),
        F.max("_last_reset").alias("last_reset"),
        F.sum(step).alias("total"), F.min("_walk").alias("lowest"),
        F.max_by("image", F.when(F.col("image").isNotNull(), F.col("_seq"))).alias("last_image"),
        F.array_sort(F.collect_list("_image"), _by_seq).alias("images"))
    # Later images win column by column (map_concat refuses duplicate keys).
    merged = F.aggregate("images", F.expr(_EMPTY_MAP), lambda acc, x: F.map_concat(
        F.map_filter(acc, lambda k, _: ~F.map_contains_key(x["m"], k)), x["m"]))
    set_cols = F.array_sort(F.array_distinct(F.flatten(F.transform("images", lambda x: F.map_keys(x["m"])))))
    start = F.when(F.col("base") == "PRESENT", F.col("stored_count")).otherwise(F.lit(0))
    copies = start + F.col("total") - F.least(F.lit(0), start + F.col("lowest"))
    keyless, deleted = F.col("last.keyless"), F.col("last.kind") == "DELETE"
    replace = deleted | F.col("last_reset").isNotNull() | (F.col("base") != "PRESENT")
    return per_key.select(
        *keys, keyless.alias("keyless"),
        F.when(keyless, copies == 0).otherwise(deleted).alias("deleted"),
        (keyless | replace).alias("replace"),
        F.when(~keyless & ~replace, F.to_json(set_cols)).alias("set_cols"),
        F.when(keyless, F.col("last_image")).when(deleted, F.lit("{}")).otherwise(F.to_json(merged))
        .alias("vals"),
        F.when(keyless, copies).when(deleted, 0).otherwise(1).cast("bigint").alias("count"),
        "stored_count",
        F.when(~keyless & deleted, F.lit("DELETE")).otherwise(F.col("last.op")).alias("op"),
        *[F.col(f"last.{name}").alias(name) for name in _LAST[3:]])
