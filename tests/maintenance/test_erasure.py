"""Erasure on the real broker, Spark, catalog and warehouse, in a lake of its own: a key's rows
leave every table and every data file of the warehouse, every other row stays whole, and an
erasure stopped at any commit point completes when run again."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from cdclake.exceptions import ErasureDeferred, ErasureError
from cdclake.hourly import plan_hour
from spark_jobs.erasure import ErasurePlan, ErasureRequest, ErasureResult, erase
from spark_jobs.tables import CHANGELOG, ERASED_MESSAGES, ERASURES, QUARANTINE, RAW_MESSAGES
from tests.faults.crash import InjectedCrash, commit_points
from tests.landing.kafka_helpers import Record, make_topic, send

pytestmark = pytest.mark.slow

H0 = dt.datetime(2014, 5, 1, 10)
M = dt.timedelta(minutes=1)
TABLE = "current.crm__people"
HISTORY = "history.crm__people"
TOMBSTONES = "current.crm__people__tombstones"
# Each erased key's email: the values that must leave every data file.
EMAILS = {i: f"person{i}@erase.example" for i in range(40, 46)}


def _canal(kind: str, rows: list[dict[str, str]], at: dt.datetime,
           old: list[dict[str, str]] | None = None) -> bytes:
    ms = int(at.replace(tzinfo=dt.UTC).timestamp() * 1000)
    return json.dumps({"data": rows, "database": "crm", "table": "people", "pkNames": ["id"], "isDdl": False,
                       "type": kind, "es": ms, "ts": ms, "old": old, "id": 1,
                       "mysqlType": {"id": "int", "email": "varchar(64)", "n": "int"},
                       "sqlType": {"id": 4, "email": 12, "n": 4}}).encode()


def _person(i: int, n: int = 0) -> dict[str, str]:
    return {"id": str(i), "email": EMAILS.get(i, f"keep{i}@example.org"), "n": str(n)}


def _messages() -> list[tuple[dt.datetime, bytes]]:
    """One hour. A message carries several keys (an erased key beside kept ones); key 41 is
    deleted (a tombstone), the others updated."""
    first = [(H0 + M, _canal("INSERT", [_person(i) for i in (1, 40, 2)], H0 + M)),
             (H0 + 2 * M, _canal("INSERT", [_person(i) for i in (41, 42, 43, 44, 45, 3)], H0 + 2 * M)),
             (H0 + 3 * M, b"not json")]
    second_at = H0 + 10 * M
    updated = (1, 40, 42, 43, 44, 45)
    second = [(second_at + M, _canal("UPDATE", [_person(i, 1) for i in updated], second_at + M,
                                     old=[{"n": "0"}] * len(updated))),
              (second_at + 2 * M, _canal("DELETE", [_person(41)], second_at + 2 * M))]
    return first + second


def _run_hour(spark: Any, own: Any, topic: str, hour: dt.datetime, run_id: str, reland: bool = False) -> None:
    """The hourly DAG's steps in order, gates included, on the hour's audit branch."""
    from cdclake.formats.base import FormatOptions
    from spark_jobs import compact, hour_status, publish
    from spark_jobs.decode_spark import TopicFormat
    from spark_jobs.gates import run_gate
    from spark_jobs.land import run as land
    from spark_jobs.normalize import normalize_hour

    land(spark, own, hour, run_id, plan_hour(own, hour, (topic,)), reland=reland)
    run_gate(spark, own, "raw", hour, run_id)
    branch = publish.audit_branch(hour)
    normalize_hour(spark, {topic: TopicFormat("canal_json", FormatOptions())}, hour, run_id, branch=branch)
    run_gate(spark, own, "changelog", hour, run_id, branch=branch)
    assert not compact.run(spark, own, hour, run_id, branch).failures
    run_gate(spark, own, "current", hour, run_id, branch=branch)
    publish.publish(spark, publish.audit_candidates(spark), hour, run_id)
    hour_status.record(spark, hour, hour_status.PUBLISH, run_id, hour_status.PUBLISHED, [])


@pytest.fixture(scope="module")
def lake(config, spark, kafka_bootstrap, tmp_path_factory) -> Iterator[tuple[Any, Any, Path]]:
    """A published hour of one topic, with SCD2 history, in a catalog and warehouse of their own.

    The test run's session is pointed at that catalog meanwhile, not a second session: a
    checkpointed frame belongs to the process's default session (PySpark's Connect client)."""
    from spark_jobs.session import use_catalog

    root = tmp_path_factory.mktemp("erasure")
    topic = make_topic(kafka_bootstrap, "erasure")
    send(kafka_bootstrap, topic, [Record(0, at, None, value) for at, value in _messages()])
    own = dataclasses.replace(
        config, catalog_name="erasure_lake", catalog_uri=f"sqlite:///{root}/catalog.db",
        warehouse=f"file://{root}/warehouse",
        topics=(dataclasses.replace(config.topics[0], name=topic, format="canal_json", history=("*",),
                                    quarantine_rate_max=1.0),))
    use_catalog(spark, own, "cdclake-erasure-tests")
    try:
        _run_hour(spark, own, topic, H0, "first")
        yield spark, own, root
    finally:
        use_catalog(spark, config, "cdclake-tests")


def _rows(spark: Any, table: str) -> list[str]:
    return sorted(repr(sorted(r.asDict(recursive=True).items())) for r in spark.table(table).collect())


def _key_of(row: dict[str, Any]) -> str | None:
    for image in ("after", "before"):
        if row.get(image) and row[image].get("id") is not None:
            return row[image]["id"]
    return None


def _without(spark: Any, table: str, ids: set[int]) -> list[str]:
    """``table``'s rows without those of ``ids`` (by key, image or the raw message's coordinates)."""
    texts = {str(i) for i in ids}
    rows = [r.asDict(recursive=True) for r in spark.table(table).collect()]
    if table in (TABLE, HISTORY, TOMBSTONES):
        kept = [r for r in rows if r["_cdc_key"] not in {json.dumps([t]) for t in texts}]
    elif table == CHANGELOG:
        kept = [r for r in rows if _key_of(r) not in texts]
    else:
        erased = {(r["kafka_topic"], r["kafka_offset"]) for r in spark.table(CHANGELOG).collect()
                  if _key_of(r.asDict(recursive=True)) in texts}
        column = "topic" if table == RAW_MESSAGES else "kafka_topic"
        offset = "offset" if table == RAW_MESSAGES else "kafka_offset"
        kept = [r for r in rows if (r[column], r[offset]) not in erased]
    return sorted(repr(sorted(r.items())) for r in kept)


TABLES = (TABLE, HISTORY, TOMBSTONES, CHANGELOG, RAW_MESSAGES, QUARANTINE)


def _data_file_texts(root: Path) -> list[str]:
    """Every value of every Parquet data file left in the warehouse, as text (binary decoded)."""
    texts = []
    for path in sorted((root / "warehouse").rglob("*.parquet")):
        for column in pq.read_table(path).to_pylist():
            for value in column.values():
                texts.append(value.decode("utf-8", "replace") if isinstance(value, bytes) else repr(value))
    return texts


def _data_files(spark: Any, table: str) -> set[str]:
    return {r[0] for r in spark.sql(f"SELECT file_path FROM erasure_lake.{table}.data_files").collect()}


def _request(i: int) -> ErasureRequest:
    return ErasureRequest("crm.people", {"id": i}, f"test request {i}")


def test_an_erasure_removes_the_key_from_every_table_and_data_file(lake) -> None:
    spark, own, root = lake
    expected = {table: _without(spark, table, {40}) for table in TABLES}
    assert any(EMAILS[40] in text for text in _data_file_texts(root))

    plan = erase(spark, own, _request(40), "dry", dry_run=True)
    assert isinstance(plan, ErasurePlan)
    # Key 40: an insert and an update (two messages, both carrying other keys too), two history
    # versions, one current row.
    assert plan.rows == {TABLE: 1, HISTORY: 2, TOMBSTONES: 0, CHANGELOG: 2, RAW_MESSAGES: 2, QUARANTINE: 0}
    assert plan.raw_messages == 2
    assert {table: _rows(spark, table) for table in TABLES} != expected  # nothing erased yet

    with pytest.raises(ErasureError, match="--yes"):
        erase(spark, own, _request(40), "unconfirmed")
    # An hour in flight defers it; a tag would keep the rows readable: refused. Nothing erased.
    for ref, error, says in (("BRANCH audit_20140501T11", ErasureDeferred, "an hour is in flight"),
                             ("TAG kept", ErasureError, "a tag or branch keeps earlier rows readable")):
        spark.sql(f"ALTER TABLE erasure_lake.{HISTORY} CREATE {ref}")
        with pytest.raises(error, match=says):
            erase(spark, own, _request(40), "refused", confirmed=True)
        spark.sql(f"ALTER TABLE erasure_lake.{HISTORY} DROP {ref}")
    assert {table: _rows(spark, table) for table in TABLES} != expected
    files = {table: _data_files(spark, table) for table in TABLES}
    result = erase(spark, own, _request(40), "erase-40", confirmed=True)
    assert isinstance(result, ErasureResult)
    # Exactly the data files that held the key were rewritten; the others are untouched.
    assert {table: len(files[table] - _data_files(spark, table)) for table in TABLES} == plan.files
    assert {table: _rows(spark, table) for table in TABLES} == expected
    assert not [text for text in _data_file_texts(root) if EMAILS[40] in text]
    for table in (t for t in TABLES if plan.rows[t]):  # no snapshot, branch or tag left reaches the rows
        assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0] == 1, table
        assert [r["name"] for r in spark.sql(f"SELECT name FROM {table}.refs").collect()] == ["main"], table

    record = spark.table(ERASURES).where(f"erasure_id = '{result.erasure_id}'").collect()[0].asDict(True)
    assert record["status"] == "done" and record["current_table"] == TABLE
    assert record["reason"] == "test request 40" and record["raw_messages"] == 2
    assert len(record["key_hash"]) == 64 and '["40"]' not in repr(record) and EMAILS[40] not in repr(record)
    removed = sorted((r["table_name"], r["row_count"]) for r in record["removed_rows"])
    assert removed == sorted(plan.rows.items())
    assert spark.table(ERASED_MESSAGES).where(f"erasure_id = '{result.erasure_id}'").count() == 2
    # Erased already: nothing holds the key, nothing is recorded again.
    again = erase(spark, own, _request(40), "erase-40-again", confirmed=True)
    assert isinstance(again, ErasurePlan) and not any(again.rows.values())
    assert spark.table(ERASURES).count() == 1


def _crash_at_first(fragment: str) -> Callable[[int, str], None]:
    """A :func:`commit_points` hook that stops the job at its first commit naming ``fragment``."""
    def hook(n: int, what: str) -> None:
        if fragment in what:
            raise InjectedCrash(f"crash injected at commit {n}: {what}")
    return hook


def test_an_erasure_stopped_at_a_commit_point_completes_when_run_again(lake) -> None:
    spark, own, root = lake
    # After the record (before any delete; key 41 was deleted: its tombstone goes), and among the
    # purges (each table's own, concurrent).
    for key, fragment in ((41, "writeTo(ops.erased_messages)"), (42, "expire_snapshots")):
        expected = {table: _without(spark, table, {key}) for table in TABLES}
        with pytest.raises(InjectedCrash), commit_points(_crash_at_first(fragment)):
            erase(spark, own, _request(key), f"crash-{key}", confirmed=True)
        assert spark.table(ERASURES).where("status = 'started'").count() == 1
        result = erase(spark, own, _request(key), f"rerun-{key}", confirmed=True)
        assert isinstance(result, ErasureResult), key
        assert {table: _rows(spark, table) for table in TABLES} == expected, (key, fragment)
        assert not [text for text in _data_file_texts(root) if EMAILS[key] in text], (key, fragment)
        assert spark.table(ERASURES).where("status <> 'done'").count() == 0


def _unnamed(spark: Any, table: str) -> list[str]:
    """``table``'s rows without what names the run that wrote them."""
    runs = {"run_id", "_cdc_run_id", "landed_at", "quarantined_at"}
    return sorted(repr(sorted((k, v) for k, v in r.asDict(recursive=True).items() if k not in runs))
                  for r in spark.table(table).collect())


def test_re_landing_and_re_running_the_hour_after_an_erasure_gives_the_same_tables(lake) -> None:
    spark, own, root = lake
    assert isinstance(erase(spark, own, _request(43), "erase-43", confirmed=True), ErasureResult)
    erased = {table: _unnamed(spark, table) for table in TABLES}
    topic = own.topics[0].name
    # Kafka still holds the erased messages: the re-land leaves them out, normalize keeps the
    # other keys' change rows they carried, and every gate passes.
    _run_hour(spark, own, topic, H0, "rerun", reland=True)
    assert {table: _unnamed(spark, table) for table in TABLES} == erased
    assert not [text for text in _data_file_texts(root) if EMAILS[43] in text]
    stats = {r["metric"]: r["value"] for r in spark.table("ops.run_stats")
             .where(f"stage = 'normalize' AND topic = '{topic}' AND metric = 'erased_messages'").collect()}
    assert stats["erased_messages"] >= 1
