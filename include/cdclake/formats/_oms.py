"""OceanBase data transmission (OMS) serialisations: shared decoding for Default and
DefaultExtendColumnType (seed 003).

One decoder serves both: DefaultExtendColumnType is Default plus a ``__light_type`` map of column
types inside each image. Type conversion, row identity, BIT padding and the tenant split are in the
vendor notes.

Vendor notes: docs/formats/_oms.md
"""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime
from typing import Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cdclake.formats import errors
from cdclake.formats._plain_json import (
    epoch_micros,
    exact_integer_text,
    plain_decimal_text,
    plain_text,
    sortable_sequence,
    untyped_text,
)
from cdclake.formats.base import JsonDecoder, key_of, row_key_text
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.exact_json import JsonNumber
from cdclake.formats.values import (
    ConversionWarning,
    base64_normalised,
    boolean_text,
    date_text,
    decimal_column_text,
    dumps_compact,
    iso_seconds_text,
    iso_utc_from_epoch_text,
    json_value_text,
    text_of,
    wall_clock_text,
)

LIGHT_TYPE = "__light_type"
KEY_SEPARATOR = "\u0001"
OCEANBASE_DB_TYPES = frozenset({"OB_MYSQL", "OB_ORACLE", "OCEANBASE", "OB_IN_ORACLE_MODE"})
ORACLE_MODE_DB_TYPES = frozenset({"ORACLE", "OB_ORACLE", "OB_IN_ORACLE_MODE"})
RECORD_OPS = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "ROW": "SNAPSHOT",
              "DDL": "DDL"}


# ---------------------------------------------------------------- values by OMS type

def _long_text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return exact_integer_text(value)


def _number_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, JsonNumber | str | int):
        raise ConversionWarning(f"not a number: {value!r}")
    return plain_decimal_text(str(value))


def _decimal_number_text(value: Any) -> str:
    """A DECIMAL/NUMBER column's value: as :func:`_number_text`, without a negative zero."""
    return decimal_column_text(_number_text(value))


def _binary_text(value: Any) -> str:
    if not isinstance(value, str):
        raise ConversionWarning(f"not base64 text: {value!r}")
    return base64_normalised(value)


def bit_text(value: Any, bits: int) -> str:
    """MySQL BIT(n) bytes (base64) -> canonical base64 of its ceil(n/8) bytes, most significant
    first. OMS drops the high-order zero bytes of a BIT value in incremental records but not in
    full-load ones, so ``AAc=`` and ``Bw==`` are the same BIT(16) value; padding to the declared
    width gives both one canonical text (and the same text as other formats give)."""
    if not isinstance(value, str):
        raise ConversionWarning(f"not base64 text: {value!r}")
    data = base64.b64decode(base64_normalised(value))
    width = (bits + 7) // 8
    if len(data) > width and data[: len(data) - width].strip(b"\0"):
        raise ConversionWarning(f"{len(data)} bytes do not fit BIT({bits})")
    return base64.b64encode(data[-width:].rjust(width, b"\0")).decode("ascii")


def bit_width(type_name: str) -> int | None:
    """``BIT(16)`` -> 16; a bare ``BIT`` (OMS's __light_type names no width) -> None."""
    match = re.fullmatch(r"\s*BIT\s*\(\s*(\d{1,9})\s*\)\s*", str(type_name), re.IGNORECASE)
    return int(match[1]) if match and 1 <= int(match[1]) <= 64 else None


_TIME = re.compile(r"-?\d{1,3}:\d{2}:\d{2}(?:\.\d{1,9})?")


def _time_text(value: Any) -> str:
    """OMS Time ``HH:mm:ss[.nnnnnnnnn]`` (MySQL TIME may be negative or over 24 h); kept as is."""
    text = str(value).strip()
    if not _TIME.fullmatch(text):
        raise ConversionWarning(f"not a time: {value!r}")
    return text


_DATETIME = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})(?:[ T](?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d{1,9}))?)?"
    r"(?:\s+(?P<zone>\S+))?")


def _zone_of(name: str) -> Any:
    """A tzinfo for an OMS zoneId: ``Asia/Shanghai``, ``UTC``, ``Z``, ``+08:00``, ``GMT+08:00``."""
    from datetime import timedelta, timezone

    offset = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d{1,2}):?(\d{2})?", name)
    try:
        if offset:
            delta = timedelta(hours=int(offset[2]), minutes=int(offset[3] or 0))
            return timezone(-delta if offset[1] == "-" else delta)
        if name in ("Z", "UTC", "GMT"):
            return UTC
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: a tzdata folder name
        raise ConversionWarning(f"unknown zone {name!r}") from exc


def _wall_text(value: Any) -> str:
    """OMS DateTime without zone -> wall clock ``2020-11-25T00:01:02[.fraction]``."""
    match = _DATETIME.fullmatch(str(value).strip())
    if not match:
        raise ConversionWarning(f"not a datetime: {value!r}")
    if match["zone"]:
        raise ConversionWarning(f"zone {match['zone']!r} on a wall-clock column")
    return wall_clock_text(str(value).strip())


def zoned_text(value: Any, default_zone: str = "UTC") -> str:
    """OMS DateTime with zoneId (``2020-11-25 00:01:02.012345 Asia/Shanghai``) -> ISO UTC instant,
    fraction kept to the nanosecond; without a zone the value is read in ``default_zone``."""
    match = _DATETIME.fullmatch(str(value).strip())
    if not match:
        raise ConversionWarning(f"not a datetime: {value!r}")
    zone = _zone_of(match["zone"] or default_zone)
    try:
        local = datetime.strptime(f"{match['date']} {match['time'] or '00:00:00'}", "%Y-%m-%d %H:%M:%S")
    except ValueError as exc:
        raise ConversionWarning(f"not a valid datetime: {value!r}") from exc
    try:
        utc = local.replace(tzinfo=zone).astimezone(UTC)
    except OverflowError as exc:
        raise ConversionWarning(f"datetime out of range: {value!r}") from exc
    out = iso_seconds_text(utc)
    fraction = (match["frac"] or "").rstrip("0")
    return out + (f".{fraction}" if fraction else "") + "Z"


def _date_text(value: Any) -> str:
    text = str(value).strip()
    return date_text(text) if len(text) == 10 else _wall_text(text)


def _epoch_timestamp_text(value: Any) -> str:
    """OMS MySQL-tenant Timestamp ``[seconds][.nnnnnnnnn]`` -> ISO UTC; invalid (``0000-00-00
    00:00:00``) keeps its text."""
    text = str(value).strip()
    if not re.fullmatch(r"-?\d{1,12}(?:\.\d{1,9})?", text):
        raise ConversionWarning(f"not an epoch timestamp: {value!r}")
    try:
        return iso_utc_from_epoch_text(text, "s")
    except OverflowError as exc:
        raise ConversionWarning(f"epoch timestamp out of range: {value!r}") from exc


def _string_text(value: Any) -> str:
    return str(text_of(value))


def _json_text(value: Any) -> str:
    return json_value_text(value) if isinstance(value, str) else dumps_compact(value)


_LONG_TYPES = {"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "YEAR", "INT8", "INT16",
               "INT32", "INT64", "LONG"}
_DECIMAL_TYPES = {"DECIMAL", "NUMERIC", "NUMBER", "BIGDECIMAL", "DEC"}
_DOUBLE_TYPES = {"FLOAT", "DOUBLE", "REAL", "BINARY_FLOAT", "BINARY_DOUBLE", "FLOAT32", "FLOAT64"}
_BINARY_TYPES = {"BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BINARY", "VARBINARY", "BIT", "RAW",
                 "LONG RAW", "BFILE", "BYTES"}
_ZONED_TYPES = {"ZONED_DATETIME", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP_WITH_TIME_ZONE",
                "TIMESTAMP WITH LOCAL TIME ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"}


def light_type(schema_type: str, db_type: str | None) -> tuple[str, Any]:
    """(logical type, converter) for an OMS ``schemaType`` per the seed's type-mapping tables.

    MySQL tenant: TINYINT..INT, YEAR, BOOL -> Long; DECIMAL/NUMERIC and integers over 64 bits
    (BIGINT UNSIGNED: the manual's BIGINT example is 10223372036854775806) -> BigDecimal;
    FLOAT/DOUBLE -> Double; Bytes base64; DATE, TIME, DATETIME text; TIMESTAMP epoch seconds.
    Oracle tenant: NUMBER/FLOAT -> BigDecimal; DATE and TIMESTAMP[ WITH [LOCAL] TIME ZONE] ->
    DateTime text ``YYYY-MM-DD HH:mm:ss[.n] [zoneId]``.
    """
    name = re.sub(r"\(.*\)", "", str(schema_type)).strip().upper()
    oracle = (db_type or "").upper() in ORACLE_MODE_DB_TYPES
    if name in ("BOOL", "BOOLEAN"):
        return "BOOLEAN", boolean_text
    if name in _LONG_TYPES:
        return "LONG", _long_text
    if name == "BIGINT":
        return "DECIMAL(20,0)", _long_text
    if name == "FLOAT" and oracle:
        return "DECIMAL", _decimal_number_text
    if name in _DECIMAL_TYPES:
        return "DECIMAL", _decimal_number_text
    if name in _DOUBLE_TYPES:
        return "DOUBLE", _number_text
    width = bit_width(schema_type) if name == "BIT" else None
    if width is not None:
        return "BINARY", lambda value, _bits=width: bit_text(value, _bits)
    if name in _BINARY_TYPES:
        return "BINARY", _binary_text
    if name in _ZONED_TYPES:
        return "TIMESTAMP", zoned_text
    if name == "DATE":
        return ("TIMESTAMP_NTZ", _wall_text) if oracle else ("DATE", _date_text)
    if name == "TIME":
        return "TIME", _time_text
    if name in ("DATETIME", "LOCALDATETIME"):
        return "TIMESTAMP_NTZ", _wall_text
    if name == "TIMESTAMP":
        return ("TIMESTAMP_NTZ", _wall_text) if oracle else ("TIMESTAMP", _epoch_timestamp_text)
    if name in ("JSON", "JSONB"):
        return "JSON", _json_text
    return "STRING", _string_text


# ---------------------------------------------------------------- decoder

def split_key_text(text: Any) -> list[str]:
    """``"a\\u0001b"`` -> ``["a", "b"]`` (also the literal six characters ``\\u0001``)."""
    if text is None:
        return []
    body = str(text)
    if body == "":
        return []
    if KEY_SEPARATOR not in body and "\\u0001" in body:
        return body.split("\\u0001")
    return body.split(KEY_SEPARATOR)


def split_tenant(db: str | None, db_type: str | None) -> tuple[str | None, str | None]:
    """(database, tenant): ``tenant.database`` is split only for OceanBase dbTypes."""
    if db is None:
        return None, None
    if (db_type or "").upper() in OCEANBASE_DB_TYPES and "." in db:
        tenant, _, database = db.partition(".")
        return database, tenant
    return db, None


class OmsDefaultDecoderBase(JsonDecoder):
    """OMS Default JSON (``prevStruct``/``postStruct``/``allMetaData``/``recordType``)."""

    accepts_light_type: ClassVar[bool] = True

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        # A HEARTBEAT carries neither image (not even as null), so the two field names that every
        # OMS Default record has are the signature.
        return isinstance(doc.get("allMetaData"), dict) and isinstance(doc.get("recordType"), str)

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        meta = self.require(doc, "allMetaData", dict)
        record_type = self.require(doc, "recordType", str).strip().upper()
        if record_type == "HEARTBEAT":
            return Decoded(control="HEARTBEAT")
        op = RECORD_OPS.get(record_type)
        if op is None:
            raise self.fail(errors.INVALID_OP,
                            f"'recordType' {record_type!r} is not INSERT, UPDATE, DELETE, ROW, DDL or "
                            "HEARTBEAT")
        prev = self.require(doc, "prevStruct", dict, nullable=True) if "prevStruct" in doc else None
        post = self.require(doc, "postStruct", dict, nullable=True) if "postStruct" in doc else None
        db_type = plain_text(meta.get("dbType"))
        database, tenant = split_tenant(plain_text(meta.get("db")), db_type)
        table = plain_text(meta.get("table_name"))
        common: dict[str, Any] = {
            "db_type": db_type, "database": database, "schema_name": tenant, "table_name": table,
            "event_time": self._event_time(meta),
            "source_sequence": sortable_sequence(meta.get("storeDataSequence")),
            "source_position": plain_text(meta.get("checkpoint")),
            # uniqueId: the transaction identifier passed down by the Store (incremental only);
            # later OMS releases also send transId.
            "transaction_id": plain_text(meta.get("uniqueId")) or plain_text(meta.get("transId")),
        }
        if op == "DDL":
            image = post if post is not None else prev
            statement = image.get("ddl") if image else None
            if not isinstance(statement, str):
                raise self.fail(errors.MISSING_FIELD,
                                "'postStruct.ddl' (or 'prevStruct.ddl') must hold the statement when "
                                "recordType is DDL")
            return Decoded(rows=[self.row(message, op="DDL", ddl=statement, **common)])
        if op in ("INSERT", "SNAPSHOT", "UPDATE") and post is None:
            raise self.fail(errors.MISSING_FIELD, f"'postStruct' is null when recordType is {record_type}")
        if op == "DELETE" and prev is None:
            raise self.fail(errors.MISSING_FIELD, "'prevStruct' is null when recordType is DELETE")

        warnings: list[str] = []
        types: dict[str, str] = {}
        converters: dict[str, Any] = {}
        for label, image in (("prevStruct", prev), ("postStruct", post)):
            self._collect_types(label, image, db_type, types, converters, warnings)
        before = self._image(prev, converters, warnings)
        after = self._image(post, converters, warnings) if op != "DELETE" else None

        names = [n for n in split_key_text(meta.get("record_primary_key")) if n]
        override = self.key_override(database, table)
        keys = list(override) if override else names
        row_key = self._row_key(op, before, after, keys, names, meta, converters, warnings)
        if row_key is None and op in ("UPDATE", "DELETE") and keys:
            raise self.fail(errors.MISSING_KEY,
                            f"key columns {keys} are not in the image and 'record_primary_value' is "
                            f"missing for a {op}")
        return Decoded(rows=[self.row(
            message, op=op, primary_key_columns=keys, row_key=row_key,
            before=before if op in ("UPDATE", "DELETE") else None, after=after,
            after_is_full=op != "DELETE", column_types=types, warnings=warnings, **common)])

    # -- parts ---------------------------------------------------------------------------
    def _event_time(self, meta: dict[str, Any]) -> int | None:
        value = meta.get("timestamp")
        if value is None or value == "":
            return None
        try:
            return epoch_micros(value, "s")
        except ConversionWarning:
            raise self.fail(errors.INVALID_FIELD,
                            f"'allMetaData.timestamp' must be epoch seconds, got {value!r}") from None

    def _collect_types(self, label: str, image: dict[str, Any] | None, db_type: str | None,
                       types: dict[str, str], converters: dict[str, Any], warnings: list[str]) -> None:
        if not image or LIGHT_TYPE not in image:
            return
        light = image[LIGHT_TYPE]
        if not isinstance(light, dict):
            raise self.fail(errors.INVALID_FIELD, f"'{label}.{LIGHT_TYPE}' must be an object")
        unknown = sorted(name for name in light if name not in image)
        if unknown:
            # Metadata drift (the OMS manual's own examples): the image decides; only the columns
            # the map and the image share are typed, the rest keep the image's text.
            warnings.append(errors.warning(
                errors.TYPE_MAP_MISMATCH,
                f"'{label}.{LIGHT_TYPE}' names columns {unknown[:8]} that are not in '{label}'; "
                "the image's values of other columns are kept as text"))
        for name, spec in light.items():
            if name not in image:
                continue
            schema_type = spec.get("schemaType") if isinstance(spec, dict) else spec
            if not isinstance(schema_type, str):
                raise self.fail(errors.INVALID_FIELD,
                                f"'{label}.{LIGHT_TYPE}.{name}.schemaType' must be a string")
            logical, converter = light_type(schema_type, db_type)
            if logical == "TIMESTAMP" and converter is zoned_text:
                zone = self.options.source_timezone

                def converter(value: Any, _zone: str = zone) -> str:
                    return zoned_text(value, _zone)

            types[name] = logical
            converters[name] = converter

    def _image(self, image: dict[str, Any] | None, converters: dict[str, Any],
               warnings: list[str]) -> dict[str, str | None] | None:
        if image is None:
            return None
        out: dict[str, str | None] = {}
        for name, value in image.items():
            if name == LIGHT_TYPE:
                continue
            converter = converters.get(name)
            out[name] = (untyped_text(value) if converter is None
                         else self.convert(value, converter, warnings, name))
        return out

    def _row_key(self, op: str, before: dict[str, str | None] | None,
                 after: dict[str, str | None] | None, keys: list[str], names: list[str],
                 meta: dict[str, Any], converters: dict[str, Any], warnings: list[str]) -> str | None:
        image = after if op in ("INSERT", "SNAPSHOT", "UPDATE") else before
        found = key_of(image, keys)
        if found is not None:
            return found
        values = split_key_text(meta.get("record_primary_value"))
        if values and (keys == names or not keys):
            texts: list[str | None] = []
            for index, value in enumerate(values):
                name = names[index] if index < len(names) else None
                converter = converters.get(name) if name else None
                texts.append(value if converter is None
                             else self.convert(value, converter, warnings, name or "?"))
            return row_key_text(texts)
        return key_of(before, keys)
