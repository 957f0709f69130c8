"""Canonical text for column values, shared by every format (JSON is read by
:mod:`cdclake.formats.exact_json`; SQL type names map to logical types in
:mod:`cdclake.formats.logical_types`).

Rules (ARCHITECTURE.md, "Canonical text"): integers and decimals keep every digit; binary is
base64; instants are ISO-8601 UTC with their full fraction; wall-clock values keep their fraction
and no zone; booleans are ``true``/``false``; JSON and documents are compact JSON text. A value
that cannot be converted keeps its original text and the caller records a warning.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, datetime, timedelta, tzinfo
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from cdclake.formats.exact_json import JsonNumber

# What ``json.dumps(text, ensure_ascii=False)`` does for a str, without building an encoder.
_json_text = json.encoder.encode_basestring


def dumps_compact(value: Any) -> str:
    """Compact JSON text; :class:`JsonNumber` values are written back digit for digit."""
    if value is None:
        return "null"
    kind = type(value)  # exact types first: the common cases, without the isinstance chain
    if kind is str:
        return _json_text(value)
    if kind is JsonNumber:
        return str(value)
    if kind is dict:
        return "{" + ",".join([f"{_json_text(str(k))}:{dumps_compact(v)}"
                               for k, v in value.items()]) + "}"
    if kind is list:
        return "[" + ",".join([dumps_compact(v) for v in value]) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, JsonNumber):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, float):
        return json.dumps(value)
    if isinstance(value, bytes | bytearray):
        return json.dumps(base64.b64encode(bytes(value)).decode("ascii"))
    if isinstance(value, dict):
        items = ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{dumps_compact(v)}"
                         for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dumps_compact(v) for v in value) + "]"
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class ConversionWarning(ValueError):
    """A value that could not be converted; the caller keeps the original text and warns."""


class _RepeatedKey(Exception):
    """An object of a JSON column value names a key twice (raised by the parse, not a ValueError)."""


def _object_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return document


# Parses JSON column values: exact numbers, and objects checked for repeated keys.
_JSON_VALUE_DECODER = json.JSONDecoder(parse_int=JsonNumber, parse_float=JsonNumber,
                                       parse_constant=JsonNumber, object_pairs_hook=_object_once)


def json_value_text(text: str) -> str:
    """A JSON column's text (PostgreSQL ``json``/``jsonb``, MySQL ``JSON``, ...) as compact JSON,
    numbers digit for digit. :class:`ConversionWarning` (so the text is kept as sent, with a
    warning) when it is no JSON, or when an object repeats a key: PostgreSQL ``json`` keeps both
    values, and compacting would silently keep only the last."""
    try:
        return dumps_compact(_JSON_VALUE_DECODER.decode(text))
    except _RepeatedKey as exc:
        raise ConversionWarning(f"JSON object repeats key {str(exc.args[0])[:40]!r}; compacting it "
                                "would drop a value") from None
    except ValueError:
        raise ConversionWarning(f"not JSON: {text[:40]!r}") from None


# ---------------------------------------------------------------- generic text forms

def text_of(value: Any) -> str | None:
    """Canonical text of a typed JSON value with no further type information."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, JsonNumber | str):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict | list | tuple):
        return dumps_compact(value)
    return str(value)


# Plain decimal text of 1E+999999999 would be a gigabyte: beyond this exponent a value is no
# decimal this product writes out (it keeps its text, with a warning).
MAX_PLAIN_EXPONENT = 10_000
# int() and str() refuse integers of more than 4300 digits (sys.int_info.default_max_str_digits):
# longer integer text is normalised as text.
_INT_DIGITS = 4000


def _short(value: Any) -> str:
    """``repr`` of a bad value for a message, at most about 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def decimal_text(value: Decimal | str) -> str:
    """Plain (no exponent) decimal text with every digit: ``1.2510357E7`` -> ``12510357``;
    :class:`ConversionWarning` for anything else (``'x'``, ``NaN``, ``1E+99999``)."""
    if isinstance(value, Decimal):
        dec = value
    else:
        try:
            dec = Decimal(str(value).strip())
        except (InvalidOperation, ValueError):
            raise ConversionWarning(f"not a decimal: {_short(value)}") from None
    if not dec.is_finite():
        raise ConversionWarning(f"not a finite decimal: {_short(value)}")
    if abs(dec.adjusted()) > MAX_PLAIN_EXPONENT:
        raise ConversionWarning(f"decimal exponent beyond {MAX_PLAIN_EXPONENT}: {_short(value)}")
    return format(dec, "f")


def decimal_column_text(value: Decimal | str) -> str:
    """:func:`decimal_text` of a DECIMAL column's value: SQL decimals have no negative zero, so
    ``-0`` and ``-0.00`` read ``0`` and ``0.00`` (a key spelled either way is the same row).
    Floating columns keep the sign of zero; they use :func:`decimal_text`."""
    text = decimal_text(value)
    if text.startswith("-") and not text.strip("-0."):
        return text[1:]
    return text


def integer_text(value: Any) -> str:
    """Exact integer text from a JSON number or string (``"007"`` -> ``7``; beyond int64 kept).

    A JSON boolean is 1 or 0: MySQL's BOOL is TINYINT(1), which JDBC (Connector/J's default
    ``tinyInt1isBit``) reads as a Boolean, so Java CDC tools write its values as true/false."""
    if isinstance(value, bool):
        return "1" if value else "0"
    text = str(value).strip()
    if re.fullmatch(r"[+-]?\d+", text):
        if len(text) <= _INT_DIGITS:
            return str(int(text))
        if text.isascii():
            return _long_integer_text(text)
    try:
        dec = Decimal(text)
    except InvalidOperation:
        raise ConversionWarning(f"not an integer: {_short(value)}") from None
    if not dec.is_finite() or dec.adjusted() > MAX_PLAIN_EXPONENT or dec != dec.to_integral_value():
        raise ConversionWarning(f"not an integer: {_short(value)}")
    if dec.adjusted() < _INT_DIGITS:
        return str(int(dec))
    return _long_integer_text(format(dec, "f").partition(".")[0])


def integer_digits(text: str) -> str:
    """``str(int(text))`` of integer text of any length (``int()`` refuses over 4300 digits)."""
    if len(text) <= _INT_DIGITS or not text.isascii():
        return str(int(text))
    return _long_integer_text(text)


def bounded_integer(value: Any, max_digits: int, what: str) -> int:
    """``int`` of an integer (read as :func:`integer_text` reads it) of at most ``max_digits``
    digits: a count of days, milliseconds, ... beyond that is out of any range (and a number of
    thousands of digits would cost ``int()`` more than the message is worth)."""
    text = integer_text(value)
    if len(text) - text.startswith("-") > max_digits:
        raise ConversionWarning(f"{what} out of range: {_short(value)}")
    return int(text)


def _long_integer_text(text: str) -> str:
    """Canonical text of ASCII integer text too long for ``int()``: sign kept, zeros stripped."""
    digits = text.lstrip("+-").lstrip("0")
    if not digits:
        return "0"
    return "-" + digits if text.startswith("-") else digits


def boolean_text(value: Any) -> str:
    """``true``/``false`` from booleans, 0/1, t/f, yes/no."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip().lower()
    if text in ("1", "true", "t", "yes", "y", "on"):
        return "true"
    if text in ("0", "false", "f", "no", "n", "off"):
        return "false"
    raise ConversionWarning(f"not a boolean: {value!r}")


# ---------------------------------------------------------------- binary

def base64_of_bytes(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


_PLAIN_JSON = json.JSONDecoder()


def base64_from_byte_list(text: str) -> str:
    """DRS binary: ``"[106, 103]"`` (signed or unsigned decimal bytes) -> base64."""
    inner = text.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        raise ConversionWarning(f"not a byte list: {text[:40]!r}")
    if "t" not in inner and "f" not in inner:  # no true/false, which bytes() would take as 1/0
        try:  # fast path: a JSON array of unsigned bytes, parsed and range-checked in C
            return base64_of_bytes(bytes(_PLAIN_JSON.decode(inner)))
        except (ValueError, TypeError):
            pass  # signed bytes, spaces before commas, ...: the general rules below
    body = inner[1:-1].strip()
    if not body:
        return ""
    try:
        numbers = list(map(int, body.split(",")))
    except ValueError as exc:
        raise ConversionWarning(f"not a byte list: {text[:40]!r}") from exc
    low, high = min(numbers), max(numbers)
    if low < -128 or high > 255:
        raise ConversionWarning(f"byte out of range in {text[:40]!r}")
    data = bytes(numbers) if low >= 0 else bytes([n & 0xFF for n in numbers])
    return base64_of_bytes(data)


def base64_from_hex(text: str) -> str:
    """Hex (optionally ``\\x`` or ``0x`` prefixed) -> base64."""
    body = text.strip()
    for prefix in ("\\x", "0x", "0X"):
        if body.startswith(prefix):
            body = body[len(prefix):]
            break
    try:
        return base64_of_bytes(binascii.unhexlify(body))
    except (binascii.Error, ValueError) as exc:
        raise ConversionWarning(f"not hex: {text[:40]!r}") from exc


def base64_normalised(text: str) -> str:
    """Validate base64 text and return it in canonical (padded, standard alphabet) form."""
    try:
        data = base64.b64decode(text.strip() + "=" * (-len(text.strip()) % 4), validate=False,
                                altchars=b"-_" if ("-" in text or "_" in text) else None)
    except (binascii.Error, ValueError) as exc:
        raise ConversionWarning(f"not base64: {text[:40]!r}") from exc
    return base64_of_bytes(data)


# ---------------------------------------------------------------- time

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_seconds_text(moment: datetime) -> str:
    """``0001-01-01T00:00:00``: the year zero-padded (glibc's ``%Y`` gives ``1`` for year 1)."""
    return f"{moment.year:04d}-" + moment.strftime("%m-%dT%H:%M:%S")


def _shifted(base: datetime, delta: timedelta, text: Any) -> datetime:
    """``base + delta``; beyond years 1-9999 the value keeps its text (ConversionWarning)."""
    try:
        return base + delta
    except OverflowError as exc:
        raise ConversionWarning(f"outside years 1-9999: {text!r}") from exc


def iso_utc_from_micros(micros: int) -> str:
    moment = _shifted(_EPOCH, timedelta(microseconds=micros), micros)
    text = iso_seconds_text(moment)
    fraction = micros % 1_000_000
    if fraction:
        text += "." + f"{fraction:06d}".rstrip("0")
    return text + "Z"


def iso_utc_from_epoch_text(text: str, unit: str) -> str:
    """Epoch number text (``"1624614713.201"``, unit ``s``/``ms``/``us``/``ns``) -> ISO UTC.

    Works on the decimal digits, so fractions finer than microseconds are kept in the text.
    """
    try:
        dec = Decimal(str(text).strip())
    except InvalidOperation as exc:
        raise ConversionWarning(f"not an epoch number: {_short(text)}") from exc
    if not dec.is_finite() or dec.adjusted() > 30:  # far beyond any time (and cheap to refuse)
        raise ConversionWarning(f"not an epoch number: {_short(text)}")
    scale = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    seconds_dec = dec / scale
    return iso_utc_from_seconds_decimal(seconds_dec)


def iso_utc_from_seconds_decimal(seconds: Decimal) -> str:
    whole = int(seconds.to_integral_value(rounding="ROUND_FLOOR"))
    fraction = seconds - whole
    if abs(whole) > 10**12:  # far outside datetime's range (and timedelta's)
        raise ConversionWarning(f"outside years 1-9999: {seconds} s")
    moment = _shifted(_EPOCH, timedelta(seconds=whole), str(seconds))
    text = iso_seconds_text(moment)
    if fraction:
        digits = format(fraction, "f").split(".", 1)[1].rstrip("0")
        if digits:
            text += "." + digits
    return text + "Z"


_EPOCH_MICROS = {"s": 1_000_000, "ms": 1000, "us": 1}


def micros_from_epoch(value: Any, unit: str) -> int:
    """Epoch number (text or int, unit ``s``/``ms``/``us``/``ns``) -> integer microseconds."""
    text = str(value).strip()
    digits = text[1:] if text[:1] == "-" else text
    if len(digits) <= 18 and digits.isascii() and digits.isdigit():
        # Plain integer text (the common case): integer arithmetic, the same result as the
        # Decimal rules below (at most 24 digits, within Decimal's 28, so nothing rounds there).
        number = int(text)
        return number // 1000 if unit == "ns" else number * _EPOCH_MICROS[unit]
    try:
        dec = Decimal(text)
    except InvalidOperation as exc:
        raise ConversionWarning(f"not an epoch number: {_short(value)}") from exc
    if not dec.is_finite() or dec.adjusted() > 30:  # far beyond any time (and cheap to refuse)
        raise ConversionWarning(f"not an epoch number: {_short(value)}")
    factor = {"s": Decimal(1_000_000), "ms": Decimal(1000), "us": Decimal(1),
              "ns": Decimal("0.001")}[unit]
    return int((dec * factor).to_integral_value(rounding="ROUND_FLOOR"))


def _parse_wall(text: str) -> datetime:
    """``YYYY-MM-DD[ T]HH:MM:SS`` -> naive datetime, without strptime (hot path)."""
    try:
        return datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]),
                        int(text[14:16]), int(text[17:19]))
    except ValueError as exc:
        raise ValueError(f"not a valid datetime: {text!r}") from exc


@lru_cache(maxsize=256)
def zone(name: str) -> tzinfo:
    """A time zone by IANA name or ``UTC`` (cached: ZoneInfo lookups are slow)."""
    from zoneinfo import ZoneInfo

    return UTC if name in ("UTC", "Z", "Etc/UTC") else ZoneInfo(name)


_WALL = re.compile(
    r"(?P<date>-?\d{4,}-\d{2}-\d{2})(?:[ T](?P<time>\d{2}:\d{2}(?::\d{2})?)(?:\.(?P<frac>\d+))?)?$"
)


def wall_clock_text(text: str) -> str:
    """Zone-less datetime -> ``YYYY-MM-DDTHH:MM:SS[.fraction]`` (wall clock, fraction kept).

    Invalid calendar values (MySQL ``0000-00-00 00:00:00``) raise :class:`ConversionWarning`;
    the caller keeps the original text.
    """
    match = _WALL.match(str(text).strip())
    if not match:
        raise ConversionWarning(f"not a datetime: {text!r}")
    date_part = match["date"]
    time_part = match["time"] or "00:00:00"
    if len(time_part) == 5:
        time_part += ":00"
    if len(date_part) != 10:
        raise ConversionWarning(f"not a valid datetime: {text!r}")
    try:
        _parse_wall(f"{date_part}T{time_part}")
    except ValueError as exc:
        raise ConversionWarning(f"not a valid datetime: {text!r}") from exc
    out = f"{date_part}T{time_part}"
    if match["frac"] and match["frac"].rstrip("0"):
        out += "." + match["frac"].rstrip("0")
    return out


def date_text(text: str) -> str:
    """``YYYY-MM-DD`` validated (invalid dates raise :class:`ConversionWarning`)."""
    body = str(text).strip()[:10]
    try:
        if len(body) != 10 or body[4] != "-" or body[7] != "-":
            raise ValueError(body)
        datetime(int(body[0:4]), int(body[5:7]), int(body[8:10]))
    except ValueError as exc:
        raise ConversionWarning(f"not a valid date: {text!r}") from exc
    return body


def wall_clock_to_utc_micros(text: str, zone: str = "UTC") -> int:
    """Zone-less local datetime text in ``zone`` -> epoch microseconds (UTC)."""
    canonical = wall_clock_text(text)
    whole, _, frac = canonical.partition(".")
    moment = _parse_wall(whole).replace(tzinfo=globals()["zone"](zone))
    micros = int((moment - _EPOCH).total_seconds()) * 1_000_000
    if frac:
        micros += int((frac + "000000")[:6])
    return micros


def iso_utc_from_zoned_text(text: str) -> str:
    """ISO text with offset/``Z`` (``2021-01-01T10:00:00.123+08:00``) -> ISO UTC, fraction kept."""
    body = str(text).strip()
    match = re.match(
        r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d+))?\s*(Z|[+-]\d{2}:?\d{2})?$", body)
    if not match or not match[4]:
        raise ConversionWarning(f"not a zoned timestamp: {text!r}")
    zone = match[4]
    if zone == "Z":
        offset = timedelta(0)
    else:
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    try:
        local = _parse_wall(f"{match[1]}T{match[2]}")
    except ValueError as exc:
        raise ConversionWarning(f"not a valid timestamp: {text!r}") from exc
    utc = _shifted(local, -offset, text)
    out = iso_seconds_text(utc)
    if match[3] and match[3].rstrip("0"):
        out += "." + match[3].rstrip("0")
    return out + "Z"


_DATE_ONLY = re.compile(r"\s*(\d{4}-\d{2}-\d{2})(?:[ T]00:00(?::00(?:\.0+)?)?)?\s*")


def date_text_exact(text: str) -> str:
    """``YYYY-MM-DD`` validated, never shortened: unlike :func:`date_text`, a value with more than
    a date (a time of day other than midnight, a ``BC`` era, ...) raises
    :class:`ConversionWarning`, so the caller keeps it whole instead of dropping its tail.
    A midnight time (``2021-12-16 00:00:00``) carries nothing more and gives the date."""
    match = _DATE_ONLY.fullmatch(str(text))
    if match is None:
        raise ConversionWarning(f"not a date alone (it would lose its tail as a date): {text!r}")
    return date_text(match[1])
