"""Helpers shared by the formats whose values are typed JSON without column types.

OMS Default/SharePlex, Maxwell, GoldenGate JSON and AWS DMS all write column values as plain JSON
(numbers, strings, booleans, nested arrays/objects) and carry no per-column type. Their canonical
text is therefore decided by the JSON kind alone: numbers keep every digit (never through float),
strings stay as written, nested values become compact JSON.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from cdclake.formats import errors
from cdclake.formats.base import Decoder
from cdclake.formats.exact_json import JsonNumber
from cdclake.formats.values import (
    ConversionWarning,
    decimal_text,
    micros_from_epoch,
    text_of,
    wall_clock_to_utc_micros,
)

_INTEGER = re.compile(r"[+-]?\d+")


# Plain decimal text of 1E+999999999 would be a gigabyte: beyond this exponent the text is kept.
MAX_PLAIN_EXPONENT = 10_000
# Epoch microseconds of 0001-01-01 and 9999-12-31T23:59:59.999999 (what timestamps can print).
MIN_MICROS, MAX_MICROS = -62_135_596_800_000_000, 253_402_300_799_999_999


def plain_decimal_text(text: str) -> str:
    """Exact plain decimal text; :class:`ConversionWarning` if not a finite, sane-sized number."""
    try:
        dec = Decimal(text.strip())
    except (InvalidOperation, ValueError) as exc:
        raise ConversionWarning(f"not a number: {text[:40]!r}") from exc
    if not dec.is_finite() or abs(dec.adjusted()) > MAX_PLAIN_EXPONENT:
        raise ConversionWarning(f"not a finite number of sane size: {text[:40]!r}")
    return decimal_text(dec)


def exact_integer_text(value: Any) -> str:
    """Integer text of any size (no ``int()``, whose digit limit and cost depend on the input)."""
    text = str(value).strip()
    if not _INTEGER.fullmatch(text):
        plain = plain_decimal_text(text)
        whole, _, fraction = plain.partition(".")
        if fraction.strip("0"):
            raise ConversionWarning(f"not an integer: {text[:40]!r}")
        text = whole
    sign = "-" if text.startswith("-") else ""
    digits = text.lstrip("+-").lstrip("0") or "0"
    return "0" if digits == "0" else sign + digits


def checked_micros(micros: int) -> int:
    """``micros`` if it is a printable timestamp (years 1..9999), else :class:`ConversionWarning`."""
    if not MIN_MICROS <= micros <= MAX_MICROS:
        raise ConversionWarning(f"timestamp out of range: {micros} us")
    return micros


def untyped_text(value: Any) -> str | None:
    """Canonical text of a JSON value with no type information.

    Integers keep every digit (beyond int64 too); other numbers become plain decimal text with
    every digit (``9.9E-308`` is written out, not rounded), so a value reads the same whether or
    not a later message brings its type.
    """
    if isinstance(value, JsonNumber):
        text = str(value)
        if _INTEGER.fullmatch(text):
            return text  # JSON integers have no '+' and no leading zeros: already canonical
        try:
            return plain_decimal_text(text)
        except ConversionWarning:
            return text
    return text_of(value)


def untyped_image(image: dict[str, Any] | None,
                  skip: frozenset[str] = frozenset()) -> dict[str, str | None] | None:
    """An image of untyped JSON values as canonical text (``skip`` names metadata keys)."""
    if image is None:
        return None
    return {str(name): untyped_text(value) for name, value in image.items() if name not in skip}


def sortable_sequence(value: Any) -> str | None:
    """Vendor sequence as text whose order is numeric order: digits zero-padded to 20."""
    if value is None:
        return None
    text = str(value).strip()
    if not text or text.lower() == "null":
        return None
    if text.isdigit():
        return text.zfill(20)
    return text


def plain_text(value: Any) -> str | None:
    """Metadata value (id, position, name) as text; JSON numbers keep their digits."""
    if value is None:
        return None
    return text_of(value)


def micros_from_wall_clock(text: Any, zone: str) -> int:
    """Zone-less vendor time (``2020-05-13 15:40:06.000000`` or ``...T...``) in ``zone`` -> micros."""
    if not isinstance(text, str):
        raise ConversionWarning(f"not a datetime text: {text!r}")
    try:
        return checked_micros(wall_clock_to_utc_micros(text, zone))
    except (OverflowError, ValueError, KeyError, OSError) as exc:  # year edges, unknown zones
        raise ConversionWarning(f"not a datetime in zone {zone}: {text!r}") from exc


_ISO = re.compile(
    r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d+))?\s*(Z|[+-]\d{2}:?\d{2})?$")


def wall_clock_field(decoder: Decoder, doc: dict[str, Any], name: str, label: str,
                     example: str, zone: str | None = None) -> int | None:
    """``doc[name]``, a zone-less datetime in ``zone`` (default: the source time zone), as epoch
    microseconds (None when absent or empty); anything else is ``INVALID_FIELD`` naming ``label``."""
    value = doc.get(name)
    if value is None or value == "":
        return None
    try:
        return micros_from_wall_clock(value, zone or decoder.options.source_timezone)
    except ConversionWarning:
        raise decoder.fail(errors.INVALID_FIELD,
                           f"'{label}' must be a datetime like {example}, got {value!r}") from None


def micros_from_iso(text: Any) -> int:
    """ISO-8601 text, ``Z``/offset or none (then UTC) -> epoch microseconds (UTC)."""
    match = _ISO.match(str(text).strip()) if isinstance(text, str) else None
    if not match:
        raise ConversionWarning(f"not an ISO timestamp: {text!r}")
    try:
        moment = datetime.strptime(f"{match[1]} {match[2]}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    except ValueError as exc:
        raise ConversionWarning(f"not a valid ISO timestamp: {text!r}") from exc
    micros = int(moment.timestamp()) * 1_000_000
    if match[3]:
        micros += int((match[3] + "000000")[:6])
    zone = match[4]
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        micros -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60) * 1_000_000
    return checked_micros(micros)


def epoch_micros(value: Any, unit: str) -> int:
    """Epoch number (text or JSON number) in ``unit`` -> checked microseconds; any bad value, huge
    exponents included, is a :class:`ConversionWarning`."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConversionWarning(f"not an epoch number: {value!r}")
    text = str(value).strip()
    try:
        dec = Decimal(text)
    except (InvalidOperation, ValueError) as exc:
        raise ConversionWarning(f"not an epoch number: {text[:40]!r}") from exc
    if not dec.is_finite() or dec.adjusted() > 20:
        raise ConversionWarning(f"not an epoch number in range: {text[:40]!r}")
    return checked_micros(micros_from_epoch(text, unit))


def micros_from_epoch_guess(value: Any) -> int:
    """Epoch number in seconds or milliseconds, told apart by magnitude (Maxwell DDL uses ms)."""
    try:
        milliseconds = abs(Decimal(str(value).strip())) >= 10**11
    except (ArithmeticError, ValueError):
        milliseconds = False  # epoch_micros below reports the bad value
    return epoch_micros(value, "ms" if milliseconds else "s")
