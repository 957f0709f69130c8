"""Benchmark: the cdclake page of the Airflow UI over 30 days of hours.

    .venv/bin/python bench/ui_page/run.py [--days 30] [--topics 14] [--keep]

A private pyiceberg catalog (no Spark) holds what 30 days of hourly runs record: per hour and
topic a ledger row and normalize's counters, the gates' results (87 expectations an hour, as the
demo's) and compaction's and publish's rows: one data file per hour and table, as the hourly runs
leave them (their tables are partitioned by hour, so maintenance's bin-packing keeps them), written
a day per commit (the pipeline's Spark commits merge manifests as they go; pyiceberg's appends
would not). Measured warm, best of 5:

* **floor**: the page's four tables read by plain pyiceberg scans of the range (to Arrow);
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
# The project's tests package (the tables' records, the browser's settings).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.ops_records import hour_rows, ops_catalog, schemas  # noqa: E402


def _build(root: Path, days: int, topics: int) -> SimpleNamespace:
    import pyarrow as pa

    config, tables = ops_catalog(root)
    began = time.monotonic()
    for day in range(days):  # a day per commit: one data file per hour and table, as hourly writes
        rows: dict[str, list[dict[str, Any]]] = {name: [] for name in tables}
        for h in range(24):
            for name, records in hour_rows(START + dt.timedelta(days=day, hours=h), topics).items():
                rows[name] += records
        for name, table in tables.items():
            table.append(pa.Table.from_pylist(rows[name], schema=schemas()[name]))
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
        within = (f"landed_hour >= '{START:%Y-%m-%dT%H:%M:%S}+00:00' "
                  f"AND landed_hour < '{end:%Y-%m-%dT%H:%M:%S}+00:00'")

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
