"""Quality gates with write-audit-publish on real Spark + Iceberg tables.

A clean hour passes raw, changelog and current gates and is published; an hour with a future
event_time, an unknown op or a DELETE without its key fails the changelog gate naming the
expectation and the offending Kafka coordinates, while main (what analysts read) lacks the hour;
repaired, it publishes. An hour whose quarantine rate exceeds the topic's threshold fails too.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from cdclake.config import TopicConfig
from cdclake.exceptions import GateFailed
from tests.gates import traffic

pytestmark = pytest.mark.slow

CLEAN_HOUR = dt.datetime(2024, 3, 1, 10)
BAD_HOUR = dt.datetime(2024, 3, 1, 11)
QUARANTINE_HOUR = dt.datetime(2024, 3, 1, 12)
CURRENT_HOUR = dt.datetime(2024, 3, 1, 13)
DECODER_HOUR = dt.datetime(2024, 3, 1, 14)
DRIFT_HOUR = dt.datetime(2024, 3, 1, 15)
ITEMS = "current.gates_db__items"


def _formats():
    from cdclake.formats.base import FormatOptions
    from spark_jobs.decode_spark import TopicFormat

    return {t: TopicFormat(f, FormatOptions(max_value_bytes=4 * 1024 * 1024))
            for t, f in traffic.TOPIC_FORMATS.items()}


@pytest.fixture(scope="module")
def gate_config(config):
    return dataclasses.replace(config, topics=tuple(TopicConfig(name=t) for t in traffic.TOPIC_FORMATS))


def _hour_rows(spark, table: str, hour: dt.datetime, branch: str | None = None) -> list[dict]:
    from spark_jobs.normalize import table_ref

    rows = spark.table(table_ref(table, branch)).where(f"landed_hour = '{hour}'").collect()
    return sorted((r.asDict(recursive=True) for r in rows),
                  key=lambda r: (r["kafka_topic"], r["kafka_partition"], r["kafka_offset"],
                                 r.get("record_index") or 0))


def _gate_results(spark, hour: dt.datetime) -> list[tuple]:
    from spark_jobs.tables import GATE_RESULTS

    return sorted((r["stage"], r["run_id"], r["suite"], r["expectation"], r["column_name"], r["success"])
                  for r in spark.table(GATE_RESULTS).where(f"landed_hour = '{hour}'").collect())


def _make_items_table(spark, table: str = ITEMS) -> None:
    from spark_jobs.compaction.layout import META_COLUMNS

    meta = ", ".join(f"{name} {sql_type}" for name, sql_type in META_COLUMNS)
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table} (id string, name string, {meta}) USING iceberg")


def _items_rows(hour: dt.datetime) -> list[tuple]:
    t = hour + dt.timedelta(minutes=7)
    return [("1", "apple", "1", "INSERT", t, "T1", "it.canal", 0, 10000, "run"),
            ("2", "pear", "2", "UPDATE", t, "T2", "it.canal", 0, 10001, "run")]


CHANGELOG_EXPECTATIONS = sorted([
    ("changelog.changes", "expect_column_values_to_not_be_null", c)
    for c in ("op", "source_format", "kafka_topic", "kafka_partition",
              "kafka_offset")] + [
    ("changelog.changes", "expect_column_values_to_be_in_set", "op"),
    ("changelog.changes", "expect_column_values_to_be_in_set", "table_name_present_unless_ddl"),
    ("changelog.changes", "expect_column_values_to_be_in_set", "key_present_if_required"),
    ("changelog.changes", "expect_column_values_to_be_in_set", "event_time_present_unless_snapshot"),
    ("changelog.changes", "expect_column_values_to_be_between", "event_time"),
    ("changelog.changes", "expect_column_values_to_be_between", "event_time_minutes_past_hour_end"),
    ("changelog.changes", "expect_column_values_to_be_between", "event_time_minutes_after_kafka_timestamp"),
    ("changelog.changes", "expect_column_values_to_be_between", "event_time_minutes_after_produced_time"),
    ("changelog.topics", "expect_column_pair_values_to_be_equal", "raw_messages,accounted_messages"),
    ("changelog.topics", "expect_column_pair_values_to_be_equal", "change_rows,changelog_rows"),
    ("changelog.topics", "expect_column_pair_values_to_be_equal", "quarantined_messages,quarantine_rows"),
    ("changelog.topics", "expect_column_pair_values_a_to_be_greater_than_b",
     "quarantine_rate_max,quarantine_rate"),
    ("changelog.topics", "expect_column_values_to_be_between", "decoder_errors"),
    ("changelog.topics", "expect_column_pair_values_a_to_be_greater_than_b", "warning_rate_max,warning_rate"),
])


def test_clean_hour_passes_all_three_gates_and_is_published(spark, gate_config, capsys) -> None:
    from cdclake import cli
    from spark_jobs import publish
    from spark_jobs.gates import run_gate
    from spark_jobs.normalize import normalize_hour
    from spark_jobs.tables import CHANGELOG, QUARANTINE, ensure_tables

    ensure_tables(spark)
    traffic.write_hour(spark, CLEAN_HOUR, traffic.clean_messages())
    # The raw gate through the command line (same code path as the Spark job).
    assert cli.main(["validate", "--stage", "raw", "--hour", "2024-03-01T10:00:00Z", "--run-id", "r1"]) == 0
    assert "raw gate for hour 2024-03-01T10:00:00Z (run r1): 7 of 7 expectations passed" in \
        capsys.readouterr().out

    _make_items_table(spark)  # created by "compaction" in this hour: no snapshot yet
    branch = publish.audit_branch(CLEAN_HOUR)
    assert branch == "audit_20240301T10"
    normalize_hour(spark, _formats(), CLEAN_HOUR, "r1", branch=branch)  # begins the attempt
    publish.start_audit(spark, [ITEMS], CLEAN_HOUR)
    report = run_gate(spark, gate_config, "changelog", CLEAN_HOUR, "r1", branch=branch)
    assert sorted((o.suite, o.expectation, o.column) for o in report.outcomes) == CHANGELOG_EXPECTATIONS
    spark.createDataFrame(_items_rows(CLEAN_HOUR), spark.table(ITEMS).schema).writeTo(
        f"{ITEMS}.branch_{branch}").append()
    current = run_gate(spark, gate_config, "current", CLEAN_HOUR, "r1", branch=branch)
    assert [(o.target, o.expectation, o.column, o.success) for o in current.outcomes] == [
        (None, "expect_column_values_to_not_be_null", "_cdc_key", True),
        (None, "expect_compound_columns_to_be_unique", "current_table,current_row_id", True),
        (None, "expect_column_values_to_be_between", "cdc_event_time_minutes_ahead_of_now", True)]

    audited = _hour_rows(spark, CHANGELOG, CLEAN_HOUR, branch)
    assert audited and _hour_rows(spark, CHANGELOG, CLEAN_HOUR) == []  # analysts see nothing yet
    assert spark.table(ITEMS).collect() == []

    assert publish.publish(spark, publish.audited_tables(spark, CLEAN_HOUR), CLEAN_HOUR) == [
        QUARANTINE, ITEMS, CHANGELOG]  # the changelog last: its branch marks the hour unpublished
    assert _hour_rows(spark, CHANGELOG, CLEAN_HOUR) == audited
    assert sorted(tuple(r) for r in spark.table(ITEMS).collect()) == sorted(_items_rows(CLEAN_HOUR))
    assert all(branch not in publish.branch_names(spark, t) for t in (CHANGELOG, QUARANTINE, ITEMS))
    results = _gate_results(spark, CLEAN_HOUR)
    assert {(stage, run, ok) for stage, run, _s, _e, _c, ok in results} == {
        ("raw", "r1", True), ("changelog", "r1", True), ("current", "r1", True)}
    assert len(results) == 7 + len(CHANGELOG_EXPECTATIONS) + 3


def _tamper_future_event_time(rows: list[dict]) -> tuple[dict, set[tuple[str, str]]]:
    row = next(r for r in rows if r["produced_time"] is not None and r["op"] == "INSERT")
    row["event_time"] = dt.datetime(2099, 1, 1)
    return row, {("expect_column_values_to_be_between", "event_time_minutes_past_hour_end"),
                 ("expect_column_values_to_be_between", "event_time_minutes_after_kafka_timestamp"),
                 ("expect_column_values_to_be_between", "event_time_minutes_after_produced_time")}


def _tamper_unknown_op(rows: list[dict]) -> tuple[dict, set[tuple[str, str]]]:
    row = next(r for r in rows if r["op"] == "INSERT")
    row["op"] = "UPSERT"
    return row, {("expect_column_values_to_be_in_set", "op")}


def _tamper_delete_without_key(rows: list[dict]) -> tuple[dict, set[tuple[str, str]]]:
    row = next(r for r in rows if r["op"] == "DELETE" and r["primary_key_columns"])
    row["row_key"] = None
    row["before"] = {k: (None if k in row["primary_key_columns"] else v) for k, v in row["before"].items()}
    return row, {("expect_column_values_to_be_in_set", "key_present_if_required")}


@pytest.fixture(scope="module")
def bad_hour(spark, gate_config) -> tuple[str, list[dict]]:
    """The bad hour normalized cleanly onto its audit branch; tests spoil a copy of its rows."""
    from spark_jobs import publish
    from spark_jobs.normalize import normalize_hour
    from spark_jobs.tables import CHANGELOG, QUARANTINE, ensure_tables

    ensure_tables(spark)
    traffic.write_hour(spark, BAD_HOUR, traffic.clean_messages())
    branch = publish.start_audit(spark, [CHANGELOG, QUARANTINE], BAD_HOUR)
    normalize_hour(spark, _formats(), BAD_HOUR, "r2", branch=branch)
    return branch, _hour_rows(spark, CHANGELOG, BAD_HOUR, branch)


def _write_branch_rows(spark, rows: list[dict], branch: str) -> None:
    from pyspark.sql import functions as F

    from spark_jobs.tables import CHANGELOG

    frame = spark.createDataFrame([tuple(r.values()) for r in rows], spark.table(CHANGELOG).schema)
    frame.writeTo(f"{CHANGELOG}.branch_{branch}").overwrite(F.col("landed_hour") == F.lit(BAD_HOUR))


@pytest.mark.parametrize("local_rows_max", [None, 0], ids=["pandas", "spark"])
@pytest.mark.parametrize(
    "tamper", [_tamper_future_event_time, _tamper_unknown_op, _tamper_delete_without_key],
    ids=["future_event_time", "unknown_op", "delete_without_key"])
def test_bad_change_fails_the_changelog_gate_and_stays_unpublished(spark, gate_config, state_home, bad_hour,
                                                                   tamper, local_rows_max) -> None:
    """Either GX engine (a small batch in pandas, a large one on Spark) reports the same."""
    from spark_jobs.gates import GateRunner, run_gate
    from spark_jobs.tables import CHANGELOG

    branch, clean = bad_hour
    rows = [dict(r) for r in clean]
    spoiled, expected_failures = tamper(rows)
    _write_branch_rows(spark, rows, branch)
    runner = None if local_rows_max is None else GateRunner(spark, state_home, local_rows_max=local_rows_max)
    with pytest.raises(GateFailed) as failure:
        run_gate(spark, gate_config, "changelog", BAD_HOUR, "r2", branch=branch, runner=runner)
    message = str(failure.value)
    coordinates = f"{spoiled['kafka_topic']}/{spoiled['kafka_partition']}/{spoiled['kafka_offset']}"
    for expectation, column in expected_failures:
        line = next(line for line in message.splitlines() if f"{expectation}({column})" in line)
        assert f"offending rows (Kafka coordinates): {coordinates}" in line
    assert message.count("\n  - ") == len(expected_failures)
    assert "main) are unchanged" in message and branch in message
    failed = {(e, c) for stage, _r, _s, e, c, ok in _gate_results(spark, BAD_HOUR) if not ok}
    assert failed == expected_failures
    assert _hour_rows(spark, CHANGELOG, BAD_HOUR) == []  # analysts never see the hour
    assert len(_hour_rows(spark, CHANGELOG, BAD_HOUR, branch)) == len(clean)  # inspectable


@pytest.mark.parametrize("local_rows_max", [None, 0], ids=["pandas", "spark"])
def test_a_skew_of_whole_hours_names_the_time_zone_setting(spark, gate_config, state_home, bad_hour,
                                                           local_rows_max) -> None:
    """GoldenGate's current_ts two hours behind op_ts: the failure says which setting fixes it."""
    from spark_jobs.gates import GateRunner, run_gate

    branch, clean = bad_hour
    rows = [dict(r) for r in clean]
    row = next(r for r in rows if r["produced_time"] is not None and r["event_time"] is not None)
    row["produced_time"] = row["event_time"] - dt.timedelta(hours=2, seconds=30)
    _write_branch_rows(spark, rows, branch)
    runner = None if local_rows_max is None else GateRunner(spark, state_home, local_rows_max=local_rows_max)
    with pytest.raises(GateFailed) as failure:
        run_gate(spark, gate_config, "changelog", BAD_HOUR, "r2", branch=branch, runner=runner)
    line = next(line for line in str(failure.value).splitlines()
                if "(event_time_minutes_after_produced_time)" in line)
    assert "observed 1 unexpected of" in line and "[120.5]" in line
    assert line.endswith(
        f"; likely cause: the event time is ahead of the time the change was produced by a whole "
        f"time-zone offset (+02:00 h), so times are read in the wrong zone; set produced_timezone "
        f"(ogg_json: the zone of current_ts) or source_timezone (the zone of the source's zone-less "
        f"event times) of topic(s) {row['kafka_topic']} to the zone that offset implies rather than "
        f"raising the threshold")


def test_repaired_bad_hour_passes_and_publishes(spark, gate_config, bad_hour) -> None:
    from spark_jobs import publish
    from spark_jobs.gates import run_gate
    from spark_jobs.tables import CHANGELOG, QUARANTINE

    branch, clean = bad_hour
    _write_branch_rows(spark, clean, branch)
    run_gate(spark, gate_config, "changelog", BAD_HOUR, "r3", branch=branch)
    assert publish.publish(spark, [CHANGELOG, QUARANTINE], BAD_HOUR) == [QUARANTINE, CHANGELOG]
    assert _hour_rows(spark, CHANGELOG, BAD_HOUR) == clean
    results = _gate_results(spark, BAD_HOUR)  # the re-run replaced the failed runs' rows
    assert {(run, ok) for _st, run, _s, _e, _c, ok in results} == {("r3", True)}
    assert len(results) == len(CHANGELOG_EXPECTATIONS)


def test_quarantine_rate_over_topic_threshold_fails_until_the_topic_allows_it(spark, gate_config) -> None:
    from spark_jobs import publish
    from spark_jobs.gates import run_gate
    from spark_jobs.normalize import normalize_hour
    from spark_jobs.tables import CHANGELOG, QUARANTINE, ensure_tables

    ensure_tables(spark)
    canal = [m for m in traffic.clean_messages() if m[0] == "it.canal"]
    traffic.write_hour(spark, QUARANTINE_HOUR, canal + [("it.canal", None, traffic.JUNK)] * 2)
    branch = publish.start_audit(spark, [CHANGELOG, QUARANTINE], QUARANTINE_HOUR)
    normalize_hour(spark, _formats(), QUARANTINE_HOUR, "r4", branch=branch)
    with pytest.raises(GateFailed) as failure:
        run_gate(spark, gate_config, "changelog", QUARANTINE_HOUR, "r4", branch=branch)
    rate = 2 / (len(canal) + 2)
    assert (f"changelog.topics: expect_column_pair_values_a_to_be_greater_than_b"
            f"(quarantine_rate_max,quarantine_rate) observed 1 unexpected of 1 rows "
            f"(sample {json.dumps([[0.05, rate]])}); offending rows (Kafka coordinates): it.canal") \
        in str(failure.value)
    assert str(failure.value).count("\n  - ") == 1
    assert _hour_rows(spark, CHANGELOG, QUARANTINE_HOUR) == []

    # The operator accepts this producer's junk: a per-topic threshold in the configuration.
    lenient = dataclasses.replace(gate_config, topics=tuple(
        dataclasses.replace(t, quarantine_rate_max=0.5) if t.name == "it.canal" else t
        for t in gate_config.topics))
    run_gate(spark, lenient, "changelog", QUARANTINE_HOUR, "r5", branch=branch)
    publish.publish(spark, [CHANGELOG, QUARANTINE], QUARANTINE_HOUR)
    assert len(_hour_rows(spark, QUARANTINE, QUARANTINE_HOUR)) == 2


def _drifted_update(hour: dt.datetime, row_id: int) -> bytes:
    """A Canal UPDATE whose ``old`` names a column its row does not have (the OMS manual's shape)."""
    ms = int((hour + dt.timedelta(minutes=5)).replace(tzinfo=dt.UTC).timestamp() * 1000)
    return json.dumps({
        "data": [{"id": str(row_id), "name": "new"}], "database": "shop", "es": ms, "id": row_id,
        "isDdl": False, "mysqlType": {"id": "int", "name": "varchar(10)"}, "old": [{"nick": "was"}],
        "pkNames": ["id"], "sql": "", "sqlType": {"id": 4, "name": 12}, "table": "drift", "ts": ms + 100,
        "type": "UPDATE"}).encode()


def test_changes_decoded_despite_drifted_metadata_are_counted_and_gated_by_rate(spark, gate_config) -> None:
    """Canal UPDATEs whose ``old`` names an absent column are decoded from their rows, with the
    warning OLD_NAMES_UNKNOWN_COLUMN counted in the run stats; above the warning rate the hour
    fails, and a topic that allows the rate publishes them."""
    from spark_jobs import publish
    from spark_jobs.gates import run_gate
    from spark_jobs.normalize import normalize_hour
    from spark_jobs.tables import CHANGELOG, QUARANTINE, RUN_STATS, ensure_tables

    ensure_tables(spark)
    canal = [m for m in traffic.clean_messages() if m[0] == "it.canal"]
    drifted: list[tuple[str, bytes | None, bytes | None]] = [
        ("it.canal", None, _drifted_update(DRIFT_HOUR, i)) for i in (1, 2)]
    traffic.write_hour(spark, DRIFT_HOUR, canal + drifted)
    branch = publish.start_audit(spark, [CHANGELOG, QUARANTINE], DRIFT_HOUR)
    summary = normalize_hour(spark, _formats(), DRIFT_HOUR, "r7", branch=branch)
    assert summary.quarantined_messages == 0
    stats = (spark.table(RUN_STATS).where(f"landed_hour = '{DRIFT_HOUR}' AND metric = 'warnings'")
             .select("topic", "reason_code", "value").collect())
    assert [tuple(r) for r in stats] == [("it.canal", "OLD_NAMES_UNKNOWN_COLUMN", 2)]
    with pytest.raises(GateFailed) as failure:
        run_gate(spark, gate_config, "changelog", DRIFT_HOUR, "r7", branch=branch)
    rate = 2 / summary.change_rows
    assert (f"changelog.topics: expect_column_pair_values_a_to_be_greater_than_b"
            f"(warning_rate_max,warning_rate) observed 1 unexpected of 1 rows "
            f"(sample {json.dumps([[0.05, rate]])}); offending rows (Kafka coordinates): it.canal") \
        in str(failure.value)
    assert str(failure.value).count("\n  - ") == 1

    lenient = dataclasses.replace(gate_config, topics=tuple(
        dataclasses.replace(t, warning_rate_max=0.5) if t.name == "it.canal" else t
        for t in gate_config.topics))
    run_gate(spark, lenient, "changelog", DRIFT_HOUR, "r8", branch=branch)
    publish.publish(spark, [CHANGELOG, QUARANTINE], DRIFT_HOUR)
    rows = [r for r in _hour_rows(spark, CHANGELOG, DRIFT_HOUR) if r["table_name"] == "drift"]
    assert sorted((r["row_key"], r["before"], r["after"], r["warnings"]) for r in rows) == [
        (f'["{i}"]', {"id": str(i), "name": "new"}, {"id": str(i), "name": "new"},
         ["OLD_NAMES_UNKNOWN_COLUMN: 'old[0]' names column(s) ['nick'] that 'data[0]' does not have; "
          "their old values are left out of the before image"]) for i in (1, 2)]


def _quarantine_crash(spark, branch: str, detail: str) -> None:
    from spark_jobs.tables import QUARANTINE, RAW_MESSAGES, RUN_STATS

    hour, offset, value = DECODER_HOUR, 99_999, b'{"data": null}'
    at = hour + dt.timedelta(minutes=30)
    raw: list[tuple] = [("it.canal", 0, offset, at, 0, None, value, [], hour, "r6", None)]
    spark.createDataFrame(raw, spark.table(RAW_MESSAGES).schema).writeTo(RAW_MESSAGES).append()
    stats = [("normalize", hour, "r6", "it.canal", "quarantined_messages", None, None, None, "DECODER_ERROR",
              None, 1)]
    spark.createDataFrame(stats, spark.table(RUN_STATS).schema).writeTo(RUN_STATS).append()
    quarantined = [("it.canal", 0, offset, at, None, value, "canal_json", "DECODER_ERROR", detail, hour, "r6",
                    None)]
    spark.createDataFrame(quarantined, spark.table(QUARANTINE).schema).writeTo(
        f"{QUARANTINE}.branch_{branch}").append()


def test_a_decoder_crash_fails_the_changelog_gate_whatever_the_quarantine_rate(spark, gate_config) -> None:
    """A deliberately broken decoder: its crash is quarantined as DECODER_ERROR, naming the
    exception and where it was raised, and the hour fails though 1 message in 20 is under the
    topic's threshold."""
    from cdclake.formats.canonical import RawMessage
    from cdclake.formats.decoding import decode_one
    from spark_jobs import publish
    from spark_jobs.gates import run_gate
    from spark_jobs.normalize import normalize_hour
    from spark_jobs.tables import CHANGELOG, QUARANTINE, ensure_tables

    class Broken:
        format_id = "canal_json"

        def decode(self, message: RawMessage) -> object:
            document: dict[str, object] = {}
            return document["data"]  # a bug: KeyError

    crashed = decode_one(Broken(), RawMessage(value=b"{}", topic="it.canal", offset=7))  # type: ignore[arg-type]
    assert crashed.rejected is not None and crashed.rejected.reason == "DECODER_ERROR"
    assert crashed.rejected.detail.startswith("canal_json: unexpected KeyError: 'data' (decoder error at ")

    ensure_tables(spark)
    canal = [m for m in traffic.clean_messages() if m[0] == "it.canal"]
    traffic.write_hour(spark, DECODER_HOUR, canal)
    branch = publish.start_audit(spark, [CHANGELOG, QUARANTINE], DECODER_HOUR)
    normalize_hour(spark, _formats(), DECODER_HOUR, "r6", branch=branch)
    # One more message of the hour, as normalize records it when the broken decoder meets it:
    # landed, counted as quarantined, and quarantined with the crash's reason and detail.
    _quarantine_crash(spark, branch, crashed.rejected.detail)
    lenient = dataclasses.replace(gate_config, topics=tuple(
        dataclasses.replace(t, quarantine_rate_max=0.5) if t.name == "it.canal" else t
        for t in gate_config.topics))
    with pytest.raises(GateFailed) as failure:
        run_gate(spark, lenient, "changelog", DECODER_HOUR, "r6", branch=branch)
    assert ("changelog.topics: expect_column_values_to_be_between(decoder_errors) observed 1 unexpected "
            "of 1 rows (sample [1]); offending rows (Kafka coordinates): it.canal") in str(failure.value)
    assert str(failure.value).count("\n  - ") == 1  # the counts reconcile: only the crash fails
    assert _hour_rows(spark, CHANGELOG, DECODER_HOUR) == []


def test_current_gate_checks_all_tables_in_one_pass_and_names_the_bad_rows(spark, gate_config) -> None:
    from spark_jobs import publish
    from spark_jobs.gates import run_gate

    left, right = "current.gates_db__left", "current.gates_db__right"
    for table in (left, right):
        _make_items_table(spark, table)
    branch = publish.start_audit(spark, [left, right], CURRENT_HOUR)
    rows = _items_rows(CURRENT_HOUR)
    # The same key twice in one table is a fault; the same key in two tables is not.
    twin = rows[0][:8] + (10002,) + rows[0][9:]
    for table, written in ((left, rows), (right, rows + [twin])):
        spark.createDataFrame(written, spark.table(table).schema).writeTo(
            f"{table}.branch_{branch}").append()
    with pytest.raises(GateFailed) as failure:
        run_gate(spark, gate_config, "current", CURRENT_HOUR, "r6", branch=branch)
    failed = [line for line in str(failure.value).splitlines() if line.startswith("  - ")]
    assert failed == [
        "  - current.rows: expect_compound_columns_to_be_unique(current_table,current_row_id) observed "
        '2 unexpected of 5 rows (sample [{"current_table": "current.gates_db__right", '
        '"current_row_id": "1"}, {"current_table": "current.gates_db__right", "current_row_id": "1"}]); '
        "offending rows (Kafka coordinates): current.gates_db__right/it.canal/0/10000/1, "
        "current.gates_db__right/it.canal/0/10002/1"]
    assert spark.table(left).collect() == spark.table(right).collect() == []  # nothing published


def test_data_docs_index_lists_the_runs(state_home) -> None:
    index = state_home / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    html = index.read_text()
    for run_name in ("raw 2024-03-01T10 r1", "changelog 2024-03-01T10 r1",
                     "current 2024-03-01T10 r1", "changelog 2024-03-01T11 r2",
                     "changelog 2024-03-01T11 r3", "changelog 2024-03-01T12 r4"):
        assert run_name in html
    for suite in ("raw.messages", "raw.partitions", "changelog.changes", "changelog.topics", "current.rows"):
        assert suite in html
