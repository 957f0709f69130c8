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
