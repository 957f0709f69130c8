"""Every fixture through the Spark path gives exactly the CLI path's rows and rejections."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from cdclake.decode_cli import is_binary_format, read_keys, read_messages
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import TIME_FIELDS, micros_to_iso
from tests.formats.fixture_cases import all_cases

pytestmark = pytest.mark.slow

CASES = all_cases()
_EPOCH = dt.datetime(1970, 1, 1)


def _as_printed(row: dict[str, Any]) -> dict[str, Any]:
    """A Spark change row in the form `cdclake decode` prints (times as ISO text)."""
    out = dict(row)
    for name in TIME_FIELDS:
        if out[name] is not None:
            out[name] = micros_to_iso((out[name] - _EPOCH) // dt.timedelta(microseconds=1))
    return out


@pytest.fixture(scope="module")
def spark_results(spark) -> dict[str, tuple[list[dict], list[dict]]]:
    """Decode every fixture in ONE Spark job: each fixture is its own topic with its own format."""
    from pyspark.sql.types import StructType

    from spark_jobs.decode_spark import TopicFormat, change_rows, decode_outcomes, rejections

    records, formats, lines = [], {}, {}
    for case in CASES:
        topic = case.id
        formats[topic] = TopicFormat(case.format_id, FormatOptions(**case.options()))
        keys = read_keys(case.keys_path) if case.keys_path else None
        for line_no, message in read_messages(case.input_path, is_binary_format(case.format_id), keys,
                                              case.whole_file):
            records.append((topic, 0, message.offset, None, message.key, message.value))
            lines[(topic, message.offset)] = line_no
    schema = StructType.fromDDL("topic string, `partition` int, `offset` bigint, `timestamp` timestamp, "
                                "key binary, value binary")
    raw = spark.createDataFrame(records, schema).repartition(3)
    outcomes = decode_outcomes(raw, formats).cache()
    results: dict[str, tuple[list[dict], list[dict]]] = {c.id: ([], []) for c in CASES}
    for row in change_rows(outcomes).collect():
        results[row["kafka_topic"]][0].append(_as_printed(row.asDict(recursive=True)))
    for row in rejections(outcomes).collect():
        topic = row["msg_topic"]
        results[topic][1].append({"line": lines[(topic, row["msg_offset"])], "reason": row["reason_code"]})
    outcomes.unpersist()
    return results


def _order(row: dict[str, Any]) -> tuple:
    return (row["kafka_offset"], row["record_index"])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_spark_path_matches_the_expected_rows(case, spark_results) -> None:
    rows, errors = spark_results[case.id]
    expected = [dict(r, kafka_topic=case.id) for r in case.expected_rows()]
    assert sorted(rows, key=_order) == sorted(expected, key=_order)
    assert sorted(errors, key=lambda e: e["line"]) == case.expected_errors()
