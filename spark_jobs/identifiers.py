"""Identifiers from messages -> safe Iceberg/Spark names, deterministically, and SQL quoting.

Source databases and tables arrive as free text (``"test "``, ``Order-Items``, Chinese names).
:func:`current_table_name` maps ``(database, table)`` to ``current.<db>__<table>``: lower case,
every run of characters outside ``[a-z0-9_]`` becomes ``_``, leading/trailing ``_`` dropped, an
empty result becomes ``_``, a missing database becomes ``nodb``. Two sources that map to the same
name are a collision: the compaction job refuses both (it never mixes two tables into one) and
reports them. Column names are kept as the source spells them and always quoted with
:func:`quote`; names differing only by case (Spark resolves case-insensitively) are a collision.
"""

from __future__ import annotations

import re

CURRENT_NAMESPACE = "current"
TOMBSTONE_SUFFIX = "__tombstones"
_UNSAFE = re.compile(r"[^a-z0-9_]+")


class IdentifierCollision(ValueError):
    """Two source tables (or columns) map to the same sanitised name."""


def sanitise(text: str | None, empty: str = "_") -> str:
    """``"Order-Items "`` -> ``order_items``; deterministic, never empty."""
    if text is None:
        return empty
    cleaned = _UNSAFE.sub("_", text.strip().lower()).strip("_")
    cleaned = re.sub(r"_{2,}", "_", cleaned)  # "__" is the db/table separator: keep it unique
    return cleaned or empty


def current_table_name(database: str | None, table: str | None) -> str:
    """``current.<db>__<table>`` for a source table (unquoted, both parts sanitised)."""
    return f"{CURRENT_NAMESPACE}.{sanitise(database, 'nodb')}__{sanitise(table)}"


def tombstone_table_name(current_table: str) -> str:
    return current_table + TOMBSTONE_SUFFIX


def quote(name: str) -> str:
    """A Spark SQL identifier part in backticks (backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def quote_table(name: str) -> str:
    """``current.a__b`` -> ```current`.`a__b``` (each dotted part quoted)."""
    return ".".join(quote(part) for part in name.split("."))


def source_label(database: str | None, table: str | None) -> str:
    return f"{database}.{table}"


def find_collisions(sources: list[tuple[str | None, str | None]]) -> dict[str, list[str]]:
    """Sanitised name -> the source labels that share it (only names shared by two or more)."""
    by_name: dict[str, set[str]] = {}
    for database, table in sources:
        by_name.setdefault(current_table_name(database, table), set()).add(source_label(database, table))
    return {name: sorted(labels) for name, labels in by_name.items() if len(labels) > 1}
