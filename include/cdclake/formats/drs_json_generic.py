"""Huawei Cloud DRS JSON for PostgreSQL, GaussDB, SQL Server and Oracle sources (seed 001, Table 4).

Decodes Canal-shaped rows plus ``columnType``, ``dbType``, ``schema`` and ``opType``; column types
come from ``columnType`` alone (DRS's ``sqlType`` codes are its own). What differs from the MySQL
flavour, per source database, is in the vendor notes.

Vendor notes: docs/formats/drs_json_generic.md
"""

from __future__ import annotations

import re
from typing import Any

from cdclake.formats import errors
from cdclake.formats._sequence import epoch_micros, epoch_micros_by_magnitude, sortable_sequence
from cdclake.formats.base import JsonDecoder, key_of
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.logical_types import logical_type_from_sql_name
from cdclake.formats.values import (
    ConversionWarning,
    base64_from_hex,
    boolean_text,
    date_text_exact,
    decimal_column_text,
    integer_text,
    iso_utc_from_micros,
    iso_utc_from_zoned_text,
    json_value_text,
    text_of,
    wall_clock_text,
    wall_clock_to_utc_micros,
)

_OPS = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "DDL": "DDL",
        "INIT": "SNAPSHOT", "INIT_DDL": "DDL"}
ROW_ID_COLUMNS = ("rowid", "ROWID")

# PostgreSQL/GaussDB names (as DRS writes them, without length) whose logical type the generic
# SQL-name mapping would get wrong for these sources.
_PG_TYPES = {
    "timestamp without time zone": "TIMESTAMP_NTZ",
    "timestamp": "TIMESTAMP_NTZ",  # PostgreSQL "timestamp" is without time zone
    "timestamp with time zone": "TIMESTAMP",
    "timestamptz": "TIMESTAMP",
    "bit": "STRING",           # a bit string ("1", "0101"): its width is not in columnType
    "bit varying": "STRING",
    "varbit": "STRING",
    "money": "STRING",         # locale-formatted text such as "$1,000.00"
    "json": "JSON",
    "jsonb": "JSON",
    "bytea": "BINARY",
    "blob": "BINARY",
    "raw": "BINARY",
    "interval": "STRING",
    "uuid": "STRING",
    "character": "STRING",
    "character varying": "STRING",
}


class DrsJsonGenericDecoder(JsonDecoder):
    format_id = "drs_json_generic"
    description = "Huawei DRS JSON for PostgreSQL/GaussDB/SQL Server/Oracle (columnType, opType)"
    detect_priority = 35

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        if "payload" in doc or "coll" in doc or str(doc.get("dbType", "")).lower() == "mongodb":
            return False
        # InLong's canal-json-inlong adds "opType" to Canal's "mysqlType"; DRS writes "columnType".
        has_generic_fields = "columnType" in doc or ("opType" in doc and "mysqlType" not in doc)
        return has_generic_fields and ("type" in doc or "opType" in doc) and (
            "data" in doc or "old" in doc or "isDdl" in doc)

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        op_text = doc.get("type") if doc.get("type") is not None else doc.get("opType")
        if op_text is None:
            raise self.fail(errors.MISSING_FIELD, "'type' (or 'opType') is missing")
        if not isinstance(op_text, str):
            raise self.fail(errors.INVALID_FIELD, "'type' must be a string")
        op = _OPS.get(op_text.strip().upper())
        if op is None:
            raise self.fail(errors.INVALID_OP, f"'type' must be one of {', '.join(_OPS)}, got {op_text!r}")
        if doc.get("isDdl") is True:
            op = "DDL"
        table = doc.get("table")
        common: dict[str, Any] = {
            "db_type": doc.get("dbType"),
            "database": doc.get("database"),
            "schema_name": doc.get("schema"),
            "table_name": table,
            "event_time": epoch_micros_by_magnitude(doc.get("es")),
            "produced_time": epoch_micros(doc.get("ts"), "ms"),
            "source_sequence": sortable_sequence(doc.get("id")),
        }
        if op == "DDL":
            return Decoded(rows=[self.row(message, op="DDL", ddl=doc.get("sql"), **common)])

        types = self._column_types(doc)
        data = self._rows(doc, "data")
        old = self._rows(doc, "old")
        pairs: list[tuple[dict[str, Any] | None, dict[str, Any] | None]]
        if op in ("INSERT", "SNAPSHOT"):
            pairs = [(None, row) for row in data]
            if not data:
                raise self.fail(errors.MISSING_FIELD, f"'data' is missing or empty on {op_text}")
        elif op == "UPDATE":
            if not data:
                raise self.fail(errors.MISSING_FIELD, "'data' is missing or empty on UPDATE")
            if old and len(old) != len(data):
                raise self.fail(errors.INVALID_FIELD,
                                f"'old' has {len(old)} rows but 'data' has {len(data)} on UPDATE")
            pairs = [(old[i] if old else None, row) for i, row in enumerate(data)]
        else:  # DELETE: the row is in 'old' (JSON) or 'data' (JSON-C)
            deleted = old or data
            if not deleted:
                raise self.fail(errors.MISSING_FIELD, "'old' (or 'data') is missing or empty on DELETE")
            pairs = [(row, None) for row in deleted]

        keys = self._key_columns(doc, pairs)
        rows = []
        for index, (raw_before, raw_after) in enumerate(pairs):
            warnings: list[str] = []
            before = self._image(raw_before, types, warnings)
            after = self._image(raw_after, types, warnings)
            row_key = key_of(before if op == "DELETE" else after, keys)
            if keys and row_key is None:
                image_name = "old" if op == "DELETE" else "data"
                raise self.fail(errors.MISSING_KEY,
                                f"'{image_name}[{index}]' lacks key column(s) {list(keys)} on {op_text}")
            present = {c for image in (before, after) if image for c in image}
            rows.append(self.row(
                message, index, op=op, primary_key_columns=list(keys), row_key=row_key,
                before=before, after=after, after_is_full=after is not None,
                column_types={c: t for c, t in types.items() if c in present},
                warnings=warnings, **common,
            ))
        return Decoded(rows=rows)

    # -- parts ---------------------------------------------------------------------------
    def _rows(self, doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
        rows = doc.get(name)
        if rows is None:
            return []
        if isinstance(rows, dict):  # a single row not wrapped in an array
            rows = [rows]
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise self.fail(errors.INVALID_FIELD, f"'{name}' must be an array of objects")
        return rows

    def _column_types(self, doc: dict[str, Any]) -> dict[str, str]:
        column_type = doc.get("columnType")
        if not column_type:  # null, "" or {}: Oracle and SQL Server send no types
            return {}
        if not isinstance(column_type, dict):
            raise self.fail(errors.INVALID_FIELD, "'columnType' must be an object of column -> type name")
        engine = _engine_of(doc.get("dbType"))
        return {str(c): logical_type_of(str(t), engine) for c, t in column_type.items()
                if t is not None}

    def _key_columns(self, doc: dict[str, Any], pairs: list[tuple[Any, Any]]) -> tuple[str, ...]:
        override = (self.key_override(doc.get("database"), doc.get("table"))
                    or self.key_override(doc.get("schema"), doc.get("table")))
        if override:
            return override
        names = doc.get("pkNames")
        if isinstance(names, str):
            names = [names]
        if names:
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise self.fail(errors.INVALID_FIELD, "'pkNames' must be an array of column names")
            return tuple(names)
        first: dict[str, Any] = next((image for pair in pairs for image in pair if image), {})
        for row_id in ROW_ID_COLUMNS:
            if row_id in first:
                return (row_id,)
        return ()

    def _image(self, raw: dict[str, Any] | None, types: dict[str, str],
               warnings: list[str]) -> dict[str, str | None] | None:
        if raw is None:
            return None
        image: dict[str, str | None] = {}
        for column, value in raw.items():
            logical = types.get(column)
            converter = self._converter(logical)
            text = value if isinstance(value, str) or value is None else text_of(value)
            image[column] = self.convert(text, converter, warnings, column)
        return image

    def _converter(self, logical: str | None) -> Any:
        if logical is None or logical in ("STRING", "TIME", "DOUBLE"):
            return _same
        if logical == "LONG":
            return integer_text
        if logical.startswith("DECIMAL"):
            return decimal_column_text
        if logical == "BOOLEAN":
            return boolean_text
        if logical == "DATE":
            return date_text_exact
        if logical == "TIMESTAMP_NTZ":
            return wall_clock_text
        if logical == "TIMESTAMP":
            zone = self.options.source_timezone
            return lambda text: instant_text(text, zone)
        if logical == "BINARY":
            return base64_from_hex
        if logical == "JSON":
            return json_value_text
        return _same


def _engine_of(db_type: Any) -> str | None:
    """``oracle`` or ``sqlserver`` when ``dbType`` names one of them (their type names differ in
    meaning from PostgreSQL's), else None."""
    name = re.sub(r"[^a-z]", "", str(db_type or "").lower())
    if name.startswith("oracle"):
        return "oracle"
    if "sqlserver" in name:
        return "sqlserver"
    return None


def logical_type_of(type_name: str, engine: str | None = None) -> str:
    """Logical type of a DRS ``columnType`` name (PostgreSQL/GaussDB spelling, no length).

    ``engine`` (from ``dbType``): Oracle's DATE holds a time of day (a wall clock); SQL Server's
    ``timestamp``/``rowversion`` is a binary row-version counter, not a time."""
    name = re.sub(r"\s+", " ", type_name.strip().lower())
    if engine == "oracle" and name == "date":
        return "TIMESTAMP_NTZ"
    if engine == "sqlserver" and name in ("timestamp", "rowversion"):
        return "STRING"
    if name.startswith("_") or name.endswith("[]") or name == "array":
        return "STRING"  # PostgreSQL arrays: kept as their text
    if name.endswith(("range", "multirange")):
        return "STRING"
    if name in _PG_TYPES:
        return _PG_TYPES[name]
    return logical_type_from_sql_name(name)


def instant_text(text: str, zone: str) -> str:
    """``2010-01-01 14:30:00+08`` (PostgreSQL timestamptz) -> ISO UTC; zone-less text is read in
    the configured source time zone."""
    body = text.strip()
    match = re.fullmatch(r"(.*\d)\s*([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?", body)
    if match and re.match(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}", body):
        if match[5] and match[5] != "00":
            raise ConversionWarning(f"offset with seconds in {text!r}")
        return iso_utc_from_zoned_text(f"{match[1]}{match[2]}{match[3]}:{match[4] or '00'}")
    if body.endswith("Z"):
        return iso_utc_from_zoned_text(body)
    try:
        return iso_utc_from_micros(wall_clock_to_utc_micros(body, zone))
    except (ValueError, KeyError) as exc:
        raise ConversionWarning(f"not a timestamp: {text!r}") from exc


def _same(text: str) -> str:
    return text


DECODER = DrsJsonGenericDecoder
