"""Names from messages on real Spark: distinct source tables never share a current table, a
database-level DDL makes no table, user columns named like cdclake's MERGE internals are kept, and
one table's Spark error fails that table alone."""

from __future__ import annotations

import pytest

from spark_jobs.compact import compact_hour
from tests.compaction.changes import Changes, hour, write_hour

pytestmark = pytest.mark.slow


def test_non_ascii_names_columns_like_internals_and_database_ddl(spark) -> None:
    types = {"id": "LONG", "_m_deleted": "STRING", "_m_set": "STRING", "key": "STRING"}
    orders = Changes("ident", "订单", keys=["id"], types=types)
    users = Changes("ident", "用户", keys=["id"], types=types)
    cafe = Changes("ident", "café", keys=["id"], types=types)
    cafe_plain = Changes("ident", "cafe", keys=["id"])
    database = Changes("ident", None)  # type: ignore[arg-type]
    image = {"id": "1", "_m_deleted": "yes", "_m_set": "[]", "key": "k"}
    write_hour(spark, 60, [
        orders.row("INSERT", after=image),
        users.row("INSERT", after={**image, "id": "2"}),
        users.row("UPDATE", before={"id": "2"}, after={"id": "2", "_m_deleted": "no"}, full=False),
        cafe.row("INSERT", after=image),
        cafe_plain.row("INSERT", after={"id": "3"}, types={"id": "LONG"}),
        database.row("DDL", ddl="CREATE DATABASE ident2", keys=[]),
    ])
    summary = compact_hour(spark, hour(60), "compact__60")
    assert sorted((t.source, t.table, t.status) for t in summary.tables) == [
        ("ident.cafe", "current.ident__cafe", "OK"),
        ("ident.café", "current.ident__cafe_850f7dc4", "OK"),
        ("ident.用户", "current.ident__yonghu_0d0e1a86", "OK"),
        ("ident.订单", "current.ident__dingdan_3d5436ea", "OK"),
    ]
    data = ["id", "_m_deleted", "_m_set", "key"]
    assert [tuple(r) for r in spark.table("current.ident__dingdan_3d5436ea").select(*data).collect()] == [
        (1, "yes", "[]", "k")]
    assert [tuple(r) for r in spark.table("current.ident__yonghu_0d0e1a86").select(*data).collect()] == [
        (2, "no", "[]", "k")]
    assert spark.table("current.ident__cafe").select("id").collect()[0]["id"] == 3
    assert not [t for t in spark.catalog.listTables("current") if t.name.startswith("ident___")]


def test_a_spark_error_in_one_table_fails_that_table_only(spark) -> None:
    good = Changes("fault", "good", keys=["id"], types={"id": "LONG"})
    broken = Changes("fault", "broken", keys=["id"], types={"id": "LONG"})
    write_hour(spark, 61, [good.row("INSERT", after={"id": "1"}), broken.row("INSERT", after={"id": "1"})])
    # A table the job cannot write: a current table whose layout is not the one compaction made.
    spark.sql("DROP TABLE IF EXISTS current.fault__broken")
    spark.sql("CREATE TABLE current.fault__broken (id bigint) USING iceberg")
    summary = compact_hour(spark, hour(61), "compact__61")
    results = {t.table: t for t in summary.tables}
    assert results["current.fault__good"].status == "OK"
    assert results["current.fault__broken"].status == "FAILED"
    assert results["current.fault__broken"].message.startswith("AnalysisException: "), results
    assert [r["id"] for r in spark.table("current.fault__good").collect()] == [1]


def test_one_table_from_two_topics_is_refused_until_a_prefix_keeps_them_apart(spark) -> None:
    from spark_jobs import held_tables
    from spark_jobs.compaction.layout import CompactionOptions

    types = {"id": "LONG", "v": "STRING"}
    home = Changes("multi", "orders", keys=["id"], types=types, topic="cdc.home")
    # A second region, by a tool that repeats the database as the schema (CloudCanal).
    region = Changes("multi", "orders", keys=["id"], types=types, topic="cdc.region", schema="multi")
    write_hour(spark, 62, [home.row("INSERT", after={"id": "1", "v": "home"}),
                           region.row("INSERT", after={"id": "1", "v": "region"})])
    write_hour(spark, 63, [home.row("INSERT", after={"id": "2", "v": "home"})])
    write_hour(spark, 64, [region.row("INSERT", after={"id": "2", "v": "region"})])
    refusal = ("source table multi.orders arrives from topics cdc.home and cdc.region; a current table "
               "has one source, so set topics[].table_prefix on all but one of them")

    [both] = compact_hour(spark, hour(62), "compact__62").tables
    assert (both.table, both.status) == ("current.multi__orders", "FAILED")
    assert both.message.startswith(refusal)
    assert not spark.catalog.tableExists("current.multi__orders")
    # The table is held back from hour 62: later hours retry it with every change since, both
    # topics' included, so the refusal stands until a prefix keeps them apart.
    [first] = compact_hour(spark, hour(63), "compact__63").tables
    [second] = compact_hour(spark, hour(64), "compact__64").tables  # the other topic, an hour later
    assert (first.status, second.status) == ("FAILED", "FAILED") and second.message.startswith(refusal)
    assert [(h.table, h.since, h.failed_hour) for h in held_tables.read(spark).values()
            if h.source == "multi.orders"] == [("current.multi__orders", hour(62), hour(64))]

    apart = CompactionOptions(table_prefixes={"cdc.region": "eu"})
    for n in (62, 63, 64):
        assert {t.status for t in compact_hour(spark, hour(n), f"compact__{n}", apart).tables} == {"OK"}
    assert sorted(tuple(r) for r in spark.table("current.multi__orders").select("id", "v").collect()) == [
        (1, "home"), (2, "home")]
    assert sorted(tuple(r) for r in spark.table("current.eu_multi__orders").select("id", "v").collect()) == [
        (1, "region"), (2, "region")]
    assert not [h for h in held_tables.read(spark).values() if h.source == "multi.orders"]
