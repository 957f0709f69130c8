"""The Spark events (``change_events``) equal the Python reference (``events_of_change``) on
generated changelog rows.

Rows of every op (and ops that make no event), with or without key columns and row keys (empty
ones too), images that lack key columns, keys that move, full and partial after images, and values
JSON must escape (quotes, backslashes, every control character, non-ASCII): the keys and the
keyless rows' hashes are what stored rows are matched on, so they must agree byte for byte.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_jobs.compaction.events import EVENT_SCHEMA, change_events, events_of_change

pytestmark = pytest.mark.slow

EXAMPLES = 10
ROWS_PER_EXAMPLE = 100
EVENT_FIELDS = [c.strip().split(" ")[0] for c in EVENT_SCHEMA.split(",")]
ROW_SCHEMA = (
    "database string, schema_name string, table_name string, op string, row_key string, "
    "after_is_full boolean, source_sequence string, kafka_topic string, kafka_partition int, "
    "kafka_offset bigint, record_index int, run_id string, primary_key_columns array<string>, "
    "before map<string,string>, after map<string,string>, event_us bigint"
)

texts = st.one_of(
    st.sampled_from(["1", "2", "", 'a"b', "c\\d", "e\nf", "\x00", "\x1f\x7f", "é€😀", "\u2028"]),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=4))
values = st.one_of(st.none(), texts)
columns = st.sampled_from(["id", "k2", "name", "Na\"me"])
images = st.one_of(st.none(), st.dictionaries(columns, values, max_size=4))


@st.composite
def changes(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "database": "db", "schema_name": draw(st.sampled_from([None, "db", "s"])), "table_name": "t",
        "op": draw(st.sampled_from(["INSERT", "UPDATE", "DELETE", "SNAPSHOT", "TRUNCATE", "DDL", None])),
        "row_key": draw(st.one_of(st.none(), st.sampled_from(["", '["1"]', '["x"]']))),
        "after_is_full": draw(st.sampled_from([None, True, False])),
        "source_sequence": draw(st.sampled_from([None, "", "00000000000000000007"])),
        "kafka_topic": "topic", "kafka_partition": draw(st.one_of(st.none(), st.integers(0, 3))),
        "kafka_offset": draw(st.one_of(st.none(), st.integers(0, 2**62))),
        "record_index": draw(st.one_of(st.none(), st.integers(0, 5))), "run_id": "run",
        "primary_key_columns": draw(st.one_of(st.none(), st.lists(columns, max_size=2, unique=True))),
        "before": draw(images), "after": draw(images),
        "event_us": draw(st.one_of(st.none(), st.integers(-10**12, 4 * 10**15))),
    }


def python_events(change: dict[str, Any]) -> list[dict[str, Any]]:
    def text(value: Any) -> str | None:
        return None if value is None else json.dumps(value, ensure_ascii=False)

    schema = change["schema_name"]
    row = {**change, "source_schema": None if schema is None or schema == change["database"] else schema,
           "pk_json": text(change["primary_key_columns"]), "before_json": text(change["before"]),
           "after_json": text(change["after"])}
    return events_of_change(row)


def comparable(event: dict[str, Any]) -> tuple[Any, ...]:
    image = None if event["image"] is None else json.loads(event["image"])
    return tuple(json.dumps(image, sort_keys=True) if f == "image" else event[f] for f in EVENT_FIELDS)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(rows=st.lists(changes(), min_size=ROWS_PER_EXAMPLE, max_size=ROWS_PER_EXAMPLE))
def test_spark_events_equal_python_events(spark, rows) -> None:
    names = re.findall(r"(?:^|,\s*)(\w+)\s", ROW_SCHEMA)  # a comma in map<string,string> starts none
    frame = spark.createDataFrame([tuple(r[n] for n in names) for r in rows], ROW_SCHEMA)
    frame = frame.selectExpr("*", "timestamp_micros(event_us) AS event_time").drop("event_us")
    got = Counter(comparable(r.asDict()) for r in change_events(frame).collect())
    expected = Counter(comparable(e) for r in rows for e in python_events(r))
    assert got == expected
