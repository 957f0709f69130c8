"""Compaction: apply one hour of ``cdc.changelog`` to ``current.<db>__<table>`` tables.

One current table per source table ``(database, schema, table)`` (see ``identifiers``: the schema
counts when it is not the database, e.g. ``HR.EMP`` and ``SCOTT.EMP`` are two tables).

Design (why re-runs and shuffled hours give the same tables)
-----------------------------------------------------------
The state of a key is defined as the *fold* of all its changes in total order: the **order key**
``V<event_time micros, 20 digits>|<source_sequence>|<partition>|<offset>|<record_index>``
(zero-padded, so text order is the order; see :func:`order_key`). Event time comes first because
every change has one (snapshot and full-load rows carry no vendor sequence); the vendor sequence
orders the changes of one event time (one transaction, or a clock's resolution: MySQL's binlog
times are seconds), and of two changes with the same time, one with a sequence comes before one
without; then the Kafka coordinates (the tool's emission order). Redelivered duplicates (same
topic, partition, offset, record index) count once. Every stored row keeps the order key of the
last change it reflects.

For each key the hour touches, compaction takes one of two paths:

* **fast path** — every change of the hour is newer than what is stored (or nothing is stored):
  fold the hour's changes onto the stored row. Partial images update only the columns they carry
  (the MERGE keeps the other stored columns), full images and deletes replace.
* **slow path** — some change is not newer (an out-of-order hour, a duplicate, a re-run): recompute
  the key from its *whole* history in ``cdc.changelog`` (all hours) and replace the stored row.
  Every key of an hour that is not later than the newest hour already compacted into the table
  (table property ``cdc.compacted-through``: a re-run or an out-of-order hour) takes the slow
  path, so a re-run never depends on tombstones still being there.

Every run only ever grows the set of changes a key's state is the fold of, and a fold of the same
set is the same state, so after all hours are compacted — once, twice, in any order — each key
holds the fold of all its changes. In the common in-order case only the hour's changes are read,
so the cost follows the change volume; the slow path reads the table's history for the few keys
that need it.

Deletes leave a **tombstone** (key + order key) in ``current.<db>__<table>__tombstones`` so a late
change never resurrects a deleted row; the main table holds live rows only, which is what analysts
query. Tombstones are dropped by the daily maintenance DAG ``compaction.tombstone_retention_days``
after their event time; it records the cut-off on the tombstone table
(``cdc.tombstones-purged-before``), and a key with neither a stored row nor a tombstone whose
changes reach below it takes the slow path too, so a purged delete still wins over an older
change that lands later, on its first run as on any re-run. Re-running or replaying hours does not
depend on tombstones (see the slow path); they only keep the in-order case fast.
``TRUNCATE`` is a table-level change: rows older than it are deleted, its order key is kept in the
table property ``cdc.truncated-before`` (changes older than it never apply), and rows newer than it
are recomputed from history (they may hold partial updates on top of truncated state).

Keys: ``row_key`` (key columns, or a vendor row id). An UPDATE whose before-image key differs from
its key moves the row: the old key gets a delete (tombstone), the new key the row (a partial after
image is completed from the before image). Tables with neither key columns nor row ids are
**keyless**: whole rows form a multiset — ``_cdc_key`` is a hash of the row's values and
``_cdc_occurrence`` numbers its copies; an insert adds a copy, a delete removes one (never below
zero), an update does both.

Typed columns come from ``column_types`` (see :mod:`cdclake.formats.logical_types`). New columns (from
images or ``ALTER TABLE ... ADD COLUMN`` DDL) are added; an ADD COLUMN's SQL type only types a
column no change declares (vendors type some SQL types otherwise in their rows), and a column that
holds no value yet takes the type its first values declare; types are widened by a commutative join;
a change that cannot be represented (string vs bigint, a value that does not fit its column)
fails that table with :class:`IncompatibleSchemaChange` — nothing of it is published — while the
other tables of the hour are still compacted; the summary lists the failures, and the failed
table is held back until it compacts again (see ``held_tables``). One exception: a MySQL zero
date (``0000-00-00``, a zero month or day) in a date or timestamp column is NULL there, as Debezium
gives it; the changelog keeps the text and the decoder's warning. MongoDB collections (``db_type``
MongoDB, from DRS, Debezium or DTS) are schemaless: one field may hold an int in one document and
a double, a string or a sub-document in the next, so their columns are strings holding the exact
canonical text (as Paimon's MongoDB sync types them); the changelog keeps each value's type.

Column names are kept as the source spells them. Where the source compares column names ignoring
case (MySQL and its kin, Oracle, ..., see ``identifiers.case_insensitive_source``), a column
spelled two ways (``ALTER TABLE t CHANGE name Name ...``; ``mysqlType`` and ``sqlType`` that
disagree) is one column: its names are folded into the table's spelling, or for a new column the
lower-case spelling if the hour has it, else the first in sort order (:func:`fold_case`). Elsewhere
such twins fail the table, as Spark cannot tell them apart.

``_cdc_run_id`` is the ``run_id`` of the changelog row that last changed the row (the normalize run
that produced it), so the tables are a pure function of the changelog.

Layout: the main table is partitioned by ``bucket(N, _cdc_key)`` and sorted by ``_cdc_key``, with
merge-on-read deletes/updates, so a MERGE writes delete files and new rows for affected keys only
instead of rewriting data files.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from cdclake.formats.base import key_of
from cdclake.formats.logical_types import (
    IncompatibleTypeChange,
    cast_text,
    logical_type_from_sql_name,
    natively_widenable,
    spark_type,
    widen,
)
from spark_jobs import held_tables, hour_status
from spark_jobs.held_tables import Hold
from spark_jobs.identifiers import (
    NO_DATABASE,
    PURGED_BEFORE_PROPERTY,
    SOURCE_SCHEMA_SQL,
    IdentifierCollision,
    case_insensitive_source,
    current_table_name,
    find_collisions,
    history_table_name,
    prefixed_database,
    quote,
    quote_table,
    source_label,
    tombstone_table_name,
)
from spark_jobs.session import REUSED
from spark_jobs.tables import CHANGELOG, ensure_tables, in_catalog

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

STAGE = "compact"
META_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_cdc_key", "string"),
    ("_cdc_op", "string"),
    ("_cdc_event_time", "timestamp"),
    ("_cdc_order_key", "string"),
    ("_cdc_kafka_topic", "string"),
    ("_cdc_kafka_partition", "int"),
    ("_cdc_kafka_offset", "bigint"),
    ("_cdc_run_id", "string"),
)
OCCURRENCE = "_cdc_occurrence"
WIDEN_PREFIX = "_cdc_widen_"  # a column being widened, while it is rewritten (change_column_type)
TRUNCATE_PROPERTY = "cdc.truncated-before"
SOURCE_PROPERTY = "cdc.source"
KEYLESS_PROPERTY = "cdc.keyless"
TOPIC_PROPERTY = "cdc.topic"  # the one topic the table's changes come from
# The newest landing hour compacted into the table (``YYYY-MM-DDTHH:00:00Z``, text order = time order).
COMPACTED_THROUGH_PROPERTY = "cdc.compacted-through"
# Every table compaction creates (current, tombstone and history tables).
TABLE_PROPERTIES = ("'format-version'='2', 'write.distribution-mode'='hash', "
                    "'write.merge.mode'='merge-on-read', 'write.delete.mode'='merge-on-read', "
                    "'write.update.mode'='merge-on-read'")
# "true" once column names differing only by case have been folded into one spelling (see
# :func:`fold_case`): from then on the table's hour and history changes are always folded.
CASE_FOLDED_PROPERTY = "cdc.case-folded"


class CompactionError(RuntimeError):
    """One table could not be compacted; the message says why and what to do."""


class IncompatibleSchemaChange(CompactionError):
    """A column change that would lose data (type change, value that does not fit)."""


@dataclass(frozen=True)
class CompactionOptions:
    tombstone_retention_days: int = 7
    buckets: int = 16
    # topic -> its ``table_prefix``: the topic's source tables are its own (see :func:`table_space`)
    table_prefixes: Mapping[str, str] = field(default_factory=dict)
    # topic -> the source tables ("db.table" or "table"; "*": all) that keep an SCD2 history
    history: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def keeps_history(self, topic: str | None, source_table: SourceTable) -> bool:
        chosen = self.history.get(topic or "", ())
        database, schema, table_name = source_table
        names = {"*", str(table_name), f"{database}.{table_name}", source_label(database, table_name, schema)}
        return bool(names & set(chosen))


@dataclass(frozen=True)
class TableResult:
    source: str
    table: str
    status: str  # "OK" or "FAILED"
    changes: int  # key-level events (an update that moves a key counts twice)
    slow_keys: int = 0
    message: str = ""


@dataclass
class CompactionSummary:
    hour: dt.datetime
    run_id: str
    tables: list[TableResult] = field(default_factory=list)
    held: list[Hold] = field(default_factory=list)  # the tables held back after this hour

    @property
    def failures(self) -> list[TableResult]:
        return [t for t in self.tables if t.status != "OK"]


# ------------------------------------------------------------------------------------ events

EVENT_SCHEMA = (
    "database string, source_schema string, table_name string, key string, keyless boolean, "
    "kind string, image string, "
    "order_key string, kafka_topic string, kafka_partition int, kafka_offset bigint, "
    "record_index int, part int, op string, event_us bigint, run_id string"
)
_CHANGE_INPUT = (
    "database", f"{SOURCE_SCHEMA_SQL} AS source_schema", "table_name", "op", "row_key",
    "after_is_full", "source_sequence", "kafka_topic",
    "kafka_partition", "kafka_offset", "record_index", "run_id",
    "to_json(primary_key_columns) AS pk_json", "to_json(before) AS before_json",
    "to_json(after) AS after_json", "unix_micros(event_time) AS event_us",
)


# Marks the order key's layout. Keys of the earlier layout (``S<sequence>|...``, ``T<time>|...``)
# sort before every key of this one, as the older changes they are.
ORDER_KEY_LAYOUT = "V"


def order_key(source_sequence: str | None, event_us: int | None, partition: int | None,
              offset: int | None, record_index: int | None) -> str:
    """Sortable text: event time, then vendor sequence (none after any), then Kafka partition,
    offset and record index. A time before 1970 or none counts as 0: such changes come first."""
    time = max(event_us or 0, 0)
    return (f"{ORDER_KEY_LAYOUT}{time:020d}|{source_sequence or ''}|{partition or 0:010d}"
            f"|{offset or 0:020d}|{record_index or 0:010d}")


def row_hash(image: dict[str, Any]) -> str:
    """Identity of a whole row of a keyless table (its values, column order ignored)."""
    text = json.dumps(sorted(image.items()), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _loads(text: Any) -> dict[str, Any] | None:
    if text is None or (isinstance(text, float) and pd.isna(text)):
        return None
    value = json.loads(text)
    return value if isinstance(value, dict) else None


def _none_if_nan(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else value


def events_of_change(change: dict[str, Any]) -> list[dict[str, Any]]:
    """The key-level events of one change row (empty for DDL; one table-level for TRUNCATE)."""
    op = change["op"]
    before, after = _loads(change.get("before_json")), _loads(change.get("after_json"))
    pk = json.loads(change["pk_json"]) if _none_if_nan(change.get("pk_json")) else []
    row_key = _none_if_nan(change.get("row_key"))
    event_us = _none_if_nan(change.get("event_us"))
    event_us = None if event_us is None else int(event_us)
    partition, offset = int(change["kafka_partition"] or 0), int(change["kafka_offset"] or 0)
    record_index = int(_none_if_nan(change.get("record_index")) or 0)
    base = {
        "database": change["database"], "source_schema": _none_if_nan(change.get("source_schema")),
        "table_name": change["table_name"],
        "order_key": order_key(_none_if_nan(change.get("source_sequence")), event_us, partition,
                               offset, record_index),
        "kafka_topic": change["kafka_topic"], "kafka_partition": partition, "kafka_offset": offset,
        "record_index": record_index, "op": op, "event_us": event_us, "run_id": change["run_id"],
    }

    def event(key: str | None, keyless: bool, kind: str, image: dict[str, Any] | None,
              part: int = 0) -> dict[str, Any]:
        return {**base, "key": key, "keyless": keyless, "kind": kind, "part": part,
                "image": None if image is None else json.dumps(image, ensure_ascii=False)}

    if op == "TRUNCATE":
        return [event(None, False, "TRUNCATE", None)]
    if op not in ("INSERT", "UPDATE", "DELETE", "SNAPSHOT"):
        return []
    if row_key is None and not pk:  # keyless: a multiset of whole rows
        out = []
        if op in ("UPDATE", "DELETE") and before is not None:
            out.append(event(row_hash(before), True, "DEC", before, part=1))
        if op != "DELETE" and after is not None:
            whole = {**(before or {}), **after} if op == "UPDATE" and not change["after_is_full"] else after
            out.append(event(row_hash(whole), True, "INC", whole))
        return out
    key = row_key or key_of(after, pk) or key_of(before, pk)
    if key is None:
        return [event(None, False, "UNKEYED", None)]
    if op == "DELETE":
        return [event(key, False, "DELETE", None)]
    if op in ("INSERT", "SNAPSHOT"):
        return [event(key, False, "FULL", after or {})]
    out = []
    before_key = key_of(before, pk) if pk else None
    image, full = after or {}, bool(change["after_is_full"])
    if before_key is not None and before_key != key:  # the update moved the row to a new key
        out.append(event(before_key, False, "DELETE", None, part=1))
        if not full:
            image = {**(before or {}), **image}
    out.append(event(key, False, "FULL" if full else "PARTIAL", image))
    return out


def _events_udf(frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    columns = [c.strip().split(" ")[0] for c in EVENT_SCHEMA.split(",")]
    for frame in frames:
        rows = [e for change in frame.to_dict("records") for e in events_of_change(change)]
        yield pd.DataFrame(rows, columns=columns)


def change_events(changes: DataFrame) -> DataFrame:
    """Changelog rows -> key-level events (see :func:`events_of_change`)."""
    return changes.selectExpr(*_CHANGE_INPUT).mapInPandas(_events_udf, EVENT_SCHEMA)


# ------------------------------------------------------------------------------------ fold

FOLD_SCHEMA = (
    "key string, keyless boolean, deleted boolean, replace boolean, set_cols string, "
    "vals string, count bigint, stored_count bigint, op string, event_us bigint, "
    "order_key string, kafka_topic string, kafka_partition int, kafka_offset bigint, run_id string"
)


def in_order(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events in total order, a redelivered one (same Kafka coordinates) once."""
    seen: set[tuple[Any, ...]] = set()
    ordered = []
    for ev in sorted(events, key=lambda e: (e["order_key"], e["part"], e["kind"])):
        identity = (ev["kafka_topic"], ev["kafka_partition"], ev["kafka_offset"], ev["record_index"],
                    ev["part"])
        if identity not in seen:
            seen.add(identity)
            ordered.append(ev)
    return ordered


def fold_key(events: list[dict[str, Any]], base: str, stored_count: int = 0) -> dict[str, Any]:
    """The state of one key after ``events`` (any order; duplicates once) on top of ``base``.

    ``base`` is ``PRESENT`` (a stored live row, values unknown here: partial changes then set
    only their columns, ``replace`` stays False) or ``ABSENT`` (nothing, or a tombstone).
    """
    ordered = in_order(events)
    last = ordered[-1]
    keyless = bool(last["keyless"])
    result = {"key": last["key"], "keyless": keyless, "stored_count": stored_count, "op": last["op"],
              "event_us": last["event_us"], "order_key": last["order_key"],
              "kafka_topic": last["kafka_topic"], "kafka_partition": last["kafka_partition"],
              "kafka_offset": last["kafka_offset"], "run_id": last["run_id"]}
    if keyless:
        count = stored_count if base == "PRESENT" else 0
        image = None
        for ev in ordered:
            image = ev["image"] if ev["image"] is not None else image
            count = count + 1 if ev["kind"] == "INC" else max(count - 1, 0)
        return {**result, "deleted": count == 0, "replace": True, "set_cols": None,
                "vals": image, "count": count}
    exists: bool | None = None if base == "PRESENT" else False  # None: present, values unknown
    replace = base != "PRESENT"
    values: dict[str, Any] = {}
    set_cols: set[str] = set()
    for ev in ordered:
        image = _loads(ev["image"]) or {}
        if ev["kind"] == "DELETE":
            exists, values, replace, set_cols = False, {}, True, set()
        elif ev["kind"] == "FULL" or exists is False:
            exists, values, replace = True, dict(image), True
        else:  # partial image onto a present row
            values.update(image)
            set_cols |= set(image)
    if exists is False:
        result["op"] = "DELETE"  # a tombstone, whether a DELETE or a key-moving UPDATE made it
    return {**result, "deleted": exists is False, "replace": replace,
            "set_cols": None if replace else json.dumps(sorted(set_cols)),
            "vals": json.dumps(values, ensure_ascii=False), "count": 0 if exists is False else 1}


def events_by_key(frames: Iterable[pd.DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """A partition's events (pandas batches) as plain records grouped by key."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for frame in frames:
        for record in frame.to_dict("records"):
            record["event_us"] = _none_if_nan(record["event_us"])
            record["image"] = _none_if_nan(record["image"])
            groups.setdefault(record["key"], []).append(record)
    return groups


def _fold_partitions(frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """Fold every key of a partition (rows arrive clustered by key): plain Python per key, one
    pandas frame per batch — a pandas frame per key (``applyInPandas``) costs far more."""
    columns = [c.strip().split(" ")[0] for c in FOLD_SCHEMA.split(",")]
    out = []
    for records in events_by_key(frames).values():
        first = records[0]
        result = fold_key(records, first["base"], int(first["stored_count"] or 0))
        if result["event_us"] is not None:
            result["event_us"] = int(result["event_us"])
        out.append(result)
        if len(out) >= 10_000:
            yield pd.DataFrame(out, columns=columns)
            out = []
    if out:
        yield pd.DataFrame(out, columns=columns)


def fold_events(events: DataFrame) -> DataFrame:
    """Events with ``base`` and ``stored_count`` columns -> one state row per key."""
    return events.repartition("key").mapInPandas(_fold_partitions, FOLD_SCHEMA)


# ------------------------------------------------------------------------------------ schema

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


SourceTable = tuple[str | None, str | None, str | None]  # (database, source schema, table)


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
        both = both.withColumn("col", _spelled(spellings)(F.col("col")))
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


# ------------------------------------------------------------------------------------ names

def case_spellings(existing: Iterable[str], declared: Iterable[str]) -> dict[str, str]:
    """Lower-case column name -> the one spelling the table gives it: the table's own where it has
    the column; for a new one the all-lower-case spelling if the hour has it, else the first in
    sort order."""
    spellings: dict[str, str] = {}
    for name in sorted(declared, key=lambda n: (n != n.lower(), n)):
        spellings.setdefault(name.lower(), name)
    spellings.update({name.lower(): name for name in existing})
    return spellings


def _spelled(spellings: Mapping[str, str]) -> Callable[[Column], Column]:
    spelling = F.create_map(*[F.lit(part) for pair in sorted(spellings.items()) for part in pair])
    return lambda name: F.coalesce(F.try_element_at(spelling, F.lower(name)), name)


def fold_case(changes: DataFrame, spellings: Mapping[str, str]) -> DataFrame:
    """Changelog rows with the column names of their images and key columns spelled as
    ``spellings`` says (:func:`case_spellings`; column types are folded where they are read, in
    :func:`declared_columns`, as one message may type a column under both spellings)."""
    spelled = _spelled(spellings)
    return (changes
            .withColumn("before", F.transform_keys("before", lambda name, _: spelled(name)))
            .withColumn("after", F.transform_keys("after", lambda name, _: spelled(name)))
            .withColumn("primary_key_columns", F.transform("primary_key_columns", spelled)))


def _check_no_image_twins(changes: DataFrame, source: str) -> None:
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


# ------------------------------------------------------------------------------------ tables

def _literal(text: str) -> str:
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
            raise IdentifierCollision(_two_topics(source, [props[TOPIC_PROPERTY], topic]))
        if topic is not None and TOPIC_PROPERTY not in props:
            spark.sql(f"ALTER TABLE {main} SET TBLPROPERTIES ('{TOPIC_PROPERTY}'={_literal(topic)})")
        if (props.get(KEYLESS_PROPERTY) == "true") != keyless:
            raise CompactionError(
                f"{table} was created {'keyless' if not keyless else 'keyed'}... changes of {source!r} now "
                f"{'have no key' if keyless else 'carry keys'}; drop the table and re-run its hours")
    else:
        occurrence = f", {OCCURRENCE} int" if keyless else ""
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {main} ({meta}{occurrence}) USING iceberg "
            f"PARTITIONED BY (bucket({options.buckets}, _cdc_key)) TBLPROPERTIES ({TABLE_PROPERTIES}, "
            f"'{SOURCE_PROPERTY}'={_literal(source)}, '{KEYLESS_PROPERTY}'='{str(keyless).lower()}'"
            + ("" if topic is None else f", '{TOPIC_PROPERTY}'={_literal(topic)}") + ")")
        spark.sql(f"ALTER TABLE {quote_table(in_catalog(spark, table))} "
                  "WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY _cdc_key")
    if not table_exists(spark, tombstone_table_name(table)):
        spark.sql(f"CREATE TABLE IF NOT EXISTS {tomb} ({meta}) USING iceberg TBLPROPERTIES "
                  f"({TABLE_PROPERTIES}, '{SOURCE_PROPERTY}'={_literal(source)})")


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
    added: dict[str, str] = {}  # one ALTER for all new columns: a commit each costs ~0.1 s
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


# ------------------------------------------------------------------------------------ apply

def _typed_source(results: DataFrame, columns: dict[str, str]) -> DataFrame:
    """Fold results -> MERGE source: typed data columns + metadata + merge flags."""
    vals = F.from_json("vals", "map<string,string>")
    typed = results.withColumn("_vals", vals)
    select = [F.expr(cast_text(f"_vals[{_literal(name)}]", sql_type)).alias(name)
              for name, sql_type in sorted(columns.items())]
    return typed.select(
        *select,
        F.col("key").alias("_cdc_key"), F.col("op").alias("_cdc_op"),
        F.timestamp_micros("event_us").alias("_cdc_event_time"),
        F.col("order_key").alias("_cdc_order_key"), F.col("kafka_topic").alias("_cdc_kafka_topic"),
        F.col("kafka_partition").alias("_cdc_kafka_partition"),
        F.col("kafka_offset").alias("_cdc_kafka_offset"), F.col("run_id").alias("_cdc_run_id"),
        F.col("deleted").alias("_cdc_m_deleted"), F.col("replace").alias("_cdc_m_replace"),
        F.from_json("set_cols", "array<string>").alias("_cdc_m_set"),
        F.col("count").alias("_cdc_m_count"), F.col("stored_count").alias("_cdc_m_stored_count"))


_DATE_TYPES = frozenset({"date", "timestamp", "timestamp_ntz"})
# Values that name no date, time or number, so a typed column holds NULL for them (the changelog
# keeps them as sent, with the decoder's warning), as Debezium and Maxwell's
# output_null_zerodates give MySQL's zero dates:
# - dates: MySQL's zero dates ('0000-00-00', '2021-00-15 10:00:00'); PostgreSQL's 'infinity' and
#   '-infinity', as words or as the sentinels Debezium's PostgreSQL connector sends for them
#   (9223372036825200000 and -9223372036832400000, years beyond 9999);
# - decimals: PostgreSQL numeric's 'NaN', 'Infinity' and '-Infinity' (also DTS's NaN).
_NO_DATE = (r"(?i)^([0-9]{4}-(00-[0-9]{2}|[0-9]{2}-00)([ T].*)?|[+-]?infinity"
            r"|9223372036825200000|-9223372036832400000)$")
_NO_NUMBER = r"(?i)^[+-]?(nan|inf|infinity)$"


def check_values(spark: SparkSession, table: str, results: DataFrame,
                 columns: dict[str, str]) -> dict[str, str]:
    """Widen bigint columns whose new values exceed int64; fail on values that fit no column type.

    Returns the (possibly widened) columns.
    """
    typed_cols = {n: t for n, t in columns.items() if t != "string"}
    if not typed_cols:
        return columns
    vals = F.from_json("vals", "map<string,string>")
    aggs = []
    for i, (name, sql_type) in enumerate(sorted(typed_cols.items())):
        text = f"_vals[{_literal(name)}]"
        bad = f"{text} IS NOT NULL AND {cast_text(text, sql_type)} IS NULL"
        if sql_type in _DATE_TYPES:
            bad += f" AND NOT ({text} RLIKE {_literal(_NO_DATE)})"
        elif sql_type.startswith("decimal"):
            bad += f" AND NOT ({text} RLIKE {_literal(_NO_NUMBER)})"
        aggs.append(F.expr(f"min(CASE WHEN {bad} THEN {text} END)").alias(f"bad{i}"))
        if sql_type == "bigint":
            aggs.append(F.expr(f"max(CASE WHEN {bad} AND try_cast({text} AS decimal(38,0)) IS NOT NULL "
                               f"THEN length(regexp_replace({text}, '^[-+]', '')) END)").alias(f"wide{i}"))
    stats = results.where(~F.col("deleted")).withColumn("_vals", vals).agg(*aggs).collect()[0].asDict()
    out = dict(columns)
    for i, (name, sql_type) in enumerate(sorted(typed_cols.items())):
        digits = stats.get(f"wide{i}")
        if digits:
            widened = "decimal(20,0)" if digits <= 20 else "decimal(38,0)"
            change_column_type(spark, table, name, sql_type, widened)
            out[name] = table_schema(spark, table)[name]
            continue
        if stats[f"bad{i}"] is not None:
            raise IncompatibleSchemaChange(
                f"{table} column {name!r} is {sql_type} but a change holds {str(stats[f'bad{i}'])[:80]!r}, "
                "which does not fit; type the column as text (the topic's string_columns) and "
                "recreate the table (drop it and re-run its hours), or fix the source")
    return out


def merge_keyed(spark: SparkSession, table: str, source: DataFrame, columns: dict[str, str]) -> None:
    view = f"_cdc_src_{abs(hash(table)) % 10**8}"
    source.createOrReplaceTempView(view)
    meta = [n for n, _ in META_COLUMNS]
    sets = [f"{quote(c)} = CASE WHEN s._cdc_m_replace OR array_contains(s._cdc_m_set, {_literal(c)}) "
            f"THEN s.{quote(c)} ELSE t.{quote(c)} END" for c in sorted(columns)]
    sets += [f"{quote(m)} = s.{quote(m)}" for m in meta]
    names = [quote(c) for c in sorted(columns)] + [quote(m) for m in meta]
    spark.sql(f"""
        MERGE INTO {quote_table(table)} t USING {view} s ON t._cdc_key = s._cdc_key
        WHEN MATCHED AND s._cdc_m_deleted THEN DELETE
        WHEN MATCHED THEN UPDATE SET {', '.join(sets)}
        WHEN NOT MATCHED AND NOT s._cdc_m_deleted THEN INSERT ({', '.join(names)})
            VALUES ({', '.join('s.' + n for n in names)})""")


def merge_keyless(spark: SparkSession, table: str, source: DataFrame, columns: dict[str, str]) -> None:
    view = f"_cdc_src_{abs(hash(table)) % 10**8}"
    copies = (source.withColumn(OCCURRENCE, F.explode(F.sequence(
        F.lit(1), F.greatest(F.col("_cdc_m_count"), F.col("_cdc_m_stored_count"), F.lit(1)).cast("int"))))
        .withColumn("_cdc_m_keep", F.col(OCCURRENCE) <= F.col("_cdc_m_count")))
    copies.createOrReplaceTempView(view)
    names = [quote(c) for c in sorted(columns)] + [quote(m) for m, _ in META_COLUMNS] + [OCCURRENCE]
    sets = [f"{n} = s.{n}" for n in names]
    spark.sql(f"""
        MERGE INTO {quote_table(table)} t USING {view} s
            ON t._cdc_key = s._cdc_key AND t.{OCCURRENCE} = s.{OCCURRENCE}
        WHEN MATCHED AND NOT s._cdc_m_keep THEN DELETE
        WHEN MATCHED THEN UPDATE SET {', '.join(sets)}
        WHEN NOT MATCHED AND s._cdc_m_keep THEN INSERT ({', '.join(names)})
            VALUES ({', '.join('s.' + n for n in names)})""")


def merge_tombstones(spark: SparkSession, table: str, source: DataFrame) -> None:
    view = f"_cdc_tomb_{abs(hash(table)) % 10**8}"
    meta = [quote(n) for n, _ in META_COLUMNS]
    source.select(*[n for n, _ in META_COLUMNS], "_cdc_m_deleted").createOrReplaceTempView(view)
    spark.sql(f"""
        MERGE INTO {quote_table(tombstone_table_name(table))} t USING {view} s ON t._cdc_key = s._cdc_key
        WHEN MATCHED AND s._cdc_m_deleted THEN UPDATE SET {', '.join(f'{m} = s.{m}' for m in meta)}
        WHEN MATCHED THEN DELETE
        WHEN NOT MATCHED AND s._cdc_m_deleted THEN INSERT ({', '.join(meta)})
            VALUES ({', '.join('s.' + m for m in meta)})""")


def apply_truncate(spark: SparkSession, table: str, truncate_key: str) -> None:
    """Delete the rows and tombstones older than the hour's TRUNCATE and record its order key.
    Also when the key is recorded already: an attempt that recorded it may have been discarded
    before it published its deletes (the deletes find nothing when it had)."""
    t = quote_table(table)
    spark.sql(f"DELETE FROM {t} WHERE _cdc_order_key < {_literal(truncate_key)}")
    spark.sql(f"DELETE FROM {quote_table(tombstone_table_name(table))} "
              f"WHERE _cdc_order_key < {_literal(truncate_key)}")
    if table_properties(spark, table).get(TRUNCATE_PROPERTY) != truncate_key:
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('{TRUNCATE_PROPERTY}'={_literal(truncate_key)})")


def compact_table(spark: SparkSession, source_table: SourceTable,
                  hour_changes: DataFrame, hour_events: DataFrame, declared: dict[str, str | None],
                  hour: dt.datetime, options: CompactionOptions, changelog: str = CHANGELOG,
                  hour_kinds: Sequence[Row] | None = None, topic: str | None = None,
                  through: dt.datetime | None = None) -> TableResult:
    """Apply one source table's changes of the hour (see the module docstring). ``hour_kinds``:
    the table's events counted by kind (``kind``, ``n``, newest ``k``), when counted already;
    ``topic``: the one topic the table's changes come from (the hour's, checked against the
    table's); ``through``: the newest landing hour among the changes when they span several (a
    held table catching up, see ``held_tables``)."""
    database, schema, table_name = source_table
    table = current_table_name(database, table_name, schema)
    source = source_label(database, table_name, schema)
    events = hour_events.where(_same_table(source_table, F.col("source_schema")))
    mine = hour_changes.where(_same_table(source_table, F.expr(SOURCE_SCHEMA_SQL)))
    spellings = table_spellings(spark, table, mine, declared)
    if spellings:
        _check_no_image_twins(mine, source)
        mine = fold_case(mine, spellings)
        events = change_events(mine)
        declared = declared_columns(mine, spellings).get(source_table, {})
        hour_kinds = None
    by_kind = hour_kinds if hour_kinds is not None else \
        events.groupBy("kind").agg(F.count("*").alias("n"), F.max("order_key").alias("k")).collect()
    kinds = {r["kind"]: r["n"] for r in by_kind}
    newest_truncate = next((r["k"] for r in by_kind if r["kind"] == "TRUNCATE"), None)
    if kinds.get("UNKEYED"):
        raise CompactionError(f"{source}: {kinds['UNKEYED']} change(s) have key columns but no key "
                              "values in their images; fix the decoder or the key override")
    has_keyed = any(kinds.get(k) for k in ("FULL", "PARTIAL", "DELETE"))
    has_keyless = any(kinds.get(k) for k in ("INC", "DEC"))
    if has_keyed and has_keyless:
        raise CompactionError(f"{source}: some changes carry keys and some do not; set a key override "
                              "for the table (topics[].primary_keys) so every change has a key")
    keyless = has_keyless
    if not (has_keyed or has_keyless) and table_exists(spark, table):
        keyless = table_properties(spark, table).get(KEYLESS_PROPERTY) == "true"
    ensure_current_tables(spark, table, source, keyless, options, topic)
    columns = evolve_schema(spark, table, declared)

    properties = table_properties(spark, table)
    if spellings and properties.get(CASE_FOLDED_PROPERTY) != "true":
        spark.sql(f"ALTER TABLE {quote_table(table)} SET TBLPROPERTIES ('{CASE_FOLDED_PROPERTY}'='true')")
    stored_truncate = properties.get(TRUNCATE_PROPERTY)
    hour_label = hour.strftime("%Y-%m-%dT%H:00:00Z")
    through_label = max(hour, through or hour).strftime("%Y-%m-%dT%H:00:00Z")
    compacted_through = properties.get(COMPACTED_THROUGH_PROPERTY)
    # A re-run or an out-of-order hour: later hours may hold changes of its keys (whose tombstones
    # may be purged by now), so every key is recomputed from its whole history.
    replay = compacted_through is not None and hour_label <= compacted_through
    # The hour's TRUNCATE, unless an earlier one supersedes it; a re-run of its hour applies it
    # again (see apply_truncate).
    newer_truncate = newest_truncate if newest_truncate and (
        stored_truncate is None or newest_truncate >= stored_truncate) else None
    main = spark.table(table)
    truncate_slow = (main.where(F.col("_cdc_order_key") > F.lit(newer_truncate)).select(
        F.col("_cdc_key").alias("key")).distinct().localCheckpoint() if newer_truncate else None)
    truncated_before = newer_truncate or stored_truncate

    key_events = events.where(F.col("key").isNotNull())
    if truncated_before:
        key_events = key_events.where(F.col("order_key") > F.lit(truncated_before))
    batch = key_events.groupBy("key").agg(F.min("order_key").alias("batch_min"),
                                          F.min("event_us").alias("batch_min_us"))
    if truncate_slow is not None:
        batch = batch.join(truncate_slow.withColumn("forced", F.lit(True)), "key", "full")
    else:
        batch = batch.withColumn("forced", F.lit(None).cast("boolean"))
    if replay:
        batch = batch.withColumn("forced", F.lit(True))
    # Rows and tombstones older than the hour's TRUNCATE count as gone here; they are deleted just
    # before the MERGE, after any column widening (which commits to main: see change_column_type).
    live, tombs = spark.table(table), spark.table(tombstone_table_name(table))
    if newer_truncate:
        live = live.where(F.col("_cdc_order_key") >= F.lit(newer_truncate))
        tombs = tombs.where(F.col("_cdc_order_key") >= F.lit(newer_truncate))
    stored = (live.groupBy(F.col("_cdc_key").alias("key"))
              .agg(F.max("_cdc_order_key").alias("stored_order"), F.count("*").alias("stored_count"))
              .withColumn("present", F.lit(True)))
    tomb = tombs.select(F.col("_cdc_key").alias("key"), F.col("_cdc_order_key").alias("tomb_order"))
    purged_before = table_properties(spark, tombstone_table_name(table)).get(PURGED_BEFORE_PROPERTY)
    # No stored row and no tombstone, but a change older than purged tombstones: its delete may
    # have been purged, so the key's history decides.
    below_purge = (F.col("batch_min_us") < F.lit(int(purged_before)) if purged_before
                   else F.lit(False))
    classified = (batch.join(stored, "key", "left").join(tomb, "key", "left").select(
        "key", F.coalesce("stored_count", F.lit(0)).alias("stored_count"),
        F.when(F.col("forced") | (F.col("batch_min") <= F.greatest("stored_order", "tomb_order")), "SLOW")
        .when(F.col("present"), "PRESENT").when(F.col("tomb_order").isNull() & below_purge, "SLOW")
        .otherwise("ABSENT").alias("base"), F.col("tomb_order").isNotNull().alias("tombstoned"))
    ).localCheckpoint()
    counted = classified.groupBy("base").agg(
        F.count("*").alias("n"), F.sum(F.col("tombstoned").cast("int")).alias("tombstoned")).collect()
    bases = {r["base"]: r["n"] for r in counted}
    tombstoned = sum(r["tombstoned"] or 0 for r in counted)
    slow_keys = classified.where(F.col("base") == "SLOW").select("key", "stored_count")
    n_slow = bases.get("SLOW", 0)
    fast = key_events.join(classified.where(F.col("base") != "SLOW").drop("tombstoned"), "key")
    if n_slow:
        past = table_changes(spark, changelog, options, source_table, topic, spellings)
        past_events = change_events(past).where(F.col("key").isNotNull() & (F.col("kind") != "TRUNCATE"))
        if truncated_before:
            past_events = past_events.where(F.col("order_key") > F.lit(truncated_before))
        # A re-run's keys are the whole hour: too many to broadcast.
        keys = slow_keys if replay else slow_keys.hint("broadcast")
        slow = past_events.join(keys, "key").withColumn("base", F.lit("ABSENT"))
        fold_input = fast.unionByName(slow)
    else:
        fold_input = fast
    results = fold_events(fold_input).persist(REUSED)
    try:
        columns = check_values(spark, table, results, columns)
        if newer_truncate:
            apply_truncate(spark, table, newer_truncate)
        merge_source = _typed_source(results, columns)
        if keyless:
            merge_keyless(spark, table, merge_source, columns)
        else:
            merge_keyed(spark, table, merge_source, columns)
        # A tombstone is written when a key is deleted (a delete, a key move, a keyless row's last
        # copy) and dropped when a key comes back over it; slow keys are recomputed from history.
        if n_slow or tombstoned or kinds.get("DELETE") or kinds.get("DEC"):
            merge_tombstones(spark, table, merge_source)
        if not keyless and options.keeps_history(topic, source_table):
            from spark_jobs import history  # built on this module's events and schema helpers

            # The hour's keys, from the table's whole changelog; a TRUNCATE ends every key's version.
            touched = None if newest_truncate else \
                events.where(F.col("key").isNotNull()).select("key").distinct()
            changes = table_changes(spark, changelog, options, source_table, topic, spellings)
            history.update(spark, table, source, changes, touched, columns, options.buckets)
        # Tombstones are purged by the daily maintenance DAG only: purging here, by event time,
        # dropped the tombstones of replayed historic hours at once, so re-running an earlier
        # hour afterwards resurrected deleted rows.
        if not replay:
            spark.sql(f"ALTER TABLE {quote_table(table)} SET TBLPROPERTIES "
                      f"('{COMPACTED_THROUGH_PROPERTY}'={_literal(through_label)})")
    finally:
        results.unpersist()
    return TableResult(source, table, "OK", sum(kinds.values()), n_slow)


def table_changes(spark: SparkSession, changelog: str, options: CompactionOptions,
                   source_table: SourceTable, topic: str | None,
                   spellings: Mapping[str, str] | None) -> DataFrame:
    """Every changelog row of one source table (all hours), names as compaction reads them."""
    past = table_space(spark.table(changelog), options.table_prefixes)
    if topic is not None:
        past = past.where(F.col("kafka_topic") == F.lit(topic))
    past = past.where(_same_table(source_table, F.expr(SOURCE_SCHEMA_SQL)))
    if spellings:
        database, schema, table_name = source_table
        _check_no_image_twins(past, source_label(database, table_name, schema))
        past = fold_case(past, spellings)
    return past


def _same_table(source_table: SourceTable, schema_column: Any) -> Any:
    """Rows of ``source_table``; ``schema_column`` is the frame's source schema (see
    ``identifiers.source_schema``)."""
    def equal(column: Any, value: str | None) -> Any:
        return column.isNull() if value is None else column == F.lit(value)

    database, schema, table_name = source_table
    return equal(F.col("database"), database) & equal(schema_column, schema) & \
        equal(F.col("table_name"), table_name)


def table_space(changes: DataFrame, prefixes: Mapping[str, str]) -> DataFrame:
    """Changelog rows with ``database`` as compaction sees it: see
    ``identifiers.prefixed_database`` (the changelog keeps the real name)."""
    if not prefixes:
        return changes
    database = F.col("database")
    for topic, prefix in sorted(prefixes.items()):
        database = F.when(F.col("kafka_topic") == F.lit(topic), F.concat(
            F.lit(prefixed_database(prefix, "")),  # the prefix and its separator
            F.coalesce(F.col("database"), F.lit(NO_DATABASE)),
        )).otherwise(database)
    # A schema that repeats the database (CloudCanal) still counts for nothing (SOURCE_SCHEMA_SQL).
    schema = F.when(F.col("schema_name") == F.col("database"), database).otherwise(F.col("schema_name"))
    return changes.withColumns({"schema_name": schema, "database": database})


def compact_hour(spark: SparkSession, hour: dt.datetime, run_id: str,
                 options: CompactionOptions | None = None, changelog: str = CHANGELOG) -> CompactionSummary:
    """Apply the changelog rows landed in ``hour`` to the current-state tables they touch.

    A table that fails (collision, incompatible schema change, any Spark error) is reported in
    the summary, left unchanged by its remaining steps and held back (``held_tables``); the other
    tables are still compacted. A held table is tried again in every later hour with all its
    changes since the hour it was held from. Database-level changes (no table name) make no table.
    """
    options = options or CompactionOptions()
    ensure_tables(spark)
    changes = spark.table(changelog).where(F.col("landed_hour") == F.lit(hour).cast("timestamp"))
    changes = table_space(changes, options.table_prefixes).persist(REUSED)
    summary = CompactionSummary(hour, run_id)
    holds = held_tables.read(spark)
    n_held = len(holds)
    failed: list[SourceTable] = []
    try:
        topics: dict[SourceTable, set[str]] = {}
        for r in changes.select("database", F.expr(SOURCE_SCHEMA_SQL).alias("source_schema"), "table_name",
                                "kafka_topic").distinct().collect():
            if _names_a_table(r["table_name"]):
                topics.setdefault((r["database"], r["source_schema"], r["table_name"]), set()).add(
                    r["kafka_topic"])
        catching_up = {s: h for s, h in holds.items() if h.since <= hour}
        sources = sorted(set(topics) | set(catching_up), key=lambda s: tuple(str(part) for part in s))
        collisions = find_collisions(sources)
        events = change_events(changes).persist(REUSED)
        kinds = _kinds_by_table(events)
        declared_all: dict[SourceTable, dict[str, str | None]] | None
        try:
            declared_all = declared_columns(changes)
        except IncompatibleSchemaChange:
            declared_all = None  # some table's types clash: find which, table by table
        for source_table in sources:
            database, schema, table_name = source_table
            table = current_table_name(database, table_name, schema)
            label = source_label(database, table_name, schema)
            hold = catching_up.get(source_table)
            try:
                if table in collisions:
                    raise IdentifierCollision(
                        f"source tables {collisions[table]} all map to {table}; rename one of them "
                        "(or set a distinct database) so each has its own current table")
                if hold is not None:
                    result = _catch_up(spark, source_table, hold.since, hour, options, changelog)
                else:
                    if len(topics[source_table]) > 1:
                        raise IdentifierCollision(_two_topics(label, sorted(topics[source_table])))
                    [topic] = topics[source_table]
                    declared = _declared_for(changes, source_table) if declared_all is None \
                        else declared_all.get(source_table, {})
                    result = compact_table(spark, source_table, changes, events, declared, hour,
                                           options, changelog, kinds.get(source_table, []), topic)
                if hold is not None:
                    del holds[source_table]  # caught up
            except (CompactionError, IdentifierCollision) as exc:
                result = TableResult(label, table, "FAILED", 0, message=str(exc))
                failed.append(source_table)
            except Exception as exc:  # one table's Spark error never stops the others
                result = TableResult(label, table, "FAILED", 0,
                                     message=f"{type(exc).__name__}: {_first_line(exc)}")
                failed.append(source_table)
            summary.tables.append(result)
        events.unpersist()
    finally:
        changes.unpersist()
    _hold_failures(spark, summary, holds, failed, released=len(holds) < n_held)
    return summary


def _catch_up(spark: SparkSession, source_table: SourceTable, since: dt.datetime, hour: dt.datetime,
              options: CompactionOptions, changelog: str) -> TableResult:
    """Compact a held table with every change of it landed from ``since`` on (see ``held_tables``)."""
    database, schema, table_name = source_table
    label = source_label(database, table_name, schema)
    since_then = spark.table(changelog).where(F.col("landed_hour") >= F.lit(since).cast("timestamp"))
    pending = table_space(since_then, options.table_prefixes)
    pending = pending.where(_same_table(source_table, F.expr(SOURCE_SCHEMA_SQL))).persist(REUSED)
    try:
        spans = pending.groupBy("kafka_topic").agg(F.max("landed_hour").alias("newest")).collect()
        if len(spans) > 1:
            raise IdentifierCollision(_two_topics(label, sorted(r["kafka_topic"] for r in spans)))
        topic = spans[0]["kafka_topic"] if spans else None
        newest = spans[0]["newest"] if spans else None
        events = change_events(pending).persist(REUSED)
        try:
            return compact_table(spark, source_table, pending, events, _declared_for(pending, source_table),
                                 hour, options, changelog, None, topic, through=newest)
        finally:
            events.unpersist()
    finally:
        pending.unpersist()


def _hold_failures(spark: SparkSession, summary: CompactionSummary, holds: dict[SourceTable, Hold],
                   failed: Sequence[SourceTable], released: bool) -> None:
    """Hold back the hour's ``failed`` tables (``holds`` no longer has those that caught up) and
    drop what a failed table wrote to the hour's audit branch: none of it is published."""
    results = {(t.source, t.table): t for t in summary.failures}
    for source_table in failed:
        database, schema, table_name = source_table
        failure = results[(source_label(database, table_name, schema),
                           current_table_name(database, table_name, schema))]
        earlier = holds.get(source_table)
        since = min(earlier.since, summary.hour) if earlier else summary.hour
        holds[source_table] = Hold(source_table, failure.table, failure.source, since, summary.hour,
                                   failure.message, summary.run_id)
        _drop_audit_branch(spark, failure.table)
    summary.held = sorted(holds.values(), key=lambda h: h.table)
    if failed or released:
        held_tables.write(spark, summary.held)


def _drop_audit_branch(spark: SparkSession, table: str) -> None:
    branch = spark.conf.get(held_tables.WAP_BRANCH, None)
    if not branch:
        return
    for name in (table, tombstone_table_name(table), history_table_name(table)):
        if table_exists(spark, name):
            qualified = quote_table(in_catalog(spark, name))
            spark.sql(f"ALTER TABLE {qualified} DROP BRANCH IF EXISTS {quote(branch)}")


def _two_topics(source: str, topics: Sequence[str]) -> str:
    return (f"source table {source} arrives from topics {' and '.join(topics)}; a current table has one "
            "source, so set topics[].table_prefix on all but one of them (shards or regions of one "
            "table each get their own)")


def _names_a_table(table_name: str | None) -> bool:
    """A database-level change (``CREATE DATABASE``, a DDL with no table) has no current table."""
    return table_name is not None and bool(table_name.strip())


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:500]


def _kinds_by_table(events: DataFrame) -> dict[SourceTable, list[Row]]:
    """Each source table's events of the hour counted by kind, in one query for every table."""
    rows = events.groupBy("database", "source_schema", "table_name", "kind").agg(
        F.count("*").alias("n"), F.max("order_key").alias("k")).collect()
    kinds: dict[SourceTable, list[Row]] = {}
    for r in rows:
        kinds.setdefault((r["database"], r["source_schema"], r["table_name"]), []).append(r)
    return kinds


def _declared_for(changes: DataFrame, source_table: SourceTable) -> dict[str, str | None]:
    same = _same_table(source_table, F.expr(SOURCE_SCHEMA_SQL))
    return declared_columns(changes.where(same)).get(source_table, {})


def options_from_config(config: PipelineConfig) -> CompactionOptions:
    return CompactionOptions(tombstone_retention_days=int(config.tombstone_retention_days),
                             table_prefixes=config.table_prefixes,
                             history={t.name: t.history for t in config.topics if t.history})


def run(spark: SparkSession, config: PipelineConfig, hour: dt.datetime, run_id: str,
        branch: str | None = None) -> CompactionSummary:
    """Compact ``hour``; with ``branch`` (write-audit-publish) every read and write goes through
    the hour's audit branch: the changelog branch holds the hour being audited, and the current
    tables' branches (created on first write) receive the result while ``main`` stays as it was."""
    if branch is None:
        summary = compact_hour(spark, hour, run_id, options_from_config(config))
    else:
        spark.conf.set("spark.wap.branch", branch)
        try:
            summary = compact_hour(spark, hour, run_id, options_from_config(config))
        finally:
            spark.conf.unset("spark.wap.branch")
    failures = "; ".join(f"{f.table}: {f.message}" for f in summary.failures)
    hour_status.record(spark, hour, hour_status.COMPACT, run_id,
                       hour_status.PARTIAL if failures else hour_status.OK,
                       [(t.table, None) for t in summary.tables if t.status == "OK"], failures or None)
    return summary
