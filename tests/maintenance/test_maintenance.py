"""Daily maintenance on real Spark + Iceberg: small files and delete files are compacted, old
snapshots expire (branch and tag heads survive), old orphan files go, old tombstones are purged —
and the data analysts read is unchanged."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from cdclake.config import MaintenanceConfig, load_config
from cdclake.exceptions import ConfigError
from spark_jobs import tables as fixed_tables
from spark_jobs.maintenance import (
    NAMESPACES,
    TABLE_STEPS,
    MaintenanceError,
    MaintenanceOptions,
    checked_name,
    is_tombstone_table,
    maintain,
    run,
)
from tests.gates.gx_runs import store_gate_runs

TABLE = "current.mt__orders"
TOMBSTONES = "current.mt__orders__tombstones"
RAW_LIKE = "raw.mt_small_files"


# ------------------------------------------------------------------------------ no Spark needed


def test_namespaces_are_the_lakehouse_namespaces():
    assert NAMESPACES == fixed_tables.NAMESPACES


@pytest.mark.parametrize("name", ["current.Orders", "current.a-b", "raw.x;DROP", "raw.`x`", "a.b'c", "raw."])
def test_names_outside_the_safe_alphabet_are_refused(name):
    with pytest.raises(MaintenanceError, match=r"\[a-z0-9_\]"):
        checked_name(name)


def test_tombstone_tables_are_recognised_by_the_compaction_convention():
    assert is_tombstone_table("current.shop__orders__tombstones")
    assert not is_tombstone_table("current.shop__orders")
    assert not is_tombstone_table("raw.x__tombstones")


def test_a_reference_time_in_the_future_is_refused():
    now = dt.datetime(2024, 1, 2, 0, 0)
    with pytest.raises(MaintenanceError, match="future"):
        maintain(None, "lakehouse", now + dt.timedelta(hours=1), "r", MaintenanceOptions(), now=now)  # type: ignore[arg-type]


def test_unknown_steps_are_refused():
    with pytest.raises(MaintenanceError, match="unknown maintenance step"):
        maintain(None, "lakehouse", dt.datetime(2024, 1, 1), "r", MaintenanceOptions(), ["vacuum"])  # type: ignore[arg-type]


def test_the_gate_results_step_names_no_tables_and_needs_the_gx_folder():
    with pytest.raises(MaintenanceError, match="not tables"):
        maintain(None, "lakehouse", dt.datetime(2024, 1, 1), "r", MaintenanceOptions(),  # type: ignore[arg-type]
                 ["expire_gate_results"], tables=["raw.kafka_messages"])
    with pytest.raises(MaintenanceError, match="needs the GX folder"):
        maintain(None, "lakehouse", dt.datetime(2024, 1, 1), "r", MaintenanceOptions(),  # type: ignore[arg-type]
                 ["expire_gate_results"])


def test_maintenance_configuration(tmp_path: Path):
    config_file = tmp_path / "pipeline.yml"
    config_file.write_text("maintenance:\n  snapshot_retention_days: 2\n  retain_last: 3\n"
                           "  gate_results_retention_days: 14\n")
    assert load_config(config_file).maintenance == MaintenanceConfig(
        snapshot_retention_days=2, retain_last=3, gate_results_retention_days=14)
    assert MaintenanceConfig().gate_results_retention_days == 30
    config_file.write_text("maintenance:\n  gate_results_retention_days: -1\n")
    with pytest.raises(ConfigError, match="gate_results_retention_days"):
        load_config(config_file)
    config_file.write_text("maintenance:\n  orphan_file_age_days: 0\n")
    with pytest.raises(ConfigError, match="orphan_file_age_days"):
        load_config(config_file)
    for value in ("", "null", "three", "1.5", "true"):
        config_file.write_text(f"maintenance:\n  retain_last: {value}\n")
        with pytest.raises(ConfigError, match=r"maintenance.retain_last must be a whole number, got .*"
                                              r"\(leave the key out for the default, 5\)"):
            load_config(config_file)
    config_file.write_text("maintenance:\n  target_file_size_bytes: null\n  min_input_files: '7'\n")
    assert load_config(config_file).maintenance == MaintenanceConfig(min_input_files=7)
    config_file.write_text("maintenance:\n  retention: 2\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(config_file)


# ------------------------------------------------------------------------------ Spark + Iceberg


def _rows(spark, sql: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def _local_path(uri: str) -> Path:
    return Path(urlparse(uri).path) if uri.startswith("file:") else Path(uri)


def _files_on_disk(spark, table: str) -> set[str]:
    location = spark.sql(f"SELECT file_path FROM {table}.files LIMIT 1").collect()[0][0]
    data_dir = _local_path(location).parent
    while data_dir.name != "data":
        data_dir = data_dir.parent
    return {str(p) for p in data_dir.rglob("*") if p.is_file() and not p.name.startswith(".")}


def _referenced(spark, table: str) -> set[str]:
    """Data and delete files any remaining snapshot references."""
    return {str(_local_path(r[0])) for r in spark.sql(
        f"SELECT file_path FROM {table}.all_files").collect()}


def _count(spark, sql: str) -> int:
    return int(spark.sql(sql).collect()[0][0])


@pytest.fixture(scope="module")
def lakehouse(spark):
    """A merge-on-read current table with many small files, deletes, a tag and a branch; its
    tombstone table; an append-only table of small files; two orphan files (old and fresh)."""
    for namespace in ("raw", "current"):
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    for name in (TABLE, TOMBSTONES, RAW_LIKE):
        spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    mor = ("'format-version'='2', 'write.delete.mode'='merge-on-read', "
           "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'")
    spark.sql(f"CREATE TABLE {TABLE} (_cdc_key string, v string, n bigint) USING iceberg "
              f"TBLPROPERTIES ({mor})")
    for i in range(1, 7):  # one small data file per commit
        spark.sql(f"INSERT INTO {TABLE} VALUES ('k{i}', 'v{i}', {i}), ('k{i}b', 'w{i}', {i * 10})")
    first_snapshot = spark.sql(
        f"SELECT snapshot_id FROM {TABLE}.snapshots ORDER BY committed_at").collect()[0][0]
    spark.sql(f"ALTER TABLE {TABLE} CREATE TAG keep_me AS OF VERSION {first_snapshot}")
    spark.sql(f"DELETE FROM {TABLE} WHERE _cdc_key IN ('k2', 'k5b')")  # position delete files
    spark.sql(f"UPDATE {TABLE} SET v = 'changed' WHERE _cdc_key = 'k3'")
    spark.sql(f"ALTER TABLE {TABLE} CREATE BRANCH audit")  # a write-audit-publish branch head
    spark.sql(f"INSERT INTO {TABLE} VALUES ('k7', 'v7', 7)")

    spark.sql(f"CREATE TABLE {TOMBSTONES} (_cdc_key string, _cdc_event_time timestamp, "
              f"_cdc_order_key string) USING iceberg TBLPROPERTIES ({mor})")
    spark.sql(f"CREATE TABLE {RAW_LIKE} (id bigint, landed_hour timestamp) USING iceberg "
              "TBLPROPERTIES ('format-version'='2')")
    for i in range(4):
        spark.sql(f"INSERT INTO {RAW_LIKE} VALUES ({i}, TIMESTAMP '2024-01-01 10:00:00')")
    return {"tag_snapshot": first_snapshot}


@pytest.mark.slow
def test_maintenance_compacts_expires_and_purges_without_changing_data(spark, config, lakehouse):
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    tombstones = [("old", now - dt.timedelta(days=30)), ("edge", now - dt.timedelta(days=8)),
                  ("recent", now - dt.timedelta(days=1)), ("fresh", now - dt.timedelta(minutes=5))]
    spark.createDataFrame([(k, t, f"T{k}") for k, t in tombstones],
                          "_cdc_key string, _cdc_event_time timestamp, _cdc_order_key string") \
        .writeTo(TOMBSTONES).append()

    data_before = _rows(spark, f"SELECT * FROM {TABLE}")
    raw_before = _rows(spark, f"SELECT * FROM {RAW_LIKE}")
    tagged_before = _rows(spark, f"SELECT * FROM {TABLE} VERSION AS OF 'keep_me'")
    audit_before = _rows(spark, f"SELECT * FROM {TABLE} VERSION AS OF 'audit'")
    audit_head = spark.sql(f"SELECT snapshot_id FROM {TABLE}.refs WHERE name = 'audit'").collect()[0][0]
    data_files_before = _count(spark, f"SELECT count(*) FROM {TABLE}.data_files")
    delete_files_before = _count(spark, f"SELECT count(*) FROM {TABLE}.delete_files")
    snapshots_before = _count(spark, f"SELECT count(*) FROM {TABLE}.snapshots")
    assert data_files_before >= 7 and delete_files_before >= 1 and snapshots_before >= 9

    # Orphans: a file no snapshot references, 10 days old (removed), and a fresh one (kept: it
    # could belong to a write that has not committed yet).
    data_dir = Path(next(iter(_files_on_disk(spark, TABLE)))).parent
    old_orphan, fresh_orphan = data_dir / "orphan-old.parquet", data_dir / "orphan-fresh.parquet"
    for orphan in (old_orphan, fresh_orphan):
        orphan.write_bytes(b"not referenced")
    ten_days_ago = time.time() - 10 * 86400
    os.utime(old_orphan, (ten_days_ago, ten_days_ago))

    config = dataclasses.replace(config, tombstone_retention_days=7, maintenance=MaintenanceConfig(
        snapshot_retention_days=0, retain_last=1, orphan_file_age_days=3, min_input_files=2))
    summary = run(spark, config, now + dt.timedelta(seconds=1), "maintenance__test",
                  tables=(TABLE, TOMBSTONES, RAW_LIKE))

    assert summary.failures == []
    every_table = [(s, t) for s in TABLE_STEPS[1:] for t in (TABLE, TOMBSTONES, RAW_LIKE)]
    assert sorted((r.step, r.table) for r in summary.results) == sorted(
        [("purge_tombstones", TOMBSTONES), *every_table])
    by_step = {(r.step, r.table): r.metrics for r in summary.results}
    assert by_step[("purge_tombstones", TOMBSTONES)] == {"purged_tombstones": 2}
    assert by_step[("remove_orphan_files", TABLE)] == {"removed_orphan_files": 1}

    # Same data, in fewer files: one data file, no delete files.
    assert _rows(spark, f"SELECT * FROM {TABLE}") == data_before
    assert _rows(spark, f"SELECT * FROM {RAW_LIKE}") == raw_before
    assert _count(spark, f"SELECT count(*) FROM {TABLE}.data_files") == 1
    assert _count(spark, f"SELECT count(*) FROM {TABLE}.delete_files") == 0
    assert _count(spark, f"SELECT count(*) FROM {RAW_LIKE}.data_files") == 1

    # Snapshots expired, except the current one and those a tag or branch references.
    current = spark.sql(f"SELECT snapshot_id FROM {TABLE}.refs WHERE name = 'main'").collect()[0][0]
    assert {r[0] for r in spark.sql(f"SELECT snapshot_id FROM {TABLE}.snapshots").collect()} == {
        current, lakehouse["tag_snapshot"], audit_head}
    assert _rows(spark, f"SELECT * FROM {TABLE} VERSION AS OF 'keep_me'") == tagged_before
    assert _rows(spark, f"SELECT * FROM {TABLE} VERSION AS OF 'audit'") == audit_before
    assert _count(spark, f"SELECT count(*) FROM {RAW_LIKE}.snapshots") == 1

    # The files of expired snapshots are gone from disk; what is left is referenced (or too young).
    assert not old_orphan.exists() and fresh_orphan.exists()
    assert _files_on_disk(spark, TABLE) == _referenced(spark, TABLE) | {str(fresh_orphan)}

    # Tombstones older than the retention are purged, the others kept whole.
    assert _rows(spark, f"SELECT * FROM {TOMBSTONES}") == sorted(
        (k, t, f"T{k}") for k, t in tombstones if k in ("recent", "fresh"))
    # ... and the cut-off is recorded, for compaction (a later change older than it reads history).
    cutoff = now + dt.timedelta(seconds=1) - dt.timedelta(days=7)
    tomb_props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {TOMBSTONES}").collect()}
    assert tomb_props["cdc.tombstones-purged-before"] == str(
        (cutoff - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1))

    # Commits now retry on conflict (the backstop behind the lakehouse_writes pool).
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {TABLE}").collect()}
    assert int(props["commit.retry.num-retries"]) >= 10
    fresh_orphan.unlink()


@pytest.mark.slow
def test_maintenance_again_changes_nothing(spark, config, lakehouse):
    """A re-run (Airflow retry, next day) leaves the same data and commits nothing new; it only
    expires the snapshots the previous run committed itself (they were newer than its cut-off)."""
    names = (TABLE, TOMBSTONES, RAW_LIKE)
    before = {t: _rows(spark, f"SELECT * FROM {t}") for t in names}
    heads = {t: _rows(spark, f"SELECT snapshot_id FROM {t}.refs WHERE name = 'main'") for t in names}
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    config = dataclasses.replace(config, maintenance=MaintenanceConfig(
        snapshot_retention_days=0, retain_last=1, min_input_files=2))
    summary = run(spark, config, now, "maintenance__again", tables=names)
    assert summary.failures == []
    assert {t: _rows(spark, f"SELECT * FROM {t}") for t in names} == before
    assert {t: _rows(spark, f"SELECT snapshot_id FROM {t}.refs WHERE name = 'main'") for t in names} == heads
    busy = [r for r in summary.results if r.step != "expire_snapshots" and any(r.metrics.values())]
    assert busy == [], "a second run should find nothing to rewrite, purge or remove"


@pytest.mark.slow
def test_every_lakehouse_table_is_listed_and_a_missing_table_is_refused(spark, lakehouse):
    from spark_jobs.maintenance import lakehouse_tables

    listed = lakehouse_tables(spark, "lakehouse")
    assert {TABLE, TOMBSTONES, RAW_LIKE} <= set(listed)
    assert all(t.split(".")[0] in NAMESPACES for t in listed)
    with pytest.raises(MaintenanceError, match="no lakehouse table"):
        maintain(spark, "lakehouse", dt.datetime(2024, 1, 1), "r", MaintenanceOptions(),
                 tables=["current.does_not_exist"])


@pytest.mark.slow
def test_the_daily_run_expires_old_gate_results_and_keeps_young_ones(spark, config, tmp_path):
    """The gate-results step of a whole-lakehouse run deletes the GX results and Data Docs pages of
    gates older than the retention, from the state folder's GX project."""
    from spark_jobs.gate_history import run_time_folders

    store_gate_runs(spark, tmp_path, "kept", ["gate 0", "gate 1"])
    results = tmp_path / "gx" / "uncommitted" / "validations"
    (first, _), (second, _) = run_time_folders(results)

    # Retention 0 days as of the second gate's run time: the first is older, the second is not.
    config = dataclasses.replace(config, home=tmp_path, maintenance=MaintenanceConfig(
        gate_results_retention_days=0))
    summary = run(spark, config, second, "maintenance__gx", steps=("expire_gate_results",))
    assert [(r.step, r.table, r.status, r.metrics) for r in summary.results] == [
        ("expire_gate_results", "gx", "OK", {"expired_results": 1, "expired_pages": 1, "kept_results": 1})]
    assert [t for t, _ in run_time_folders(results)] == [second]
    index = (tmp_path / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html").read_text()
    assert "gate 1" in index and "gate 0" not in index
    assert first < second
    assert not (results / "kept" / "rows" / "gate 0").exists()  # no empty folders left behind


@pytest.mark.slow
def test_maintenance_defers_a_table_under_an_hour_in_flight_and_the_hour_still_publishes(spark, config):
    """Rewrites would move main under the hour's audit branch, and its publish (a fast-forward)
    would be refused: the table is deferred (the task fails, Airflow retries) and the hour
    publishes; once it has, maintenance rewrites the table."""
    from spark_jobs import publish
    from spark_jobs.tables import ensure_tables

    ensure_tables(spark)  # publish records in ops.hour_status
    table, hour = "current.mt__in_flight", dt.datetime(2024, 6, 1, 10)
    spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
    spark.sql(f"CREATE TABLE {table} (_cdc_key string, v string) USING iceberg "
              "TBLPROPERTIES ('format-version'='2', 'write.wap.enabled'='true')")
    for i in range(3):
        spark.sql(f"INSERT INTO {table} VALUES ('k{i}', 'v{i}')")
    branch = publish.start_audit(spark, [table], hour)
    spark.sql(f"INSERT INTO {table}.branch_{branch} VALUES ('k9', 'the hour')")
    head = _rows(spark, f"SELECT snapshot_id FROM {table}.refs WHERE name = 'main'")
    config = dataclasses.replace(config, maintenance=MaintenanceConfig(min_input_files=2))
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    steps = ("rewrite_data_files", "rewrite_position_delete_files", "expire_snapshots")

    summary = run(spark, config, now, "maintenance__in_flight", steps, (table,))
    assert [(r.step, r.status) for r in summary.results] == [
        ("rewrite_data_files", "DEFERRED"), ("rewrite_position_delete_files", "DEFERRED"),
        ("expire_snapshots", "OK")]
    assert f"holds branch {branch}" in summary.results[0].message
    assert _rows(spark, f"SELECT snapshot_id FROM {table}.refs WHERE name = 'main'") == head

    assert publish.publish(spark, [table], hour) == [table]
    summary = run(spark, config, now, "maintenance__after", steps, (table,))
    assert summary.failures == []
    assert summary.results[0].metrics["rewritten_data_files_count"] == 4
    assert _rows(spark, f"SELECT * FROM {table}") == [
        ("k0", "v0"), ("k1", "v1"), ("k2", "v2"), ("k9", "the hour")]


def _partitioning(spark, table: str) -> list[str]:
    return [f"{r['data_type']}" for r in spark.sql(f"DESCRIBE TABLE {table}").collect()
            if str(r["col_name"]).startswith("Part ")]


@pytest.mark.slow
def test_a_current_table_is_bucketed_by_key_once_large(spark):
    """Compaction creates current tables unpartitioned; maintenance buckets one by key once it
    holds ``bucket_rows`` live rows, rewriting every file into the bucketed layout, data unchanged."""
    from spark_jobs.compaction.layout import CompactionOptions
    from spark_jobs.compaction.schema import ensure_current_tables, evolve_schema

    large, small = "current.mt__grown", "current.mt__small"
    for table in (large, small):
        spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
        ensure_current_tables(spark, table, table.split(".")[1], False, CompactionOptions(), "mt")
        evolve_schema(spark, table, {"v": "string"})
        assert _partitioning(spark, table) == []
    for i in range(3):  # three commits of two rows; one deleted: five live rows
        spark.sql(f"INSERT INTO {large} (_cdc_key, v) VALUES ('k{i}', 'a{i}'), ('j{i}', 'b{i}')")
    spark.sql(f"DELETE FROM {large} WHERE _cdc_key = 'j0'")
    spark.sql(f"INSERT INTO {small} (_cdc_key, v) VALUES ('k0', 'a0')")
    before = {t: _rows(spark, f"SELECT * FROM {t}") for t in (large, small)}
    options = MaintenanceOptions(bucket_rows=5)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)

    first = maintain(spark, "lakehouse", now, "bucket__1", options, ["rewrite_data_files"],
                     tables=[large, small])
    assert first.failures == []
    assert {r.table: r.metrics["bucketed"] for r in first.results} == {large: 1, small: 0}
    assert _partitioning(spark, large) == ["bucket(16, _cdc_key)"] and _partitioning(spark, small) == []
    assert {t: _rows(spark, f"SELECT * FROM {t}") for t in (large, small)} == before
    specs = {r[0] for r in spark.sql(f"SELECT spec_id FROM {large}.data_files").collect()}
    assert specs == {1}, specs  # every file rewritten into the bucketed spec
    assert _count(spark, f"SELECT count(*) FROM {large}.delete_files") == 0

    again = maintain(spark, "lakehouse", now, "bucket__2", options, ["rewrite_data_files"],
                     tables=[large, small])
    assert {r.table: r.metrics["bucketed"] for r in again.results} == {large: 0, small: 0}
    assert {t: _rows(spark, f"SELECT * FROM {t}") for t in (large, small)} == before
