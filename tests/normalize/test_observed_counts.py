"""The fast path's counts observed by the changelog write become the same groups as
``outcome_counts``: outcomes, messages (first outcomes), halves and declined kept apart."""

from __future__ import annotations

import json

import pytest

from spark_jobs.normalize import observed_counts

FORMATS = {"t.canal": "canal_json", "t.dw": "dataworks_json"}


def test_observed_counts_groups_rows_messages_halves_and_declined() -> None:
    observed = json.dumps({
        "t.canal|row|INSERT|0100|orders": 4,
        "t.canal|row|INSERT|0000|orders": 3,
        "t.canal|row|DELETE|0100|orders": 1,
        "t.canal|row|DELETE|0100|a|b|": 1,  # the table name is what follows the fourth bar
        "t.canal|row|DELETE|0100|": 2,      # an empty table name, not a missing one
        "t.dw|row|UPDATE|1100|users": 2,
        "t.dw|declined||0011|": 5,
    })
    none = {"control_kind": None, "format_tried": None, "reason_code": None, "warned": 0}
    assert observed_counts(observed, FORMATS) == [
        {"msg_topic": "t.canal", "_kind": "row", "source_format": "canal_json", "op": "DELETE",
         "table_name": "", "half": False, **none, "outcomes": 2, "messages": 2},
        {"msg_topic": "t.canal", "_kind": "row", "source_format": "canal_json", "op": "DELETE",
         "table_name": "a|b|", "half": False, **none, "outcomes": 1, "messages": 1},
        {"msg_topic": "t.canal", "_kind": "row", "source_format": "canal_json", "op": "DELETE",
         "table_name": "orders", "half": False, **none, "outcomes": 1, "messages": 1},
        {"msg_topic": "t.canal", "_kind": "row", "source_format": "canal_json", "op": "INSERT",
         "table_name": "orders", "half": False, **none, "outcomes": 7, "messages": 4},
        {"msg_topic": "t.dw", "_kind": "declined", "source_format": None, "op": None,
         "table_name": None, "half": False, **none, "outcomes": 5, "messages": 0},
        {"msg_topic": "t.dw", "_kind": "row", "source_format": "dataworks_json", "op": "UPDATE",
         "table_name": "users", "half": True, **none, "outcomes": 2, "messages": 2},
    ]


def test_nothing_observed_is_no_groups() -> None:
    assert observed_counts("{}", FORMATS) == []


@pytest.mark.slow
def test_a_write_observes_its_counts_in_spark(spark) -> None:
    """observed_key and the jar's cdclake_key_counts, observed over records as the fast path makes
    them, give back each group exactly (a table name with bars, a declined message)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from spark_jobs import jvm_decode
    from spark_jobs.normalize import observed_key

    assert jvm_decode.register(spark)
    records = [("t.canal", "row", "INSERT", "a|b", None, True)] * 3 + \
        [("t.canal", "row", "INSERT", "a|b", None, False), ("t.dw", "row", "UPDATE", "users", "k1", True),
         ("t.dw", "declined", None, None, None, None)]
    frame = spark.createDataFrame(records, "msg_topic string, _kind string, op string, table_name string, "
                                           "_pair_key string, _first boolean")
    observation = Observation("counts")
    frame.observe(observation, F.call_function(jvm_decode.KEY_COUNTS, observed_key()).alias("counts")) \
        .write.format("noop").mode("overwrite").save()
    none = {"control_kind": None, "format_tried": None, "reason_code": None, "warned": 0}
    assert observed_counts(observation.get["counts"], FORMATS) == [
        {"msg_topic": "t.canal", "_kind": "row", "source_format": "canal_json", "op": "INSERT",
         "table_name": "a|b", "half": False, **none, "outcomes": 4, "messages": 3},
        {"msg_topic": "t.dw", "_kind": "declined", "source_format": None, "op": None,
         "table_name": None, "half": False, **none, "outcomes": 1, "messages": 0},
        {"msg_topic": "t.dw", "_kind": "row", "source_format": "dataworks_json", "op": "UPDATE",
         "table_name": "users", "half": True, **none, "outcomes": 1, "messages": 1},
    ]


def test_fast_path_stats_count_decoded_declined_and_failed_messages_per_topic() -> None:
    import datetime as dt

    from spark_jobs.normalize import fast_path_stats

    observed = json.dumps({
        "t.canal|row|INSERT|0100|orders": 4,   # 4 messages' first rows ...
        "t.canal|row|INSERT|0000|orders": 3,   # ... and 3 more rows of theirs
        "t.canal|declined||0011|": 2,
        "t.canal|declined_error||0011|": 1,
        "t.dw|row|UPDATE|1100|users": 2,        # halves of two-message updates: 2 messages
    })
    hour = dt.datetime(2024, 1, 1, 10)
    rows = fast_path_stats(observed_counts(observed, FORMATS), hour, "r1")
    assert [(r["topic"], r["metric"], r["value"]) for r in rows] == [
        ("t.canal", "fast_declined_messages", 2), ("t.canal", "fast_decoded_messages", 4),
        ("t.canal", "fast_failed_messages", 1), ("t.dw", "fast_decoded_messages", 2)]
    assert {(r["stage"], r["landed_hour"], r["run_id"]) for r in rows} == {("normalize", hour, "r1")}


@pytest.mark.slow
def test_a_fast_decoder_exception_is_declined_apart_and_logged_with_coordinates(spark, caplog) -> None:
    """The jar's always failing decoder: its messages are declined on an exception (an empty
    array, kind declined_error), counted apart from declines by design, and their coordinates
    are logged."""
    import logging

    from spark_jobs import jvm_decode
    from spark_jobs.decode_spark import OUTCOME_SCHEMA
    from spark_jobs.normalize import _log_fast_failures

    assert jvm_decode.register(spark)
    source = spark.createDataFrame(
        [("t.bad", 0, offset, None, None, b'{"any": 1}') for offset in (7, 8)] +
        [("t.canal", 0, 1, None, None, b'{"not": "canal"}')],
        "topic string, partition int, offset long, timestamp timestamp, key binary, value binary")
    topics = {"t.bad": (jvm_decode.FAILING_FORMAT, "UTC", 1 << 20), "t.canal": ("canal_json", "UTC", 1 << 20)}
    tried = jvm_decode.with_fast_rows(source, topics)
    kinds = sorted((r["msg_topic"], r["msg_offset"], r["_kind"]) for r in jvm_decode.fast_outcomes(
        tried, OUTCOME_SCHEMA.fieldNames(), "row", outer=True).collect())
    assert kinds == [("t.bad", 7, "declined_error"), ("t.bad", 8, "declined_error"),
                     ("t.canal", 1, "declined")]
    with caplog.at_level(logging.WARNING, logger="spark_jobs.normalize"):
        _log_fast_failures(tried)
    assert "the JVM fast path failed on message(s) t.bad/0@7, t.bad/0@8; the Python decoders decided them" \
        in caplog.text
