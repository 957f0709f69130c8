"""The frames jobs make in Python (run stats, gate results, ledger entries) and the empty ones:
exact values, the declared schema, and no Python RDD behind them."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

import pytest

pytestmark = pytest.mark.slow

SCHEMA_DDL = ("topic string NOT NULL, `offset` bigint, landed_hour timestamp NOT NULL, "
              "ok boolean, note string, counts map<string,bigint>")


def _plan(frame) -> str:
    return str(cast(Any, frame)._explain_string(mode="simple"))  # the physical plan, from the server


def test_local_frame_keeps_exact_values_nulls_and_the_schema(spark) -> None:
    from pyspark.sql.types import StructType

    from spark_jobs.session import local_frame

    schema = cast(StructType, StructType.fromDDL(SCHEMA_DDL))
    hour = dt.datetime(2024, 6, 1, 12)
    aware = dt.datetime(2024, 6, 1, 14, 30, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    rows: list[Any] = [
        ("t1", 2**63 - 1, hour, True, "first", {"a": 9_007_199_254_740_993}),  # beyond a double's
        {"topic": "t2", "offset": None, "landed_hour": aware, "ok": None, "note": None, "counts": None},
    ]
    frame = local_frame(spark, rows, schema)
    assert frame.schema == schema
    assert "ExistingRDD" not in _plan(frame)  # what createDataFrame(list) reads: a Python RDD
    assert [r.asDict() for r in frame.orderBy("topic").collect()] == [
        {"topic": "t1", "offset": 2**63 - 1, "landed_hour": hour, "ok": True, "note": "first",
         "counts": {"a": 9_007_199_254_740_993}},
        # An aware time is the same instant in UTC (the session's zone), as createDataFrame gives.
        {"topic": "t2", "offset": None, "landed_hour": dt.datetime(2024, 6, 1, 12, 30, 0, 123456),
         "ok": None, "note": None, "counts": None},
    ]
    assert local_frame(spark, [], schema).schema == schema
    assert local_frame(spark, [], schema).count() == 0


def test_empty_frame_has_the_schema_and_no_rows(spark) -> None:
    from pyspark.sql.types import StructType

    from spark_jobs.decode_spark import OUTCOME_SCHEMA
    from spark_jobs.session import empty_frame

    frame = empty_frame(spark, OUTCOME_SCHEMA)
    assert frame.schema == OUTCOME_SCHEMA
    assert frame.collect() == []
    assert "ExistingRDD" not in _plan(frame)
    one_column = cast(StructType, StructType.fromDDL("a int"))
    assert empty_frame(spark, one_column).schema == one_column
