"""Shared decoding for the Canal family: Canal, OMS Canal, DRS JSON / JSON-C and CloudCanal.

One decoder for messages that name one table, an operation, per-column type maps and ``data``/``old``
row arrays; each format module states only what is its own, and the detection helpers at the end let
each format state its ``auto`` signature. How the members differ (deleted row, ``old``, binary,
image order, TIMESTAMP) is in the vendor notes.

Vendor notes: docs/formats/_canal_family.md
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import InvalidOperation
from functools import lru_cache
from typing import Any, ClassVar

from cdclake.formats import errors
from cdclake.formats.base import FormatOptions, JsonDecoder, key_of, key_of_any_case
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.exact_json import JsonNumber
from cdclake.formats.logical_types import JAVA_SQL_TYPES, logical_type_from_sql_name
from cdclake.formats.values import (
    ConversionWarning,
    base64_from_byte_list,
    base64_from_hex,
    base64_normalised,
    base64_of_bytes,
    boolean_text,
    date_text_exact,
    decimal_column_text,
    decimal_text,
    dumps_compact,
    integer_digits,
    integer_text,
    iso_utc_from_epoch_text,
    iso_utc_from_micros,
    iso_utc_from_zoned_text,
    json_value_text,
    micros_from_epoch,
    text_of,
    wall_clock_text,
    wall_clock_to_utc_micros,
)

# ---------------------------------------------------------------- operations

DML_OPS = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "INIT": "SNAPSHOT"}
# Canal EventType names that are DDL, plus DRS's DDL/INIT_DDL and names CloudCanal uses.
DDL_TYPES = frozenset({"DDL", "INIT_DDL", "CREATE", "ALTER", "ERASE", "DROP", "QUERY", "RENAME",
                       "CINDEX", "DINDEX"})
TIDB_WATERMARK = "TIDB_WATERMARK"
# Canal EventType / vendor names that carry no row change.
CONTROL_TYPES = {
    "GTID": "GTID",
    "XACOMMIT": "TRANSACTION_END",
    "XAROLLBACK": "TRANSACTION_END",
    "MHEARTBEAT": "HEARTBEAT",
    "HEARTBEAT": "HEARTBEAT",
    TIDB_WATERMARK: "HEARTBEAT",  # TiCDC canal-json with enable-tidb-extension
    "BEGIN": "TRANSACTION_BEGIN",
    "COMMIT": "TRANSACTION_END",
}

BINARY_LATIN1 = "latin1"
BINARY_BYTE_LIST = "byte_list"
BINARY_BASE64 = "base64"
BINARY_HEX = "hex"  # Tencent Cloud DTS Canal JSON, "not fully compatible" mode (HexString)
BINARY_ENCODINGS = (BINARY_LATIN1, BINARY_BYTE_LIST, BINARY_BASE64, BINARY_HEX)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_KEYLESS_UPDATE_WITHOUT_OLD = (
    "UPDATE names no key columns and has no 'old' row: the row it changed is unknown; Canal sends "
    "this when MySQL runs binlog_row_image=MINIMAL or canal.instance.filter.field leaves the key "
    "out, and 'data' then holds only some columns (configure primary_keys; keep the key columns)")
# An epoch number of at most 11 digits (below 10^11): seconds, were it milliseconds it would be
# before March 1973.
_SECONDS_RANGE = re.compile(r"[1-9]\d{0,10}(?:\.\d+)?")
_UTC_NAMES = frozenset({"UTC", "Z", "Etc/UTC"})  # the names ``values.zone`` reads as UTC
_EPOCH_SECONDS = re.compile(r"^\s*\d{1,12}(\.\d+)?\s*$")
_BYTE_LIST = re.compile(r"^\s*\[\s*(-?\d{1,3}\s*(,\s*-?\d{1,3}\s*)*)?\]\s*$")
_WALL_CLOCK = re.compile(r"^\s*\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?(\.\d+)?\s*$")
_TIME = re.compile(r"^\s*(-?\d{1,3}:\d{2}(?::\d{2})?)(?:\.(\d+))?\s*$")
_ZONED = re.compile(r"[T ]\d{2}:\d{2}(:\d{2})?(\.\d+)?\s*(Z|[+-]\d{2}:?\d{2})$")
# Type names that are text: anything else that the SQL-name mapping calls STRING is a name it
# does not know (OMS writes "int64"), and then java.sql.Types in sqlType decides.
_TEXT_TYPE_NAMES = frozenset({
    "char", "varchar", "character", "character varying", "nchar", "nvarchar", "national char",
    "national varchar", "text", "tinytext", "mediumtext", "longtext", "string", "enum", "set",
    "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
    "multipolygon", "geometrycollection", "uuid", "clob", "nclob", "varchar2", "nvarchar2",
})


# ---------------------------------------------------------------- types and values

def column_logical_type(type_name: Any, sql_type: Any) -> str | None:
    """Logical type of a column (cached: a topic has few distinct type declarations)."""
    try:
        return _column_logical_type(type_name, None if sql_type is None else str(sql_type))
    except TypeError:  # unhashable vendor value (e.g. a list): compute uncached
        return _column_logical_type.__wrapped__(type_name, sql_type)


@lru_cache(maxsize=4096)
def _column_logical_type(type_name: Any, sql_type: Any) -> str | None:
    """Logical type of a column from its vendor type name and/or java.sql.Types code.

    The type name wins (it tells ``timestamp`` from ``datetime``, precision and signedness);
    ``sqlType`` decides when the name is missing or unknown. ``bit(n)`` with n > 1 is a number
    in Canal's text, not bytes; so is TiCDC's bare ``bit`` (it drops the length and writes any
    BIT value as its unsigned integer, e.g. ``"65"`` for ``b'1000001'``). Only ``bit(1)`` is a
    boolean.
    """
    name = type_name.strip() if isinstance(type_name, str) and type_name.strip() else None
    code = _int_or_none(sql_type)
    if name is not None:
        base = re.split(r"[\s(]", name.lower(), maxsplit=1)[0]
        if base == "bit":
            digits = re.search(r"\((\d{1,9})\)", name)
            if digits is None or int(digits[1]) > 1:
                return "LONG"
        logical = logical_type_from_sql_name(name)
        if logical != "STRING" or _is_text_type_name(name):
            return logical
    if code is not None and code in JAVA_SQL_TYPES:
        return JAVA_SQL_TYPES[code]
    return "STRING" if name is not None else None


def _is_text_type_name(name: str) -> bool:
    lowered = re.sub(r"\(.*$", "", name.strip().lower()).strip()
    lowered = re.sub(r"\s+(character set|charset|collate)\b.*$", "", lowered)
    return lowered in _TEXT_TYPE_NAMES


# A statement that changes a schema, after any leading comments. Canal types CREATE TABLE as CREATE
# in every version, so a QUERY entry whose text is CREATE TABLE (... SELECT) is a rows-query event.
_SCHEMA_STATEMENT = re.compile(
    r"(?:\s|/\*.*?\*/|(?:--|#)[^\n]*(?:\n|$))*(create|alter|drop|rename|truncate)\b(.*)",
    re.IGNORECASE | re.DOTALL)
_CREATE_TABLE = re.compile(r"\s+(?:temporary\s+)?table\b", re.IGNORECASE)


def is_schema_statement(sql: str | None) -> bool:
    """Whether a Canal QUERY entry's text is DDL (CREATE, ALTER, DROP, RENAME, TRUNCATE)."""
    match = _SCHEMA_STATEMENT.match(sql) if sql else None
    if match is None:
        return False
    return not (match[1].lower() == "create" and _CREATE_TABLE.match(match[2]))


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def double_text(value: Any) -> str:
    """Exact plain-decimal text of a floating value (``1.2510357E7`` -> ``12510357``).

    NaN and infinities have no decimal form and are kept as the vendor spelled them.
    """
    text = str(value).strip()
    if text.lower().lstrip("+-") in ("nan", "infinity", "inf"):
        return text
    return decimal_text(text)


def time_text(value: Any) -> str:
    """MySQL TIME text (may exceed 24 h or be negative), fraction kept without trailing zeros."""
    match = _TIME.match(str(value))
    if not match:
        raise ConversionWarning(f"not a time: {value!r}")
    whole = match[1] if match[1].count(":") == 2 else match[1] + ":00"
    frac = (match[2] or "").rstrip("0")
    return f"{whole}.{frac}" if frac else whole


def instant_text(value: Any, zone: str) -> str:
    """A MySQL TIMESTAMP as ISO UTC: epoch seconds ``"1624614713.201"``, zoned ISO text, or
    zone-less ``"2021-06-25 17:51:53"`` read in ``zone`` (the source's time zone)."""
    text = str(value).strip()
    if _EPOCH_SECONDS.match(text):
        return iso_utc_from_epoch_text(text, "s")
    if _ZONED.search(text):
        return iso_utc_from_zoned_text(text)
    canonical = wall_clock_text(text)
    if zone in _UTC_NAMES and canonical[0] != "0":
        # Read in UTC, a wall clock is its own UTC text (years 1000+, which strftime pads the
        # same way): what the general path below gives, without the round trip.
        return canonical + "Z"
    whole, _, fraction = canonical.partition(".")
    try:
        micros = wall_clock_to_utc_micros(whole, zone)
    except (ValueError, KeyError) as exc:  # unknown zone name or invalid local time
        raise ConversionWarning(f"cannot place {text!r} in zone {zone!r}: {exc}") from exc
    iso = iso_utc_from_micros(micros)
    return iso[:-1] + "." + fraction + "Z" if fraction else iso


def binary_text(value: Any, encoding: str) -> str:
    """Binary column text -> base64, by the vendor's encoding."""
    if isinstance(value, list):  # a JSON array of byte numbers
        value = "[" + ",".join(str(v) for v in value) + "]"
    text = str(value)
    if encoding == BINARY_BYTE_LIST:
        return base64_from_byte_list(text)
    if encoding == BINARY_BASE64:
        return base64_normalised(text)
    if encoding == BINARY_HEX:
        return base64_from_hex(text)
    try:
        return base64_of_bytes(text.encode("latin-1"))
    except UnicodeEncodeError as exc:
        raise ConversionWarning("binary text has characters beyond ISO-8859-1") from exc


def json_text(value: Any) -> str:
    if isinstance(value, dict | list):
        return dumps_compact(value)
    return json_value_text(str(value))


@lru_cache(maxsize=1024)
def _converter(logical: str | None, binary_encoding: str, zone: str) -> Any:
    if logical is None or logical == "STRING":
        return text_of
    if logical == "LONG":
        return integer_text
    if logical.startswith("DECIMAL"):
        return decimal_column_text
    table = {
        "DOUBLE": double_text,
        "BOOLEAN": boolean_text,
        # Never shortened: a value beyond a date (an Oracle DATE sent under a "date" type name,
        # which DRS's MySQL-shaped JSON once carried for Oracle sources) is kept whole, warned.
        "DATE": date_text_exact,
        "TIME": time_text,
        "TIMESTAMP_NTZ": wall_clock_text,
        "JSON": json_text,
    }
    if logical in table:
        return table[logical]
    if logical == "TIMESTAMP":
        return lambda v: instant_text(v, zone)
    if logical == "BINARY":
        return lambda v: binary_text(v, binary_encoding)
    return text_of


@lru_cache(maxsize=1024)
def _guarded(converter: Any) -> Any:
    """A converter whose every parse failure is a :class:`ConversionWarning` (original kept)."""
    def run(value: Any) -> str:
        try:
            return converter(value)
        except ConversionWarning:
            raise
        except (ValueError, ArithmeticError, InvalidOperation, OverflowError) as exc:
            raise ConversionWarning(f"cannot convert {str(value)[:40]!r}: {exc}") from exc
    return run


# ---------------------------------------------------------------- the message, normalised

@dataclass
class CanalFields:
    """One message's Canal-shaped fields, whatever the vendor calls them."""

    kind: str                       # the operation as the vendor wrote it
    kind_field: str                 # its field name, for error messages
    data: list[Any] | None
    old: list[Any] | None
    old_field: str                  # "old" (Canal) or "before" (CloudCanal)
    type_names: dict[str, Any]
    sql_types: dict[str, Any]
    pk_names: list[str] | None
    table_change_pks: list[str] | None
    database: str | None
    schema_name: str | None
    table: str | None
    event_ms: Any
    event_field: str
    produced_ms: Any
    produced_field: str
    sequence: Any
    position: str | None
    is_ddl: bool | None
    sql: str | None
    # Why the row images hold only the key columns (TiCDC large-message handling), else None.
    key_only: str | None = None


class CanalFamilyDecoder(JsonDecoder):
    """Decodes :class:`CanalFields` into change rows; subclasses say how to read their fields."""

    binary_encoding: ClassVar[str] = BINARY_LATIN1
    # The field that is a trustworthy ordering sequence, or None. Only DRS's ``id`` is one (its
    # manual: "monotonically increasing"). Canal's ``id`` is a batch id: shared by every message
    # of a batch, restarting from 1 when the Canal server restarts, always 0 in TiCDC and OMS;
    # ordering by it would rank post-restart changes as older and drop them.
    sequence_field: ClassVar[str | None] = None
    # Values rendered by Canal's binlog parser (canal_json; TiCDC follows it): ENUM as its 1-based
    # index (sqlType 4) and SET as its bitmask (sqlType -7), GEOMETRY as WKB bytes in ISO-8859-1
    # (sqlType 2004, BLOB), and ``old`` without the leading UPDATE rows that changed no column.
    canal_renderings: ClassVar[bool] = False

    def __init__(self, options: FormatOptions | None = None) -> None:
        super().__init__(options)
        self._sequence_field = self.sequence_field
        # The topic's binary encoding when configured (it cannot be read from the message: a
        # HexString is also valid ISO-8859-1 text), else the format's own.
        configured = self.options.binary_encoding
        if configured is not None and configured not in BINARY_ENCODINGS:
            raise ValueError(f"binary_encoding {configured!r} is not one of {BINARY_ENCODINGS}")
        self._binary_encoding = configured or self.binary_encoding

    @classmethod
    def detected(cls, options: FormatOptions) -> CanalFamilyDecoder:
        """Under ``auto`` no ``id`` is a sequence: a plain DRS INSERT or UPDATE looks exactly like
        Canal's, whose ``id`` is a batch id that restarts with the Canal server. Configure
        ``drs_json``/``drs_json_c`` to order by ``id``."""
        decoder = cls(options)
        decoder._sequence_field = None
        return decoder

    # -- per-format ----------------------------------------------------------------------
    def fields(self, doc: dict[str, Any]) -> CanalFields:
        """Canal's own field names (DRS and OMS use them too)."""
        if doc.get("type") is None and doc.get("isDdl") is True:
            kind = "DDL"  # ``isDdl`` alone says what it is (Flink CDC's Canal reader accepts it)
        else:
            kind = self.require(doc, "type", str)
        raw_tidb = doc.get("_tidb")
        tidb: dict[str, Any] = raw_tidb if isinstance(raw_tidb, dict) else {}
        gtid = doc.get("gtid")
        position = None
        if isinstance(gtid, str) and gtid:
            position = gtid
        elif tidb.get("commitTs") is not None:
            position = str(tidb["commitTs"])
        return CanalFields(
            kind=kind, kind_field="type",
            data=self._array(doc, "data"), old=self._array(doc, "old"), old_field="old",
            type_names=self._object(doc, "mysqlType"), sql_types=self._object(doc, "sqlType"),
            pk_names=self._names(doc, "pkNames"), table_change_pks=table_change_primary_keys(doc),
            database=self._text(doc, "database"), schema_name=None,
            table=self._text(doc, "table"),
            event_ms=doc.get("es"), event_field="es",
            produced_ms=doc.get("ts"), produced_field="ts",
            sequence=self._vendor_sequence(doc, tidb), position=position,
            is_ddl=doc.get("isDdl") if isinstance(doc.get("isDdl"), bool) else None,
            sql=doc.get("sql") if isinstance(doc.get("sql"), str) else None,
            key_only=ticdc_key_only_reason(tidb),
        )

    # -- shared --------------------------------------------------------------------------
    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        f = self.fields(doc)
        kind = f.kind.strip().upper()
        if kind in CONTROL_TYPES:
            return Decoded(control=CONTROL_TYPES[kind])
        if kind == "QUERY" and f.is_ddl is False and not is_schema_statement(f.sql):
            # Canal's QUERY entries that are not DDL (rows-query, user-var, intvar and rand events)
            # carry a DML statement's text; its rows come in their own INSERT/UPDATE/DELETE messages.
            # Canal up to 1.1.4 also flagged isDdl false on a DDL its parser gave no own type
            # (CREATE/DROP DATABASE, CREATE VIEW, ...): that text is a schema change, a DDL row.
            return Decoded(control="QUERY")
        if kind == "TRUNCATE":
            op = "TRUNCATE"
        elif kind in DML_OPS:
            op = DML_OPS[kind]
        elif kind in DDL_TYPES or f.is_ddl:
            op = "DDL"
        else:
            raise self.fail(errors.INVALID_OP,
                            f"'{f.kind_field}' must be INSERT, UPDATE, DELETE, a DDL type or a "
                            f"control type, got {f.kind!r}")
        if op == "UPDATE" and self.options.update_images_swapped:
            # Alibaba Cloud DTS Canal Json of instances created before 2022-03-20: ``data`` is
            # the before image and ``old`` the after image, both whole rows.
            f = replace(f, data=f.old, old=f.data)
        common = self._common(f)
        if op == "DDL" and f.table == "":
            # A database-level statement (CREATE/DROP DATABASE): Canal and TiCDC send
            # ``"table": ""``; the change names no table, as DDL rows of other formats.
            common["table_name"] = None
        if op in ("DDL", "TRUNCATE"):
            row = self.row(message, 0, op=op, ddl=f.sql if f.sql else None, **common)
            return Decoded(rows=[row])
        return Decoded(rows=self._dml_rows(f, op, common, message))

    def _common(self, f: CanalFields) -> dict[str, Any]:
        keys = self._key_columns(f)
        return {
            "database": f.database, "schema_name": f.schema_name, "table_name": f.table,
            "primary_key_columns": keys, "column_types": self._column_types(f),
            "event_time": self._epoch_ms(f.event_ms, f.event_field),
            "produced_time": self._epoch_ms(f.produced_ms, f.produced_field),
            "source_sequence": self._sequence(f.sequence),
            "source_position": f.position,
        }

    def _column_types(self, f: CanalFields) -> dict[str, str]:
        """Logical type per column from the message's type maps; a topic repeats a few type
        declarations, so the result is cached per declaration (a fresh copy each time)."""
        try:
            declaration = (tuple(f.type_names.items()), tuple(f.sql_types.items()))
            cache: dict[Any, dict[str, str]] = self.__dict__.setdefault("_types_cache", {})
            cached = cache.get(declaration)
        except TypeError:  # an unhashable vendor value: compute uncached
            return _column_types(f.type_names, f.sql_types)
        if cached is None:
            if len(cache) >= 1024:
                cache.clear()
            cached = _column_types(f.type_names, f.sql_types)
            if self._binary_encoding == BINARY_HEX:
                # Tencent DTS sends GEOMETRY (WKB) as a HexString like the binary types; its
                # sqlType is left empty, so the name alone says so.
                cached.update(_geometry_columns(f.type_names))
            elif self.canal_renderings:
                cached.update(_canal_geometry_binary(f.type_names, f.sql_types))
            cache[declaration] = cached
        return dict(cached)

    def _key_columns(self, f: CanalFields) -> list[str]:
        override = self.key_override(f.database, f.table)
        if override:
            return list(override)
        if f.pk_names:
            return list(f.pk_names)
        if f.table_change_pks:
            return list(f.table_change_pks)
        return []

    def _dml_rows(self, f: CanalFields, op: str, common: dict[str, Any],
                  message: RawMessage) -> list[dict[str, Any]]:
        if op == "DELETE":
            # Canal, JSON-C, OMS: deleted rows in data; DRS JSON: in old (CloudCanal: before).
            source, source_field = (f.data, "data") if f.data else (f.old, f.old_field)
        else:
            source, source_field = f.data, "data"
        if not source:
            where = "'data'" if op != "DELETE" else f"'data' or '{f.old_field}'"
            # Canal sends a DML it read from a statement-based binlog (binlog_format STATEMENT
            # or MIXED) as the statement alone: no row images, nothing to apply.
            statement = (" (the message carries only the SQL statement: a statement-based "
                         "binlog event, whose rows are unknown)") if f.sql else ""
            raise self.fail(errors.MISSING_FIELD,
                            f"{where} must hold at least one row when "
                            f"'{f.kind_field}' is {f.kind}{statement}")
        keys = common["primary_key_columns"]
        labels = _enum_labels(f.type_names, f.sql_types) if self.canal_renderings else {}
        old_offset = 0
        if (op == "UPDATE" and self.canal_renderings and f.old and source is f.data
                and len(f.old) < len(source)):
            # Canal's messageConverter adds an ``old`` row only when it is non-empty, and its set
            # of updated columns grows over the batch: the rows without one are the leading rows
            # that changed no column, so ``old`` belongs to the last len(old) rows.
            old_offset = len(source) - len(f.old)
        rows = []
        for index, raw in enumerate(source):
            if not isinstance(raw, dict):
                raise self.fail(errors.INVALID_FIELD,
                                f"'{source_field}[{index}]' must be an object")
            warnings: list[str] = [f.key_only] if f.key_only else []
            types = dict(common["column_types"])
            image = self._image(raw, types, warnings, labels)
            before = after = None
            if op == "DELETE":
                before = image
            else:
                after = image
            if op == "UPDATE" and index >= old_offset:
                before = self._before_image(f, index - old_offset, raw, types, warnings, labels)
            if op == "UPDATE" and self.canal_renderings and not keys and before is None:
                # Nothing identifies the row: no key columns and no before image. Canal sends this
                # when MySQL runs binlog_row_image=MINIMAL (issues #1834, #2460: 'data' holds only
                # the columns the statement set) or a field filter drops the key (#4042); pkNames is
                # then null even for a keyed table.
                warnings.append(_KEYLESS_UPDATE_WITHOUT_OLD)
            key_image = before if op == "DELETE" else after
            row_key = key_of(key_image, keys)
            if keys and row_key is None and self.case_insensitive_names:
                # MySQL: a key column the row spells otherwise (``pkNames`` ``k1``, ``K1``) is the key
                row_key = key_of_any_case(key_image, keys)
            if keys and row_key is None:
                missing = [k for k in keys if k not in (key_image or {})]
                raise self.fail(errors.MISSING_KEY,
                                f"key column(s) {missing} missing from '{source_field}[{index}]' "
                                f"when '{f.kind_field}' is {f.kind}")
            rows.append(self.row(
                message, index, op=op, row_key=row_key, before=before, after=after,
                after_is_full=op != "DELETE" and not f.key_only, warnings=warnings,
                **{**common, "column_types": types},
            ))
        return rows

    def _before_image(self, f: CanalFields, index: int, after_raw: dict[str, Any],
                      types: dict[str, str], warnings: list[str],
                      labels: dict[str, tuple[bool, tuple[str, ...]]] | None = None,
                      ) -> dict[str, str | None] | None:
        """``data`` overlaid with ``old``: right for partial (Canal) and full (DRS) old rows."""
        if f.old is None or index >= len(f.old) or f.old[index] is None:
            return None
        old = f.old[index]
        if not isinstance(old, dict):
            raise self.fail(errors.INVALID_FIELD, f"'{f.old_field}[{index}]' must be an object")
        stray = [c for c in old if c not in after_raw]
        if stray:
            # Metadata drift (the OMS manual's own example): the row image decides; the values
            # of columns the row does not have cannot belong to its before image.
            warnings.append(errors.warning(
                errors.OLD_NAMES_UNKNOWN_COLUMN,
                f"'{f.old_field}[{index}]' names column(s) {stray} that 'data[{index}]' does not "
                "have; their old values are left out of the before image"))
        merged = dict(after_raw)
        merged.update((c, v) for c, v in old.items() if c in after_raw)
        return self._image(merged, types, warnings, labels)

    def _image(self, raw: dict[str, Any], types: dict[str, str], warnings: list[str],
               labels: dict[str, tuple[bool, tuple[str, ...]]] | None = None,
               ) -> dict[str, str | None]:
        image: dict[str, str | None] = {}
        converters = self._converters()
        for column, value in raw.items():
            if value is None:
                image[column] = None
                continue
            if labels and column in labels:
                try:
                    image[column] = enum_label_text(value, *labels[column])
                except ConversionWarning as exc:
                    warnings.append(f"column {column!r}: {exc}; original text kept")
                    image[column] = text_of(value)
                continue
            logical = types.get(column)
            if logical is None and type(value) is str:  # untyped text: itself (text_of)
                image[column] = value
                continue
            convert = converters.get(logical)
            if convert is None:
                convert = converters[logical] = _guarded(
                    _converter(logical, self._binary_encoding, self.options.source_timezone))
            try:  # Decoder.convert, inlined (the hot loop)
                text = convert(value)
            except ConversionWarning as exc:
                warnings.append(f"column {column!r}: {exc}; original text kept")
                text = value if isinstance(value, str) else dumps_compact(value)
            if logical == "LONG" and _beyond_int64(text):
                # e.g. an unsigned BIGINT typed "bigint": keep every digit, widen the type.
                types[column] = f"DECIMAL({max(20, len(text.lstrip('-')))},0)"
            image[column] = text
        return image

    def _converters(self) -> dict[str | None, Any]:
        """This decoder's guarded converter per logical type (built once, on first use)."""
        cache: dict[str | None, Any] | None = self.__dict__.get("_converter_cache")
        if cache is None:
            cache = self.__dict__["_converter_cache"] = {}
        return cache

    # -- field readers -------------------------------------------------------------------
    def _array(self, doc: dict[str, Any], name: str) -> list[Any] | None:
        value = doc.get(name)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(errors.INVALID_FIELD, f"'{name}' must be an array or null")
        return value

    def _object(self, doc: dict[str, Any], name: str) -> dict[str, Any]:
        value = doc.get(name)
        if value is None or value == "":
            # "" : Tencent DTS leaves ``sqlType`` empty ("留空"): no type information.
            return {}
        if not isinstance(value, dict):
            raise self.fail(errors.INVALID_FIELD, f"'{name}' must be an object or null")
        return value

    def _names(self, doc: dict[str, Any], name: str) -> list[str] | None:
        value = doc.get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(errors.INVALID_FIELD, f"'{name}' must be an array of column names")
        return value

    def _text(self, doc: dict[str, Any], name: str) -> str | None:
        value = doc.get(name)
        if value is None or isinstance(value, str):
            return value
        raise self.fail(errors.INVALID_FIELD, f"'{name}' must be a string")

    def _epoch_ms(self, value: Any, name: str) -> int | None:
        """Epoch milliseconds -> micros; 0 is "not set" (None), as Debezium's 0 times are.

        TiCDC before v6.1 wrote ``"ts": 0`` on every canal-json message: read as a time it is
        1970, 52 years before the change, and fails the changelog's time gates. Tencent Cloud's
        CKafka connector writes ``es``/``ts`` in seconds (``1655812326``): a value below 10^11
        (as milliseconds, a time before March 1973) is read as seconds."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, JsonNumber | str | int):
            raise self.fail(errors.INVALID_FIELD, f"'{name}' must be epoch milliseconds")
        try:
            unit = "s" if _SECONDS_RANGE.fullmatch(str(value).strip()) else "ms"
            return micros_from_epoch(value, unit) or None
        except ConversionWarning:
            raise self.fail(errors.INVALID_FIELD,
                            f"'{name}' must be epoch milliseconds, got {str(value)[:40]!r}"
                            ) from None

    def _vendor_sequence(self, doc: dict[str, Any], tidb: dict[str, Any]) -> Any:
        """The configured sequence field, else TiCDC's ``_tidb.commitTs`` (a TSO: monotonic)."""
        if self._sequence_field is not None:
            return doc.get(self._sequence_field)
        return tidb.get("commitTs")

    def _sequence(self, value: Any) -> str | None:
        if value is None or isinstance(value, bool):
            return None
        text = str(value).strip()
        if not re.fullmatch(r"\d+", text):
            name = self._sequence_field or "_tidb.commitTs"
            raise self.fail(errors.INVALID_FIELD,
                            f"'{name}' must be a non-negative integer, got {text[:40]!r}")
        return integer_digits(text).zfill(20)


def _column_types(type_names: dict[str, Any], sql_types: dict[str, Any]) -> dict[str, str]:
    types: dict[str, str] = {}
    for column in dict.fromkeys([*type_names, *sql_types]):
        logical = column_logical_type(type_names.get(column), sql_types.get(column))
        if logical is not None:
            types[str(column)] = logical
    return types


_GEOMETRY_NAMES = frozenset({"geometry", "point", "linestring", "polygon", "multipoint",
                             "multilinestring", "multipolygon", "geometrycollection",
                             "geomcollection"})
_ENUM_DECLARATION = re.compile(r"^\s*(enum|set)\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)
_QUOTED_LABEL = re.compile(r"'((?:[^'\\]|''|\\.)*)'")


def _canal_geometry_binary(type_names: dict[str, Any], sql_types: dict[str, Any]) -> dict[str, str]:
    """Geometry columns that Canal sent as WKB bytes (sqlType 2004, BLOB): BINARY, not text."""
    return {column: logical for column, logical in _geometry_columns(type_names).items()
            if _int_or_none(sql_types.get(column)) == 2004}


def _geometry_columns(type_names: dict[str, Any]) -> dict[str, str]:
    """Columns whose type name is a spatial type, as BINARY (their WKB bytes)."""
    found = {}
    for column, name in type_names.items():
        if (isinstance(name, str) and re.split(r"[\s(]", name.strip().lower(), maxsplit=1)[0]
                in _GEOMETRY_NAMES):
            found[str(column)] = "BINARY"
    return found


@lru_cache(maxsize=1024)
def _labels_of(declaration: str) -> tuple[bool, tuple[str, ...]] | None:
    match = _ENUM_DECLARATION.match(declaration)
    if match is None:
        return None
    labels = tuple(m.replace("''", "'").replace("\\'", "'")
                   for m in _QUOTED_LABEL.findall(match[2]))
    return (match[1].lower() == "set", labels) if labels else None


def _enum_labels(type_names: dict[str, Any],
                 sql_types: dict[str, Any]) -> dict[str, tuple[bool, tuple[str, ...]]]:
    """ENUM/SET columns whose values are Canal's index/bitmask and whose labels are declared.

    Canal's RowsLogBuffer reads MYSQL_TYPE_ENUM as its 1-based index (``Types.INTEGER``, sqlType
    4) and MYSQL_TYPE_SET as its bitmask (``Types.BIT``, sqlType -7); ``mysqlType`` holds the
    column declaration, e.g. ``enum('a','b')``. A vendor that sends labels uses a text sqlType."""
    found = {}
    for column, name in type_names.items():
        if not isinstance(name, str):
            continue
        bare = name.strip().lower()
        # TiCDC's default canal-json names the type alone ("enum", "set"): the index or bitmask
        # cannot become a label; it is kept, with a warning (content-compatible=true sends labels).
        parsed = _labels_of(name) or ((bare == "set", ()) if bare in ("enum", "set") else None)
        if parsed is not None and _int_or_none(sql_types.get(column)) == (-7 if parsed[0] else 4):
            found[str(column)] = parsed
    return found


def enum_label_text(value: Any, is_set: bool, labels: tuple[str, ...]) -> str:
    """Canal's ENUM index (0 = MySQL's invalid-value ``''``) or SET bitmask -> label text."""
    text = str(value).strip()
    if not labels and not text.isdigit():
        return str(value)  # no declaration to check it against: a label as sent
    if not text.isdigit() or len(text) > 20:  # an index or a 64-bit mask has at most 20 digits
        raise ConversionWarning(f"not an {'SET bitmask' if is_set else 'ENUM index'}: "
                                f"{str(value)[:40]!r}")
    number = int(text)
    if not labels:
        raise ConversionWarning(f"{'SET bitmask' if is_set else 'ENUM index'} {number} with no "
                                "labels declared (mysqlType names the type alone)")
    if not is_set:
        if number > len(labels):
            raise ConversionWarning(f"ENUM index {number} beyond the {len(labels)} labels")
        return labels[number - 1] if number else ""
    if number >> len(labels):
        raise ConversionWarning(f"SET bitmask {number} beyond the {len(labels)} labels")
    return ",".join(label for bit, label in enumerate(labels) if number >> bit & 1)


def ticdc_key_only_reason(tidb: dict[str, Any]) -> str | None:
    """Why a TiCDC canal-json row message carries only the handle-key columns, or None.

    A row too large for ``max-message-bytes`` is sent with only its handle-key columns in
    ``data``/``old`` (and only their ``sqlType``/``mysqlType``), flagged ``_tidb.onlyHandleKey``
    (large-message-handle-option ``handle-key-only``: TiCDC's consumer re-reads the row from the
    upstream TiDB at ``commitTs``) or ``_tidb.claimCheckLocation`` (``claim-check``: the whole
    message is in external storage). Such images are partial, never the full row.
    """
    if tidb.get("onlyHandleKey") is True:
        return ("TiCDC large message (_tidb.onlyHandleKey): only the handle-key columns were "
                "sent, the other columns are unknown")
    location = tidb.get("claimCheckLocation")
    if isinstance(location, str) and location:
        return (f"TiCDC large message (_tidb.claimCheckLocation): only the handle-key columns "
                f"were sent, the full message is stored at {location!r}")
    return None


def table_change_primary_keys(doc: dict[str, Any]) -> list[str] | None:
    """``tableChanges.table.primaryKeyColumnNames`` (CloudCanal DDL messages), if present."""
    changes = doc.get("tableChanges")
    table = changes.get("table") if isinstance(changes, dict) else None
    names = table.get("primaryKeyColumnNames") if isinstance(table, dict) else None
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return names
    return None


def _beyond_int64(text: str) -> bool:
    try:
        number = int(text)
    except ValueError:
        return False
    return not _INT64_MIN <= number <= _INT64_MAX


# ---------------------------------------------------------------- auto-detection evidence

_EXCLUDED_KEYS = ("opType", "columnType", "action", "op", "payload", "prevStruct", "postStruct")


def is_ticdc(doc: dict[str, Any]) -> bool:
    """TiCDC's own marks (enable-tidb-extension): the ``_tidb`` object or a watermark."""
    return "_tidb" in doc or doc.get("type") == TIDB_WATERMARK


def is_canal_shaped(doc: dict[str, Any]) -> bool:
    """Canal's structure: ``type`` text, ``database``/``table``, row arrays (or null) and at
    least one of Canal's metadata fields. Maxwell (``data`` is an object, no ``isDdl``) and DRS
    for other databases (``opType``/``columnType``) do not match."""
    if not isinstance(doc.get("type"), str) or "table" not in doc or "database" not in doc:
        return False
    excluded = [key for key in _EXCLUDED_KEYS if key in doc]
    if excluded and not (excluded == ["opType"] and "mysqlType" in doc):  # InLong canal-json-inlong
        return False
    if not any(key in doc for key in ("isDdl", "mysqlType", "sqlType", "pkNames")):
        return False
    return all(doc.get(name) is None or isinstance(doc[name], list) for name in ("data", "old"))


def _rows(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    value = doc.get(name)
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def has_typed_values(doc: dict[str, Any]) -> bool:
    """Any row value that is a JSON number, boolean, object or array (OMS Canal)."""
    return any(isinstance(v, JsonNumber) or (v is not None and not isinstance(v, str))
               for name in ("data", "old") for row in _rows(doc, name) for v in row.values())


@dataclass(frozen=True)
class DrsEvidence:
    """What a string-valued Canal-shaped message shows about DRS JSON vs JSON-C."""

    drs: bool      # a shape only DRS emits (INIT/INIT_DDL/DDL types, byte-list binary, epoch
                   # TIMESTAMP, DELETE row in old)
    json_c: bool   # a shape of JSON-C rather than DRS JSON (text TIMESTAMP, DELETE row in data)
    not_drs: bool = False  # a binary value that is no byte list: DRS (JSON and JSON-C) sends every
                           # binary value as one; Canal-compatible senders that share DRS's INIT
                           # and DDL types (Alibaba Cloud DTS) send ISO-8859-1 text


def drs_evidence(doc: dict[str, Any]) -> DrsEvidence:
    kind = str(doc.get("type", "")).strip().upper()
    raw_type_names, raw_sql_types = doc.get("mysqlType"), doc.get("sqlType")
    type_names: dict[str, Any] = raw_type_names if isinstance(raw_type_names, dict) else {}
    sql_types: dict[str, Any] = raw_sql_types if isinstance(raw_sql_types, dict) else {}
    drs = kind in ("INIT", "INIT_DDL", "DDL")  # Canal names DDL by kind (CREATE, ALTER, ...)
    json_c = not_drs = False
    data, old = _rows(doc, "data"), _rows(doc, "old")
    if kind == "DELETE":
        if old and not data:
            drs = True
        elif data:
            json_c = True
    for row in data + old:
        for column, value in row.items():
            if not isinstance(value, str):
                continue
            logical = column_logical_type(type_names.get(column), sql_types.get(column))
            if logical == "BINARY":
                if _BYTE_LIST.match(value):
                    drs = True
                else:
                    not_drs = True
            name = type_names.get(column)
            if isinstance(name, str) and name.strip().lower().startswith("timestamp"):
                if _EPOCH_SECONDS.match(value):
                    drs = True
                elif _WALL_CLOCK.match(value):
                    json_c = True
    return DrsEvidence(drs=drs and not not_drs, json_c=json_c, not_drs=not_drs)

