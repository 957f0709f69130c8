"""End to end: the real broker, three hours of mixed-format traffic, `airflow dags test` per hour.

Each hour runs the whole hourly DAG (plan -> land -> validate_raw -> normalize ->
validate_changelog -> compact -> validate_current -> publish) as separate tasks, each a job on its
own session of the test run's Spark Connect server, exactly as a scheduled run would. The test
then checks the published current-state tables, the quarantine and the gate results value by
value, re-runs the middle hour and checks that nothing changed. Last, the same three hours are
backfilled on a real scheduler (`cdclake airflow start`, `airflow backfill create` through `cdclake
airflow backfill`) into a second state folder, and every published table must equal the `cdclake
run` one.

Each pipeline has a state folder of its own (catalog, warehouse, Airflow database) under the test
run's; the Kafka broker and the Spark Connect server are the test run's.
"""

from __future__ import annotations

import datetime as dt
import json
import stat
from pathlib import Path

import pytest

from tests.dags.conftest import HOURS, pipeline_environment, snapshot

pytestmark = pytest.mark.slow


def _rows(config, sql: str) -> list[tuple]:
    from cdclake.query import run_query

    return run_query(config, sql)[1]


def test_current_state_tables_hold_exactly_the_expected_rows(pipeline) -> None:
    config = pipeline
    from cdclake.catalog import open_catalog

    tables = sorted(t for _ns, t in open_catalog(config).list_tables("current"))
    assert [t for t in tables if not t.endswith("__tombstones")] == [
        "pkset_test__pkset_test_no_pk", "shop__orders", "shop__products", "test01__nokey", "test01__t_x",
        "test01__test"]
    # DRS manual example: UPDATE moves key 103 -> 104; a later DELETE of key 7 (row in `old`)
    # finds nothing live. (Tombstones of these 2021 events are already past their retention.)
    assert _rows(config, "SELECT id, _cdc_op FROM current.test01__test ORDER BY id") == [(104, "UPDATE")]
    # Canal CREATE TABLE + TRUNCATE of shop.orders: the table exists and is empty.
    assert _rows(config, "SELECT count(*) FROM current.shop__orders") == [(0,)]
    # Gson HTML escapes decoded; the table name "t&x" sanitised to t_x.
    assert _rows(config, "SELECT id, c_txt FROM current.test01__t_x") == [(8, "<p class='x'>A & B</p>")]
    # Keyless table: the UPDATE inserts (x, 2), the DELETE removes that one copy.
    assert _rows(config, "SELECT count(*) FROM current.test01__nokey") == [(0,)]
    # DataWorks: insert, two-message update (paired), delete of row id 15.
    assert _rows(config, "SELECT count(*) FROM current.pkset_test__pkset_test_no_pk") == [(0,)]
    # Canal: 101 and 102 inserted, updated, deleted; 102 -> 103 key change (name NULL), then 102
    # written again with name 'x'.
    products = "SELECT id, name, CAST(weight AS VARCHAR) FROM current.shop__products ORDER BY id"
    assert _rows(config, products) == [(102, "x", "8.100"), (103, None, "8.100")]


def test_quarantine_holds_the_bad_messages_with_their_reasons(pipeline) -> None:
    assert _rows(pipeline, "SELECT kafka_topic, reason_code FROM cdc.quarantine ORDER BY 1, 2") == [
        ("demo.canal", "INVALID_JSON"), ("demo.canal", "INVALID_JSON"), ("demo.canal", "UNKNOWN_FORMAT")]


def test_every_gate_passed_for_every_hour(pipeline) -> None:
    rows = _rows(pipeline, "SELECT stage, landed_hour, bool_and(success), count(*) FROM ops.gate_results "
                           "GROUP BY 1, 2 ORDER BY 2, 1")
    assert [(r[0], r[1].replace(tzinfo=None) if hasattr(r[1], "tzinfo") else r[1], r[2]) for r in rows] == [
        (stage, hour, True) for hour in HOURS for stage in ("changelog", "current", "raw")]


def test_every_hour_shows_landed_gated_compacted_and_published(pipeline) -> None:
    from cdclake.hours_cli import COLUMNS, hour_rows

    def by_hour(sql: str) -> dict[dt.datetime, int]:
        return {hour.replace(tzinfo=None): n for hour, n in _rows(pipeline, sql)}

    landed = by_hour("SELECT landed_hour, count(*) FROM raw.kafka_messages GROUP BY 1")
    changes = by_hour("SELECT landed_hour, count(*) FROM cdc.changelog GROUP BY 1")
    quarantined = by_hour("SELECT landed_hour, count(*) FROM cdc.quarantine GROUP BY 1")
    published = by_hour("SELECT landed_hour, len(tables) FROM ops.hour_status WHERE stage = 'publish'")
    shown = [dict(zip(COLUMNS, row, strict=True)) for row in hour_rows(
        pipeline, HOURS[0], HOURS[-1] + dt.timedelta(hours=1))]
    assert shown == [{
        "hour": h.strftime("%Y-%m-%dT%H:00:00Z"), "landed": str(landed.get(h, 0)), "expired": None,
        "change_rows": str(changes.get(h, 0)), "quarantined": str(quarantined.get(h, 0)),
        "raw_gate": "PASSED", "changelog_gate": "PASSED", "compact": "OK", "current_gate": "PASSED",
        "publish": "PUBLISHED", "published_tables": str(published[h])} for h in reversed(HOURS)]
    assert all(published[h] >= 2 for h in HOURS)  # the changelog and the quarantine at least


def test_tables_lists_every_table_with_its_rows_snapshot_source_and_last_published_hour(pipeline) -> None:
    """`cdclake tables` (snapshot summaries, no scan) against full scans through `cdclake query`,
    and the catalog's own snapshots."""
    from cdclake.catalog import open_catalog
    from cdclake.tables_cli import COLUMNS, table_rows

    catalog = open_catalog(pipeline)
    listed = {row[0]: dict(zip(COLUMNS, row, strict=True)) for row in table_rows(pipeline)}
    names = sorted(f"{ns[0]}.{t}" for ns in catalog.list_namespaces() for _n, t in catalog.list_tables(ns))
    assert sorted(listed) == names
    for name, shown in listed.items():
        assert shown["rows"] == _rows(pipeline, f"SELECT count(*) FROM {name}")[0][0], name
        snapshot = catalog.load_table(name).current_snapshot()
        assert shown["snapshot_id"] == (snapshot.snapshot_id if snapshot else None), name
        assert shown["data_bytes"] > 0 or shown["rows"] == 0, name
    last = HOURS[-1].strftime("%Y-%m-%dT%H:00:00Z")
    assert listed["cdc.changelog"]["last_published_hour"] == last  # every hour publishes it
    assert listed["raw.kafka_messages"]["last_published_hour"] is None  # landing does not publish
    products = listed["current.shop__products"]
    assert (products["rows"], products["topic"], products["format"], products["source_table"]) == (
        2, "demo.canal", "auto", "shop.products")
    assert products["last_published_hour"] in {h.strftime("%Y-%m-%dT%H:00:00Z") for h in HOURS}


def test_rerunning_the_middle_hour_changes_nothing(pipeline, config_file) -> None:
    from cdclake.run_cli import run_range

    before = snapshot(pipeline)
    with pipeline_environment(config_file):
        run_range(pipeline, HOURS[1], HOURS[1] + dt.timedelta(hours=1))
    assert snapshot(pipeline) == before


def test_backfilling_the_hours_on_the_scheduler_gives_the_same_tables(pipeline, backfilled) -> None:
    from cdclake.airflow_cli import backfill_runs, task_times

    assert backfill_runs(backfilled.config, HOURS) == {
        h.strftime("%Y-%m-%dT%H:00:00Z"): "success" for h in HOURS}
    expected = snapshot(pipeline)
    assert len(expected["current.shop__products"]) == 2
    assert snapshot(backfilled.config) == expected

    # Each task's time, read through the Airflow CLI: from `airflow dags test` runs and the scheduler's.
    tasks = ["plan", "land", "validate_raw", "normalize", "validate_changelog", "compact", "validate_current",
             "publish"]
    for config in (pipeline, backfilled.config):
        times = task_times(config, HOURS[0])
        assert [task for task, _ in times] == tasks and all(took >= 0 for _, took in times), times


def test_the_ui_asks_for_a_login_and_listens_on_localhost_only(backfilled) -> None:
    ui = dict(backfilled.ui)
    password = ui.pop("password")
    assert ui == {"anonymous_api": 401, "anonymous_token": 403, "wrong_password": 401, "login": 201,
                  "api_with_login": 200,
                  # Of all Airflow's processes, only the UI listens, and on 127.0.0.1 only.
                  "listening": {("0100007F", int(backfilled.url.rsplit(":", 1)[1]))}}
    home = backfilled.config.home / "airflow"
    assert json.loads((home / "passwords.json").read_text()) == {"admin": password}
    # Airflow neither generated nor printed a password of its own.
    assert not (home / "simple_auth_manager_passwords.json.generated").exists()
    assert str(password) not in (home / "airflow.log").read_text(errors="replace")


def _mode(path: Path) -> str:
    return oct(stat.S_IMODE(path.stat().st_mode))


def test_state_folders_and_secrets_files_are_private(pipeline, backfilled, state_home) -> None:
    for home in (pipeline.home, backfilled.config.home):
        assert _mode(home) == "0o700"
        for name in ("passwords.json", "airflow.cfg", "airflow.db"):
            assert _mode(home / "airflow" / name) == "0o600", (home, name)
    # The test run's broker (`cdclake kafka start`): its folder, and its properties with the logins.
    assert (_mode(state_home), _mode(state_home / "kafka")) == ("0o700", "0o700")
    assert _mode(state_home / "kafka" / "server.properties") == "0o600"


def test_no_log_of_a_run_holds_the_kafka_password(pipeline, state_home) -> None:
    """The hours ran with a Kafka connection that logs in with a password: no file of the run's
    state folder (task logs, run logs, Data Docs, tables), and no log of the broker or the Spark
    Connect server, holds it."""
    from tests.conftest import KAFKA_SASL_PASSWORD

    places = [p for p in pipeline.home.rglob("*") if p.is_file()]
    places += [*(state_home / "spark").glob("*.log"), state_home / "kafka" / "broker.log"]
    assert len(places) > 50
    holding = [str(p) for p in places if KAFKA_SASL_PASSWORD.encode() in p.read_bytes()]
    assert holding == []
