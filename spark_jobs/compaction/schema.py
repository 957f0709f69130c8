"""Schema evolution of current tables: creating them (with their tombstone tables), adding columns,
widening types, and the spellings a table's columns already have."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cdclake.formats.logical_types import (
    IncompatibleTypeChange,
    natively_widenable,
    widen,
)
from spark_jobs.compaction.case import case_spellings
from spark_jobs.compaction.ddl import DdlType
from spark_jobs.compaction.layout import (
    CASE_FOLDED_PROPERTY,
    KEYLESS_PROPERTY,
    META_COLUMNS,
    OCCURRENCE,
    SOURCE_PROPERTY,
    TABLE_PROPERTIES,
    TOPIC_PROPERTY,
    WIDEN_PREFIX,
    CompactionError,
    CompactionOptions,
    IncompatibleSchemaChange,
)
from spark_jobs.identifiers import (
    IdentifierCollision,
    case_insensitive_source,
    quote,
    quote_table,
    tombstone_table_name,
)
from spark_jobs.tables import in_catalog

if TYPE_CHECKING:
    pass

# Set in a thread that compacts one table of several at once (``compact_hour``'s pool).
_concurrent = threading.local()


class NeedsExclusiveSession(Exception):
    """A column rewrite must write ``main`` with the session's audit branch unset, which no other
    table's compaction may see: the table is compacted again once no other table is."""


@contextmanager
def sharing_session() -> Iterator[None]:
    """Mark this thread's compaction as one of several on one session (see
    :class:`NeedsExclusiveSession`)."""
    _concurrent.active = True
    try:
        yield
    finally:
        _concurrent.active = False


def check_no_image_twins(changes: DataFrame, source: str) -> None:
    """Refuse images that hold two columns differing only by case: no case-insensitive source
    sends one, and folding would have to drop one of the two values."""
    def twins(image: str) -> Column:
        names = F.map_keys(image)
        return F.coalesce(F.size(F.array_distinct(F.transform(names, F.lower))) < F.size(names),
                          F.lit(False))

    found = changes.where(twins("before") | twins("after")).select(
        "kafka_topic", "kafka_partition", "kafka_offset").first()
    if found is not None:
        raise IdentifierCollision(
            f"{source}: the change at {found['kafka_topic']}/{found['kafka_partition']}/"
            f"{found['kafka_offset']} holds columns that differ only by case in one image, which "
            "its source cannot send; fix the producer or the message")


def table_spellings(spark: SparkSession, table: str, changes: DataFrame,
                    declared: Mapping[str, str | None]) -> dict[str, str] | None:
    """The spellings to fold a table's column names into (:func:`case_spellings`), when its source
    names columns case-insensitively and case-only twins have reached it, in this hour or an
    earlier one (the table's ``cdc.case-folded``); None otherwise. ``changes``: the table's."""
    exists = table_exists(spark, table)
    existing = list(table_schema(spark, table)) if exists else []
    folded = exists and table_properties(spark, table).get(CASE_FOLDED_PROPERTY) == "true"
    names = set(existing) | set(declared)
    if not folded and len({n.lower() for n in names}) == len(names):
        return None
    sources = changes.select("source_format", "db_type").distinct().collect()
    if not all(case_insensitive_source(r["source_format"], r["db_type"]) for r in sources):
        return None
    return case_spellings(existing, declared)


def sql_literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def table_exists(spark: SparkSession, table: str) -> bool:
    return bool(spark.catalog.tableExists(table))


def table_properties(spark: SparkSession, table: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {quote_table(table)}").collect()}


def table_schema(spark: SparkSession, table: str) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}


def ensure_current_tables(spark: SparkSession, table: str, source: str, keyless: bool,
                          options: CompactionOptions, topic: str | None = None) -> None:
    """Create the main and tombstone tables if missing; refuse a name already used by another
    source, or by the same source from another topic."""
    main, tomb = quote_table(table), quote_table(tombstone_table_name(table))
    meta = ", ".join(f"{quote(n)} {t}" for n, t in META_COLUMNS)
    if table_exists(spark, table):
        props = table_properties(spark, table)
        if props.get(SOURCE_PROPERTY) not in (None, source):
            raise IdentifierCollision(
                f"{table} already holds source table {props[SOURCE_PROPERTY]!r}; {source!r} maps to the "
                "same name: rename one source table or compact it into another catalog")
        if topic is not None and props.get(TOPIC_PROPERTY) not in (None, topic):
            raise IdentifierCollision(two_topics_message(source, [props[TOPIC_PROPERTY], topic]))
        if topic is not None and TOPIC_PROPERTY not in props:
            spark.sql(f"ALTER TABLE {main} SET TBLPROPERTIES ('{TOPIC_PROPERTY}'={sql_literal(topic)})")
        if (props.get(KEYLESS_PROPERTY) == "true") != keyless:
            raise CompactionError(
                f"{table} was created {'keyless' if not keyless else 'keyed'}... changes of {source!r} now "
                f"{'have no key' if keyless else 'carry keys'}; drop the table and re-run its hours")
    else:
        # Unpartitioned, sorted by key: a small table's MERGE costs about half a bucketed one's.
        # Maintenance buckets it by key once it holds maintenance.bucket_rows rows.
        occurrence = f", {OCCURRENCE} int" if keyless else ""
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {main} ({meta}{occurrence}) USING iceberg "
            f"TBLPROPERTIES ({TABLE_PROPERTIES}, "
            f"'{SOURCE_PROPERTY}'={sql_literal(source)}, '{KEYLESS_PROPERTY}'='{str(keyless).lower()}'"
            + ("" if topic is None else f", '{TOPIC_PROPERTY}'={sql_literal(topic)}") + ")")
        spark.sql(f"ALTER TABLE {quote_table(in_catalog(spark, table))} WRITE LOCALLY ORDERED BY _cdc_key")
    if not table_exists(spark, tombstone_table_name(table)):
        spark.sql(f"CREATE TABLE IF NOT EXISTS {tomb} ({meta}) USING iceberg TBLPROPERTIES "
                  f"({TABLE_PROPERTIES}, '{SOURCE_PROPERTY}'={sql_literal(source)})")


def evolve_schema(spark: SparkSession, table: str, declared: Mapping[str, str | None]) -> dict[str, str]:
    """Add new columns and widen types; returns the data columns (name -> Spark type) after."""
    existing = finish_widening(spark, table, table_schema(spark, table))
    meta_names = {n for n, _ in META_COLUMNS} | {OCCURRENCE}
    by_lower: dict[str, str] = {}
    for name in list(existing) + sorted(declared):
        if name.lower() in by_lower and by_lower[name.lower()] != name:
            raise IdentifierCollision(
                f"{table}: columns {by_lower[name.lower()]!r} and {name!r} differ only by case, which "
                "Spark cannot tell apart; rename one in the source")
        by_lower[name.lower()] = name
    added: dict[str, str] = {}  # one ALTER for all new columns: each ALTER is a metadata commit
    for name in sorted(declared):
        if name in meta_names or name.lower().startswith("_cdc_"):
            raise IdentifierCollision(f"{table}: source column {name!r} uses the reserved _cdc_ prefix "
                                      "of cdclake metadata; rename it in the source")
        new_type = declared[name]
        if isinstance(new_type, DdlType) and name in existing:
            continue
        if name not in existing:
            added[name] = new_type or "string"
            continue
        try:
            change_column_type(spark, table, name, existing[name], new_type)
        except IncompatibleSchemaChange:
            # A column typed before any value arrived (by an ADD COLUMN's SQL type, or named
            # without a type) takes the type its first values declare, whatever it was.
            if new_type is None or not _holds_no_values(spark, table, name):
                raise
            spark.sql(f"ALTER TABLE {quote_table(table)} DROP COLUMN {quote(name)}")
            spark.sql(f"ALTER TABLE {quote_table(table)} ADD COLUMN {quote(name)} {new_type}")
        existing[name] = table_schema(spark, table)[name]
    if added:
        columns = ", ".join(f"{quote(n)} {t}" for n, t in added.items())
        spark.sql(f"ALTER TABLE {quote_table(table)} ADD COLUMNS ({columns})")
        existing.update(added)
    return {n: t for n, t in existing.items() if n not in meta_names}


def _holds_no_values(spark: SparkSession, table: str, name: str) -> bool:
    return not spark.table(table).where(F.col(quote(name)).isNotNull()).limit(1).collect()


def change_column_type(spark: SparkSession, table: str, name: str, current: str, new: str | None) -> None:
    """Widen ``name`` to the join of ``current`` and ``new`` (Iceberg promotion or a rewrite)."""
    try:
        target = widen(current, new, f"{table} column {name!r}")
    except IncompatibleTypeChange as exc:
        raise IncompatibleSchemaChange(str(exc)) from None
    if target == current:
        return
    t, c = quote_table(table), quote(name)
    if natively_widenable(current, target):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN {c} TYPE {target}")
        return
    # bigint -> decimal, or a decimal scale change: Iceberg cannot promote these in place, so
    # the column is rewritten once (exact: the join holds every value of both types). On main,
    # not the hour's branch: a schema is table-wide, so values written to the branch only would
    # leave main reading NULL until the hour publishes (or for good, if it never does). Compaction
    # widens before its first write to the table's branch, so main is still the branch's base.
    if getattr(_concurrent, "active", False):
        raise NeedsExclusiveSession(f"{table} column {name!r}: {current} to {target} rewrites the column")
    temp = quote(WIDEN_PREFIX + name)
    spark.sql(f"ALTER TABLE {t} ADD COLUMN {temp} {target}")
    branch = spark.conf.get("spark.wap.branch", None)
    spark.conf.unset("spark.wap.branch")
    try:
        spark.sql(f"UPDATE {t} SET {temp} = CAST({c} AS {target})")
    finally:
        if branch:
            spark.conf.set("spark.wap.branch", branch)
    spark.sql(f"ALTER TABLE {t} DROP COLUMN {c}")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN {temp} TO {c}")


def finish_widening(spark: SparkSession, table: str, existing: dict[str, str]) -> dict[str, str]:
    """Complete or undo a widening that a killed job left half done (see change_column_type): a
    ``_cdc_widen_<c>`` column beside ``<c>`` was not filled for sure, and goes (the widening runs
    again); without ``<c>``, it holds the values and becomes ``<c>``. Returns the schema after."""
    leftovers = [n for n in existing if n.startswith(WIDEN_PREFIX)]
    for temp in leftovers:
        name, t = temp[len(WIDEN_PREFIX):], quote_table(table)
        if name in existing:
            spark.sql(f"ALTER TABLE {t} DROP COLUMN {quote(temp)}")
        else:
            spark.sql(f"ALTER TABLE {t} RENAME COLUMN {quote(temp)} TO {quote(name)}")
    return table_schema(spark, table) if leftovers else existing


def two_topics_message(source: str, topics: Sequence[str]) -> str:
    return (f"source table {source} arrives from topics {' and '.join(topics)}; a current table has one "
            "source, so set topics[].table_prefix on all but one of them (shards or regions of one "
            "table each get their own)")
