"""Column names that differ only by case: one column where the source ignores case (MySQL and its
kin), a failed table elsewhere (Spark cannot hold both)."""

from __future__ import annotations

from typing import Any

import pytest

from spark_jobs.compaction.case import case_spellings
from spark_jobs.compaction.layout import CASE_FOLDED_PROPERTY, META_COLUMNS
from tests.compaction.changes import BASE, Changes
from tests.compaction.test_real_messages import compact, decoded

pytestmark = pytest.mark.slow

META = {name for name, _ in META_COLUMNS}


def data_columns(spark, name: str) -> list[str]:
    return sorted(f.name for f in spark.table(name).schema.fields if f.name not in META)


def rows(spark, name: str, columns: tuple[str, ...]) -> list[tuple[str | None, ...]]:
    """The whole table as text, columns named in any case (Spark resolves them)."""
    found = spark.table(name).selectExpr(*[f"CAST({c} AS STRING)" for c in columns]).collect()
    return sorted(tuple(r) for r in found)


def test_spellings_prefer_the_table_then_lower_case_then_sort_order():
    assert case_spellings([], ["V1", "v1", "K1", "k1", "v0"]) == {"v1": "v1", "k1": "k1", "v0": "v0"}
    assert case_spellings([], ["Name", "NAME"]) == {"name": "NAME"}
    assert case_spellings(["Name", "id"], ["name", "NAME", "id"]) == {"name": "Name", "id": "id"}


def test_paimon_case_insensitive_canal_messages_end_in_paimons_table(spark):
    """Paimon's ``testCaseInsensitive`` (canal-json, case-insensitive catalog): ``+I[5, five, 50]``,
    ``+I[7, seven, 70]`` in columns ``k1, v0, v1``. The messages spell ``k1``/``K1`` and
    ``v1``/``V1`` both ways (rows, ``mysqlType``, ``sqlType``, ``pkNames``); MySQL names columns
    case-insensitively, so each pair is one column, spelled in lower case as the hour has it."""
    compact(spark, 800, decoded("canal_json/paimon_canal_db_caseinsensitive", "real_paimon_ci"))
    name = "current.real_paimon_ci__t1"
    assert data_columns(spark, name) == ["k1", "v0", "v1"]
    assert rows(spark, name, ("k1", "v0", "v1")) == [("5", "five", "50"), ("7", "seven", "70")]
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    assert props[CASE_FOLDED_PROPERTY] == "true"


def test_paimon_case_insensitive_ogg_messages_end_in_paimons_table(spark):
    """Paimon's ``testCaseInsensitive`` for ogg-json: ``101, scooter, 3.14`` and ``102, car battery,
    8.1``. The second message keys ``id`` and spells ``name`` and ``WEIGHT`` where the first has
    ``ID``, ``NAME`` and ``weight``: GoldenGate's Oracle names compare ignoring case."""
    compact(spark, 807, decoded("ogg_json/paimon_ogg_db_caseinsensitive", "real_paimon_ogg_ci"))
    name = "current.real_paimon_ogg_ci__paimon_sync_database__t1"
    assert data_columns(spark, name) == ["ID", "description", "name", "weight"]
    assert rows(spark, name, ("id", "name", "weight")) == [("101", "scooter", "3.14"),
                                                            ("102", "car battery", "8.1")]


def _renamed_by_case(database: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A MySQL table before and after ``ALTER TABLE users CHANGE name Name varchar(20)``, as Canal
    sends it: rows 1 and 2, then row 1 updated, row 2 deleted and row 3 inserted under ``Name``."""
    users = Changes(database, "users", keys=["id"], types={"id": "LONG", "name": "STRING"},
                    fmt="canal_json")
    before = [
        users.row("INSERT", after={"id": "1", "name": "a"}, at=BASE.replace(minute=1)),
        users.row("INSERT", after={"id": "2", "name": "x"}, at=BASE.replace(minute=2)),
    ]
    renamed = {"id": "LONG", "Name": "STRING"}
    after = [
        users.row("DDL", ddl="ALTER TABLE users CHANGE name Name varchar(20)", types={},
                  keys=[], at=BASE.replace(minute=3)),
        users.row("UPDATE", before={"id": "1", "Name": "a"}, after={"id": "1", "Name": "b"},
                  types=renamed, at=BASE.replace(minute=4)),
        users.row("DELETE", before={"id": "2", "Name": "x"}, types=renamed, at=BASE.replace(minute=5)),
        users.row("INSERT", after={"id": "3", "Name": "c"}, types=renamed, at=BASE.replace(minute=6)),
    ]
    return before, after


def test_a_mysql_column_renamed_by_case_stays_one_column_in_any_hour_order(spark):
    """In order, the column keeps the spelling it was created with (``name``); hours in reverse
    order give the same rows, the column spelled as the first hour compacted has it (``Name``:
    Spark resolves either); a re-run changes nothing."""
    expected = [("1", "b"), ("3", "c")]
    first, second = _renamed_by_case("case_in_order")
    compact(spark, 801, first)
    compact(spark, 802, second)
    name = "current.case_in_order__users"
    assert data_columns(spark, name) == ["id", "name"]
    assert rows(spark, name, ("id", "name")) == expected
    compact(spark, 801, first)  # a re-run of the first hour, after the fold
    assert data_columns(spark, name) == ["id", "name"]
    assert rows(spark, name, ("id", "name")) == expected

    first, second = _renamed_by_case("case_reversed")
    compact(spark, 803, second)
    compact(spark, 804, first)  # older changes, landed later: folded into ``Name``
    name = "current.case_reversed__users"
    assert data_columns(spark, name) == ["Name", "id"]
    assert rows(spark, name, ("id", "name")) == expected


def test_case_twins_still_fail_a_table_whose_source_tells_them_apart(spark):
    """PostgreSQL quotes ``"Name"`` apart from ``name``: two columns Spark cannot hold, so the
    table fails with a message saying why; and a MySQL image holding both spellings (which MySQL
    cannot send) fails its table rather than losing one value."""
    pg = Changes("case_pg", "users", keys=["id"], fmt="debezium_json")
    pg_rows = [dict(r, db_type="postgresql") for r in (
        pg.row("INSERT", after={"id": "1", "name": "a"}),
        pg.row("INSERT", after={"id": "2", "Name": "b"}),
    )]
    [failure] = compact(spark, 805, pg_rows, failing=("current.case_pg__users",))
    assert "'Name' and 'name' differ only by case" in failure.message

    my = Changes("case_twin_image", "users", keys=["id"], fmt="canal_json")
    # The PostgreSQL table is held back from hour 805, so hour 806 tries it again too.
    held, failure = compact(spark, 806, [my.row("INSERT", after={"id": "1", "name": "a", "Name": "b"})],
                            failing=("current.case_pg__users", "current.case_twin_image__users"))
    assert "'Name' and 'name' differ only by case" in held.message
    assert "differ only by case in one image" in failure.message
    assert "cdc.test/0/0" in failure.message
