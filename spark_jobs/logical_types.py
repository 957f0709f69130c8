"""Logical column types (``column_types`` of the change row) -> Spark/Iceberg types and casts.

Mapping (the type of a column is a function of its declared types, never of processing order):

| logical | Spark | from canonical text |
|---|---|---|
| ``STRING``, ``JSON``, ``TIME``, unknown labels | ``string`` | as is |
| ``LONG`` | ``bigint`` (see below) | ``try_cast`` |
| ``DECIMAL(p,s)``, p <= 38 | ``decimal(p,s)`` | ``try_cast`` (exact) |
| ``DECIMAL(p,s)``, p > 38; bare ``DECIMAL`` | ``string`` | as is (see below) |
| ``DOUBLE`` / ``BOOLEAN`` / ``DATE`` | ``double`` / ``boolean`` / ``date`` | ``try_cast`` |
| ``TIMESTAMP`` (instant) | ``timestamp`` | ISO-8601 with ``Z`` |
| ``TIMESTAMP_NTZ`` (wall clock) | ``timestamp_ntz`` | wall-clock text |
| ``BINARY`` | ``binary`` | base64 (``try_to_binary``) |

A ``LONG`` value beyond int64 (unsigned BIGINT) widens its column to ``decimal(20,0)`` (or
``decimal(38,0)``). Spark decimals stop at 38 digits and 700-digit values occur, so a DECIMAL
beyond precision 38 stays ``string`` (exact text, never rounded); a bare ``DECIMAL`` without
precision has no scale to fix and is kept as exact text as well.

A column that no change ever declares a type for is ``string``. Types of one column seen in
different changes are joined with :func:`widen`: equal types stay; ``bigint`` and decimals widen to
a decimal holding both (integer digits and scale); decimal precision grows. Anything else (e.g.
``string`` vs ``bigint``, ``timestamp`` vs ``timestamp_ntz``) is :class:`IncompatibleTypeChange`.
The join is commutative, so the final type does not depend on the order hours are compacted in.
"""

from __future__ import annotations

import re
from typing import overload

_DECIMAL = re.compile(r"^\s*DECIMAL\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)\s*$", re.IGNORECASE)
_SPARK_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")
SIMPLE = {
    "STRING": "string", "JSON": "string", "TIME": "string", "LONG": "bigint", "DOUBLE": "double",
    "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp", "TIMESTAMP_NTZ": "timestamp_ntz",
    "BINARY": "binary",
}
MAX_PRECISION = 38  # Spark's decimal limit


class IncompatibleTypeChange(ValueError):
    """A column's types cannot be joined without losing data (e.g. string vs bigint)."""


def spark_type(logical: str | None) -> str | None:
    """Spark SQL type name for a logical type; None when undeclared (``None``/empty)."""
    if not logical:
        return None
    text = logical.strip().upper()
    if text in SIMPLE:
        return SIMPLE[text]
    match = _DECIMAL.match(text)
    if match:
        precision, scale = int(match.group(1)), int(match.group(2) or 0)
        if 0 < precision <= MAX_PRECISION and scale <= precision:
            return f"decimal({precision},{scale})"
    return "string"


def decimal_parts(sql_type: str) -> tuple[int, int] | None:
    match = _SPARK_DECIMAL.match(sql_type.replace(" ", ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


@overload
def widen(current: str, new: str | None, where: str = "") -> str: ...


@overload
def widen(current: str | None, new: str | None, where: str = "") -> str | None: ...


def widen(current: str | None, new: str | None, where: str = "") -> str | None:
    """The join of two Spark types (None = undeclared). Raises :class:`IncompatibleTypeChange`."""
    if current is None or current == new:
        return new if current is None else current
    if new is None:
        return current
    a = decimal_parts(current) or ((19, 0) if current == "bigint" else None)
    b = decimal_parts(new) or ((19, 0) if new == "bigint" else None)
    if a and b:
        scale = max(a[1], b[1])
        digits = max(a[0] - a[1], b[0] - b[1])
        if digits + scale <= MAX_PRECISION:
            return f"decimal({max(digits + scale, 20 if 'bigint' in (current, new) else 0)},{scale})"
    raise IncompatibleTypeChange(
        f"{where}: type {current} cannot change to {new} without losing data; "
        "type the column as text (the topic's string_columns) or fix the source type, and "
        "recreate the table (drop it and re-run its hours)")


def natively_widenable(current: str, new: str) -> bool:
    """Iceberg's own promotions (no data rewrite): decimal precision growth at the same scale."""
    a, b = decimal_parts(current), decimal_parts(new)
    return bool(a and b and a[1] == b[1] and b[0] >= a[0])


def cast_text(text_expr: str, sql_type: str) -> str:
    """Spark SQL expression turning canonical text into ``sql_type`` (NULL when it does not fit)."""
    if sql_type == "string":
        return text_expr
    if sql_type == "binary":
        return f"try_to_binary({text_expr}, 'base64')"
    return f"try_cast({text_expr} AS {sql_type})"

