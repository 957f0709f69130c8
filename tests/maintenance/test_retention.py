"""Retention on the real broker, Spark and catalog: the maintenance step drops whole published
hours of raw messages and quarantine, keeps unpublished ones, records each hour, and a re-run of
an expired hour is refused until it is landed again from Kafka, which makes it whole again."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from cdclake import hours_cli
from cdclake.exceptions import ExpiredHourError
from cdclake.formats.base import FormatOptions
from cdclake.hourly import plan_hour
from cdclake.retention import RetentionConfig
from spark_jobs import hour_status
from spark_jobs.decode_spark import TopicFormat
from spark_jobs.land import run as land
from spark_jobs.maintenance import RETENTION_STEP
from spark_jobs.maintenance import run as maintain
from spark_jobs.normalize import normalize_hour
from spark_jobs.tables import CHANGELOG, EXPIRED_HOURS, QUARANTINE, RAW_MESSAGES, in_catalog
from tests.landing.kafka_helpers import HOUR, Record, make_topic, send

pytestmark = pytest.mark.slow

# Older than any other test's hours: the expiry applies to the whole shared lake.
H0 = dt.datetime(2015, 3, 1, 10)
M = dt.timedelta(minutes=1)


def _canal(i: int) -> bytes:
    return json.dumps({"data": [{"id": str(i), "name": f"n{i}"}], "database": "shop", "table": "retained",
                       "pkNames": ["id"], "isDdl": False, "type": "INSERT", "es": 1425204000000 + i,
                       "ts": 1425204000000 + i, "mysqlType": {"id": "int", "name": "varchar(10)"},
                       "sqlType": {"id": 4, "name": 12}, "old": None, "id": i}).encode()


def _hour_rows(spark, table: str, hour: dt.datetime, topic_column: str, topic: str) -> list[tuple]:
    rows = spark.table(table).where(f"landed_hour = '{hour}' AND {topic_column} = '{topic}'").collect()
    drop = {"run_id", "landed_at", "quarantined_at"}
    return sorted(tuple(sorted((k, repr(v)) for k, v in r.asDict(recursive=True).items() if k not in drop))
                  for r in rows)


@contextmanager
def _only_branch(spark, table: str, branch: str | None) -> Iterator[Callable[[], None]]:
    """``table`` with no audit branch but ``branch`` (made here; dropped by the function yielded):
    the branches earlier tests' failed hours left on the shared lake are put back afterwards."""
    table = in_catalog(spark, table)
    refs = spark.sql(f"SELECT name, snapshot_id FROM {table}.refs WHERE type = 'BRANCH' "
                     "AND startswith(name, 'audit_')").collect()
    for ref in refs:
        spark.sql(f"ALTER TABLE {table} DROP BRANCH `{ref['name']}`")
    if branch:
        spark.sql(f"ALTER TABLE {table} CREATE BRANCH `{branch}`")
    try:
        yield lambda: spark.sql(f"ALTER TABLE {table} DROP BRANCH IF EXISTS `{branch}`")
    finally:
        for ref in refs:
            spark.sql(f"ALTER TABLE {table} CREATE BRANCH `{ref['name']}` AS OF VERSION {ref['snapshot_id']}")


def test_published_hours_expire_whole_and_a_re_run_needs_a_re_land(spark, config, kafka_bootstrap) -> None:
    topic = make_topic(kafka_bootstrap, "retention")
    send(kafka_bootstrap, topic, [Record(0, H0 + M, None, _canal(1)), Record(0, H0 + 2 * M, None, b"{bad"),
                                  Record(0, H0 + HOUR + M, None, _canal(2)),
                                  Record(0, H0 + HOUR + 2 * M, None, b"{bad too")])
    formats = {topic: TopicFormat("canal_json", FormatOptions(max_value_bytes=4 * 1024 * 1024))}
    for hour in (H0, H0 + HOUR):
        land(spark, config, hour, "land-1", plan_hour(config, hour, (topic,)))
        normalize_hour(spark, formats, hour, "norm-1")
    hour_status.record(spark, H0, hour_status.PUBLISH, "run-1", hour_status.PUBLISHED, [])
    before = {(table, hour): _hour_rows(spark, table, hour, column, topic)
              for table, column in ((RAW_MESSAGES, "topic"), (QUARANTINE, "kafka_topic"),
                                    (CHANGELOG, "kafka_topic")) for hour in (H0, H0 + HOUR)}
    assert all(before.values())

    # A day and more later both hours are past a one-day retention; only H0 is published. An hour
    # in flight on cdc.quarantine (its audit branch) defers that layer alone.
    retained = dataclasses.replace(config, retention=RetentionConfig(raw_days=1, quarantine_days=1))
    as_of = H0 + dt.timedelta(days=1, hours=2)
    with _only_branch(spark, QUARANTINE, "audit_20150301T11") as drop_it:
        deferred = maintain(spark, retained, as_of, "maintenance-1", steps=(RETENTION_STEP,))
        assert [(r.step, r.table, r.status, r.metrics) for r in deferred.results] == [
            (RETENTION_STEP, "hours", "DEFERRED", {"raw_hours": 1, "raw_rows": 2, "raw_unpublished": 1})]
        assert "cdc.quarantine: deferred: an hour in flight holds branch audit_20150301T11" in \
            deferred.results[0].message
        drop_it()
        summary = maintain(spark, retained, as_of, "maintenance-2", steps=(RETENTION_STEP,))
    assert [(r.step, r.table, r.status, r.metrics) for r in summary.results] == [
        (RETENTION_STEP, "hours", "OK", {"raw_hours": 0, "raw_rows": 0, "raw_unpublished": 1,
                                         "quarantine_hours": 1, "quarantine_rows": 1,
                                         "quarantine_unpublished": 1})]
    assert _hour_rows(spark, RAW_MESSAGES, H0, "topic", topic) == []
    assert _hour_rows(spark, QUARANTINE, H0, "kafka_topic", topic) == []
    for table, hour in before:  # the changelog and the unpublished hour are kept
        if table == CHANGELOG or hour != H0:
            assert _hour_rows(spark, table, hour, "topic" if table == RAW_MESSAGES else "kafka_topic",
                              topic) == before[(table, hour)]
    recorded = spark.table(EXPIRED_HOURS).where(f"landed_hour = '{H0}'").collect()
    assert sorted((r["layer"], r["row_count"], r["run_id"]) for r in recorded) == [
        ("quarantine", 1, "maintenance-2"), ("raw", 2, "maintenance-1")]
    shown = {row[0]: dict(zip(hours_cli.COLUMNS, row, strict=True))
             for row in hours_cli.hour_rows(config, H0, H0 + 2 * HOUR)}
    assert [(h, r["landed"], r["expired"]) for h, r in shown.items()] == [
        ("2015-03-01T11:00:00Z", "2", None), ("2015-03-01T10:00:00Z", "2", "quarantine,raw")]
    with _only_branch(spark, QUARANTINE, None):
        again = maintain(spark, retained, as_of, "maintenance-3", steps=(RETENTION_STEP,))
    assert again.results[0].metrics == {"raw_hours": 0, "raw_rows": 0, "raw_unpublished": 1,
                                        "quarantine_hours": 0, "quarantine_rows": 0,
                                        "quarantine_unpublished": 1}

    # A re-run of the expired hour is refused, naming the setting, by land and by normalize.
    refused = r"hour 2015-03-01T10:00:00Z: its raw messages expired under retention\.raw_days .*--reland"
    with pytest.raises(ExpiredHourError, match=refused):
        land(spark, config, H0, "land-2", plan_hour(config, H0, (topic,)))
    with pytest.raises(ExpiredHourError, match=refused):
        normalize_hour(spark, formats, H0, "norm-2")
    assert _hour_rows(spark, CHANGELOG, H0, "kafka_topic", topic) == before[(CHANGELOG, H0)]

    # Kafka still holds the hour: a re-land brings it back whole, and the hour re-runs.
    land(spark, config, H0, "land-3", plan_hour(config, H0, (topic,)), reland=True)
    normalize_hour(spark, formats, H0, "norm-3")
    for table, column in ((RAW_MESSAGES, "topic"), (QUARANTINE, "kafka_topic"), (CHANGELOG, "kafka_topic")):
        assert _hour_rows(spark, table, H0, column, topic) == before[(table, H0)]
    assert spark.table(EXPIRED_HOURS).where(f"landed_hour = '{H0}'").count() == 0


# Changelog retention: landing hours older than any other test's (the expiry applies to the whole
# shared lake, and the changelog expires as a prefix). Each table is built twice: database
# ``ret_old`` in hours that expire, ``ret_new`` in later hours that do not.
EXPIRING = -88_000  # hour(-88000): 2013-12-17T08:00
KEPT = EXPIRING + 500


def _changelog_hours(database: str) -> list[list[dict]]:
    """Four hours of a keyed table (partial updates, a delete, a key move, late changes) and a
    keyless one (copies of a row)."""
    from tests.compaction.changes import BASE, Changes

    def at(minute: int) -> dt.datetime:
        return BASE + dt.timedelta(minutes=minute)

    items = Changes(database, "items", keys=["id"], types={"id": "LONG", "v": "STRING", "n": "LONG"})
    log = Changes(database, "log", types={"line": "STRING"})
    log.offset = 1000
    return [
        [items.row("INSERT", after={"id": "1", "v": "a", "n": "1"}, at=at(1)),
         items.row("INSERT", after={"id": "2", "v": "b", "n": "2"}, at=at(2)),
         items.row("INSERT", after={"id": "3", "v": "c", "n": "3"}, at=at(3)),
         items.row("UPDATE", before={"id": "1"}, after={"id": "1", "v": "a2"}, full=False, at=at(5)),
         log.row("INSERT", after={"line": "x"}, at=at(1)), log.row("INSERT", after={"line": "x"}, at=at(2)),
         log.row("INSERT", after={"line": "y"}, at=at(3))],
        [items.row("DELETE", before={"id": "2", "v": "b", "n": "2"}, at=at(6)),
         items.row("UPDATE", before={"id": "3", "v": "c", "n": "3"}, after={"id": "4", "v": "c", "n": "3"},
                   at=at(7)),
         items.row("UPDATE", before={"id": "1"}, after={"id": "1", "n": "7"}, full=False, at=at(8)),
         log.row("DELETE", before={"line": "x"}, at=at(6))],
        [items.row("UPDATE", before={"id": "1"}, after={"id": "1", "v": "a3"}, full=False, at=at(10)),
         items.row("INSERT", after={"id": "5", "v": "e", "n": "5"}, at=at(11))],
        # Late: key 1 between the base's change and hour 2's; key 2 older than its expired delete.
        [items.row("UPDATE", before={"id": "1"}, after={"id": "1", "n": "9"}, full=False, at=at(9)),
         items.row("UPDATE", before={"id": "2"}, after={"id": "2", "v": "zombie"}, full=False, at=at(4)),
         log.row("INSERT", after={"line": "y"}, at=at(12))],
    ]


def _lake_tables(spark, database: str) -> dict[str, list[tuple]]:
    drop = {"_cdc_run_id"}
    tables = {}
    for name in (f"current.{database}__items", f"current.{database}__log", f"history.{database}__items"):
        frame = spark.table(name)
        columns = [c for c in frame.columns if c not in drop]
        tables[name.replace(database, "db")] = sorted((tuple(r) for r in frame.select(*columns).collect()),
                                                      key=repr)
    return tables


def test_changelog_hours_expire_into_a_base_that_compaction_and_history_read(spark, config, capsys) -> None:
    from cdclake import cli
    from spark_jobs import changelog_base, held_tables
    from spark_jobs.compact import compact_hour
    from spark_jobs.compaction.layout import CompactionOptions
    from spark_jobs.erasure import ErasureRequest, plan_erasure
    from spark_jobs.held_tables import Hold
    from spark_jobs.maintenance import purge_tombstones
    from tests.compaction.changes import hour, write_hour

    options = CompactionOptions(history={"cdc.test": ("ret_old.items", "ret_new.items")})
    old, new = _changelog_hours("ret_old"), _changelog_hours("ret_new")

    def run(database_hours: list[list[dict]], first: int, n: int) -> None:
        write_hour(spark, first + n, database_hours[n])
        assert compact_hour(spark, hour(first + n), f"compact__{n}", options).failures == []

    for n in range(3):
        run(old, EXPIRING, n)
        run(new, KEPT, n)
        hour_status.record(spark, hour(EXPIRING + n), hour_status.PUBLISH, f"run-{n}",
                           hour_status.PUBLISHED, [])
    assert _lake_tables(spark, "ret_old") == _lake_tables(spark, "ret_new")

    retained = dataclasses.replace(config, retention=RetentionConfig(changelog_days=1))
    as_of = hour(EXPIRING + 2) + dt.timedelta(days=1)  # hours 0 and 1 are past the day
    hold = Hold(("ret_old", None, "held"), "current.ret_old__held", "ret_old.held", hour(EXPIRING + 1),
                hour(EXPIRING + 1), "held for the test", "compact__1")
    with _only_branch(spark, CHANGELOG, None):
        # A held table's changes since its hold stay: hour 0 expires, hour 1 is kept for now.
        held_tables.write(spark, [hold])
        first = maintain(spark, retained, as_of, "maintenance-c1", steps=(RETENTION_STEP,))
        held_tables.write(spark, [])
        second = maintain(spark, retained, as_of, "maintenance-c2", steps=(RETENTION_STEP,))
    try:
        assert [(r.status, r.metrics) for r in first.results] == [
            ("OK", {"changelog_hours": 1, "changelog_rows": 7, "changelog_unpublished": 1,
                    "changelog_base_rows": 6})]
        assert [(r.status, r.metrics) for r in second.results] == [
            ("OK", {"changelog_hours": 1, "changelog_rows": 4, "changelog_unpublished": 0,
                    "changelog_base_rows": 6})]
        assert spark.table(CHANGELOG).where(f"landed_hour <= '{hour(EXPIRING + 1)}'").count() == 0
        assert changelog_base.through(spark) == hour(EXPIRING + 1)
        # One row per key: 1 and 4 live, 2 and 3 deleted (3 by its move); one copy each of x and y.
        base = sorted(((r["row_key"], r["op"], r["after"] and dict(sorted(r["after"].items())))
                       for r in changelog_base.rows(spark).collect()), key=repr)
        assert base == sorted([
            ('["1"]', "UPDATE", {"id": "1", "n": "7", "v": "a2"}), ('["2"]', "DELETE", None),
            ('["3"]', "DELETE", None), ('["4"]', "UPDATE", {"id": "4", "n": "3", "v": "c"}),
            (None, "INSERT", {"line": "x"}), (None, "INSERT", {"line": "y"})], key=repr)

        # A re-run of a kept hour and a late hour read the base for the expired changes.
        run(old, EXPIRING, 2)
        assert _lake_tables(spark, "ret_old") == _lake_tables(spark, "ret_new")
        # Key 2's delete is in the base only once its tombstone is purged: the late change stays deleted.
        catalog = str(spark.conf.get("spark.sql.defaultCatalog"))
        assert purge_tombstones(spark, catalog, "current.ret_old__items__tombstones",
                                dt.datetime(2030, 1, 1)) == {"purged_tombstones": 2}
        run(old, EXPIRING, 3)
        run(new, KEPT, 3)
        expected = _lake_tables(spark, "ret_new")
        got = _lake_tables(spark, "ret_old")
        # The documented limit: key 2's late partial change is older than its expired changes, so
        # its version lays the image over nothing (n unknown) where the whole changelog had n 2.
        late = [r for r in expected["history.db__items"] if r[2] == "zombie"]
        assert [r[:2] for r in late] == [(2, 2)]
        assert got["history.db__items"] == sorted(
            [r for r in expected["history.db__items"] if r not in late] + [(2, None, *late[0][2:])], key=repr)
        assert {k: v for k, v in got.items() if k.startswith("current.")} == \
            {k: v for k, v in expected.items() if k.startswith("current.")}
        live = spark.table("current.ret_old__items").select("id", "n", "v").orderBy("id").collect()
        assert [tuple(r) for r in live] == [(1, 9, "a3"), (4, 3, "c"), (5, 5, "e")]
        assert len(got["history.db__items"]) == 10  # versions made by expired changes kept

        assert cli.main(["history", "rebuild", "--table", "current.ret_old__items"]) == 0
        capsys.readouterr()
        assert _lake_tables(spark, "ret_old") == got

        # An erasure finds a key whose changes all expired in the base, as in the changelog.
        plan, _, _ = plan_erasure(spark, ErasureRequest("ret_old.items", {"id": 4}, "test"))
        assert {table: n for table, n in plan.rows.items() if n} == {
            "current.ret_old__items": 1, "history.ret_old__items": 1, "cdc.changelog_base": 1}

        refused = (r"hour 2013-12-17T09:00:00Z: the changelog expired up to 2013-12-17T09:00:00Z under "
                   r"retention\.changelog_days")
        with pytest.raises(ExpiredHourError, match=refused):
            normalize_hour(spark, {}, hour(EXPIRING + 1), "norm-x")
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {in_catalog(spark, 'cdc.changelog_base')}")
        spark.sql(f"DELETE FROM {EXPIRED_HOURS} WHERE layer = 'changelog'")
