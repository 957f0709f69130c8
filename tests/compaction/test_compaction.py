"""Compaction with real Spark and the Iceberg catalog: semantics, schema evolution, order-independence.

The story (``scenario.py``) is written twice: database prefix ``ord`` into ``cdc.changelog`` and
compacted hour 1, 2, 3 then hour 2 again; prefix ``shuf`` into a second changelog table and
compacted 3, 1, 2, 1. Both must end value-for-value equal, and equal to the expected rows below.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import functions as F

from cdclake.formats.canonical import CHANGE_ROW_DDL
from spark_jobs.compact import compact_hour
from tests.compaction.changes import changelog_frame, hour
from tests.compaction.scenario import scenario

pytestmark = pytest.mark.slow

HOUR0 = 100  # story hour n is landing hour HOUR0 + n
SHUFFLED_LOG = "cdc.changelog_compaction_test"
TABLES = (
    "shop__orders",
    "shop__audit_log",
    "shop__trunc",
    "shop__evolve",
    "drs__test",
    "mongo__ljx",
    "splex__stock",
)


def _write(spark, table: str, prefix: str) -> None:
    for n, rows in scenario(prefix).items():
        df = changelog_frame(spark, HOUR0 + n, rows, run_id=f"normalize__{n}")
        df.writeTo(table).overwrite(F.col("landed_hour") == F.lit(hour(HOUR0 + n)).cast("timestamp"))


@pytest.fixture(scope="module")
def compacted(spark):
    from spark_jobs.tables import CHANGELOG, ensure_tables

    ensure_tables(spark)
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {SHUFFLED_LOG} ({CHANGE_ROW_DDL}) USING iceberg "
        "PARTITIONED BY (landed_hour)"
    )
    _write(spark, CHANGELOG, "ord")
    _write(spark, SHUFFLED_LOG, "shuf")
    summaries: dict[int, list[Any]] = {}
    for n in (1, 2, 3, 2):
        summaries.setdefault(n, []).append(compact_hour(spark, hour(HOUR0 + n), f"compact__{n}"))
    for n in (3, 1, 2, 1):
        compact_hour(spark, hour(HOUR0 + n), f"compact__{n}", changelog=SHUFFLED_LOG)
    return summaries


def rows(spark, table: str, drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    df = spark.table(table)
    return sorted(
        ({k: v for k, v in r.asDict().items() if k not in drop} for r in df.collect()),
        key=lambda r: repr(sorted(r.items(), key=lambda kv: kv[0])),
    )


def data(spark, table: str) -> list[dict[str, Any]]:
    """Data columns and the last op, without the other metadata."""
    keep_meta = {"_cdc_op"}
    out = []
    for r in rows(spark, f"current.ord_{table}"):
        out.append({k: v for k, v in r.items() if not k.startswith("_cdc_") or k in keep_meta})
    return sorted(out, key=repr)


def by_id(spark, table: str) -> dict[Any, dict[str, Any]]:
    return {r["id"]: r for r in data(spark, table)}


def test_only_the_incompatible_table_fails_and_hours_report_ok(compacted):
    for n, runs in compacted.items():
        for summary in runs:
            assert summary.failures == [], (n, summary.failures)


def test_several_changes_in_one_hour_collapse(spark, compacted):
    assert by_id(spark, "shop__orders")[1] == {
        "id": 1,
        "name": "c",
        "amount": Decimal("2.50"),
        "ts": None,
        "local": None,
        "blob": None,
        "flag": None,
        "big": None,
        "_cdc_op": "UPDATE",
    }


def test_older_change_never_overwrites_newer_state(spark, compacted):
    assert by_id(spark, "shop__orders")[2]["name"] == "new"


def test_late_change_never_resurrects_deleted_row(spark, compacted):
    assert 3 not in by_id(spark, "shop__orders")
    tombs = rows(spark, "current.ord_shop__orders__tombstones")
    assert [(t["_cdc_key"], t["_cdc_op"]) for t in tombs] == [('["3"]', "DELETE"), ('["5"]', "DELETE")]


def test_partial_images_merge_full_images_replace(spark, compacted):
    assert by_id(spark, "shop__orders")[4] == {
        "id": 4,
        "name": "p2",
        "amount": Decimal("4.50"),
        "ts": None,
        "local": None,
        "blob": None,
        "flag": None,
        "big": None,
        "_cdc_op": "UPDATE",
    }


def test_update_changing_the_key_moves_the_row(spark, compacted):
    orders = by_id(spark, "shop__orders")
    assert 5 not in orders
    assert orders[6]["name"] == "mover" and orders[6]["amount"] == Decimal("5.00")


def test_snapshot_rows_upsert(spark, compacted):
    assert by_id(spark, "shop__orders")[7]["name"] == "snap2"
    assert by_id(spark, "shop__orders")[7]["_cdc_op"] == "SNAPSHOT"


def test_redelivered_duplicate_applies_once(spark, compacted):
    assert by_id(spark, "shop__orders")[8]["name"] == "v2"


def test_typed_columns_and_long_beyond_int64(spark, compacted):
    types = {f.name: f.dataType.simpleString() for f in spark.table("current.ord_shop__orders").schema}
    assert {k: types[k] for k in ("id", "name", "amount", "ts", "local", "blob", "flag", "big")} == {
        "id": "bigint",
        "name": "string",
        "amount": "decimal(10,2)",
        "ts": "timestamp",
        "local": "timestamp_ntz",
        "blob": "binary",
        "flag": "boolean",
        "big": "decimal(20,0)",
    }
    assert by_id(spark, "shop__orders")[9]["big"] == Decimal("18446744073709551615")
    spark.sql("SELECT 1").collect()
    orders = [r for r in rows(spark, "current.ord_shop__orders") if r["id"] == 1]
    assert orders[0]["ts"] is None  # the full update at t(2) replaced the insert's columns


def test_whole_orders_table(spark, compacted):
    assert [(r["id"], r["name"]) for r in sorted(data(spark, "shop__orders"), key=lambda r: r["id"])] == [
        (1, "c"),
        (2, "new"),
        (4, "p2"),
        (6, "mover"),
        (7, "snap2"),
        (8, "v2"),
        (9, "huge"),
    ]


def test_keyless_table_is_a_multiset(spark, compacted):
    got = sorted((r["who"], r["n"]) for r in data(spark, "shop__audit_log"))
    assert got == [("ann", 1), ("bob", 3)]


def test_truncate_empties_table_and_earlier_changes_never_return(spark, compacted):
    assert data(spark, "shop__trunc") == [{"id": 3, "v": "c", "_cdc_op": "INSERT"}]


def test_ddl_adds_column_and_decimal_widens(spark, compacted):
    types = {f.name: f.dataType.simpleString() for f in spark.table("current.ord_shop__evolve").schema}
    assert (types["b"], types["d"]) == ("bigint", "decimal(12,2)")
    assert sorted(data(spark, "shop__evolve"), key=lambda r: r["id"]) == [
        {"id": 1, "a": "x", "b": 5, "d": Decimal("1.25"), "_cdc_op": "UPDATE"},
        {"id": 2, "a": "y", "b": 7, "d": Decimal("2.50"), "_cdc_op": "INSERT"},
    ]


def test_manual_examples(spark, compacted):
    drs = data(spark, "drs__test")
    assert [(r["id"], r["c3"], r["c5"], r["c4"]) for r in drs] == [
        (104, 103, dt.datetime(2021, 6, 25, 9, 51, 53, 201000), dt.datetime(2021, 6, 25, 17, 51, 53))
    ]
    assert drs[0]["c12"][:5] == b"jgojg"
    # the full-document update (after_is_full) replaced the document: tags went with it
    assert data(spark, "mongo__ljx") == [
        {
            "_id": "64650cf67dc36a464e76e583",
            "c1": None,
            "column1": "aaa",
            "tags": None,
            "_cdc_op": "UPDATE",
        }
    ]
    assert data(spark, "splex__stock") == [{"sku": "A-1", "qty": "4", "_cdc_op": "UPDATE"}]


def test_query_reads_compacted_table_through_duckdb(config, spark, compacted):
    from cdclake.query import run_query

    columns, result = run_query(config, "select id, name, amount from current.ord_shop__orders order by id")
    assert columns == ["id", "name", "amount"]
    assert result == [
        (r["id"], r["name"], r["amount"]) for r in sorted(data(spark, "shop__orders"), key=lambda r: r["id"])
    ]


def test_any_order_and_reruns_give_the_same_tables(spark, compacted):
    for table in TABLES:
        for suffix in ("", "__tombstones"):
            assert rows(spark, f"current.shuf_{table}{suffix}") == rows(
                spark, f"current.ord_{table}{suffix}"
            ), table


def test_incompatible_type_change_fails_only_that_table(spark):
    from spark_jobs.tables import CHANGELOG
    from tests.compaction.changes import Changes

    bad = Changes("bad", "t", keys=["id"], types={"id": "LONG", "v": "LONG"})
    good = Changes("bad", "fine", keys=["id"], types={"id": "LONG"})
    first = [bad.row("INSERT", after={"id": "1", "v": "10"}), good.row("INSERT", after={"id": "1"})]
    second = [
        bad.row(
            "UPDATE", after={"id": "1", "v": "ten"}, before={"id": "1"}, types={"id": "LONG", "v": "STRING"}
        ),
        good.row("INSERT", after={"id": "2"}),
    ]
    for n, batch in ((50, first), (51, second)):
        df = changelog_frame(spark, n, batch, run_id=f"normalize__{n}")
        df.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(n)).cast("timestamp"))
    assert compact_hour(spark, hour(50), "c50").failures == []
    summary = compact_hour(spark, hour(51), "c51")
    assert [(f.source, f.status) for f in summary.failures] == [("bad.t", "FAILED")]
    assert (
        "column 'v'" in summary.failures[0].message
        and "bigint cannot change to string" in summary.failures[0].message
    )
    assert sorted(r["id"] for r in spark.table("current.bad__fine").collect()) == [1, 2]
    assert [(r["id"], r["v"]) for r in spark.table("current.bad__t").collect()] == [(1, 10)]


def test_rerunning_an_hour_after_its_tombstones_were_purged_never_resurrects(spark):
    """Maintenance purges tombstones by event time; re-running an old hour must not bring rows back."""
    from spark_jobs.tables import CHANGELOG, ensure_tables
    from tests.compaction.changes import Changes

    ensure_tables(spark)
    t = Changes("purge", "t", keys=["id"], types={"id": "LONG", "v": "STRING"})
    hours = {
        70: [t.row("INSERT", after={"id": "1", "v": "a"}), t.row("INSERT", after={"id": "2", "v": "b"})],
        71: [t.row("DELETE", before={"id": "1", "v": "a"}), t.row("UPDATE", after={"id": "2", "v": "c"},
                                                                   before={"id": "2", "v": "b"})],
    }
    for n, batch in hours.items():
        df = changelog_frame(spark, n, batch, run_id=f"normalize__{n}")
        df.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(n)).cast("timestamp"))
    for n in (70, 71):
        compact_hour(spark, hour(n), f"compact__{n}")
    expected = [(2, "c")]
    assert sorted((r["id"], r["v"]) for r in spark.table("current.purge__t").collect()) == expected
    assert [r["_cdc_key"] for r in spark.table("current.purge__t__tombstones").collect()] == ['["1"]']
    spark.sql("DELETE FROM current.purge__t__tombstones")  # what maintenance does once they are old
    for n in (70, 71, 70):
        summary = compact_hour(spark, hour(n), f"rerun__{n}")
        assert summary.failures == []
        assert sorted((r["id"], r["v"]) for r in spark.table("current.purge__t").collect()) == expected, n


def test_same_table_name_in_two_schemas_gives_two_current_tables(spark):
    """Oracle-style sources (no database, schema HR / SCOTT) and PostgreSQL schemas never merge;
    a schema equal to the database (CloudCanal) is the plain two-part name."""
    from spark_jobs.tables import ensure_tables
    from tests.compaction.changes import Changes

    ensure_tables(spark)
    types = {"ID": "LONG", "NAME": "STRING"}
    hr = Changes(None, "EMP", keys=["ID"], types=types, schema="HR")
    scott = Changes(None, "EMP", keys=["ID"], types=types, schema="SCOTT")
    pay = Changes("pay", "orders", keys=["ID"], types=types, schema="pay")
    rows = [
        hr.row("INSERT", after={"ID": "1", "NAME": "hr one"}),
        scott.row("INSERT", after={"ID": "1", "NAME": "scott one"}),
        scott.row("INSERT", after={"ID": "2", "NAME": "scott two"}),
        hr.row("DELETE", before={"ID": "1", "NAME": "hr one"}, at=dt.datetime(2024, 1, 1, 0, 5)),
        pay.row("INSERT", after={"ID": "7", "NAME": "seven"}),
    ]
    write = changelog_frame(spark, 80, rows, run_id="normalize__80")
    from spark_jobs.tables import CHANGELOG

    write.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(80)).cast("timestamp"))
    summary = compact_hour(spark, hour(80), "compact__80")
    assert sorted((t.source, t.table, t.status) for t in summary.tables) == [
        ("HR.EMP", "current.nodb__hr__emp", "OK"),
        ("SCOTT.EMP", "current.nodb__scott__emp", "OK"),
        ("pay.orders", "current.pay__orders", "OK"),
    ]
    assert spark.table("current.nodb__hr__emp").count() == 0
    assert sorted((r["ID"], r["NAME"]) for r in spark.table("current.nodb__scott__emp").collect()) == [
        (1, "scott one"), (2, "scott two")]
    assert [(r["ID"], r["NAME"]) for r in spark.table("current.pay__orders").collect()] == [(7, "seven")]
    assert [r["_cdc_key"] for r in spark.table("current.nodb__hr__emp__tombstones").collect()] == ['["1"]']


def test_mysql_zero_dates_are_null_in_typed_columns(spark):
    """MySQL zero dates reach the changelog as sent (with the decoder's warning); a date or
    timestamp column cannot hold them, so the current table has NULL there (as Debezium gives
    them) instead of failing the table. Any other value that does not fit still fails it."""
    from spark_jobs.tables import CHANGELOG
    from tests.compaction.changes import Changes

    zero = Changes("zero", "t", keys=["id"], types={"id": "LONG", "d": "DATE", "dt": "TIMESTAMP_NTZ"})
    batch = [zero.row("INSERT", after={"id": "1", "d": "0000-00-00", "dt": "0000-00-00 00:00:00"}),
             zero.row("INSERT", after={"id": "2", "d": "2021-05-00", "dt": "2021-00-15 10:00:00"}),
             zero.row("INSERT", after={"id": "3", "d": "2021-05-01", "dt": "2021-05-01 10:00:00"})]
    df = changelog_frame(spark, 90, batch, run_id="normalize__90")
    df.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(90)).cast("timestamp"))
    assert compact_hour(spark, hour(90), "c90").failures == []
    assert sorted((r["id"], r["d"], r["dt"]) for r in spark.table("current.zero__t").collect()) == [
        (1, None, None), (2, None, None),
        (3, dt.date(2021, 5, 1), dt.datetime(2021, 5, 1, 10, 0))]

    invalid = Changes("zero", "bad", keys=["id"], types={"id": "LONG", "d": "DATE"})
    df = changelog_frame(spark, 91, [invalid.row("INSERT", after={"id": "1", "d": "2021-02-30"})],
                         run_id="normalize__91")
    df.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(91)).cast("timestamp"))
    summary = compact_hour(spark, hour(91), "c91")
    assert [(f.source, f.status) for f in summary.failures] == [("zero.bad", "FAILED")]
    assert "'2021-02-30'" in summary.failures[0].message


def test_postgres_infinities_and_nan_are_null_in_typed_columns(spark):
    """PostgreSQL's 'infinity' dates and timestamps (as words, or as the sentinels Debezium's
    connector sends) and numeric 'NaN'/'Infinity' have no value in a typed column: NULL there, as
    sent in the changelog. A value that is merely wrong still fails its table."""
    from spark_jobs.tables import CHANGELOG
    from tests.compaction.changes import Changes

    pg = Changes("pgspecial", "t", keys=["id"],
                 types={"id": "LONG", "d": "DATE", "ts": "TIMESTAMP_NTZ", "amount": "DECIMAL(10,2)"})
    batch = [pg.row("INSERT", after={"id": "1", "d": "infinity", "ts": "9223372036825200000",
                                     "amount": "NaN"}),
             pg.row("INSERT", after={"id": "2", "d": "-infinity", "ts": "-9223372036832400000",
                                     "amount": "-Infinity"}),
             pg.row("INSERT", after={"id": "3", "d": "2021-05-01", "ts": "2021-05-01T10:00:00.5",
                                     "amount": "12.50"})]
    df = changelog_frame(spark, 92, batch, run_id="normalize__92")
    df.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(92)).cast("timestamp"))
    assert compact_hour(spark, hour(92), "c92").failures == []
    table = spark.table("current.pgspecial__t").select("id", "d", "ts", "amount")
    rows = sorted(tuple(r) for r in table.collect())
    assert rows == [(1, None, None, None), (2, None, None, None),
                    (3, dt.date(2021, 5, 1), dt.datetime(2021, 5, 1, 10, 0, 0, 500000), Decimal("12.50"))]

    wrong = Changes("pgspecial", "bad", keys=["id"], types={"id": "LONG", "amount": "DECIMAL(10,2)"})
    df = changelog_frame(spark, 93, [wrong.row("INSERT", after={"id": "1", "amount": "NaNa"})],
                         run_id="normalize__93")
    df.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(93)).cast("timestamp"))
    summary = compact_hour(spark, hour(93), "c93")
    assert [(f.source, f.status) for f in summary.failures] == [("pgspecial.bad", "FAILED")]
    assert "'NaNa'" in summary.failures[0].message


def test_an_add_column_type_only_types_a_column_no_change_declares(spark):
    """An ADD COLUMN's SQL type (``bit(8)``: bytes to Debezium) may not be what the vendor's rows
    declare (Canal sends bit(8) as a number): the rows' type wins, in the same hour or a later one,
    and a re-run of the DDL's hour leaves the column as its values typed it. Without typed rows
    (Maxwell) the DDL's type stands."""
    from spark_jobs.tables import CHANGELOG, ensure_tables
    from tests.compaction.changes import Changes

    ensure_tables(spark)
    canal = Changes("ddl", "canal", keys=["id"], types={"id": "LONG"})
    late = Changes("ddl", "late", keys=["id"], types={"id": "LONG"})
    maxwell = Changes("ddl", "maxwell", keys=["id"], types={})
    hours = {
        60: [canal.row("DDL", ddl="ALTER TABLE canal ADD COLUMN flags bit(8)", keys=[], types={}),
             canal.row("INSERT", after={"id": "1", "flags": "108"}, types={"id": "LONG", "flags": "LONG"}),
             late.row("INSERT", after={"id": "1"}),
             late.row("DDL", keys=[], types={},
                      ddl="ALTER TABLE late ADD COLUMN flags bit(8), ADD COLUMN amount bigint unsigned"),
             maxwell.row("DDL", ddl="ALTER TABLE maxwell ADD COLUMN (n bigint unsigned, at timestamp(3) "
                                    "without time zone, flag BOOLEAN)", keys=[]),
             maxwell.row("INSERT", after={"id": "1", "n": "18446744073709551615",
                                          "at": "2024-01-01 10:00:00.123", "flag": "true"})],
        61: [late.row("INSERT", after={"id": "2", "flags": "7", "amount": "18446744073709551615"},
                      types={"id": "LONG", "flags": "LONG", "amount": "DECIMAL(20,0)"})],
    }
    for n, batch in hours.items():
        df = changelog_frame(spark, n, batch, run_id=f"normalize__{n}")
        df.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(n)).cast("timestamp"))
    for n in (60, 61, 60):
        assert compact_hour(spark, hour(n), f"compact__{n}").failures == [], n

    def typed(table: str) -> dict[str, str]:
        return {f.name: f.dataType.simpleString() for f in spark.table(table).schema
                if not f.name.startswith("_cdc_")}

    assert typed("current.ddl__canal") == {"id": "bigint", "flags": "bigint"}
    assert typed("current.ddl__late") == {"id": "bigint", "flags": "bigint", "amount": "decimal(20,0)"}
    assert typed("current.ddl__maxwell") == {"id": "string", "n": "decimal(20,0)", "at": "timestamp_ntz",
                                             "flag": "boolean"}
    assert [(r["id"], r["flags"]) for r in spark.table("current.ddl__canal").collect()] == [(1, 108)]
    assert sorted((r["id"], r["flags"], r["amount"]) for r in spark.table("current.ddl__late").collect()) == [
        (1, None, None), (2, 7, Decimal("18446744073709551615"))]
    assert [(r["id"], r["n"], r["at"], r["flag"]) for r in spark.table("current.ddl__maxwell").collect()] == [
        ("1", Decimal("18446744073709551615"), dt.datetime(2024, 1, 1, 10, 0, 0, 123000), True)]
