"""The cdclake page of the Airflow UI (``plugins/cdclake_ui.py``), on the running scheduler of the
end-to-end pipeline (``backfilled``: Airflow started by `cdclake airflow start`).

Its API is checked with and without a login and against `cdclake query` over the same tables; then
a real browser (Debian's Chromium, headless, driven by Playwright) logs in, opens the page from the
UI's navigation, finds every hour's counts and quarantine reasons, and backfills two hours from the
hourly DAG's own Trigger -> Backfill dialog. When both runs have succeeded on the scheduler, the
page shows both hours published again, and the tables equal those of `cdclake run`.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from cdclake.paths import PROJECT_ROOT
from tests.dags.conftest import HOURS, http, snapshot

pytestmark = pytest.mark.slow

# Where the browser test leaves its screenshots (kept after the run; .cdclake/ is not committed).
OUTPUT = PROJECT_ROOT / ".cdclake" / "test-output" / "airflow_page"
CHROMIUM = Path("/usr/bin/chromium")
# As Chromium must run on this machine: no sandbox as root, and no background connections that
# its closed network refuses.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _text(hour: dt.datetime) -> str:
    return hour.strftime("%Y-%m-%dT%H:00:00Z")


def _token(backfilled) -> str:
    """A fresh login (the UI's tokens are short-lived)."""
    from cdclake.airflow_env import admin_password

    status, body = http("POST", f"{backfilled.url}/auth/token",
                        {"username": "admin", "password": admin_password(backfilled.config)})
    assert status == 201, body
    return str(json.loads(body)["access_token"])


def _get(backfilled, path: str, token: str | None = None) -> tuple[int, bytes]:
    return http("GET", f"{backfilled.url}/cdclake/{path}", token=token)


def _rows(config, sql: str) -> list[tuple]:
    from cdclake.query import run_query

    return run_query(config, sql)[1]


def test_the_page_and_every_endpoint_need_a_login(backfilled) -> None:
    token = _token(backfilled)
    paths = ["", "api/hours", f"api/hours/{_text(HOURS[0])}", "api/tables", "docs/index.html"]
    assert {p: _get(backfilled, p)[0] for p in paths} == dict.fromkeys(paths, 401)
    assert {p: _get(backfilled, p, token)[0] for p in paths} == dict.fromkeys(paths, 200)
    # Only files of the Data Docs site, whatever the path says.
    for escape in ("docs/..%2F..%2F..%2Fairflow%2Fpasswords.json", "docs/%2Fetc%2Fpasswd"):
        assert _get(backfilled, escape, token)[0] == 404
    assert _get(backfilled, "api/hours?start=2025-02-03T09&end=2025-02-03T07", token)[0] == 422
    assert _get(backfilled, "api/hours/yesterday", token)[0] == 422


def test_an_hours_json_equals_cdclake_query_over_the_same_tables(backfilled) -> None:
    config, token = backfilled.config, _token(backfilled)
    status, body = _get(backfilled, f"api/hours?start={HOURS[0]:%Y-%m-%dT%H}&end=2025-02-03T10", token)
    assert status == 200
    listing = json.loads(body)
    assert [h["hour"] for h in listing["hours"]] == [_text(h) for h in reversed(HOURS)]
    for hour in HOURS:
        status, body = _get(backfilled, f"api/hours/{_text(hour)}", token)
        shown = json.loads(body)
        at = f"landed_hour = TIMESTAMP '{hour:%Y-%m-%d %H:%M:%S}'"
        ledger = _rows(config, "SELECT topic, \"partition\", planned_start, planned_end, landed_count, "
                               "first_offset, last_offset, status, message, late_messages, max_lateness_ms "
                               f"FROM ops.offset_ledger WHERE {at} ORDER BY 1, 2")
        assert [(r["topic"], r["partition"], r["planned_start"], r["planned_end"], r["landed_count"],
                 r["first_offset"], r["last_offset"], r["status"], r["message"], r["late_messages"],
                 r["max_lateness_ms"]) for r in shown["landed"]] == ledger
        assert shown["messages"] == _rows(config, f"SELECT count(*) FROM raw.kafka_messages WHERE {at}")[0][0]
        assert shown["counts"]["change_rows"] == _rows(
            config, f"SELECT count(*) FROM cdc.changelog WHERE {at}")[0][0]
        assert shown["quarantine"] == dict(_rows(
            config, f"SELECT reason_code, count(*) FROM cdc.quarantine WHERE {at} GROUP BY 1"))
        gates = _rows(config, f"SELECT stage, bool_and(success), count(*), min(run_id) FROM ops.gate_results "
                              f"WHERE {at} GROUP BY 1 ORDER BY 1")
        assert [(s, g["status"] == "PASSED", g["expectations"], g["run_id"])
                for s, g in shown["gates"].items()] == gates
        publish = _rows(config, f"SELECT status, run_id, len(tables) FROM ops.hour_status "
                                f"WHERE {at} AND stage = 'publish'")
        assert [(shown["publish"]["status"], shown["run_id"], shown["published_tables"])] == publish
        assert shown["problems"] == (["quarantine"] if shown["quarantine"] else [])
        for gate in shown["gates"].values():  # every gate links its Data Docs pages, served
            assert gate["docs"]
            for page in gate["docs"]:
                status, html = _get(backfilled, page, token)
                assert (status, b"<html" in html.lower()) == (200, True), page
    quarantined = {h["hour"]: h["quarantine"] for h in listing["hours"] if h["quarantine"]}
    assert sum(sum(q.values()) for q in quarantined.values()) == 3  # the demo's three bad messages


def test_the_tables_json_equals_cdclake_query(backfilled) -> None:
    config = backfilled.config
    status, body = _get(backfilled, "api/tables", _token(backfilled))
    shown = {t["table"]: t for t in json.loads(body)}
    assert sorted(shown) == [
        "current.pkset_test__pkset_test_no_pk", "current.shop__orders", "current.shop__products",
        "current.test01__nokey", "current.test01__t_x", "current.test01__test"]
    published = _rows(config, "SELECT landed_hour, tables FROM ops.hour_status "
                              "WHERE stage = 'publish' AND status = 'PUBLISHED'")
    for name, table in shown.items():
        assert table["rows"] == _rows(config, f"SELECT count(*) FROM {name}")[0][0], name
        assert table["held"] is None
        newest = max(hour for hour, tables in published if any(t["name"].endswith(name) for t in tables))
        assert table["last_published_hour"] == _text(newest), name
    products = shown["current.shop__products"]
    assert (products["rows"], products["topic"], products["source_table"]) == (
        2, "demo.canal", "shop.products")


def _log_in(page, backfilled) -> None:
    from cdclake.airflow_env import admin_password

    page.goto(backfilled.url + "/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(admin_password(backfilled.config))
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(backfilled.url + "/", timeout=60_000)


def _open_cdclake_page(page):  # -> FrameLocator
    """The navigation's cdclake entry (not the DAGs' "cdclake" tag links)."""
    page.locator("a[href$='plugin/cdclake']").first.click()
    frame = page.frame_locator("iframe[title='cdclake']")
    frame.locator("#status").filter(has_text="hours").wait_for(timeout=30_000)
    return frame


def _backfill_from_the_dialog(page, first: dt.datetime, last: dt.datetime, attempts: int = 4) -> None:
    """Trigger -> Backfill on the hourly DAG: the range (logical dates, the hours' starts, both
    included), "All Runs", then Run Backfill. Airflow answers 503 when its SQLite database is
    locked (it says to retry, or use PostgreSQL): the dialog is filled in again, as a user would."""
    for attempt in range(attempts):
        response = _fill_and_run_backfill(page, first, last)
        if response.ok or response.status != 503 or attempt == attempts - 1:
            break
        page.wait_for_timeout(5_000)
        page.goto(page.url.split("/dags")[0] + "/")
    assert response.ok, response.text()


def _fill_and_run_backfill(page, first: dt.datetime, last: dt.datetime):  # -> playwright Response
    from playwright.sync_api import expect

    page.get_by_role("link", name="Dags").first.click()
    page.get_by_role("link", name="cdclake_hourly").first.click()
    page.wait_for_load_state("networkidle")
    page.get_by_role("button", name="Trigger").first.click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Trigger Dag").wait_for()
    # The radio input itself is hidden: click its card, until the dialog takes it (it re-renders
    # while the DAG's details load).
    backfill = dialog.get_by_role("radio", name="Backfill")
    for _ in range(20):
        dialog.get_by_text("Run this Dag for a range of dates").click()
        if backfill.is_checked():
            break
        page.wait_for_timeout(500)
    expect(backfill).to_be_checked()
    dialog.get_by_text("All Runs", exact=True).click()
    for i, moment in enumerate((first, last)):
        page.get_by_test_id("datetime-input").nth(i).click()
        page.get_by_placeholder("YYYY/MM/DD").fill(moment.strftime("%Y/%m/%d"))
        page.get_by_placeholder("HH:mm").fill(moment.strftime("%H:%M"))
        page.keyboard.press("Escape")
        expect(page.get_by_placeholder("YYYY/MM/DD")).to_have_count(0)  # the picker closed
    page.get_by_text("2 runs will be triggered.").wait_for()
    created = page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/backfills"))
    with created as response:
        page.get_by_role("button", name="Run Backfill").click()
    return response.value


def _wait_for_backfill(backfilled, created_after: dt.datetime, timeout_s: float = 900) -> dict:
    """The backfill created after ``created_after``, once the scheduler completed it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, body = http("GET", f"{backfilled.url}/api/v2/backfills?dag_id=cdclake_hourly",
                            token=_token(backfilled))
        assert status == 200, body
        new = [b for b in json.loads(body)["backfills"]
               if dt.datetime.fromisoformat(b["created_at"]) > created_after]
        if new and new[0]["completed_at"]:
            return dict(new[0])
        time.sleep(2)
    raise AssertionError(f"the backfill from the UI did not complete in {timeout_s:.0f} s")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is installed by scripts/setup.sh")
def test_in_a_browser_the_page_shows_the_hours_and_a_backfill_from_the_ui_publishes_them(
        backfilled, pipeline) -> None:
    from playwright.sync_api import sync_playwright

    from cdclake.airflow_cli import backfill_runs
    from cdclake.hour_report import hours

    OUTPUT.mkdir(parents=True, exist_ok=True)
    config = backfilled.config
    expected = {h["hour"]: h for h in hours(config, HOURS[0], HOURS[-1] + dt.timedelta(hours=1))}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            _log_in(page, backfilled)
            frame = _open_cdclake_page(page)
            rows = frame.locator("#hours tbody tr")
            assert rows.count() == len(HOURS)
            for hour, want in expected.items():
                cells = frame.locator(f"#hours tbody tr[data-hour='{hour}'] td").all_inner_texts()
                assert cells[0] == hour
                assert cells[1].startswith(f"{want['messages']} messages, {len(want['landed'])} partitions")
                assert cells[3:5] == [str(want["counts"]["change_rows"]),
                                      str(want["counts"]["control_messages"])]
                reasons = [f"{r}: {n}" for r, n in want["quarantine"].items()]
                assert cells[5].split("\n") == [str(want["counts"]["quarantined_messages"]), *reasons]
                assert cells[6:11] == ["PASSED", "PASSED", "PASSED", "OK", "PUBLISHED"]
                assert cells[11] == ("quarantine" if reasons else "")
            newest = expected[_text(HOURS[-1])]
            frame.locator(f"#hours tbody tr[data-hour='{newest['hour']}'] summary").click()
            ranges = frame.locator(f"#hours tbody tr[data-hour='{newest['hour']}'] li")
            ranges.first.wait_for()
            assert ranges.all_inner_texts() == [
                f"{r['topic']} [{r['partition']}] "
                + (f"offsets {r['first_offset']}..{r['last_offset']}" if r["landed_count"] else "no messages")
                + f" (planned {r['planned_start']}..{r['planned_end']}) {r['status']}"
                for r in newest["landed"]]
            problems = sum(1 for h in expected.values() if h["problems"])
            assert frame.locator("#hours tr.problem").count() == problems
            assert frame.locator("#chart rect").count() >= len(HOURS)
            frame.locator("#tables tbody tr[data-table='current.shop__products']").wait_for()
            page.screenshot(path=str(OUTPUT / "hours.png"), full_page=True)

            clicked = dt.datetime.now(dt.UTC)
            _backfill_from_the_dialog(page, HOURS[1], HOURS[2])
            # Off the DAG's page while the hours run: its auto-refresh keeps the browser busy on
            # the cores the scheduler's tasks need.
            page.goto("about:blank")
            backfill = _wait_for_backfill(backfilled, clicked)
            assert (backfill["from_date"], backfill["to_date"], backfill["reprocess_behavior"]) == (
                _text(HOURS[1]), _text(HOURS[2]), "completed")
            assert backfill_runs(config, HOURS) == {_text(h): "success" for h in HOURS}

            page.goto(backfilled.url + "/")
            frame = _open_cdclake_page(page)
            for hour in HOURS[1:]:
                cells = frame.locator(f"#hours tbody tr[data-hour='{_text(hour)}'] td").all_inner_texts()
                assert cells[10] == "PUBLISHED", hour
            page.screenshot(path=str(OUTPUT / "after_backfill.png"), full_page=True)
        finally:
            browser.close()
    # The two hours ran again (and only they); the tables are those of `cdclake run`.
    published = dict(_rows(config, "SELECT landed_hour, recorded_at FROM ops.hour_status "
                                   "WHERE stage = 'publish'"))
    again = sorted(h.replace(tzinfo=None) for h, at in published.items()
                   if at.replace(tzinfo=dt.UTC) > clicked)
    assert again == HOURS[1:]
    assert snapshot(config) == snapshot(pipeline)


def test_the_page_links_each_hour_to_its_dag_run(backfilled) -> None:
    status, body = _get(backfilled, "api/hours?start=2025-02-03T07&end=2025-02-03T10", _token(backfilled))
    listing = json.loads(body)
    assert listing["dag_id"] == "cdclake_hourly"
    for hour in listing["hours"]:
        run = hour["run_id"]
        assert run.startswith("backfill__")
        url = f"{backfilled.url}/api/v2/dags/cdclake_hourly/dagRuns/{quote(run, safe='')}"
        status, body = http("GET", url, token=_token(backfilled))
        assert status == 200, body
        started = dt.datetime.fromisoformat(json.loads(body)["data_interval_start"]).replace(tzinfo=None)
        assert _text(started) == hour["hour"]
