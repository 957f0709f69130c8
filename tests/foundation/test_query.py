"""``cdclake query`` reads only what the SQL needs: DuckDB's plan gives each table's columns and
filters, pyiceberg's scan skips the files they rule out, and the answers are those of the whole
tables. Time travel (``--as-of``, ``--snapshot``) and table names that start with a digit.

A pyiceberg catalog of its own (no Spark): a table written in five appends, one file each.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from cdclake.query import Pushdown, QueryError, pushdowns, quoted_tables, run_query

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("amount", pa.decimal128(20, 2)), pa.field("made_at", pa.timestamp("us"))])
T0 = dt.datetime(2024, 1, 1, 10)


def _batch(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "name": [None if i % 10 == 0 else f"n{i}" for i in ids],
                     "amount": [Decimal(i) / 4 for i in ids],
                     "made_at": [T0 + dt.timedelta(minutes=i) for i in ids]}, schema=SCHEMA)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from pyiceberg.catalog.sql import SqlCatalog

    from cdclake.config import load_config

    root: Path = tmp_path_factory.mktemp("query-lake")
    config = dataclasses.replace(load_config(), catalog_name="lakehouse", catalog_uri=f"sqlite:///{root}/c.db",
                                 warehouse=f"file://{root}/warehouse")
    catalog = SqlCatalog("lakehouse", uri=config.catalog_uri, warehouse=config.warehouse)
    catalog.create_namespace("current")
    table = catalog.create_table(("current", "3d_prints"), schema=SCHEMA)
    snapshots = []
    for start in range(0, 500, 100):  # five files, ids apart: a lookup needs one of them
        table.append(_batch(range(start, start + 100)))
        snapshot = table.current_snapshot()
        assert snapshot is not None
        snapshots.append(snapshot.snapshot_id)
        time.sleep(0.01)
    return {"config": config, "table": table, "snapshots": snapshots}


def _plan(sql: str) -> dict[tuple[str, str], Pushdown]:
    import duckdb

    con = duckdb.connect()
    con.execute("SET disabled_optimizers = 'statistics_propagation'")
    con.execute('CREATE SCHEMA current; CREATE TABLE current."3d_prints" '
                "(id BIGINT, name VARCHAR, amount DECIMAL(20,2), made_at TIMESTAMP)")
    return pushdowns(con.execute(f"EXPLAIN (FORMAT JSON) {sql}").fetchall()[0][1], [("current", "3d_prints")])


def test_a_table_name_starting_with_a_digit_is_quoted_for_duckdb() -> None:
    known = {("current", "3d_prints")}
    assert quoted_tables("select * from current.3d_prints t join x.y on true", known) == \
        'select * from "current"."3d_prints" t join x.y on true'
    already = 'select * from "current"."3d_prints"'
    assert quoted_tables(already, known) == already


@pytest.mark.parametrize(("sql", "expected"), [
    ('SELECT name FROM current."3d_prints" WHERE id = 250', Pushdown(("id", "name"), ("(id = 250)",))),
    ('SELECT count(*) FROM current."3d_prints" WHERE name IS NULL', Pushdown(("name",), ("(name IS NULL)",))),
    ('SELECT * FROM current."3d_prints" WHERE made_at >= TIMESTAMP \'2024-01-01 12:00:00\'',
     Pushdown(("amount", "id", "made_at", "name"), ("(made_at >= '2024-01-01T12:00:00')",))),
    ('SELECT a.id FROM current."3d_prints" a JOIN current."3d_prints" b ON a.id = b.id WHERE b.id = 3',
     Pushdown(("id",), ("(id = 3)",))),  # both scans get the filter through the join key
])
def test_duckdb_plans_give_each_tables_columns_and_filters(sql: str, expected: Pushdown) -> None:
    found = _plan(sql)[("current", "3d_prints")]
    assert (sorted(found.columns or ()), found.filters) == (sorted(expected.columns or ()), expected.filters)


def test_a_lookup_reads_one_file_and_answers_as_the_whole_table_does(lake: dict[str, Any]) -> None:
    from cdclake.query import _row_filter

    table = lake["table"]
    need = _plan('SELECT name, amount FROM current."3d_prints" WHERE id = 251')[("current", "3d_prints")]
    assert len(list(table.scan(row_filter=_row_filter(table.schema(), need.filters)).plan_files())) == 1
    assert len(list(table.scan().plan_files())) == 5
    assert run_query(lake["config"], "SELECT name, amount FROM current.3d_prints WHERE id = 251") == (
        ["name", "amount"], [("n251", Decimal("62.75"))])


@pytest.mark.parametrize("sql", [
    "SELECT id FROM current.3d_prints WHERE id IN (3, 250, 499) ORDER BY id",
    "SELECT count(*) FROM current.3d_prints WHERE name IS NULL",
    "SELECT count(*), min(id) FROM current.3d_prints WHERE made_at > TIMESTAMP '2024-01-01 17:00:00'",
    "SELECT count(*), sum(amount) FROM current.3d_prints WHERE amount BETWEEN 10 AND 20",
    "SELECT count(*) FROM current.3d_prints WHERE lower(name) LIKE 'n4%'",
    "SELECT a.id, b.name FROM current.3d_prints a JOIN current.3d_prints b ON a.id + 1 = b.id WHERE a.id = 7",
    "SELECT count(*) FROM current.3d_prints WHERE id = 3 OR name = 'n499'",
    "SELECT count(*) FROM current.3d_prints",
])
def test_filtered_queries_answer_as_the_whole_table_does(lake: dict[str, Any], sql: str) -> None:
    import duckdb

    whole = duckdb.connect()
    whole.execute("CREATE SCHEMA current")
    whole.register("loaded", lake["table"].scan().to_arrow())
    whole.execute('CREATE TABLE current."3d_prints" AS SELECT * FROM loaded')
    expected = whole.execute(sql.replace("current.3d_prints", 'current."3d_prints"')).fetchall()
    assert expected and expected != [(0,)]
    assert run_query(lake["config"], sql)[1] == [tuple(r) for r in expected]


def test_time_travel_by_instant_and_by_snapshot(lake: dict[str, Any]) -> None:
    table, config = lake["table"], lake["config"]
    second = table.snapshot_by_id(lake["snapshots"][1])
    as_of = dt.datetime.fromtimestamp(second.timestamp_ms / 1000, dt.UTC)
    count = "SELECT count(*) FROM current.3d_prints"
    assert run_query(config, count, as_of=as_of)[1] == [(200,)]
    assert run_query(config, count, snapshot_id=lake["snapshots"][0])[1] == [(100,)]
    with pytest.raises(QueryError, match="no snapshot as of"):
        run_query(config, count, as_of=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    with pytest.raises(QueryError, match="no table of the query has snapshot 42"):
        run_query(config, count, snapshot_id=42)


def test_a_column_added_without_a_snapshot_appears_with_the_next_snapshot(lake: dict[str, Any]) -> None:
    """Compaction adds an hour's new column to the table (schemas are table-wide) while the
    hour's rows wait on its audit branch; main's snapshot still has the published schema."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.types import StringType

    config = lake["config"]
    catalog = SqlCatalog("lakehouse", uri=config.catalog_uri, warehouse=config.warehouse)
    table = catalog.create_table(("current", "widened"), schema=SCHEMA)
    table.append(_batch(range(2)))
    snapshot = table.current_snapshot()
    assert snapshot is not None
    published = snapshot.snapshot_id
    with table.update_schema() as update:
        update.add_column("extra", StringType())
    every = "SELECT * FROM current.widened ORDER BY id"
    assert run_query(config, every) == (["id", "name", "amount", "made_at"],
                                        [tuple(r.values()) for r in _batch(range(2)).to_pylist()])
    newer = _batch(range(2, 3)).append_column("extra", pa.array(["x"]))
    table.append(newer)
    columns, rows = run_query(config, every)
    assert columns == ["id", "name", "amount", "made_at", "extra"]
    assert [(r[0], r[4]) for r in rows] == [(0, None), (1, None), (2, "x")]
    assert run_query(config, every, snapshot_id=published)[0] == ["id", "name", "amount", "made_at"]
