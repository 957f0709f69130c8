"""Column cells of the Cassandra, YugabyteDB and ScyllaDB connectors: a column's value wrapped as
``{value, set}``, ``{value, deletion_ts, set}`` or ``{value}``; a cell not carried is unknown, not
NULL."""

from __future__ import annotations

from typing import Any

# Column cells: YugabyteDB {value, set}, Cassandra {value, deletion_ts, set} (see _cell_value).
_CELL_FIELDS = (frozenset({"value", "set"}), frozenset({"value", "deletion_ts", "set"}))
_CELL_CONNECTORS = frozenset({"yugabytedb", "cassandra"})
# ScyllaDB's CDC source connector (legacy output, its default): every non-key column is a cell
# {value} whose schema is named "<prefix>.<keyspace>.<table>.<column>.Cell"; key columns are bare.
_SCYLLA = "scylla"
_SCYLLA_CELL = frozenset({"value"})
# Cassandra's after struct also has these range-tombstone bounds: not columns.
_CASSANDRA_RANGE_FIELDS = frozenset({".range_start", ".range_end"})


def _is_cell(value: Any, lenient: bool) -> bool:
    """A column cell object: exactly ``{value, set}`` (YugabyteDB) or ``{value, deletion_ts, set}``
    (Cassandra); ``lenient`` (the connector is known to send cells) also takes a cell that lacks
    ``set`` or ``deletion_ts``, as the YugabyteDB gRPC connector's manual prints ``{"value": 1}``."""
    if not isinstance(value, dict) or "value" not in value:
        return False
    if lenient:
        return set(value) <= _CELL_FIELDS[1]
    return frozenset(value) in _CELL_FIELDS


def _cell_spec(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The column's own schema inside a cell struct schema (its ``value`` field), or None when
    ``spec`` is no cell struct. YugabyteDB's YBExtractNewRecordState takes a struct of exactly the
    fields ``value`` and ``set`` for a cell; Cassandra's CellData adds an optional ``deletion_ts``."""
    if not spec or spec.get("type") != "struct":
        return None
    fields = [f for f in spec.get("fields") or [] if isinstance(f, dict)]
    by_name = {f.get("field"): f for f in fields}
    if len(fields) != len(by_name):
        return None
    if frozenset(by_name) == _SCYLLA_CELL and str(spec.get("name") or "").endswith(".Cell"):
        return by_name["value"]
    if frozenset(by_name) not in _CELL_FIELDS:
        return None
    if str((by_name.get("set") or {}).get("type")) != "boolean":
        return None
    return by_name["value"]


def _has_cells(payload: dict[str, Any], specs: dict[Any, dict[str, Any]], connector: str | None) -> bool:
    """Whether the event's images hold column cells: the schema says so, or (no cell schema) every
    non-null column of ``before`` and ``after`` is a cell object. A user's JSON column that merely
    has a ``value`` key is no cell: cells are all-or-nothing and of these exact shapes."""
    if any(_cell_spec(spec) for spec in specs.values()):
        return True
    values = [value for side in ("before", "after") if isinstance(payload.get(side), dict)
              for column, value in payload[side].items()
              if value is not None and column not in _CASSANDRA_RANGE_FIELDS]
    if connector == _SCYLLA:  # key columns are bare: one {value} cell shows the legacy output
        return any(isinstance(value, dict) and frozenset(value) == _SCYLLA_CELL for value in values)
    lenient = connector in _CELL_CONNECTORS
    return bool(values) and all(_is_cell(value, lenient) for value in values)


def _scylla_key_columns(payload: dict[str, Any]) -> list[str]:
    """ScyllaDB legacy output wraps every non-key column in a cell and no key column: the bare
    non-null columns of the image (``after``, else ``before``) are the primary key, in order."""
    image = payload.get("after") if isinstance(payload.get("after"), dict) else payload.get("before")
    if not isinstance(image, dict):
        return []
    return [column for column, value in image.items()
            if value is not None and not (isinstance(value, dict) and frozenset(value) == _SCYLLA_CELL)]


def _cell_value(cell: Any) -> tuple[bool, Any]:
    """(carried, value) of one column cell. A null cell is a column the change did not carry:
    YugabyteDB "sends the value as null for columns that are missing in the payload" (replica
    identity CHANGE, before images of modified columns only) and YBExtractNewRecordState drops
    them; Cassandra's commit log records only the modified cells. ``set: false`` says the same.
    A carried cell's ``value`` may be null: the column was set to NULL (Cassandra: the cell was
    deleted, with ``deletion_ts``). A non-cell value is taken as it is."""
    if cell is None:
        return False, None
    if not isinstance(cell, dict) or "value" not in cell:
        return True, cell
    if cell.get("set") is False:
        return False, None
    return True, cell["value"]
