"""Spark writes an Iceberg table in the SQL catalog; pyiceberg + DuckDB read the same rows."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

pytestmark = pytest.mark.slow


def test_spark_writes_and_pyiceberg_duckdb_read_back_the_same_rows(spark, catalog) -> None:
    from spark_jobs.tables import ensure_tables

    ensure_tables(spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS foundation")
    spark.sql("DROP TABLE IF EXISTS foundation.roundtrip")
    spark.sql("""CREATE TABLE foundation.roundtrip (id bigint, amount decimal(38,10),
                 happened_at timestamp, wall timestamp_ntz, payload binary, note string)
                 USING iceberg PARTITIONED BY (days(happened_at))""")
    spark.sql("""INSERT INTO foundation.roundtrip VALUES
        (1, 12345678901234567890.0123456789, TIMESTAMP'2024-01-01 10:00:00.123456',
         TIMESTAMP_NTZ'2024-01-01 18:00:00.5', X'00FF10', 'first'),
        (2, -0.0000000001, TIMESTAMP'2024-01-02 00:00:00', NULL, X'', NULL)""")
    expected = [
        (1, Decimal("12345678901234567890.0123456789"), dt.datetime(2024, 1, 1, 10, 0, 0, 123456),
         dt.datetime(2024, 1, 1, 18, 0, 0, 500000), b"\x00\xff\x10", "first"),
        (2, Decimal("-0.0000000001"), dt.datetime(2024, 1, 2), None, b"", None),
    ]
    spark_rows = [tuple(r) for r in spark.table("foundation.roundtrip").orderBy("id").collect()]
    assert spark_rows == expected

    table = catalog.load_table("foundation.roundtrip")
    con = table.scan().to_duckdb("roundtrip")
    query = "SELECT id, amount, happened_at, wall, payload, note FROM roundtrip ORDER BY id"
    duck_rows = con.sql(query).fetchall()
    as_naive_utc = [(r[0], r[1], r[2].astimezone(dt.UTC).replace(tzinfo=None), r[3],
                     bytes(r[4]), r[5]) for r in duck_rows]
    assert as_naive_utc == expected


def test_fixed_tables_exist_in_their_namespaces(spark, catalog) -> None:
    from spark_jobs.tables import TABLES, ensure_tables

    ensure_tables(spark)
    for name, *_ in TABLES:
        namespace, table = name.split(".")
        assert catalog.table_exists(f"{namespace}.{table}"), name
