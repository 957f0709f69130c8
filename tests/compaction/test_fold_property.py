"""The Spark fold (``fold_events``) equals the Python reference fold (``fold_key``) on generated
change sequences.

Each example is a batch of keys, each with a random sequence of events on top of a random base
(a stored row with a number of copies, or nothing): full and partial images over a few columns
(values, NULLs, columns absent), deletes, keyless copies added and removed, equal event times
ordered by sequence and Kafka coordinates, and redelivered events (the same coordinates again).
The events reach Spark shuffled, as an out-of-order hour does. Every key's whole state row is
compared; images and column sets as the MERGE reads them (a map of texts, a set of names).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_jobs.compaction.events import EVENT_SCHEMA, order_key
from spark_jobs.compaction.fold import FOLD_SCHEMA, fold_events, fold_key

pytestmark = pytest.mark.slow

EXAMPLES = 25
KEYS_PER_EXAMPLE = 48  # 25 x 48 = 1,200 sequences a run
COLUMNS = ("a", "b", "c", "d")
FOLD_FIELDS = [c.strip().split(" ")[0] for c in FOLD_SCHEMA.split(",")]
EVENT_FIELDS = [c.strip().split(" ")[0] for c in EVENT_SCHEMA.split(",")]

values = st.one_of(st.none(), st.sampled_from(["", "0", "1", "x", "9223372036854775808", "3.14159",
                                               "2024-02-29T23:59:59.999999+08:00", "é€😀"]))
images = st.dictionaries(st.sampled_from(COLUMNS), values, max_size=len(COLUMNS))


@st.composite
def key_sequences(draw: st.DrawFn, key: str) -> tuple[str, int, list[dict[str, Any]]]:
    """(base, stored count, events) of one key."""
    keyless = draw(st.booleans())
    base = draw(st.sampled_from(["PRESENT", "ABSENT"]))
    stored = draw(st.integers(0, 3)) if keyless and base == "PRESENT" else (1 if base == "PRESENT" else 0)
    kinds = st.sampled_from(["INC", "DEC"] if keyless else ["FULL", "PARTIAL", "DELETE"])
    events = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(kinds)
        event_us = draw(st.integers(0, 3)) * 1_000_000  # few times: ties ordered by what follows
        sequence = draw(st.one_of(st.none(), st.sampled_from([f"{n:020d}" for n in (1, 2)])))
        partition, offset = draw(st.integers(0, 1)), draw(st.integers(0, 40))
        record_index, part = draw(st.integers(0, 1)), draw(st.integers(0, 1))
        image = None if kind == "DELETE" or (keyless and draw(st.booleans())) else draw(images)
        events.append({
            "database": "db", "source_schema": None, "table_name": "t", "key": key, "keyless": keyless,
            "kind": kind, "image": None if image is None else json.dumps(image, ensure_ascii=False),
            "order_key": order_key(sequence, event_us, partition, offset, record_index),
            "kafka_topic": "topic", "kafka_partition": partition, "kafka_offset": offset,
            "record_index": record_index, "part": part,
            "op": draw(st.sampled_from(["INSERT", "UPDATE", "DELETE", "SNAPSHOT"])),
            "event_us": event_us, "run_id": draw(st.sampled_from(["run-1", "run-2"]))})
    # One change's coordinates name one event: an event at taken coordinates is a redelivery.
    by_identity: dict[tuple[Any, ...], dict[str, Any]] = {}
    for event in events:
        identity = (event["kafka_partition"], event["kafka_offset"], event["record_index"], event["part"])
        by_identity.setdefault(identity, event)
    redelivered = [by_identity[(e["kafka_partition"], e["kafka_offset"], e["record_index"], e["part"])]
                   for e in events]
    return base, stored, redelivered


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[str, int, list[dict[str, Any]]]]:
    return [draw(key_sequences(f"k{i}")) for i in range(KEYS_PER_EXAMPLE)]


def comparable(state: dict[str, Any]) -> dict[str, Any]:
    """A state row as the MERGE reads it: ``vals`` a map of texts, ``set_cols`` a set."""
    out = dict(state)
    vals = json.loads(out["vals"]) if out["vals"] is not None else None
    out["vals"] = None if vals is None else {k: None if v is None else str(v) for k, v in vals.items()}
    out["set_cols"] = None if out["set_cols"] is None else sorted(json.loads(out["set_cols"]))
    return out


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(batch=batches(), shuffle_seed=st.integers(0, 2**32 - 1))
def test_spark_fold_equals_python_fold(spark, batch, shuffle_seed) -> None:
    rows = [{**event, "base": base, "stored_count": stored}
            for base, stored, events in batch for event in events]
    random.Random(shuffle_seed).shuffle(rows)
    schema = EVENT_SCHEMA + ", base string, stored_count bigint"
    fields = [*EVENT_FIELDS, "base", "stored_count"]
    frame = spark.createDataFrame([tuple(r[f] for f in fields) for r in rows], schema)
    got = {r["key"]: comparable(r.asDict()) for r in fold_events(frame).collect()}
    expected = {}
    for base, stored, events in batch:
        state = fold_key(events, base, stored)
        expected[state["key"]] = comparable({f: state[f] for f in FOLD_FIELDS})
    assert got == expected
