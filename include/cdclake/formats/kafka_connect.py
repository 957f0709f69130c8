"""Kafka Connect's JsonConverter: the ``{schema, payload}`` envelope, values decoded by their
Connect and Debezium logical types, and the checks of a Connect schema itself. Shared by
``debezium_json`` and ``ogg_json`` (GoldenGate's Kafka Connect handler); CloudEvents are recognised
here because a failed message's schema may be a CloudEvent's ``data.schema``."""

from __future__ import annotations

import base64
import binascii
import re
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from cdclake.formats import errors
from cdclake.formats.base import (
    Decoder,
    JsonDecoder,
    kind_of,
)
from cdclake.formats.canonical import RawMessage
from cdclake.formats.errors import FieldError
from cdclake.formats.exact_json import JsonNumber, loads_exact
from cdclake.formats.values import (
    ConversionWarning,
    base64_from_hex,
    base64_normalised,
    base64_of_bytes,
    boolean_text,
    bounded_integer,
    date_text,
    decimal_column_text,
    decimal_text,
    dumps_compact,
    integer_text,
    iso_seconds_text,
    iso_utc_from_zoned_text,
    json_value_text,
    text_of,
    wall_clock_text,
)

_CONNECT = "org.apache.kafka.connect.data."
_DBZ_TIME = "io.debezium.time."
# Logical-type name -> (kind, unit) for the numeric time encodings.
_TIME_OF_DAY = {_CONNECT + "Time": "ms", _DBZ_TIME + "Time": "ms", _DBZ_TIME + "MicroTime": "us",
                _DBZ_TIME + "NanoTime": "ns"}
_WALL_CLOCK = {_CONNECT + "Timestamp": "ms", _DBZ_TIME + "Timestamp": "ms",
               _DBZ_TIME + "MicroTimestamp": "us", _DBZ_TIME + "NanoTimestamp": "ns"}
_PER_SECOND = {"ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_STRING_TYPES = {"io.debezium.data.Enum", "io.debezium.data.EnumSet", "io.debezium.data.Uuid",
                 "io.debezium.data.Xml", "io.debezium.data.Ltree", _DBZ_TIME + "Interval"}
_PRIMITIVE_TYPES = {"int8": "LONG", "int16": "LONG", "int32": "LONG", "int64": "LONG",
                    "float": "DOUBLE", "float32": "DOUBLE", "float64": "DOUBLE", "double": "DOUBLE",
                    "boolean": "BOOLEAN", "string": "STRING", "bytes": "BINARY", "struct": "JSON",
                    "map": "JSON", "array": "JSON"}
# CloudEvents (see _cloudevent_envelope): attribute prefix, the transaction block's attributes, and
# the source fields whose attribute names lost a non-alphanumeric character (CloudEventsConverter
# .adjustExtensionName keeps [A-Za-z0-9] only); any other attribute is the field of its own name.
CE_PREFIX = "iodebezium"


def unwrap(doc: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """(payload, schema): the envelope's parts, or the document itself when it has no envelope."""
    if "payload" in doc and set(doc) <= {"schema", "payload"}:
        schema = doc.get("schema")
        return doc["payload"], schema if isinstance(schema, dict) else None
    return doc, None


def column_text(decoder: Decoder, value: Any, spec: dict[str, Any] | None, warnings: list[str],
                column: str, hex_bytes: bool = False) -> str | None:
    """One column's :func:`value_text`: a value that cannot be converted is kept with a warning
    (``Decoder.convert``); one its schema rules out (:class:`IntegerRangeError`, ...) is a
    :class:`FieldError` naming the column, which quarantines the message."""
    try:
        return decoder.convert(value, lambda v: value_text(v, spec, hex_bytes), warnings, column)
    except FieldError as exc:
        raise FieldError(f"column {column!r}: {exc}") from None


def value_text(value: Any, spec: dict[str, Any] | None, hex_bytes: bool = False) -> str | None:
    """Canonical text of one column value, decoded by its Connect schema when there is one;
    ``hex_bytes``: a ``bytes`` value is base16 text (OceanBase OMS), not Connect's base64."""
    if value is None:
        return None
    if not spec:
        if _is_variable_scale_struct(value):
            # Without a schema the struct still says what it is (Oracle NUMBER, PostgreSQL
            # unconstrained NUMERIC under decimal.handling.mode=precise): decode it exactly.
            return _decimal_from_bytes(value["value"], int(value["scale"]))
        return text_of(value)
    name = spec.get("name") or ""
    kind = spec.get("type")
    params = spec.get("parameters") or {}
    if name == _CONNECT + "Decimal":
        if isinstance(value, str) and not isinstance(value, JsonNumber):
            return _decimal_from_bytes(value, int(params.get("scale", 0)))
        return decimal_column_text(str(value))
    if name == "io.debezium.data.VariableScaleDecimal":
        if isinstance(value, dict):
            return _decimal_from_bytes(str(value.get("value")), _struct_scale(value))
        return text_of(value)
    if name in (_CONNECT + "Date", _DBZ_TIME + "Date"):
        return date_text(value) if _is_time_text(value) else _date(_epoch_count(value, "days"))
    if name in _TIME_OF_DAY:
        if _is_time_text(value):
            return _time_text(value)
        return _time_of_day(_epoch_count(value, _TIME_OF_DAY[name]), _TIME_OF_DAY[name])
    if name in _WALL_CLOCK:
        if _is_time_text(value):
            return wall_clock_text(value)
        return _wall_clock(_epoch_count(value, _WALL_CLOCK[name]), _WALL_CLOCK[name])
    if name == _DBZ_TIME + "ZonedTimestamp":
        return iso_utc_from_zoned_text(str(value))
    if name == _DBZ_TIME + "IsoTimestamp":
        text = str(value)
        zoned = re.search(r"(Z|[+-]\d\d:?\d\d)$", text)
        return iso_utc_from_zoned_text(text) if zoned else wall_clock_text(text)
    if name == _DBZ_TIME + "IsoDate":
        return str(value).rstrip("Z")
    if name == "io.debezium.data.Json":
        return json_value_text(str(value))
    if name == "io.debezium.data.Bits":
        return _bits_text(value)
    if kind == "array" and isinstance(value, list) and _has_logical_items(spec):
        return dumps_compact([_array_element(v, spec["items"]) for v in value])
    if kind == "bytes":
        if isinstance(value, str):
            return base64_from_hex(value) if hex_bytes else base64_normalised(value)
        return text_of(value)
    if kind == "boolean":
        return boolean_text(value)
    if kind in _INTEGER_BITS:
        return _declared_integer_text(value, kind)
    return text_of(value)


class IntegerRangeError(FieldError):
    """A value beyond its Connect integer type: the message contradicts its own schema. No
    connector writes this (Debezium and TiCDC widen unsigned columns to the next type and wrap a
    BIGINT UNSIGNED); Kafka Connect's JsonConverter would wrap it silently, RisingWave rejects it."""


_INTEGER_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
# Digits below which every value fits the type (int8: 99, ..., int64: 18 digits).
_SAFE_DIGITS = {"int8": 2, "int16": 4, "int32": 9, "int64": 18}


def _declared_integer_text(value: Any, kind: str) -> str:
    """An intN value's exact text; :class:`IntegerRangeError` when it does not fit intN."""
    text = integer_text(value)
    digits = len(text) - text.startswith("-")
    if digits <= _SAFE_DIGITS[kind]:
        return text
    half = 1 << (_INTEGER_BITS[kind] - 1)
    if digits <= 19 and -half <= int(text) < half:  # 19: int64's digits
        return text
    shown = text if len(text) <= 40 else f"{text[:20]}...({digits} digits)"
    raise IntegerRangeError(f"{shown} does not fit {kind}, its schema type")


def _has_logical_items(spec: dict[str, Any]) -> bool:
    """An array whose elements have a logical type (PostgreSQL ``date[]``, ``numeric(5,2)[]``,
    ``timestamptz[]``, ``json[]``, ...): Debezium encodes each element as it encodes a column of
    that type (days, unscaled bytes, ...), so each is decoded by the ``items`` schema."""
    items = spec.get("items")
    return isinstance(items, dict) and bool(items.get("name"))


_NUMBER_TYPES = ("LONG", "DOUBLE", "DECIMAL")


def _array_element(value: Any, items: dict[str, Any]) -> Any:
    """One decoded array element as a JSON value: numbers (decimals exact) stay numbers, JSON
    documents stay documents, everything else (dates, times, timestamps, UUIDs) is its canonical
    text. A value that is no number where one is expected (``NaN``) stays text."""
    text = value_text(value, items)
    if text is None:
        return None
    logical = connect_logical_type(items) or ""
    if logical.startswith(_NUMBER_TYPES) and re.fullmatch(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text):
        return JsonNumber(text)
    if logical == "BOOLEAN" and text in ("true", "false"):
        return text == "true"
    if logical == "JSON":
        return loads_exact(text)
    return text


def _is_time_text(value: Any) -> bool:
    """A date/time value written as text where its schema says epoch units: Flink CDC's Kafka sink
    labels DATE, TIME and TIMESTAMP columns io.debezium.time.* but writes Flink SQL text
    (``1970-04-11``, ``00:00:00``, ``2023-01-01 00:00:00``)."""
    return (isinstance(value, str) and not isinstance(value, JsonNumber)
            and re.fullmatch(r"\s*-?\d+\s*", value) is None)


def _time_text(value: str) -> str:
    match = re.fullmatch(r"\s*(\d{2}:\d{2}:\d{2})(?:\.(\d+))?\s*", value)
    if not match:
        raise ConversionWarning(f"not a time: {value[:40]!r}")
    fraction = (match[2] or "").rstrip("0")
    return f"{match[1]}.{fraction}" if fraction else match[1]


def _is_variable_scale_struct(value: Any) -> bool:
    """io.debezium.data.VariableScaleDecimal as schemaless JSON: ``{"scale": 0, "value": "AQ=="}``."""
    if not isinstance(value, dict) or set(value) != {"scale", "value"}:
        return False
    scale, unscaled = value["scale"], value["value"]
    return (isinstance(scale, (int, JsonNumber)) and not isinstance(scale, bool)
            and re.fullmatch(r"-?\d+", str(scale)) is not None
            and isinstance(unscaled, str) and not isinstance(unscaled, JsonNumber))


def _bits_text(value: Any) -> str | None:
    """io.debezium.data.Bits: the bit string's bytes little-endian (Debezium's documented form);
    canonical binary is the database's own order, most significant byte first (``b'111'`` of a
    BIT(16) is ``AAc=``), as the other formats give BIT values."""
    if not isinstance(value, str):
        return text_of(value)
    return base64_of_bytes(base64.b64decode(base64_normalised(value))[::-1])


def _struct_scale(value: dict[str, Any]) -> int:
    """The ``scale`` of a VariableScaleDecimal struct (``{"scale": 2, "value": "AQ=="}``)."""
    scale = value.get("scale")
    if scale is None:
        return 0
    if not is_integer_text(scale):
        raise ConversionWarning(f"variable-scale decimal 'scale' is no integer: {value_words(scale)}")
    return int(scale)


def _decimal_from_bytes(encoded: str, scale: int) -> str:
    """Connect Decimal: base64 of the big-endian two's-complement unscaled integer."""
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ConversionWarning(f"not base64 decimal bytes: {encoded[:40]!r}") from None
    if not raw:  # Kafka Connect refuses it too ("Zero length BigInteger"); it is not 0
        raise FieldError("empty bytes are no Connect Decimal (an unscaled value has at least one byte)")
    if len(raw) > 1500:  # over 3600 digits: more than int() may print (and than databases hold)
        raise ConversionWarning(f"decimal of {len(raw)} bytes: too long to be a column value")
    unscaled = int.from_bytes(raw, "big", signed=True)
    try:
        return decimal_text(Decimal(f"{unscaled}E{-scale}"))  # exact: no context rounding
    except InvalidOperation:  # an exponent beyond what Decimal holds
        raise ConversionWarning(f"decimal scale out of range: {scale}") from None


def _epoch_count(value: Any, unit: str) -> int:
    """A Date/Time/Timestamp value's count of ``unit`` (days, ms, us, ns) since the epoch (or
    midnight): 30 digits and more are beyond year 9999 in any unit."""
    return bounded_integer(value, 30, f"{unit} since the epoch")


def _fraction(value: int, unit: str) -> str:
    digits = {"ms": 3, "us": 6, "ns": 9}[unit]
    text = f"{value:0{digits}d}".rstrip("0")
    return "." + text if text else ""


def _time_of_day(value: int, unit: str) -> str:
    """Time since midnight; MySQL TIME can be negative or beyond 24 hours (Debezium keeps that)."""
    sign = "-" if value < 0 else ""
    seconds, fraction = divmod(abs(value), _PER_SECOND[unit])
    hours, rest = divmod(seconds, 3600)
    return f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}{_fraction(fraction, unit)}"


def _wall_clock(value: int, unit: str) -> str:
    """Debezium DATETIME semantics: epoch units of the wall clock read as if it were UTC.

    Beyond years 1-9999 (PostgreSQL's +/-infinity arrive as 9223372036825200000 and
    -9223372036832400000) the value keeps its text, with a warning."""
    seconds, fraction = divmod(value, _PER_SECOND[unit])
    try:
        moment = datetime(1970, 1, 1) + timedelta(seconds=seconds)
    except OverflowError:
        raise ConversionWarning(f"outside years 1-9999: {value} {unit} since the epoch") from None
    return iso_seconds_text(moment) + _fraction(fraction, unit)


def _date(days: int) -> str:
    """Days since the epoch; beyond years 1-9999 the value keeps its text, with a warning."""
    try:
        return (date(1970, 1, 1) + timedelta(days=days)).isoformat()
    except OverflowError:
        raise ConversionWarning(f"outside years 1-9999: {days} days since the epoch") from None


def connect_logical_type(spec: dict[str, Any]) -> str | None:
    name = spec.get("name") or ""
    if name == _CONNECT + "Decimal":
        params = spec.get("parameters") or {}
        precision = params.get("connect.decimal.precision")
        if not precision:
            return "DECIMAL"
        scale = int(params.get("scale", 0))
        if scale < 0:
            # Oracle NUMBER(p,s<0) rounds to 10^-s: integers of up to p-s digits.
            return f"DECIMAL({int(precision) - scale},0)"
        return f"DECIMAL({precision},{scale})"
    if name == "io.debezium.data.VariableScaleDecimal":
        return "DECIMAL"
    if name in (_CONNECT + "Date", _DBZ_TIME + "Date", _DBZ_TIME + "IsoDate"):
        return "DATE"
    if name in _TIME_OF_DAY or name in (_DBZ_TIME + "ZonedTime", _DBZ_TIME + "IsoTime"):
        return "TIME"
    if name in _WALL_CLOCK or name == _DBZ_TIME + "IsoTimestamp":
        return "TIMESTAMP_NTZ"
    if name == _DBZ_TIME + "ZonedTimestamp":
        return "TIMESTAMP"
    if name == "io.debezium.data.Json":
        return "JSON"
    if name == "io.debezium.data.Bits":
        return "BINARY"
    if name.startswith("io.debezium.data.geometry."):
        return "JSON"
    if name in _STRING_TYPES:
        return "STRING"
    return _PRIMITIVE_TYPES.get(str(spec.get("type")))


# What a Kafka Connect schema's keys must hold where the decoders read them (see schema_problem).
_SCHEMA_TEXT_KEYS = ("field", "name", "type")
_SCHEMA_NESTED_KEYS = ("items", "keySchema", "valueSchema")
_SCHEMA_INTEGER_PARAMETERS = ("scale", "connect.decimal.precision")
_INTEGER_TEXT = re.compile(r"\s*-?\d{1,19}\s*")  # int64 at most


def is_integer_text(value: Any) -> bool:
    """An int64 as the exact-number JSON reader gives it (``JsonNumber`` text), or as a string."""
    return isinstance(value, str) and _INTEGER_TEXT.fullmatch(value) is not None


# What reading a Connect schema key of the wrong JSON kind raises (``True`` iterated, a list as
# a dict key, ``int('x')`` of a scale, ...). Schemas are not walked up front (that would cost
# every message a walk of its schema): a decoder that fails so asks :func:`schema_failure` why.
SCHEMA_READ_ERRORS = (ValueError, TypeError, AttributeError, LookupError, ArithmeticError)


def schema_failure(decoder: JsonDecoder, doc: dict[str, Any], message: RawMessage,
                   exc: Exception) -> Exception:
    """What to raise when decoding ``doc`` failed with ``exc``: a :class:`FieldError` (a helper's
    named fault) as ``INVALID_FIELD``; else an ``INVALID_FIELD`` error naming the fault of the
    message's Connect schema (the envelope's, a CloudEvent's ``data.schema`` or the Kafka key's)
    when one has a fault; else ``exc`` itself (no schema explains it)."""
    if isinstance(exc, FieldError):
        return decoder.fail(errors.INVALID_FIELD, str(exc))
    data = doc.get("data") if is_cloudevent(doc) else None
    candidates = [(data.get("schema"), "data.schema")] if isinstance(data, dict) else []
    if "payload" in doc:
        candidates.append((doc.get("schema"), "schema"))
    for schema, path in candidates:
        if isinstance(schema, dict) and (problem := schema_problem(schema, path)):
            return decoder.fail(errors.INVALID_FIELD, problem)
    key = _json_key(message)
    if isinstance(key, dict) and isinstance(key.get("schema"), dict):
        if problem := schema_problem(key["schema"], "schema"):
            return decoder.fail(errors.INVALID_FIELD, f"message key: {problem}")
    return exc


def _json_key(message: RawMessage) -> Any:
    """The Kafka key as JSON, or None."""
    try:
        return loads_exact(message.key.decode("utf-8")) if message.key else None
    except (ValueError, UnicodeDecodeError):
        return None


class SchemaError(FieldError):
    """A Kafka Connect schema that cannot be read; the text names the field path and the fault."""


def schema_error(schema: Any, path: str = "schema") -> SchemaError:
    """The :class:`SchemaError` of a schema a reader could not use (see :func:`schema_problem`)."""
    if not isinstance(schema, dict):
        return SchemaError(f"'{path}' must be an object, got {kind_of(schema)}")
    return SchemaError(schema_problem(schema, path) or f"'{path}' is not a Kafka Connect schema "
                                                       "(a struct of 'fields' with 'before'/'after')")


def check_schema(schema: dict[str, Any], path: str = "schema") -> None:
    """:class:`SchemaError` when :func:`schema_problem` finds a fault."""
    problem = schema_problem(schema, path)
    if problem:
        raise SchemaError(problem)


def schema_problem(schema: dict[str, Any], path: str = "schema") -> str | None:
    """Why a Kafka Connect schema (the envelope's ``schema``, a field's, a key's) cannot be read,
    naming the field path (``'schema.fields[1].fields[0].name' must be a string, got a number``),
    or None. Checks only the keys the decoders read: ``field``/``name``/``type`` text,
    ``parameters`` an object (``scale`` and the precision integers), ``fields`` an array of
    schemas, ``items``/``keySchema``/``valueSchema`` schemas."""
    for key in _SCHEMA_TEXT_KEYS:
        value = schema.get(key)
        if value is not None and type(value) is not str:
            return f"'{path}.{key}' must be a string, got {kind_of(value)}"
    params = schema.get("parameters")
    if params is not None:
        if type(params) is not dict:
            return f"'{path}.parameters' must be an object, got {kind_of(params)}"
        for key in _SCHEMA_INTEGER_PARAMETERS:
            value = params.get(key, "0")
            if not is_integer_text(value):
                return f"'{path}.parameters.{key}' must be an integer, got {value_words(value)}"
    fields = schema.get("fields")
    if fields is not None:
        if type(fields) is not list:
            return f"'{path}.fields' must be an array, got {kind_of(fields)}"
        for index, field in enumerate(fields):
            if type(field) is not dict:
                return f"'{path}.fields[{index}]' must be an object, got {kind_of(field)}"
            problem = schema_problem(field, f"{path}.fields[{index}]")
            if problem:
                return problem
    for key in _SCHEMA_NESTED_KEYS:
        nested = schema.get(key)
        if nested is not None:
            if type(nested) is not dict:
                return f"'{path}.{key}' must be an object, got {kind_of(nested)}"
            problem = schema_problem(nested, f"{path}.{key}")
            if problem:
                return problem
    return None


def value_words(value: Any) -> str:
    """``a string 'x'``, ``a number 1.5``, ``an array``: a bad value for a message."""
    if isinstance(value, str):
        text = value if isinstance(value, JsonNumber) else repr(value)
        return f"{kind_of(value)} {text[:40]}"
    return kind_of(value)


def value_specs(schema: dict[str, Any] | None, path: str = "schema") -> dict[str, dict[str, Any]]:
    """Column -> Connect field schema, from the envelope's ``after`` (or ``before``) struct;
    :class:`SchemaError` (naming ``path`` and the field) when the schema is no Connect schema."""
    if not schema:
        return {}
    fields = schema.get("fields")
    if fields is not None and type(fields) is not list:
        raise schema_error(schema, path)
    structs = {f.get("field"): f for f in fields or () if isinstance(f, dict)}
    if fields and len(structs) != len(fields):  # a field that is no object (or a name twice)
        check_schema(schema, path)
    for side in ("after", "before"):
        struct = structs.get(side)
        columns = struct.get("fields") if struct is not None else None
        if columns is not None and type(columns) is not list:
            raise schema_error(schema, path)
        if columns is not None:
            specs = {f["field"]: f for f in columns if isinstance(f, dict) and "field" in f}
            if len(specs) != len(columns):
                check_schema(schema, path)
            if "op" not in structs:
                # Debezium's envelope schema always describes ``op``; Flink CDC's Kafka sink
                # (debezium-json.include-schema.enabled) describes only before/after, names every
                # BINARY/VARBINARY column io.debezium.data.Bits and writes its bytes as they are
                # (base64), not as Debezium's little-endian bit string.
                specs = {column: {k: v for k, v in spec.items() if k != "name"}
                         if spec.get("name") == "io.debezium.data.Bits" else spec
                         for column, spec in specs.items()}
            return specs
    if "before" in structs or "after" in structs:
        return {}
    # ExtractNewRecordState: the value schema is the row's own struct.
    return {name: f for name, f in structs.items() if isinstance(name, str)}


def is_cloudevent(doc: dict[str, Any]) -> bool:
    """A CloudEvent of Debezium's CloudEventsConverter (see the vendor notes)."""
    if "specversion" not in doc:
        return False
    kind = doc.get("type")
    debezium_type = (isinstance(kind, str) and kind.lower().startswith("io.debezium.")
                     and kind.lower().endswith(".datachangeevent"))
    return debezium_type or any(name.startswith(CE_PREFIX) for name in doc)
