"""``cdclake query "SQL"``: query the Iceberg tables without a JVM (pyiceberg + DuckDB).

Every ``<namespace>.<table>`` in the SQL that names an Iceberg table of the catalog (e.g.
``current.shop__orders``, ``cdc.changelog``, ``current."3d_prints"``, quoted or not) is read with a
pyiceberg scan into an in-memory DuckDB table of the same name, then DuckDB runs the SQL. Names
that are not catalog tables are left to DuckDB (its own functions, CTE names, ...).

Only what the SQL needs is read: DuckDB plans the query over empty tables of the same schemas
first (``EXPLAIN``), and the columns and filters it would push into each table scan become the
pyiceberg scan's ``selected_fields`` and ``row_filter`` (files and row groups whose statistics
rule a filter out are skipped). The pushed filters are implied by the query, and DuckDB still
applies the whole SQL, so a filter pyiceberg cannot read is simply not pushed. A key lookup in a
large table holds the matching rows, not the table. ``as_of`` / ``snapshot_id`` read the tables
as of an instant or a snapshot (Iceberg time travel).

A table is read at a snapshot (``main``'s current one by default) with that snapshot's schema, as
Iceberg time travel does. Iceberg schemas are table-wide, so a column an hour adds exists from
compaction on, while its values wait on the hour's audit branch; read this way, the column
appears with the hour's publish, which is the first snapshot of ``main`` written with it.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from cdclake.exceptions import CdclakeError

# ``ns.table`` with either part quoted or not; any word (a table may start with a digit).
_QUALIFIED = re.compile(r'(?<![\w."])("?)(\w+)\1\s*\.\s*("?)(\w+)\3(?![\w"]*\s*\()')
# DuckDB's text of a typed literal, ``'2024-01-01 10:00:00'::TIMESTAMP``: the literal alone.
_CAST = re.compile(r"('(?:[^']|'')*')::[A-Z_]+(?:\([0-9, ]*\))?(?: WITH TIME ZONE)?")


class QueryError(CdclakeError):
    """The SQL could not be run (unknown table, DuckDB error)."""


def referenced_tables(sql: str, known: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """``namespace.table`` pairs in ``sql`` that are tables of the catalog (``known``)."""
    found = []
    for match in _QUALIFIED.finditer(sql):
        pair = (match.group(2), match.group(4))
        if pair in known and pair not in found:
            found.append(pair)
    return found


def quoted_tables(sql: str, known: set[tuple[str, str]]) -> str:
    """``sql`` with every catalog table name quoted (``current."3d_prints"``), which DuckDB needs
    for a name that starts with a digit."""
    def quote(match: re.Match[str]) -> str:
        pair = (match.group(2), match.group(4))
        return f'"{pair[0]}"."{pair[1]}"' if pair in known else match.group(0)
    return _QUALIFIED.sub(quote, sql)


@dataclass(frozen=True)
class Pushdown:
    """What one table's scan needs: its columns (None: all) and the conjuncts of its filter
    (pyiceberg expression text)."""

    columns: tuple[str, ...] | None
    filters: tuple[str, ...]


def _scans(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    info = node.get("extra_info")
    if isinstance(info, dict) and "Table" in info:
        yield info
    for child in node.get("children", []):
        yield from _scans(child)


def _listed(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def pushdowns(plan_json: str, tables: list[tuple[str, str]]) -> dict[tuple[str, str], Pushdown]:
    """Per table, the columns and filters DuckDB's plan (``EXPLAIN (FORMAT JSON)``) pushes into
    its scans. A table scanned twice needs the union of their columns, and keeps filters only
    when every scan has the same."""
    by_table: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for root in json.loads(plan_json):
        for scan in _scans(root):
            name = scan["Table"].replace('"', "").split(".")[-2:]
            key = (name[0], name[1])
            if key in tables:
                by_table.setdefault(key, []).append(scan)
    out = {}
    for key in tables:
        scans = by_table.get(key)
        if not scans:  # not scanned as a plain table scan: read it whole
            out[key] = Pushdown(None, ())
            continue
        filters = [tuple(_CAST.sub(_literal_only, f) for f in _listed(s.get("Filters"))) for s in scans]
        # A scan reads its filters' columns too, though it does not project them; the SQL runs
        # again on what is loaded, so they are loaded.
        columns: set[str] | None = {c.strip('"') for s in scans for c in _listed(s.get("Projections"))}
        for text in (f for scan_filters in filters for f in scan_filters):
            named = _filter_columns(text)
            columns = None if named is None or columns is None else columns | named
        shared = filters[0] if all(f == filters[0] for f in filters) else ()
        out[key] = Pushdown(None if columns is None else tuple(sorted(columns)), shared)
    return out


def _filter_columns(text: str) -> set[str] | None:
    """The columns a filter reads; None when pyiceberg cannot parse it."""
    from pyiceberg.expressions.parser import parse

    try:
        expression = parse(text)
    except Exception:  # noqa: BLE001 - pyiceberg's parser raises its own and pyparsing's errors
        return None
    names: set[str] = set()
    pending = [expression]
    while pending:
        node = pending.pop()
        term = getattr(node, "term", None)
        if term is not None:
            names.add(str(term.name))
        pending += [getattr(node, side) for side in ("left", "right", "child") if hasattr(node, side)]
    return names


def _literal_only(match: re.Match[str]) -> str:
    """A cast literal's text as pyiceberg reads it (an ISO timestamp has a ``T``)."""
    text = match.group(1)
    return re.sub(r"^'(\d{4}-\d\d-\d\d) (\d\d:)", r"'\1T\2", text)


def _row_filter(schema: Any, filters: tuple[str, ...]) -> Any:
    """The conjunction of those ``filters`` that pyiceberg parses and binds to ``schema`` (a
    filter it cannot read is left to DuckDB)."""
    from pyiceberg.expressions import AlwaysTrue, And
    from pyiceberg.expressions.parser import parse
    from pyiceberg.expressions.visitors import bind

    usable: list[Any] = []
    for text in filters:
        try:
            expression = parse(text)
            bind(schema, expression, case_sensitive=True)
        except Exception:  # noqa: BLE001 - pyiceberg's parse and bind errors have no common base
            continue
        usable.append(expression)
    if not usable:
        return AlwaysTrue()
    return usable[0] if len(usable) == 1 else And(*usable)


def _snapshot_of(table: Any, name: str, as_of: dt.datetime | None, snapshot_id: int | None) -> int | None:
    """The snapshot to read: ``snapshot_id`` when the table has it, else the one current at
    ``as_of``, else main's current one (None: the table has no snapshot)."""
    if snapshot_id is not None and table.snapshot_by_id(snapshot_id) is not None:
        return snapshot_id
    if as_of is None:
        current = table.current_snapshot()
        return None if current is None else int(current.snapshot_id)
    moment = as_of if as_of.tzinfo else as_of.replace(tzinfo=dt.UTC)
    found = table.snapshot_as_of_timestamp(int(moment.timestamp() * 1000))
    if found is None:
        raise QueryError(f"{name} has no snapshot as of {moment.isoformat()}")
    return int(found.snapshot_id)


def _schema_at(table: Any, snapshot_id: int | None) -> Any:
    """The schema ``snapshot_id`` was written with (the table's current one without a snapshot)."""
    snapshot = None if snapshot_id is None else table.snapshot_by_id(snapshot_id)
    if snapshot is not None and snapshot.schema_id is not None:
        return table.schemas().get(snapshot.schema_id, table.schema())
    return table.schema()


def run_query(config: Any, sql: str, *, as_of: dt.datetime | None = None,
              snapshot_id: int | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``sql`` over the catalog's Iceberg tables; returns column names and rows. ``as_of``
    reads every table as it was then; ``snapshot_id`` reads the table that has that snapshot
    as of it."""
    import duckdb
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    from cdclake.catalog import open_catalog

    catalog = open_catalog(config)
    known: set[tuple[str, str]] = set()
    for listed in catalog.list_namespaces():
        for identifier in catalog.list_tables(listed):
            known.add((identifier[0], identifier[-1]))
    sql = quoted_tables(sql, known)
    referenced = referenced_tables(sql, known)
    tables = {pair: catalog.load_table(pair) for pair in referenced}
    snapshots = {pair: _snapshot_of(t, ".".join(pair), as_of, snapshot_id) for pair, t in tables.items()}
    if snapshot_id is not None and not any(t.snapshot_by_id(snapshot_id) for t in tables.values()):
        raise QueryError(f"no table of the query has snapshot {snapshot_id}")
    con = duckdb.connect()
    # Plan over empty tables first; statistics of an empty table would prune the scans away.
    con.execute("SET disabled_optimizers = 'statistics_propagation'")
    schemas = {pair: _schema_at(t, snapshots[pair]) for pair, t in tables.items()}
    for (namespace, name) in tables:
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{namespace}"')
        empty = pa.Table.from_batches([], schema_to_pyarrow(schemas[(namespace, name)]))
        con.register("_cdclake_empty", empty)
        con.execute(f'CREATE TABLE "{namespace}"."{name}" AS SELECT * FROM _cdclake_empty')
        con.unregister("_cdclake_empty")
    try:
        plan = con.execute(f"EXPLAIN (FORMAT JSON) {sql}").fetchall()
        wanted = pushdowns(plan[0][1], referenced) if plan else {}
    except duckdb.Error:
        wanted = {}  # not a plannable query (DuckDB says why when it runs)
    con.execute("RESET disabled_optimizers")
    for (namespace, name), table in tables.items():
        need = wanted.get((namespace, name), Pushdown(None, ()))
        schema = schemas[(namespace, name)]
        fields = need.columns or ("*",)
        if need.columns == ():  # count(*): the rows, no values
            fields = (schema.fields[0].name,)
        scan = table.scan(row_filter=_row_filter(schema, need.filters), selected_fields=fields,
                          snapshot_id=snapshots[(namespace, name)])
        con.execute(f'DROP TABLE "{namespace}"."{name}"')
        con.register("_cdclake_load", scan.to_arrow_batch_reader())
        con.execute(f'CREATE TABLE "{namespace}"."{name}" AS SELECT * FROM _cdclake_load')
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

    columns, rows = run_query(load_config(), args.sql, as_of=args.as_of, snapshot_id=args.snapshot)
    write_result(columns, rows, args.format, sys.stdout)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``cdclake query`` to the CLI."""
    p = commands.add_parser("query", help="query the Iceberg tables with SQL (pyiceberg + DuckDB, no JVM)")
    p.add_argument("sql", metavar="SQL", help='e.g. "select * from current.shop__orders"')
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--as-of", type=_instant, metavar="TIMESTAMP",
                      help="read every table as of this instant (ISO-8601; naive = UTC)")
    when.add_argument("--snapshot", type=int, metavar="ID",
                      help="read the table that holds this snapshot as of it (the others as they are)")
    p.set_defaults(handler=_command)


def _instant(text: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 instant: {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
