"""Erasure of one key of one source table from every layer of the lake, physically
(``cdclake erase``, the ``cdclake_erase`` DAG).

What goes, for the key (its primary-key values, matched on the changelog's canonical text):

* its rows in ``current.<t>``, ``current.<t>__tombstones`` and ``history.<t>`` (``_cdc_key``);
* its change rows in ``cdc.changelog`` and ``cdc.changelog_base`` (key, after image or before
  image: a change that moved the row away from the key goes too);
* the Kafka messages those change rows came from, in ``raw.kafka_messages`` and
  ``cdc.quarantine``, by their coordinates. They are recorded first in ``ops.erased_messages``:
  landing never lands them again, and normalize keeps the other keys' change rows a removed
  message carried (:mod:`spark_jobs.erased_messages`).

Then the bytes: every touched table's data files holding the rows are rewritten without them,
its manifests are rewritten (a deleted file's entry keeps its column bounds), every snapshot but
the new current one is expired and the orphan files are removed. Time travel to before the
erasure is gone for those tables.

It commits like an hour, in steps that each can be run again: ``ops.erasures`` records the
erasure as ``started`` (with its coordinates) before anything is deleted, and ``done`` at the
end. An erasure stopped in between completes when run again with the same table and key. It is
refused while an hour is in flight (an audit branch, or a landed hour not yet published) and
while a tag or another branch would keep the rows readable. The record holds the key's hash
salted with the lake's own secret (``erasure_salt`` in the state folder), never the key.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdclake.catalog import open_catalog
from cdclake.config import PipelineConfig
from cdclake.exceptions import ErasureDeferred, ErasureError
from cdclake.formats.base import row_key_text
from cdclake.paths import private_file, state_home
from cdclake.table_names import CHANGELOG_BASE
from spark_jobs import changelog_base
from spark_jobs.identifiers import (
    CURRENT_NAMESPACE,
    current_table_name,
    history_table_name,
    tombstone_table_name,
)
from spark_jobs.maintenance import AUDIT_BRANCH_PREFIX, checked_name, sql_text, timestamp_literal
from spark_jobs.session import concurrently, local_frame
from spark_jobs.tables import (
    CHANGELOG,
    ERASED_MESSAGES,
    ERASURES,
    HOUR_STATUS,
    OFFSET_LEDGER,
    QUARANTINE,
    RAW_MESSAGES,
    ensure_tables,
    in_catalog,
)

STARTED, DONE = "started", "done"
# The rewrite takes exactly the data files that carry a delete file (the erased rows): no file is
# too small or too large for it, so the table's other files (every hour of the changelog and raw
# is small) are not rewritten with them.
REWRITE_OPTIONS = {"delete-file-threshold": "1", "min-input-files": "1", "remove-dangling-deletes": "true",
                   "min-file-size-bytes": "0", "max-file-size-bytes": str(2**62)}
# Tables purged at once: each purge is a few small Iceberg jobs and commits (see session.concurrently).
PURGE_THREADS = 4
CHANGE_TABLES = (CHANGELOG, CHANGELOG_BASE)
SALT_FILE = "erasure_salt"
# The ledger statuses of an hour that landed messages (an empty or skipped hour has nothing to erase).
_LANDED_WITH_MESSAGES = ("landed", "landed_with_gap")
WARNING = ("Erasure rewrites the data files of every table it touches and expires all their earlier "
           "snapshots: time travel to before the erasure is lost for those tables.")


@dataclass(frozen=True)
class ErasureRequest:
    """What the user asked: ``table`` as ``db.table``, ``db.schema.table`` or ``current.<name>``;
    ``key`` the primary-key columns and values (``{"id": 42}``)."""

    table: str
    key: Mapping[str, Any]
    reason: str
    topic: str | None = None


@dataclass
class ErasurePlan:
    """What an erasure removes (a dry run prints it; the run removes it)."""

    current_table: str
    key_columns: tuple[str, ...]
    key_hash: str
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows of the key
    files: dict[str, int] = field(default_factory=dict)  # table -> data files holding them
    snapshots: dict[str, int] = field(default_factory=dict)  # table -> snapshots expired
    raw_messages: int = 0
    erased_through: dt.datetime | None = None
    resumed: str | None = None  # the erasure id of a started erasure this run completes

    @property
    def tables(self) -> list[str]:
        return sorted(self.rows)

    def lines(self) -> list[str]:
        out = [f"erasure of one key of {self.current_table} (key columns {', '.join(self.key_columns)})"]
        if self.resumed:
            out.append(f"completes the erasure {self.resumed}, started earlier and not finished")
        for table in self.tables:
            if not self.rows[table]:
                out.append(f"  {table}: no rows of the key (left alone)")
                continue
            out.append(f"  {table}: {self.rows[table]} row(s) in {self.files.get(table, 0)} data file(s) "
                       f"rewritten; {self.snapshots.get(table, 0)} earlier snapshot(s) expired")
        out.append(f"  Kafka messages removed from raw: {self.raw_messages}")
        return out


@dataclass(frozen=True)
class ErasureResult:
    erasure_id: str
    plan: ErasurePlan
    snapshots_expired: int
    files_removed: int


# ----------------------------------------------------------------------------- the key


def salt() -> str:
    """The lake's erasure salt: made once, private to the state folder's owner."""
    path = state_home() / SALT_FILE
    if not path.exists():
        path.write_text(secrets.token_hex(32) + "\n")
    private_file(path)
    return path.read_text().strip()


def key_hash(current_table: str, key_text: str, lake_salt: str) -> str:
    return hashlib.sha256("\x1f".join((lake_salt, current_table, key_text)).encode()).hexdigest()


def canonical_text(column: str, value: Any) -> str:
    """A key value as the changelog holds it: text, digit for digit."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    raise ErasureError(f"key column {column!r}: give the value as a string, exactly as the table shows "
                       f"it (got {json.dumps(value)})")


def resolve_table(spark: SparkSession, given: str) -> str:
    """``db.table`` / ``db.schema.table`` / ``current.<name>`` -> the current table, which must exist."""
    if given.startswith(f"{CURRENT_NAMESPACE}."):
        table = given
    else:
        parts = given.split(".")
        if len(parts) not in (2, 3) or not all(parts):
            raise ErasureError(f"--table {given!r}: name the source table as db.table or db.schema.table, "
                               "or the current table as current.<name>")
        table = current_table_name(parts[0], parts[-1], parts[1] if len(parts) == 3 else None)
    try:
        checked_name(table)
    except Exception as exc:
        raise ErasureError(f"--table {given!r}: {exc}") from None
    if not spark.catalog.tableExists(in_catalog(spark, table)):
        raise ErasureError(f"--table {given!r}: {table} does not exist")
    return table


def _change_rows(spark: SparkSession) -> DataFrame:
    """Every change row: the changelog's and its base's (expired hours, see ``changelog_base``)."""
    rows = spark.table(CHANGELOG)
    return rows.unionByName(changelog_base.rows(spark)) if changelog_base.exists(spark) else rows


def _sources(spark: SparkSession, current_table: str) -> list[tuple[str | None, str | None, str]]:
    """The changelog's (database, schema, table) triples that compact into ``current_table``."""
    rows = _change_rows(spark).select("database", "schema_name", "table_name").distinct().collect()
    return [(r[0], r[1], r[2]) for r in rows if r[2] is not None
            and current_table_name(r[0], r[2], r[1]) == current_table]


def _key_columns(spark: SparkSession, source: str, key: Mapping[str, Any], table: str) -> tuple[str, ...]:
    known = [tuple(r[0]) for r in _change_rows(spark).where(f"{source} AND size(primary_key_columns) > 0")
             .select("primary_key_columns").distinct().collect()]
    for columns in known:
        if set(columns) == set(key):
            return columns
    if not known:
        raise ErasureError(f"{table} has no key columns in cdc.changelog (a keyless table: its rows have no "
                           "key to erase by)")
    raise ErasureError(f"--key names {', '.join(sorted(key)) or 'no column'}; the key of {table} is "
                       + " or ".join("(" + ", ".join(c) + ")" for c in sorted(known)))


def _equals(column: str, value: str | None) -> str:
    return f"{column} IS NULL" if value is None else f"{column} = {sql_text(value)}"


def _source_condition(sources: Sequence[tuple[str | None, str | None, str]]) -> str:
    return "(" + " OR ".join(f"({_equals('table_name', t)} AND {_equals('database', d)} AND "
                             f"{_equals('schema_name', s)})" for d, s, t in sources) + ")"


def _image_has_key(image: str, values: Mapping[str, str]) -> str:
    return "coalesce(" + " AND ".join(f"element_at({image}, {sql_text(c)}) = {sql_text(v)}"
                                      for c, v in values.items()) + ", false)"


def _coordinates_condition(coordinates: Sequence[Any], topic: str, partition: str, offset: str) -> str:
    """SQL selecting the rows at ``coordinates`` (few: one key's messages), by hour partition first."""
    if not coordinates:
        return "false"
    hours = sorted({c["landed_hour"] for c in coordinates})
    offsets: dict[tuple[str, int], set[int]] = {}
    for c in coordinates:
        offsets.setdefault((c["topic"], int(c["partition"])), set()).add(int(c["offset"]))
    each = " OR ".join(f"({topic} = {sql_text(t)} AND {partition} = {p} AND {offset} IN "
                       f"({', '.join(str(o) for o in sorted(found))}))"
                       for (t, p), found in sorted(offsets.items()))
    return f"(landed_hour IN ({', '.join(timestamp_literal(h) for h in hours)}) AND ({each}))"


# ----------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class _Target:
    plan: ErasurePlan
    change_rows: str  # SQL: the key's rows in cdc.changelog
    key_text: str
    topic: str | None


def _target(spark: SparkSession, request: ErasureRequest) -> _Target:
    ensure_tables(spark)
    table = resolve_table(spark, request.table)
    if not request.key:
        raise ErasureError("--key names no column: give the key as JSON, e.g. '{\"id\": 42}'")
    sources = _sources(spark, table)
    if not sources:
        done = spark.table(ERASURES).where(F.col("current_table") == table).count()
        raise ErasureError(f"{table}: cdc.changelog holds no change of its source table"
                           + (f" (ops.erasures records {done} erasure(s) of it)" if done else ""))
    source = _source_condition(sources)
    columns = _key_columns(spark, source, request.key, table)
    values = {c: canonical_text(c, request.key[c]) for c in columns}
    text = row_key_text([values[c] for c in columns])
    condition = (f"{source} AND (coalesce(row_key = {sql_text(text)}, false) OR "
                 f"{_image_has_key('after', values)} OR {_image_has_key('before', values)})")
    if request.topic is not None:
        condition += f" AND kafka_topic = {sql_text(request.topic)}"
    plan = ErasurePlan(table, columns, key_hash(table, text, salt()))
    return _Target(plan, condition, text, request.topic)


def _row_conditions(spark: SparkSession, target: _Target, coordinates: Sequence[Any]) -> dict[str, str]:
    """Each table the key may be in -> SQL selecting its rows there."""
    current = target.plan.current_table
    by_key = f"_cdc_key = {sql_text(target.key_text)}"
    found = {current: by_key}
    for table in (tombstone_table_name(current), history_table_name(current)):
        if spark.catalog.tableExists(in_catalog(spark, table)):
            found[table] = by_key
    found[CHANGELOG] = target.change_rows
    if changelog_base.exists(spark):
        found[CHANGELOG_BASE] = target.change_rows
    found[RAW_MESSAGES] = _coordinates_condition(coordinates, "topic", "`partition`", "`offset`")
    found[QUARANTINE] = _coordinates_condition(coordinates, "kafka_topic", "kafka_partition", "kafka_offset")
    return found


def _started(spark: SparkSession, plan: ErasurePlan) -> str | None:
    rows = (spark.table(ERASURES).where((F.col("key_hash") == F.lit(plan.key_hash))
                                        & (F.col("status") == F.lit(STARTED))).select("erasure_id").collect())
    return rows[0][0] if rows else None


def _coordinates(spark: SparkSession, target: _Target, resumed: str | None) -> DataFrame:
    """The Kafka messages the key's change rows came from, plus those a started erasure recorded
    (its changelog rows may be gone already)."""
    found = (_change_rows(spark).where(target.change_rows)
             .select(F.col("kafka_topic").alias("topic"), F.col("kafka_partition").alias("partition"),
                     F.col("kafka_offset").alias("offset"), "landed_hour"))
    if resumed is not None:
        found = found.unionByName(spark.table(ERASED_MESSAGES).where(F.col("erasure_id") == F.lit(resumed))
                                  .select("topic", "partition", "offset", "landed_hour"))
    return found.distinct()


def plan_erasure(spark: SparkSession, request: ErasureRequest) -> tuple[ErasurePlan, _Target, list[Any]]:
    """What the erasure removes, counted: the plan, its target and the Kafka coordinates."""
    target = _target(spark, request)
    plan = target.plan
    plan.resumed = _started(spark, plan)
    coordinates = _coordinates(spark, target, plan.resumed).collect()
    for table, condition in _row_conditions(spark, target, coordinates).items():
        matched = spark.table(table).where(condition)
        # The changelog's newest erased change comes with its count (one scan of it).
        newest = F.max("event_time") if table == CHANGELOG else F.lit(None).cast("timestamp")
        counted = matched.agg(F.count(F.lit(1)).alias("n"), F.count_distinct(F.col("_file")).alias("files"),
                              newest.alias("newest")).collect()[0]
        plan.rows[table] = int(counted["n"])
        plan.files[table] = int(counted["files"])
        plan.snapshots[table] = _snapshots_before_current(spark, table)
        if table == RAW_MESSAGES:
            plan.raw_messages = int(counted["n"])
        if table == CHANGELOG:
            plan.erased_through = counted["newest"]
    return plan, target, coordinates


def _snapshots_before_current(spark: SparkSession, table: str) -> int:
    qualified = in_catalog(spark, table)
    return int(spark.sql(f"SELECT count(*) FROM {qualified}.snapshots WHERE snapshot_id NOT IN "
                         f"(SELECT snapshot_id FROM {qualified}.refs WHERE name = 'main')").collect()[0][0])


# ----------------------------------------------------------------------------- refusals


def check_nothing_in_flight(spark: SparkSession, tables: Sequence[str]) -> None:
    """Refuse while an hour is in flight (an audit branch, a landed hour not published) or a tag
    or branch other than main would keep the rows readable."""
    catalog = spark.conf.get("spark.sql.defaultCatalog")
    union = " UNION ALL ".join(f"SELECT {sql_text(t)} AS t, name, type FROM {catalog}.{checked_name(t)}.refs "
                               "WHERE name <> 'main'" for t in tables)
    refs = spark.sql(union).collect()
    audit = sorted({f"{r['t']} ({r['name']})" for r in refs if r["name"].startswith(AUDIT_BRANCH_PREFIX)})
    if audit:
        raise ErasureDeferred("an hour is in flight (audit branch on " + ", ".join(audit) + "): run the "
                              "erasure once it is published, or re-run or discard the failed hour first")
    others = sorted({f"{r['t']} ({r['type'].lower()} {r['name']})" for r in refs})
    if others:
        raise ErasureError("a tag or branch keeps earlier rows readable: " + ", ".join(others)
                           + "; drop it first (ALTER TABLE ... DROP TAG/BRANCH), or it would keep the key")
    published = spark.table(HOUR_STATUS).where("stage = 'publish' AND status = 'PUBLISHED'")
    pending = (spark.table(OFFSET_LEDGER)
               .where(F.col("status").isin(list(_LANDED_WITH_MESSAGES)) & (F.col("landed_count") > 0))
               .select("landed_hour").distinct()
               .join(published.select("landed_hour"), "landed_hour", "left_anti")
               .orderBy("landed_hour").collect())
    if pending:
        hours = ", ".join(f"{r[0]:%Y-%m-%dT%H}" for r in pending[:5])
        raise ErasureDeferred(f"hour(s) landed and not yet published: {hours}; their raw messages may hold "
                              "the key. Run them to the end (or discard them) before the erasure")


# ----------------------------------------------------------------------------- applying


def _record(spark: SparkSession, row: dict[str, Any]) -> None:
    view = "cdclake_erasure_update"
    local_frame(spark, [row], spark.table(ERASURES).schema).createOrReplaceTempView(view)
    try:
        spark.sql(f"""
            MERGE INTO {ERASURES} t USING {view} s ON t.erasure_id = s.erasure_id
            WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    finally:
        spark.catalog.dropTempView(view)


def _record_messages(spark: SparkSession, erasure_id: str, coordinates: Sequence[Any]) -> None:
    """Append the coordinates not recorded yet for ``erasure_id`` (a resumed run adds none)."""
    def key(row: Any) -> tuple[str, int, int]:
        return row["topic"], int(row["partition"]), int(row["offset"])

    mine = spark.table(ERASED_MESSAGES).where(F.col("erasure_id") == erasure_id)
    recorded = {key(r) for r in mine.collect()}
    rows = [{"erasure_id": erasure_id, **{k: c[k] for k in ("topic", "partition", "offset", "landed_hour")}}
            for c in coordinates if key(c) not in recorded]
    if rows:
        local_frame(spark, rows, spark.table(ERASED_MESSAGES).schema).writeTo(ERASED_MESSAGES).append()


def _delete(spark: SparkSession, table: str, condition: str) -> None:
    spark.sql(f"DELETE FROM {in_catalog(spark, table)} WHERE {condition}")


def _purge(spark: SparkSession, config: PipelineConfig, table: str, started: dt.datetime) -> tuple[int, int]:
    """Rewrite the table's data files that carry deletes, its manifests, expire every snapshot
    but the current one and remove the orphans: (snapshots expired, files removed)."""
    catalog = spark.conf.get("spark.sql.defaultCatalog")
    qualified = sql_text(in_catalog(spark, table))
    options = "map(" + ", ".join(f"'{k}', '{v}'" for k, v in REWRITE_OPTIONS.items()) + ")"

    def call(procedure: str, *args: str) -> list[Any]:
        named = ", ".join((f"table => {qualified}", *args))
        return spark.sql(f"CALL {catalog}.system.{procedure}({named})").collect()

    call("rewrite_data_files", f"options => {options}")
    call("rewrite_manifests")
    before = _snapshots_before_current(spark, table)
    moment = timestamp_literal(dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(seconds=1))
    expired = call("expire_snapshots", f"older_than => {moment}", "retain_last => 1")
    deleted = sum(int(v) for r in expired for k, v in r.asDict().items() if k.startswith("deleted_") and v)
    return before, deleted + remove_orphan_data_files(spark, config, table, started)


def remove_orphan_data_files(spark: SparkSession, config: PipelineConfig, table: str,
                             before: dt.datetime) -> int:
    """Delete the files under the table's ``data/`` that no snapshot references and that were
    written before ``before`` (the erasure's start: no write still in flight). Iceberg's
    ``remove_orphan_files`` refuses a cut-off within the last day, and a write killed meanwhile
    (a crashed rewrite, an expiry killed after its commit) may have left the key's rows in one."""
    qualified = in_catalog(spark, table)
    location = spark.sql(f"SELECT file FROM {qualified}.metadata_log_entries ORDER BY timestamp DESC "
                         "LIMIT 1").collect()[0][0].rsplit("/metadata/", 1)[0]
    listed = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
              .load(f"{location}/data").select("path", "modificationTime")
              .where(F.col("modificationTime") < F.lit(before).cast("timestamp")))
    referenced = spark.table(f"{qualified}.all_files").select(F.col("file_path").alias("path"))
    orphans = [r[0] for r in listed.join(referenced, "path", "left_anti").collect()]
    if orphans:
        io = open_catalog(config).load_table(table).io
        for path in orphans:
            io.delete(path)
    return len(orphans)


def erase(spark: SparkSession, config: PipelineConfig, request: ErasureRequest, run_id: str, *,
          dry_run: bool = False,
          confirmed: bool = False) -> ErasureResult | ErasurePlan:
    """Plan the erasure; with ``dry_run``, or when nothing holds the key (erased already), return
    the plan. Otherwise (``confirmed`` required: time travel is lost) apply it and return what it did."""
    if not (dry_run or confirmed):
        raise ErasureError(f"{WARNING} Run with --yes to confirm (--dry-run lists what goes).")
    plan, target, coordinates = plan_erasure(spark, request)
    if dry_run or not (plan.resumed or any(plan.rows.values())):  # nothing holds the key: no record
        return plan
    check_nothing_in_flight(spark, [*plan.tables, ERASURES, ERASED_MESSAGES])
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    erasure_id = plan.resumed or uuid.uuid4().hex
    record: dict[str, Any] = {
        "erasure_id": erasure_id, "current_table": plan.current_table, "key_hash": plan.key_hash,
        "reason": request.reason, "status": STARTED, "requested_at": now, "completed_at": None,
        "erased_through": plan.erased_through,
        "removed_rows": [{"table_name": t, "row_count": plan.rows[t]} for t in plan.tables],
        "raw_messages": plan.raw_messages, "snapshots_expired": None, "files_removed": None, "run_id": run_id,
    }
    if plan.resumed:  # keep what the first run recorded it removed
        earlier = spark.table(ERASURES).where(F.col("erasure_id") == erasure_id).collect()[0].asDict(True)
        record.update({k: earlier[k] for k in ("requested_at", "removed_rows", "raw_messages",
                                                "erased_through")})
    _record(spark, record)
    _record_messages(spark, erasure_id, coordinates)
    conditions = _row_conditions(spark, target, coordinates)
    # The changelog and its base last among the row tables: the coordinates come from them.
    for table in sorted(conditions, key=lambda t: t in CHANGE_TABLES):
        if plan.rows[table]:
            _delete(spark, table, conditions[table])
    # The tables that held rows (as the first run counted them, when this run completes one).
    held = sorted(r["table_name"] for r in record["removed_rows"] if r["row_count"])
    purged = concurrently(spark, held, lambda table: _purge(spark, config, table, now), PURGE_THREADS)
    expired, removed = sum(p[0] for p in purged), sum(p[1] for p in purged)
    record.update(status=DONE, completed_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
                  snapshots_expired=expired, files_removed=removed)
    _record(spark, record)
    return ErasureResult(erasure_id, plan, expired, removed)
