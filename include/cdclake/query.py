"""``cdclake query "SQL"``: query the Iceberg tables without a JVM (pyiceberg + DuckDB).

Every ``<namespace>.<table>`` in the SQL that names an Iceberg table of the catalog (e.g.
``current.shop__orders``, ``cdc.changelog``) is loaded with pyiceberg ``scan().to_duckdb()`` into
an in-memory DuckDB schema of the same name, then DuckDB runs the SQL unchanged. Names that are
not catalog tables are left to DuckDB (its own functions, CTE names, ...).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import json
import re
import sys
from typing import Any, TextIO

from cdclake.exceptions import CdclakeError

_QUALIFIED = re.compile(r'(?<![\w."])"?([A-Za-z_][\w]*)"?\s*\.\s*"?([A-Za-z_][\w]*)"?(?![\w"]*\s*\()')


class QueryError(CdclakeError):
    """The SQL could not be run (unknown table, DuckDB error)."""


def referenced_tables(sql: str, known: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """``namespace.table`` pairs in ``sql`` that are tables of the catalog (``known``)."""
    found = []
    for match in _QUALIFIED.finditer(sql):
        pair = (match.group(1), match.group(2))
        if pair in known and pair not in found:
            found.append(pair)
    return found


def run_query(config: Any, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``sql`` over the catalog's Iceberg tables; returns column names and rows."""
    import duckdb

    from cdclake.catalog import open_catalog

    catalog = open_catalog(config)
    known: set[tuple[str, str]] = set()
    for listed in catalog.list_namespaces():
        for identifier in catalog.list_tables(listed):
            known.add((identifier[0], identifier[-1]))
    con = duckdb.connect()
    for namespace, table in referenced_tables(sql, known):
        iceberg_table = catalog.load_table((namespace, table))
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{namespace}"')
        arrow = iceberg_table.scan().to_arrow()
        con.register("_cdclake_load", arrow)
        con.execute(f'CREATE TABLE "{namespace}"."{table}" AS SELECT * FROM _cdclake_load')
        con.unregister("_cdclake_load")
    try:
        result = con.execute(sql)
    except duckdb.Error as exc:
        raise QueryError(f"query failed: {exc}; tables available: "
                         f"{', '.join(sorted(f'{n}.{t}' for n, t in known)) or 'none'}") from None
    columns = [d[0] for d in result.description or []]
    return columns, [tuple(r) for r in result.fetchall()]


def _text(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        import base64

        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def write_result(columns: list[str], rows: list[tuple[Any, ...]], fmt: str, out: TextIO) -> None:
    if fmt == "json":
        for row in rows:
            out.write(json.dumps({c: _text(v) for c, v in zip(columns, row, strict=True)},
                                 ensure_ascii=False) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(columns)
        writer.writerows([[_text(v) for v in row] for row in rows])
    else:
        texts = [[("NULL" if v is None else str(_text(v))) for v in row] for row in rows]
        widths = [max([len(c)] + [len(r[i]) for r in texts]) for i, c in enumerate(columns)]
        out.write(" | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + "\n")
        out.write("-+-".join("-" * w for w in widths) + "\n")
        for r in texts:
            out.write(" | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + "\n")
        out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")


def _command(args: argparse.Namespace) -> int:
    from cdclake.config import load_config

    columns, rows = run_query(load_config(), args.sql)
    write_result(columns, rows, args.format, sys.stdout)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``cdclake query`` to the CLI."""
    p = commands.add_parser("query", help="query the Iceberg tables with SQL (pyiceberg + DuckDB, no JVM)")
    p.add_argument("sql", metavar="SQL", help='e.g. "select * from current.shop__orders"')
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(handler=_command)
