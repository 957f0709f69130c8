"""Folding a key's events in order into its state: the stored row, a tombstone or (keyless
tables) a row's number of copies."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql import DataFrame

from spark_jobs.compaction.events import loads_or_none, none_if_nan

if TYPE_CHECKING:
    pass

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
    """The state of one key after ``events`` (any order; duplicates once) on top of ``base``.

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


def _fold_partitions(frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """Fold every key of a partition (rows arrive clustered by key): plain Python per key, one
    pandas frame per batch — a pandas frame per key (``applyInPandas``) costs far more."""
    columns = [c.strip().split(" ")[0] for c in FOLD_SCHEMA.split(",")]
    out = []
    for records in events_by_key(frames).values():
        first = records[0]
        result = fold_key(records, first["base"], int(first["stored_count"] or 0))
        if result["event_us"] is not None:
            result["event_us"] = int(result["event_us"])
        out.append(result)
        if len(out) >= 10_000:
            yield pd.DataFrame(out, columns=columns)
            out = []
    if out:
        yield pd.DataFrame(out, columns=columns)


def fold_events(events: DataFrame) -> DataFrame:
    """Events with ``base`` and ``stored_count`` columns -> one state row per key."""
    return events.repartition("key").mapInPandas(_fold_partitions, FOLD_SCHEMA)
