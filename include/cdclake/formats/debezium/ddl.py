"""Schema-change events: the DDL text or ``tableChanges`` (SQL Server, Db2), and Flink CDC's
``historyRecord``, as DDL rows with the columns' SQL types."""

from __future__ import annotations

from typing import Any

from cdclake.formats import errors
from cdclake.formats.canonical import RawMessage
from cdclake.formats.debezium.base import DebeziumDecoderBase
from cdclake.formats.debezium.source import _database, _id_parts, _table_changes, _text
from cdclake.formats.errors import FieldError
from cdclake.formats.exact_json import loads_exact
from cdclake.formats.kafka_connect import is_integer_text, value_words
from cdclake.formats.logical_types import JAVA_SQL_TYPES, logical_type_from_sql_name


def _ddl_column_types(columns: Any, path: str) -> dict[str, str]:
    """Column -> logical type of a ``tableChanges`` table's ``columns`` (at ``path``)."""
    types: dict[str, str] = {}
    for index, column in enumerate(columns if isinstance(columns, list) else []):
        if not isinstance(column, dict) or not column.get("name"):
            continue
        for name in ("length", "scale"):
            value = column.get(name)
            if value is not None and not is_integer_text(value):
                raise FieldError(f"'{path}[{index}].{name}' must be an integer, got "
                                 f"{value_words(value)}")
        type_name = column.get("typeExpression") or column.get("typeName")
        logical = logical_type_from_sql_name(str(type_name)) if type_name else None
        if logical in (None, "STRING"):
            # No name, or one not known as a type (SQL Server / Db2 "int identity"): the JDBC
            # type code says what the column holds.
            jdbc_type: Any = column.get("jdbcType")  # int() of None raises TypeError: no type code
            try:
                logical = JAVA_SQL_TYPES.get(int(jdbc_type), "STRING")
            except (TypeError, ValueError):
                if logical is None:
                    continue
        if logical == "DECIMAL" and column.get("length") is not None:
            logical = _decimal_type(column)
        types[str(column["name"])] = _as_change_events_carry(logical, column)
    return types


def _decimal_type(column: dict[str, Any]) -> str:
    """DECIMAL(p,s) of a column's length and scale; a negative scale (Oracle NUMBER(20,-2)) holds
    integers of p - s digits, as the change events' Decimal(scale -2) values are read."""
    precision, scale = int(column["length"]), int(column.get("scale") or 0)
    return f"DECIMAL({precision - scale},0)" if scale < 0 else f"DECIMAL({precision},{scale})"


def _as_change_events_carry(logical: str, column: dict[str, Any]) -> str:
    """The type the connector's change events give the column, where its SQL name says otherwise
    (the DDL row's types and the data rows' must agree, or compaction cannot type the column):
    Oracle's DATE holds a time of day (JDBC type 93, sent as io.debezium.time.Timestamp), Oracle's
    NUMBER(p, s <= 0) of fewer than 19 digits is an integer, and MySQL's BIT(n > 1) is sent as
    io.debezium.data.Bits bytes."""
    if logical == "DATE" and str(column.get("jdbcType")) == "93":
        return "TIMESTAMP_NTZ"
    if logical.startswith("DECIMAL(") and logical.endswith(",0)") and _is_oracle_number(column):
        # Oracle NUMBER(p, s <= 0) with p - s < 19 digits travels as int8/16/32/64.
        if int(logical[len("DECIMAL("):-len(",0)")]) < 19:
            return "LONG"
    if logical == "BOOLEAN" and str(column.get("length")).isdigit() and int(str(column["length"])) > 1:
        return "BINARY"
    return logical


def _is_oracle_number(column: dict[str, Any]) -> bool:
    return str(column.get("typeName") or "").upper() == "NUMBER" and column.get("length") is not None


def _is_schema_change(payload: dict[str, Any]) -> bool:
    """A schema-change topic event: the DDL text, or (SQL Server, Db2) ``"ddl": null`` with the
    change described in ``tableChanges`` only."""
    ddl = payload.get("ddl")
    if isinstance(ddl, str):
        return "databaseName" in payload or "tableChanges" in payload
    return ddl is None and "ddl" in payload and bool(_table_changes(payload.get("tableChanges")))


def _is_history_record(payload: dict[str, Any]) -> bool:
    """Flink CDC's MySQL schema change: ``source`` plus the history record as JSON text."""
    return isinstance(payload.get("historyRecord"), str) and isinstance(payload.get("source"), dict)


class SchemaChangeRows(DebeziumDecoderBase):
    """Rows of schema-change events."""

    def _history_change(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Flink CDC's MySQL source sends a schema change as the outer ``source`` plus
        ``historyRecord``: Debezium's schema-history record (``databaseName``, ``ddl``,
        ``tableChanges``) as JSON text. Read as the schema-change event it stands for."""
        try:
            record = loads_exact(payload["historyRecord"])
        except ValueError as exc:
            raise self.fail(errors.INVALID_FIELD, f"'historyRecord' is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise self.fail(errors.INVALID_FIELD, "'historyRecord' must be a JSON object (Debezium's "
                                                  "schema-history record)")
        change = {name: record[name] for name in ("databaseName", "schemaName", "ddl", "tableChanges")
                  if name in record}
        return {"source": payload["source"], **change}

    def _ddl_rows(self, payload: dict[str, Any], message: RawMessage) -> list[dict[str, Any]]:
        source = self._source(payload)
        ddl = payload.get("ddl")
        if not isinstance(ddl, str) and not (ddl is None and _table_changes(payload.get("tableChanges"))):
            # SQL Server and Db2 send "ddl": null (their DDL is not available to the connector):
            # the change is then only in tableChanges.
            raise self.fail(errors.MISSING_FIELD, "'ddl' must be the statement text on a schema change "
                                                  "(or null with 'tableChanges')")
        database = _text(payload.get("databaseName")) or _database(source)
        schema_name = _text(payload.get("schemaName")) or _text(source.get("schema"))
        changes = _table_changes(payload.get("tableChanges")) or [{}]
        rows = []
        for index, change in enumerate(changes):
            table = _text(source.get("table"))
            change_schema = schema_name
            parts = _id_parts(change.get("id"))
            if parts:
                table = parts[-1]
                if len(parts) == 3:
                    change_schema = parts[1]
            raw_spec = change.get("table")
            spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
            names = spec.get("primaryKeyColumnNames")
            if names is not None and not isinstance(names, list):
                raise self.invalid(f"tableChanges[{index}].table.primaryKeyColumnNames", "an array",
                                   names)
            keys = [str(n) for n in names or []]
            override = self.key_override(database, table)
            rows.append(self.row(
                message, index, op="DDL", database=database, schema_name=change_schema or None,
                table_name=table, primary_key_columns=list(override) if override is not None else keys,
                column_types=_ddl_column_types(spec.get("columns"), f"tableChanges[{index}].table.columns"),
                ddl=ddl,
                **self._metadata(payload, source),
            ))
        return rows
