"""What the cdclake page shows of each hour and table (``cdclake.hour_report``), on a pyiceberg
catalog of its own (no Spark): clean hours, a hole, a skipped range, a failed gate, a held table,
an interrupted publish and quarantine each as the page must say them; a re-run hour read anew
although earlier views kept its files; the current tables with their schema changes and holds."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from cdclake import hour_report
from tests.ops_records import (
    TOPIC_STARTS,
    expired_hours_schema,
    hour_rows,
    ops_catalog,
    schemas,
    topic_starts_schema,
)

H = [dt.datetime(2025, 3, 1, h) for h in range(7)]


def _hour(hour: dt.datetime, **change) -> dict[str, list[dict]]:
    """A clean hour of 2 topics (1 quarantined message each), then ``change`` applied to it."""
    rows = hour_rows(hour, 2)
    for name, edit in change.items():
        edit(rows[f"ops.{name}"])
    return rows


def _write(tables, rows: dict[str, list[dict]]) -> None:
    for name, records in rows.items():
        if records:
            tables[name].append(pa.Table.from_pylist(records, schema=schemas()[name]))


def _no_quarantine(stats: list[dict]) -> None:
    stats[:] = [r for r in stats if r["metric"] != "quarantined_messages"]


def _skip_first(ledger: list[dict]) -> None:
    ledger[0].update(status="skipped", landed_count=0, first_offset=None, last_offset=None,
                     message="skipped: broker outage")


def _fail_changelog(gates: list[dict]) -> None:
    failed = next(r for r in gates if r["stage"] == "changelog")
    failed.update(success=False, column_name="op", observed_value="3")


def _hold_a_table(gates: list[dict]) -> None:
    held = next(r for r in gates if r["stage"] == "current")
    held.update(expectation=hour_report.HELD_EXPECTATION, success=False, observed_value="current.t1")


def _status(compact: str | None, publish: str | None):
    def edit(status: list[dict]) -> None:
        wanted = {"compact": compact, "publish": publish}
        status[:] = [dict(r, status=wanted[r["stage"]], message="t1 held" if wanted[r["stage"]] == "PARTIAL"
                          else None) for r in status if wanted[r["stage"]]]
    return edit


@pytest.fixture
def lakehouse(tmp_path, monkeypatch):
    monkeypatch.setattr(hour_report, "_FILE_ROWS", type(hour_report._FILE_ROWS)())
    config, tables = ops_catalog(tmp_path)
    _write(tables, _hour(H[0], run_stats=_no_quarantine))
    # H[1]: nothing recorded (a hole between recorded hours)
    _write(tables, _hour(H[2], run_stats=_no_quarantine, offset_ledger=_skip_first))
    _write(tables, _hour(H[3], run_stats=_no_quarantine, gate_results=_fail_changelog,
                         hour_status=_status("OK", None)))
    _write(tables, _hour(H[4], gate_results=_hold_a_table, hour_status=_status("PARTIAL", "PUBLISHED")))
    _write(tables, _hour(H[5], run_stats=_no_quarantine, hour_status=_status("OK", "PUBLISHING")))
    return config, tables


def _summary(hour: dict) -> tuple:
    return (hour["hour"], hour["partitions"], hour["messages"], hour["counts"]["quarantined_messages"],
            hour["quarantine"], {s: g["status"] for s, g in hour["gates"].items()},
            (hour["compact"] or {}).get("status"), (hour["publish"] or {}).get("status"), hour["problems"])


def test_each_hour_says_what_needs_attention(lakehouse) -> None:
    config, _ = lakehouse
    shown = hour_report.hours(config, H[0], H[6] + dt.timedelta(hours=1))
    passed = {"changelog": "PASSED", "current": "PASSED", "raw": "PASSED"}
    assert [_summary(h) for h in shown] == [
        ("2025-03-01T05:00:00Z", 2, 200, 0, {}, passed, "OK", "PUBLISHING", ["unpublished"]),
        ("2025-03-01T04:00:00Z", 2, 200, 2, {"INVALID_JSON": 2}, dict(passed, current="PASSED_HELD"),
         "PARTIAL", "PUBLISHED", ["quarantine"]),
        ("2025-03-01T03:00:00Z", 2, 200, 0, {}, dict(passed, changelog="FAILED"), "OK", None,
         ["gate_failed", "unpublished"]),
        ("2025-03-01T02:00:00Z", 2, 100, 0, {}, passed, "OK", "PUBLISHED", ["hole"]),
        ("2025-03-01T01:00:00Z", 0, 0, 0, {}, {}, None, None, ["hole"]),
        ("2025-03-01T00:00:00Z", 2, 200, 0, {}, passed, "OK", "PUBLISHED", []),
    ]
    failed = shown[2]["gates"]["changelog"]["failed"]
    assert failed == [
        {"suite": "changelog.rows", "expectation": "expectation_0", "column": "op", "observed": "3"}]
    assert shown[1]["compact"]["message"] == "t1 held"
    skipped = shown[3]["landed"][0]
    assert (skipped["topic"], skipped["status"], skipped["message"]) == (
        "topic_00", "skipped", "skipped: broker outage")
    # The listing leaves the ranges out; a range narrower than the records picks its hours.
    assert "landed" not in hour_report.hours(config, H[0], H[1], ranges=False)[0]
    assert [h["hour"] for h in hour_report.hours(config, H[2], H[4])] == [
        "2025-03-01T03:00:00Z", "2025-03-01T02:00:00Z"]


def test_the_hours_from_a_topics_start_to_its_first_landed_hour_are_holes(lakehouse) -> None:
    config, tables = lakehouse
    begins = H[0] - dt.timedelta(hours=2)
    tables[TOPIC_STARTS].append(pa.Table.from_pylist(
        [{"topic": "topic_00", "start_hour": begins.replace(tzinfo=dt.UTC), "origin": "schedule.start_date",
          "run_id": "r", "recorded_at": None}], schema=topic_starts_schema()))
    shown = hour_report.hours(config, begins - dt.timedelta(hours=3), H[1])
    assert [(h["hour"], h["partitions"], h["problems"]) for h in shown] == [
        ("2025-03-01T00:00:00Z", 2, []),
        ("2025-02-28T23:00:00Z", 0, ["hole"]),
        ("2025-02-28T22:00:00Z", 0, ["hole"])]
    # A range starting after the topic's start shows only its own hours.
    assert [h["hour"] for h in hour_report.hours(config, H[0] - dt.timedelta(hours=1), H[1])] == [
        "2025-03-01T00:00:00Z", "2025-02-28T23:00:00Z"]


def test_an_hour_whose_raw_copy_expired_says_so_and_is_no_hole(lakehouse) -> None:
    config, _ = lakehouse
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(config.catalog_name, uri=config.catalog_uri, warehouse=config.warehouse)
    expired = catalog.create_table("ops.expired_hours", schema=expired_hours_schema())
    expired.append(pa.Table.from_pylist(
        [{"layer": layer, "landed_hour": H[0].replace(tzinfo=dt.UTC), "row_count": 1, "run_id": "m",
          "expired_at": None} for layer in ("raw", "quarantine")], schema=expired_hours_schema()))
    [shown] = hour_report.hours(config, H[0], H[1])
    assert (shown["expired"], shown["problems"], shown["messages"]) == (["quarantine", "raw"], [], 200)


def test_a_re_run_hour_is_read_anew_though_its_old_files_were_kept(lakehouse) -> None:
    config, tables = lakehouse
    before = hour_report.hours(config, H[5], H[6])
    assert before[0]["publish"]["status"] == "PUBLISHING"
    status = tables["ops.hour_status"]
    rows = _hour(H[5], hour_status=_status("OK", "PUBLISHED"))["ops.hour_status"]
    status.overwrite(pa.Table.from_pylist(rows, schema=schemas()["ops.hour_status"]),
                     overwrite_filter=f"landed_hour = '{H[5]:%Y-%m-%dT%H:%M:%S}+00:00'")
    after = hour_report.hours(config, H[5], H[6])
    assert (after[0]["publish"]["status"], after[0]["problems"]) == ("PUBLISHED", [])


def test_a_range_must_be_forward_and_at_most_92_days() -> None:
    from cdclake.exceptions import CdclakeError

    with pytest.raises(CdclakeError, match="a range of 1 hour to 92 days"):
        hour_report.hours(None, H[1], H[0])
    with pytest.raises(CdclakeError, match="not an ISO hour"):
        hour_report.parse_hour("yesterday")
    with pytest.raises(CdclakeError, match="is not on the hour"):
        hour_report.parse_hour("2025-03-01T10:30")
    assert hour_report.parse_hour("2025-03-01T10") == hour_report.parse_hour("2025-03-01T12:00:00+02:00")


def test_current_tables_show_rows_schema_changes_and_holds(lakehouse) -> None:
    from pyiceberg.catalog import load_catalog
    from pyiceberg.types import StringType

    config, _ = lakehouse
    catalog = load_catalog(config.catalog_name, type="sql", uri=config.catalog_uri,
                           warehouse=config.warehouse)
    orders = catalog.create_table("current.shop__orders", schema=pa.schema([("id", pa.int64())]),
                                  properties={"cdc.topic": "shop", "cdc.source": "shop.orders"})
    orders.append(pa.table({"id": [1, 2, 3]}))
    with orders.update_schema() as update:
        update.add_column("note", StringType())
        update.rename_column("id", "order_id")
    with orders.update_schema() as update:
        update.delete_column("note")
    catalog.create_table("current.shop__orders__tombstones", schema=pa.schema([("id", pa.int64())]))
    held_schema = pa.schema([("current_table", pa.string()), ("since", pa.timestamp("us", tz="UTC")),
                             ("failed_hour", pa.timestamp("us", tz="UTC")), ("message", pa.string())])
    held = catalog.create_table("cdc.held_tables", schema=held_schema)
    held.append(pa.Table.from_pylist([{"current_table": "current.shop__orders",
                                       "since": H[4].replace(tzinfo=dt.UTC),
                                       "failed_hour": H[5].replace(tzinfo=dt.UTC),
                                       "message": "value too long for note"}], schema=held_schema))
    shown = hour_report.tables(config)
    assert [(t["table"], t["rows"], t["topic"], t["source_table"], t["schema_changes"], t["held"])
            for t in shown] == [
        ("current.shop__orders", 3, "shop", "shop.orders",
         [{"schema_id": 1, "changes": ["+note string", "id -> order_id"]},
          {"schema_id": 2, "changes": ["-note"]}],
         {"since": "2025-03-01T04:00:00Z", "failed_hour": "2025-03-01T05:00:00Z",
          "message": "value too long for note"})]
