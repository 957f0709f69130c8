"""OceanBase OMS "Dataworks" serialisation, DataWorks 2.0 (seed 003).

Decodes ``version`` 2.0 ``schema``/``payload`` messages (and heartbeats), converting OMS's typed JSON
values by column type. The value formats, and how the manual's mismatched examples are handled, are
in the vendor notes.

Vendor notes: docs/formats/oms_dataworks.md
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cdclake.formats import _dataworks as dw
from cdclake.formats import errors
from cdclake.formats._oms import bit_text, bit_width
from cdclake.formats._sequence import sortable_sequence
from cdclake.formats.base import JsonDecoder
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.exact_json import JsonNumber
from cdclake.formats.logical_types import logical_type_from_sql_name
from cdclake.formats.values import (
    ConversionWarning,
    boolean_text,
    date_text,
    decimal_column_text,
    integer_text,
    iso_seconds_text,
    iso_utc_from_epoch_text,
    text_of,
    wall_clock_text,
)

DML_OPS = ("INSERT", "UPDATE", "DELETE")
KNOWN_OPS = (*DML_OPS, "TRUNCATE", *sorted(dw.DDL_OPS), *dw.CONTROL_OPS)

_INTEGER_TYPES = {"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "INT8", "INT16", "INT32",
                  "INT64", "LONG", "YEAR"}
_DOUBLE_TYPES = {"FLOAT", "DOUBLE", "REAL", "BINARY_FLOAT", "BINARY_DOUBLE", "FLOAT32", "FLOAT64"}
_BINARY_TYPES = {"BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BINARY", "VARBINARY", "BYTES",
                 "RAW", "LONG RAW", "BFILE", "BIT"}
_STRING_TYPES = {"VARCHAR", "CHAR", "VARCHAR2", "NVARCHAR2", "NCHAR", "TEXT", "TINYTEXT",
                 "MEDIUMTEXT", "LONGTEXT", "CLOB", "NCLOB", "ENUM", "SET", "STRING", "ROWID",
                 "UROWID", "INTERVAL_DAY_TO_SECOND", "INTERVAL_YEAR_TO_MONTH", "JSON"}
_DATETIME = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d+))?"
    r"(?:\s*(?P<zone>Z|[+-]\d{2}:?\d{2}|[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*))?"
)


class OmsDataWorksDecoder(JsonDecoder):
    format_id = "oms_dataworks"
    description = "OceanBase OMS DataWorks 2.0 serialisation (schema.column, payload.*.data)"
    detect_priority = 11

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        payload, schema = doc.get("payload"), doc.get("schema")
        if not isinstance(payload, dict) or "op" not in payload:
            return False
        if str(doc.get("version")) == "2.0":
            return True
        return isinstance(schema, dict) and "column" in schema and "source" in schema

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        payload = self.require(doc, "payload", dict)
        op = self.require(payload, "op", str, where="payload")
        control = dw.control_kind(op)
        if control is not None:
            return Decoded(control=control)
        dw.check_op(self, op, KNOWN_OPS)
        schema = self.require(doc, "schema", dict)
        source = self.require(schema, "source", dict, where="schema")
        table = self.require(source, "table", str, where="schema.source")
        scn = payload.get("scn")
        common: dict[str, Any] = dict(
            db_type=source.get("dbType"), database=source.get("dbName"),
            schema_name=source.get("schema"), table_name=table,
            source_sequence=sortable_sequence(scn),
            **dw.times(self, payload),
        )
        if op in dw.DDL_OPS or op == "TRUNCATE":
            row = self.row(message, op="TRUNCATE" if op == "TRUNCATE" else "DDL",
                           ddl=dw.ddl_text(payload), **common)
            return Decoded(rows=[row])

        declared = dw.declared_types(self, schema, "column")
        raw_before = dw.image_data(self, payload, "before", "data")
        raw_after = dw.image_data(self, payload, "after", "data")
        if op in ("INSERT", "UPDATE") and raw_after is None:
            raise self.fail(errors.MISSING_FIELD, f"'payload.after.data' is missing or null on {op}")
        if op == "DELETE" and raw_before is None:
            raise self.fail(errors.MISSING_FIELD, "'payload.before.data' is missing or null on DELETE")

        warnings: list[str] = []
        types: dict[str, str] = {}
        zone = self.options.source_timezone
        images = [raw for raw in (raw_before if op != "INSERT" else None,
                                  raw_after if op != "DELETE" else None) if raw]
        undeclared = [c for c in dict.fromkeys(c for raw in images for c in raw) if c not in declared]
        if declared and undeclared:
            # Metadata drift (the OMS manual's own examples): the image decides; its columns that
            # the list does not name keep their text.
            warnings.append(errors.warning(
                errors.TYPE_MAP_MISMATCH,
                f"'schema.column' does not name {undeclared[:8]} of the row image; their values "
                "are kept as text"))

        def rule(column: str, value: Any) -> tuple[dw.Converter, str | None]:
            return value_rule(declared.get(column), value, zone)

        before = dw.convert_image(self, raw_before if op != "INSERT" else None, rule, types, warnings)
        after = dw.convert_image(self, raw_after if op != "DELETE" else None, rule, types, warnings)
        keys = dw.key_columns(self, schema.get("pk"), "schema.pk", source.get("dbName"), table,
                              [raw_after, raw_before])
        if keys and images and declared and not self.key_override(source.get("dbName"), table) \
                and not any(k in raw or k in declared for k in keys for raw in images):
            # The key names columns neither the image nor the column list has: the metadata
            # drifted, and the row is its whole image. (A key column the list names but the image
            # lacks is a row that cannot be identified: MISSING_KEY.)
            warnings.append(errors.warning(
                errors.KEY_NAMES_UNKNOWN_COLUMN,
                f"'schema.pk' names {list(keys)[:8]}, no column of the row image; the change is "
                "applied as one of a table without a key (the row is its whole image)"))
            keys = ()
        row = dw.change_row(self, message, op=op, keys=keys, before=before, after=after,
                            types=types, warnings=warnings, **common)
        return Decoded(rows=[row])


def value_rule(type_name: str | None, value: Any, zone: str) -> tuple[dw.Converter, str | None]:
    """(converter, logical type) for a value of the declared OMS/source type."""
    if not type_name:
        return _as_text, None
    full = type_name.strip().upper()
    base = re.sub(r"\s*\(.*$", "", full).replace(" UNSIGNED", "").strip()
    if base == "BIGINT":  # OMS's BIGINT is an arbitrary-size integer (beyond int64 in the seed)
        return integer_text, "DECIMAL(20,0)"
    if base in _INTEGER_TYPES:
        return integer_text, "LONG" if value is None else dw.integer_logical_type(value)
    if base in ("DECIMAL", "NUMERIC", "NUMBER", "DEC"):
        return decimal_column_text, logical_type_from_sql_name(type_name)
    if base in _DOUBLE_TYPES:
        return _as_text, "DOUBLE"
    if base in ("BOOLEAN", "BOOL"):
        return boolean_text, "BOOLEAN"
    width = bit_width(full) if base == "BIT" else None
    if width is not None:  # OMS drops a BIT's high-order zero bytes in incremental records
        return (lambda v: bit_text(dw.strict_base64(v), width)), "BINARY"
    if base in _BINARY_TYPES:
        return dw.strict_base64, "BINARY"
    if base == "DATE":
        return date_text, "DATE"
    if base == "TIME":
        return _as_text, "TIME"
    if base in ("DATETIME", "TIMESTAMP", "ZONED_DATETIME") or base.startswith("TIMESTAMP"):
        return _time_rule(base, value, zone)
    if base in _STRING_TYPES or base.startswith(("INTERVAL", "VARCHAR", "CHAR")):
        return _as_text, "STRING"
    logical = logical_type_from_sql_name(type_name)
    return _as_text, logical


def _time_rule(base: str, value: Any, zone: str) -> tuple[dw.Converter, str | None]:
    """Date-time values: which form the value has decides instant vs wall clock."""
    if value is None:
        return _as_text, None  # a NULL says nothing about which form the column uses
    if isinstance(value, JsonNumber) or (isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value)):
        # Seconds or milliseconds by size (seed: TIMESTAMP "1606233662.012345" s, 2.0 template ms).
        digits = str(value).strip().lstrip("-").split(".")[0]
        unit = "ms" if len(digits) >= 12 else "s"
        return (lambda v: epoch_instant_text(v, unit)), "TIMESTAMP"
    match = _DATETIME.fullmatch(str(value).strip()) if isinstance(value, str) else None
    if match and (match["zone"] or base == "ZONED_DATETIME"):
        return (lambda v: zoned_instant_text(v, zone)), "TIMESTAMP"
    if base == "ZONED_DATETIME":
        return (lambda v: zoned_instant_text(v, zone)), "TIMESTAMP"
    if base == "TIMESTAMP":
        # An instant type written as zone-less text: read in the source time zone. OMS writes an
        # invalid timestamp as 0000-00-00 00:00:00, which stays as text with a warning.
        return (lambda v: zoned_instant_text(v, zone)), "TIMESTAMP"
    return wall_clock_text, "TIMESTAMP_NTZ"


def epoch_instant_text(value: Any, unit: str) -> str:
    """Epoch text -> ISO UTC. A millisecond value with a 9-digit fraction is ms + nanos-of-second."""
    text = str(value).strip()
    whole, _, fraction = text.partition(".")
    if unit == "ms" and len(fraction) == 9 and whole.lstrip("-").isdigit():
        seconds = int(whole) // 1000
        return iso_utc_from_epoch_text(f"{seconds}.{fraction}", "s")
    return iso_utc_from_epoch_text(text, unit)


def zoned_instant_text(value: Any, default_zone: str) -> str:
    """``2020-11-25 00:01:02.012345 Asia/Shanghai`` (or ``+08:00``) -> ISO UTC, fraction kept."""
    text = str(value).strip()
    match = _DATETIME.fullmatch(text)
    if not match:
        raise ConversionWarning(f"not a date-time: {text!r}")
    zone_text = match["zone"] or default_zone
    try:
        if zone_text == "Z":
            tz: Any = UTC
        elif zone_text[0] in "+-":
            digits = zone_text[1:].replace(":", "")
            minutes = int(digits[:2]) * 60 + int(digits[2:])
            tz = timezone((1 if zone_text[0] == "+" else -1) * timedelta(minutes=minutes))
        else:
            tz = ZoneInfo(zone_text)
        local = datetime.strptime(f"{match['date']} {match['time']}", "%Y-%m-%d %H:%M:%S")
    except (ValueError, ZoneInfoNotFoundError) as exc:
        raise ConversionWarning(f"not a valid zoned date-time: {text!r}") from exc
    try:
        utc = local.replace(tzinfo=tz).astimezone(UTC)
    except OverflowError as exc:
        raise ConversionWarning(f"outside years 1-9999 in UTC: {text!r}") from exc
    out = iso_seconds_text(utc)
    fraction = (match["frac"] or "").rstrip("0")
    return out + (f".{fraction}" if fraction else "") + "Z"


def _as_text(value: Any) -> str:
    return text_of(value) or ""


DECODER = OmsDataWorksDecoder
