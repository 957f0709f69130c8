"""Identifiers from messages -> safe Iceberg/Spark names, deterministically, and SQL quoting.

Source databases and tables arrive as free text (``"test "``, ``Order-Items``, Chinese names).
A source table is ``(database, schema, table)``. The schema counts only when it names something
other than the database: PostgreSQL, Oracle and SQL Server schemas, OceanBase tenants. MySQL
sources have none, and CloudCanal repeats the database as the schema.
:func:`current_table_name` maps a source table to ``current.<db>__<table>``, or to
``current.<db>__<schema>__<table>`` when the schema counts, so ``HR.EMP`` and ``SCOTT.EMP``
stay two tables. Each part is lower-cased, every run of characters outside ``[a-z0-9_]`` becomes
``_``, leading and trailing ``_`` are dropped, and a missing database becomes ``nodb``. A part
with characters beyond ASCII, or with no letter or digit, is transliterated (``订单`` -> ``dingdan``,
``café`` -> ``cafe``) and gets the first 8 hex digits of its SHA-256 as a suffix
(``dingdan_3d5436ea``), so ``订单`` and ``用户``, or ``café`` and ``cafe``, stay two tables. Two sources
that still map to the same name (``Order-Items`` and ``order_items``, or one's name to the other's
tombstone table) are a collision: the compaction job refuses both (it never mixes two tables into
one) and reports them. Column names are kept as the source spells them and always quoted with
:func:`quote`; names differing only by case (Spark resolves case-insensitively) are a collision,
except in a table whose source compares column names ignoring case (:func:`case_insensitive_source`:
MySQL and its kin, Oracle, SQL Server, ...), where they are one column and compaction folds them
into one spelling.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from anyascii import anyascii

from cdclake import table_names
from cdclake.formats import registry

CURRENT_NAMESPACE = "current"
HISTORY_NAMESPACE = "history"  # SCD2 history tables (spark_jobs.history)
NO_DATABASE = "nodb"
TOMBSTONE_SUFFIX = table_names.TOMBSTONE_SUFFIX
# Current and history tables are laid out by bucket(KEY_BUCKETS, _cdc_key) once large (a current
# table starts unpartitioned: see compaction.schema.ensure_current_tables and maintenance).
KEY_BUCKETS = 16
# Tombstone-table property: the latest cut-off (epoch microseconds) below which maintenance has
# purged tombstones by event time; compaction looks up the history of a late change below it.
PURGED_BEFORE_PROPERTY = "cdc.tombstones-purged-before"
_UNSAFE = re.compile(r"[^a-z0-9_]+")


# Source databases that compare column names ignoring case (``db_type`` as the decoders give it,
# lower-cased): MySQL and its kin (MariaDB, TiDB, OceanBase's MySQL mode, Vitess); Oracle, Db2 and
# Informix for unquoted names; SQL Server under its default collation. Not PostgreSQL (a quoted
# ``"userId"`` is another column than ``userid``) nor MongoDB, Cassandra and other stores.
CASE_INSENSITIVE_DB_TYPES = frozenset({
    "mysql", "mariadb", "tidb", "ticdc", "ob_mysql", "vitess", "oracle", "ob_oracle",
    "ob_in_oracle_mode", "db2", "informix", "sqlserver", "microsoft sql server"})


def case_insensitive_source(source_format: str | None, db_type: str | None) -> bool:
    """Whether a change row's column names are case-insensitive at its source: by its ``db_type``,
    else by its format (Canal, Maxwell and DRS JSON carry MySQL; GoldenGate mostly Oracle)."""
    if db_type:
        return db_type.lower() in CASE_INSENSITIVE_DB_TYPES
    decoder = registry().get(source_format or "")
    return bool(decoder and decoder.case_insensitive_names)


class IdentifierCollision(ValueError):
    """Two source tables (or columns) map to the same sanitised name."""


def sanitise(text: str | None, empty: str = "_") -> str:
    """``"Order-Items "`` -> ``order_items``, ``"订单"`` -> ``dingdan_3d5436ea``; deterministic,
    never empty (see the module doc)."""
    if text is None or not text.strip():
        return empty
    original = unicodedata.normalize("NFC", text.strip())
    cleaned = _UNSAFE.sub("_", anyascii(original).lower()).strip("_")
    cleaned = re.sub(r"_{2,}", "_", cleaned)  # "__" is the db/table separator: keep it unique
    if original.isascii() and re.search(r"[A-Za-z0-9]", original):
        return cleaned
    # Transliteration and punctuation lose what tells two names apart: the digest keeps it.
    digest = hashlib.sha256(original.encode("utf-8")).hexdigest()[:8]
    return f"{cleaned}_{digest}" if cleaned else f"x_{digest}"


def source_schema(database: str | None, schema: str | None) -> str | None:
    """The schema part of a source table's identity: None when absent or equal to the database
    (the same rule as :data:`SOURCE_SCHEMA_SQL`)."""
    return None if schema is None or schema == database else schema


# ``source_schema`` over a changelog frame's columns, for Spark.
SOURCE_SCHEMA_SQL = ("CASE WHEN schema_name IS NULL OR schema_name = database THEN NULL "
                     "ELSE schema_name END")


def current_table_name(database: str | None, table: str | None, schema: str | None = None) -> str:
    """``current.<db>__<table>`` (``current.<db>__<schema>__<table>`` when the schema counts,
    see :func:`source_schema`) for a source table; unquoted, every part sanitised."""
    parts = [sanitise(database, NO_DATABASE)]
    if source_schema(database, schema) is not None:
        parts.append(sanitise(schema))
    parts.append(sanitise(table))
    return f"{CURRENT_NAMESPACE}." + "__".join(parts)


def prefixed_database(prefix: str | None, database: str | None) -> str | None:
    """The database part of a source table's identity for a topic with a ``table_prefix``:
    ``eu:shop`` (``current.eu_shop__orders``), so the same ``db.table`` from two topics (shards,
    regions) is two tables. Without a prefix, the database."""
    if prefix is None:
        return database
    return f"{prefix}:{NO_DATABASE if database is None else database}"


def tombstone_table_name(current_table: str) -> str:
    return current_table + TOMBSTONE_SUFFIX


def history_table_name(current_table: str) -> str:
    """``current.shop__orders`` -> ``history.shop__orders``."""
    return f"{HISTORY_NAMESPACE}.{current_table.split('.', 1)[1]}"


def quote(name: str) -> str:
    """A Spark SQL identifier part in backticks (backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def quote_table(name: str) -> str:
    """``current.a__b`` -> ```current`.`a__b``` (each dotted part quoted)."""
    return ".".join(quote(part) for part in name.split("."))


def source_label(database: str | None, table: str | None, schema: str | None = None) -> str:
    """``db.schema.table`` as summaries and the UI name a source table; a part the source does not
    have is left out (AWS DMS names a schema and a table: ``test.product``)."""
    parts = (database, source_schema(database, schema), table)
    return ".".join(str(part) for part in parts if part is not None)


def find_collisions(sources: list[tuple[str | None, str | None, str | None]]) -> dict[str, list[str]]:
    """Sanitised name -> the source labels that share it, for ``(database, schema, table)``
    sources; a source whose table name is another's tombstone table collides with it too."""
    by_name: dict[str, set[str]] = {}
    for database, schema, table in sources:
        by_name.setdefault(current_table_name(database, table, schema), set()).add(
            source_label(database, table, schema))
    for name in list(by_name):
        tombstones = tombstone_table_name(name)
        if tombstones in by_name:
            shared = by_name[name] | by_name[tombstones]
            by_name[name] = by_name[tombstones] = shared
    return {name: sorted(labels) for name, labels in by_name.items() if len(labels) > 1}
