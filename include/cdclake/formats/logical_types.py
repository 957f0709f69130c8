"""Logical column types (``column_types`` of the change row): from vendors' SQL type names and
``java.sql.Types`` codes, and to Spark/Iceberg types and casts.

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
from functools import lru_cache
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


JAVA_SQL_TYPES: dict[int, str] = {
    -7: "BOOLEAN",      # BIT
    -6: "LONG",         # TINYINT
    5: "LONG",          # SMALLINT
    4: "LONG",          # INTEGER
    -5: "LONG",         # BIGINT
    6: "DOUBLE",        # FLOAT
    7: "DOUBLE",        # REAL
    8: "DOUBLE",        # DOUBLE
    2: "DECIMAL",       # NUMERIC
    3: "DECIMAL",       # DECIMAL
    1: "STRING",        # CHAR
    12: "STRING",       # VARCHAR
    -1: "STRING",       # LONGVARCHAR
    -15: "STRING",      # NCHAR
    -9: "STRING",       # NVARCHAR
    -16: "STRING",      # LONGNVARCHAR
    2005: "STRING",     # CLOB
    2011: "STRING",     # NCLOB
    91: "DATE",
    92: "TIME",
    93: "TIMESTAMP_NTZ",
    2013: "TIME",       # TIME_WITH_TIMEZONE
    2014: "TIMESTAMP",  # TIMESTAMP_WITH_TIMEZONE
    -2: "BINARY",       # BINARY
    -3: "BINARY",       # VARBINARY
    -4: "BINARY",       # LONGVARBINARY
    2004: "BINARY",     # BLOB
    16: "BOOLEAN",
    1111: "STRING",     # OTHER
    0: "STRING",        # NULL
}


_MYSQL_TYPE = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9 _]*?)\s*(?:\((\d+)\s*(?:,\s*(\d+))?\))?\s*"
                         r"(unsigned|signed)?\s*(zerofill)?\s*$", re.IGNORECASE)


@lru_cache(maxsize=4096)
def logical_type_from_sql_name(type_name: str) -> str:
    """Logical type from a SQL type name such as ``bigint(20) unsigned``, ``decimal(10,2)``,
    ``varchar(22)``, ``timestamp(3)``, ``int4``, ``numeric``, ``bytea``."""
    raw = (type_name or "").strip()
    match = _MYSQL_TYPE.match(raw)
    base = (match[1] if match else raw.split("(")[0]).strip().lower()
    precision = match[2] if match else None
    scale = match[3] if match else None
    unsigned = bool(match and match[4] and match[4].lower() == "unsigned")
    if base in ("tinyint", "smallint", "mediumint", "int", "integer", "int2", "int4", "int8",
                "smallserial", "serial", "bigserial", "year", "number_int"):
        return "LONG"
    if base == "bigint":
        return "DECIMAL(20,0)" if unsigned else "LONG"
    if base in ("decimal", "numeric", "number", "dec", "fixed", "money", "smallmoney"):
        if precision:
            return f"DECIMAL({precision},{scale or 0})"
        return "DECIMAL"
    if base in ("float", "double", "real", "float4", "float8", "double precision",
                "binary_float", "binary_double"):
        return "DOUBLE"
    if base in ("bool", "boolean", "bit") and (base != "bit" or precision in (None, "1")):
        return "BOOLEAN"
    if base == "date":
        return "DATE"
    if base in ("time", "timetz", "time with time zone", "time without time zone"):
        return "TIME"
    if base in ("timestamp", "timestamptz", "timestamp with time zone",
                "timestamp with local time zone", "datetimeoffset"):
        return "TIMESTAMP"  # MySQL TIMESTAMP and PostgreSQL timestamptz are instants
    if base in ("datetime", "datetime2", "smalldatetime", "timestamp without time zone"):
        return "TIMESTAMP_NTZ"
    if base in ("binary", "varbinary", "blob", "tinyblob", "mediumblob", "longblob", "bytea",
                "raw", "long raw", "image", "bit varying", "varbit") or base == "bit":
        return "BINARY"
    if base in ("json", "jsonb"):
        return "JSON"
    return "STRING"
