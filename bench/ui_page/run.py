"""Benchmark: the cdclake page of the Airflow UI over 30 days of hours.

    .venv/bin/python bench/ui_page/run.py [--days 30] [--topics 14] [--keep]

A private pyiceberg catalog (no Spark) holds what 30 days of hourly runs record: per hour and
topic a ledger row and normalize's counters, the gates' results (87 expectations an hour, as the
demo's) and compaction's and publish's rows: one data file per hour and table, as the hourly runs
leave them (their tables are partitioned by hour, so maintenance's bin-packing keeps them), written
a day per commit (the pipeline's Spark commits merge manifests as they go; pyiceberg's appends
would not). Measured warm, best of 5:

* **floor**: the page's four scans alone (pyiceberg, same columns and filters, to Arrow);
* **hours**: ``cdclake.hour_report.hours`` for the range (the scans plus the per-hour summary),
  first with no file read yet (after a restart of the API server), then warm (data files read
  once are kept: a view reads only the files written since);
* **api**: ``GET /cdclake/api/hours`` through the plugin's FastAPI app (JSON encoding included);
* **page**: Debian's Chromium (headless) opening the page from a local server of the same app
  until it shows every hour (request, JSON, table and chart).

The app's login check is replaced by an allow-all here (its cost is a JWT check). Not a test:
figures go in bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

START = dt.datetime(2025, 1, 1)
GATES = {"raw": 21, "changelog": 57, "current": 9}
METRICS = ("raw_messages", "decoded_messages", "change_rows", "control_messages", "quarantined_messages")


def _schemas() -> dict[str, Any]:
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    return {
        "ops.offset_ledger": pa.schema([
            ("topic", pa.string()), ("partition", pa.int32()), ("landed_hour", ts),
            ("planned_start", pa.int64()), ("planned_end", pa.int64()), ("landed_count", pa.int64()),
            ("first_offset", pa.int64()), ("last_offset", pa.int64()), ("run_id", pa.string()),
            ("status", pa.string()), ("message", pa.string()), ("recorded_at", ts),
            ("late_messages", pa.int64()), ("max_lateness_ms", pa.int64())]),
        "ops.run_stats": pa.schema([
            ("stage", pa.string()), ("landed_hour", ts), ("run_id", pa.string()), ("topic", pa.string()),
            ("metric", pa.string()), ("source_format", pa.string()), ("op", pa.string()),
            ("table_name", pa.string()), ("reason_code", pa.string()), ("control_kind", pa.string()),
            ("value", pa.int64())]),
        "ops.gate_results": pa.schema([
            ("stage", pa.string()), ("landed_hour", ts), ("run_id", pa.string()), ("suite", pa.string()),
            ("expectation", pa.string()), ("column_name", pa.string()), ("success", pa.bool_()),
            ("observed_value", pa.string()), ("details", pa.string()), ("validated_at", ts)]),
        "ops.hour_status": pa.schema([
            ("landed_hour", ts), ("stage", pa.string()), ("status", pa.string()), ("run_id", pa.string()),
            ("tables", pa.list_(pa.struct([("name", pa.string()), ("snapshot_id", pa.int64())]))),
            ("message", pa.string()), ("recorded_at", ts)]),
    }


def _hour_rows(hour: dt.datetime, topics: int) -> dict[str, list[dict[str, Any]]]:
    at = hour.replace(tzinfo=dt.UTC)
    run = f"scheduled__{hour:%Y-%m-%dT%H}:00:00+00:00"
    names = [f"topic_{i:02d}" for i in range(topics)]
    ledger = [{"topic": t, "partition": 0, "landed_hour": at, "planned_start": 100, "planned_end": 200,
               "landed_count": 100, "first_offset": 100, "last_offset": 199, "run_id": run,
               "status": "landed", "message": None, "recorded_at": at, "late_messages": 0,
               "max_lateness_ms": None} for t in names]
    stats = [{"stage": "normalize", "landed_hour": at, "run_id": run, "topic": t, "metric": m,
              "source_format": "canal_json", "op": None, "table_name": None,
              "reason_code": "INVALID_JSON" if m == "quarantined_messages" else None, "control_kind": None,
              "value": 1 if m == "quarantined_messages" else 99} for t in names for m in METRICS]
    gates = [{"stage": stage, "landed_hour": at, "run_id": run, "suite": f"{stage}.rows",
              "expectation": f"expectation_{i}", "column_name": None, "success": True,
              "observed_value": "0", "details": None, "validated_at": at}
             for stage, count in GATES.items() for i in range(count)]
    status = [{"landed_hour": at, "stage": stage, "status": state, "run_id": run,
               "tables": [{"name": f"lakehouse.current.t{i}", "snapshot_id": i} for i in range(20)],
               "message": None, "recorded_at": at}
              for stage, state in (("compact", "OK"), ("publish", "PUBLISHED"))]
    return {"ops.offset_ledger": ledger, "ops.run_stats": stats, "ops.gate_results": gates,
            "ops.hour_status": status}


def _build(root: Path, days: int, topics: int) -> SimpleNamespace:
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import IdentityTransform

    config = SimpleNamespace(catalog_name="lakehouse", catalog_uri=f"sqlite:///{root}/catalog.db",
                             warehouse=f"file://{root}/warehouse", home=root, topics=[])
    catalog = SqlCatalog(config.catalog_name, uri=config.catalog_uri, warehouse=config.warehouse)
    for namespace in ("ops", "cdc", "current"):
        catalog.create_namespace(namespace)
    tables = {}
    for name, schema in _schemas().items():
        table = catalog.create_table(name, schema=schema)
        field = table.schema().find_field("landed_hour")
        with table.update_spec() as spec:
            spec.add_field(field.name, IdentityTransform(), "landed_hour")
        tables[name] = table
    began = time.monotonic()
    for day in range(days):  # a day per commit: one data file per hour and table, as hourly writes
        rows: dict[str, list[dict[str, Any]]] = {name: [] for name in tables}
        for h in range(24):
            for name, hour_rows in _hour_rows(START + dt.timedelta(days=day, hours=h), topics).items():
                rows[name] += hour_rows
        for name, table in tables.items():
            table.append(pa.Table.from_pylist(rows[name], schema=_schemas()[name]))
    print(f"wrote {days * 24} hours in {days * len(tables)} commits, in {time.monotonic() - began:.0f} s")
    return config


def _best(label: str, run: Callable[[], Any], times: int = 5) -> float:
    run()  # warm
    spent = []
    for _ in range(times):
        began = time.perf_counter()
        run()
        spent.append(time.perf_counter() - began)
    print(f"{label:<8} best {min(spent):6.3f} s   median {sorted(spent)[len(spent) // 2]:6.3f} s")
    return min(spent)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--topics", type=int, default=14)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    import uvicorn
    from fastapi.testclient import TestClient

    from cdclake import hour_report
    from cdclake.catalog import open_catalog

    root = Path(tempfile.mkdtemp(prefix="cdclake-bench-ui-"))
    try:
        config = _build(root, args.days, args.topics)
        end = START + dt.timedelta(days=args.days)
        within = hour_report._within(START, end)

        def floor() -> None:
            catalog = open_catalog(config)  # type: ignore[arg-type]  # what it reads of a config
            for name in ("ops.offset_ledger", "ops.run_stats", "ops.gate_results", "ops.hour_status"):
                row_filter = within + (" AND stage = 'normalize'" if name == "ops.run_stats" else "")
                catalog.load_table(name).scan(row_filter=row_filter).to_arrow()

        os.environ["AIRFLOW_HOME"] = str(root / "airflow")  # Airflow's settings, for the login check
        from cdclake_airflow import ui

        ui._config = lambda: config
        app = ui.create_app()
        for check in app.router.dependencies:  # no login in the bench (see the docstring)
            if check.dependency is not None:
                app.dependency_overrides[check.dependency] = lambda: None
        client = TestClient(app)
        query = f"api/hours?start={START:%Y-%m-%dT%H}&end={end:%Y-%m-%dT%H}"
        assert len(client.get(f"/{query}").json()["hours"]) == args.days * 24

        print(f"{args.days} days = {args.days * 24} hours, {args.topics} topics")
        base = _best("floor", floor)
        hour_report._FILE_ROWS.clear()
        began = time.perf_counter()
        hour_report.hours(config, START, end)
        print(f"hours, first view (no file read yet) {time.perf_counter() - began:6.3f} s")
        hours = _best("hours", lambda: hour_report.hours(config, START, end))
        api = _best("api", lambda: client.get(f"/{query}").raise_for_status())

        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        threading.Thread(target=server.run, daemon=True).start()
        while not server.started:
            time.sleep(0.05)
        page = _page_seconds(f"http://127.0.0.1:{port}/", args.days * 24)
        server.should_exit = True
        print(f"ratios to the floor: hours {hours / base:.2f}x, api {api / base:.2f}x, "
              f"page {page / base:.2f}x")
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def _page_seconds(url: str, hours: int) -> float:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the project's tests package
    from tests.dags.test_airflow_page import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})

            def load() -> None:
                page.goto(url)
                page.locator("#status").filter(has_text=f"{hours} hours").wait_for(timeout=60_000)
                assert page.locator("#hours tbody tr").count() == hours

            return _best("page", load)
        finally:
            browser.close()


if __name__ == "__main__":
    raise SystemExit(main())
