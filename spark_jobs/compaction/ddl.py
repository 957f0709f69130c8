"""What an hour's changes declare about their tables' columns: SQL types from the changes'
``column_types`` and from ``ALTER TABLE ... ADD COLUMN`` DDL, joined per column."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdclake.formats.logical_types import (
    IncompatibleTypeChange,
    logical_type_from_sql_name,
    spark_type,
    widen,
)
from spark_jobs.compaction.case import spelled_as
from spark_jobs.compaction.layout import IncompatibleSchemaChange, SourceTable
from spark_jobs.identifiers import (
    SOURCE_SCHEMA_SQL,
    source_label,
)

if TYPE_CHECKING:
    pass

_ADD = re.compile(r"\bADD\s+(?P<column>COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?", re.IGNORECASE)
# One column definition: a name (quoted or bare), then its whole type clause: multi-word names
# (``double precision``, ``character varying``), ``(p[,s])``, a PostgreSQL zone clause and
# MySQL's ``unsigned``/``zerofill``. Constraints, defaults and comments after it are ignored.
_COLUMN_DEFINITION = re.compile(
    r"\s*(?P<quote>[`\"\[])?(?P<name>[^\s`\"\]\(\),]+)[`\"\]]?\s+"
    r"(?P<type>double\s+precision|character\s+varying|bit\s+varying|national\s+(?:char|varchar)"
    r"|long\s+raw|[A-Za-z][A-Za-z0-9_]*)"
    r"(?P<args>\s*\(\s*\d+(?:\s*,\s*\d+)?\s*\))?"
    r"(?P<zone>\s+with(?:out)?(?:\s+local)?\s+time\s+zone)?"
    r"(?P<sign>\s+(?:unsigned|signed))?(?:\s+zerofill)?(?=\s|,|;|\)|$)",
    re.IGNORECASE)
# What may follow ADD instead of a column: an index, key or constraint (``ADD PRIMARY KEY (id)``).
_ADD_NOT_A_COLUMN = frozenset({"PRIMARY", "INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "CONSTRAINT",
                               "FOREIGN", "CHECK", "PARTITION"})


def ddl_type(definition: re.Match[str]) -> str:
    """The type clause of an ``ADD COLUMN`` -> logical type, as the decoders read a column type
    name (:func:`~cdclake.formats.logical_types.logical_type_from_sql_name`; unknown -> STRING)."""
    name = " ".join(definition["type"].split())
    zone = " ".join((definition["zone"] or "").split())
    args = re.sub(r"\s+", "", definition["args"] or "")
    sign = (definition["sign"] or "").strip()
    return logical_type_from_sql_name(" ".join(filter(None, (name, zone))) + args
                                      + (f" {sign}" if sign else ""))


def ddl_added_columns(ddl: str | None) -> list[tuple[str, str]]:
    """``ALTER TABLE t ADD [COLUMN] c TYPE`` (also ``ADD [COLUMN] (c TYPE, d TYPE)`` and SQL
    Server's ``ADD c TYPE, d TYPE``) -> ``[(c, logical type)]``; other DDL, and ADD of an index,
    key or constraint: none."""
    if not ddl or not re.search(r"\bALTER\s+TABLE\b", ddl, re.IGNORECASE):
        return []
    added: list[tuple[str, str]] = []
    for add in _ADD.finditer(ddl):
        rest = ddl[add.end():]
        if rest.startswith("("):  # a parenthesised list of definitions (MySQL, Oracle)
            parts = _top_level_parts(rest[1:])  # up to its closing parenthesis
        else:
            # One definition, or (T-SQL, which has no COLUMN keyword) a list of them; a part that
            # is another clause of the ALTER (``ADD …``, ``DROP …``) is not a definition.
            first, *others = _top_level_parts(rest)
            parts = [first] + ([] if add["column"] else
                               [p for p in others if p.split()[:1] and p.split()[0].upper()
                                not in _ALTER_CLAUSES])
        for part in parts:
            definition = _COLUMN_DEFINITION.match(part)
            if definition and (add["column"] or definition["quote"]
                               or definition["name"].upper() not in _ADD_NOT_A_COLUMN):
                added.append((definition["name"], ddl_type(definition)))
    return added


# Words that start another clause of an ALTER TABLE, not a column definition.
_ALTER_CLAUSES = frozenset({"ADD", "DROP", "ALTER", "MODIFY", "CHANGE", "RENAME", "WITH", "ALGORITHM",
                            "LOCK", "ENGINE", "COMMENT", "AUTO_INCREMENT", "DEFAULT", "CHARACTER",
                            "CHARSET", "COLLATE", "ORDER", "CONVERT", "FORCE"})


def _top_level_parts(text: str) -> list[str]:
    """``a int, b decimal(10,2) default 'x,y'; rest`` -> ``["a int", " b decimal(10,2) default
    'x,y'"]``: ``text`` split at the commas outside parentheses and quotes, up to a ``;`` or an
    unmatched ``)``."""
    parts: list[str] = []
    depth, start, quote = 0, 0, ""
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")" and depth == 0 or char == ";" and depth == 0:
            return [*parts, text[start:index]]
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    return [*parts, text[start:]]


def declared_columns(changes: DataFrame, spellings: Mapping[str, str] | None = None,
                     ) -> dict[SourceTable, dict[str, str | None]]:
    """Per source table: every column named in images, column types or ADD COLUMN DDL, with the
    join of its declared Spark types (None when no change declares one); names spelled as
    ``spellings`` says (see :func:`fold_case`), if given."""
    changes = changes.withColumn("source_schema", F.expr(SOURCE_SCHEMA_SQL))
    source = ("database", "source_schema", "table_name")
    # MongoDB fields have no fixed type (see the module docstring): their columns stay undeclared.
    typed = (changes.where(F.lower(F.coalesce("db_type", F.lit(""))) != "mongodb")
             .select(*source, F.explode("column_types").alias("col", "logical")))
    named = changes.select(*source, F.explode(F.array_union(
        F.coalesce(F.map_keys("before"), F.array().cast("array<string>")),
        F.coalesce(F.map_keys("after"), F.array().cast("array<string>")))).alias("col"),
    ).withColumn("logical", F.lit(None).cast("string"))
    both = typed.unionByName(named)
    if spellings:
        both = both.withColumn("col", spelled_as(spellings)(F.col("col")))
    rows = both.distinct().collect()
    ddl_rows = changes.where(F.col("op") == "DDL").select(*source, "ddl").collect()
    pairs = [(r["database"], r["source_schema"], r["table_name"], r["col"], r["logical"]) for r in rows]
    result = _joined_types(pairs)
    # An ADD COLUMN's type is read from SQL text, which a vendor may type otherwise in its rows
    # (Canal: bit(8) as a number; Debezium: decimal.handling.mode string): it only types a
    # column that no change of the hour declares.
    spelling = spellings or {}
    hinted = _joined_types([(r["database"], r["source_schema"], r["table_name"],
                             spelling.get(c.lower(), c), t)
                            for r in ddl_rows for c, t in ddl_added_columns(r["ddl"])])
    for source_table, hints in hinted.items():
        columns = result.setdefault(source_table, {})
        for column, hint in hints.items():
            columns[column] = columns.get(column) or (DdlType(hint) if hint else None)
    return result


class DdlType(str):
    """A Spark type read from an ``ADD COLUMN`` statement alone: it types the column it creates,
    never changes an existing one (so a re-run of the DDL's hour leaves the table as it is)."""


def _joined_types(pairs: list[tuple[str | None, str | None, str | None, str, str | None]],
                  ) -> dict[SourceTable, dict[str, str | None]]:
    result: dict[SourceTable, dict[str, str | None]] = {}
    for database, schema, table, column, logical in sorted(pairs, key=lambda p: tuple(str(x) for x in p)):
        columns = result.setdefault((database, schema, table), {})
        where = f"{source_label(database, table, schema)} column {column!r}"
        try:
            columns[column] = widen(columns.get(column), spark_type(logical), where)
        except IncompatibleTypeChange as exc:
            raise IncompatibleSchemaChange(str(exc)) from None
    return result
