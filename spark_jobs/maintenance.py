"""Daily table maintenance for every lakehouse table (``raw.*``, ``ops.*``, ``cdc.*``, ``current.*``,
``history.*``).

Steps, in the order the maintenance DAG runs them (each over every table, listed from the catalog
with ``SHOW TABLES IN <namespace>``):

0. ``expire_hours`` — not a table step: the whole landing hours of ``raw.kafka_messages``,
   ``cdc.changelog`` and ``cdc.quarantine`` older than ``retention.raw_days`` /
   ``changelog_days`` / ``quarantine_days`` (unset: kept), for published hours only
   (:mod:`spark_jobs.retention`). It runs when the whole lakehouse is maintained and a retention
   is set; a layer whose table holds an hour in flight is deferred.
1. ``purge_tombstones`` — delete-markers in ``current.<db>__<table>__tombstones`` (the compaction
   job's convention, :mod:`spark_jobs.compact`) whose ``_cdc_event_time`` is older than
   ``compaction.tombstone_retention_days`` before the reference time. The cut-off is recorded on
   the tombstone table (``cdc.tombstones-purged-before``): a change that lands later with an
   older event time is applied by compaction from the key's whole history, so a purged delete
   still wins over it (and a re-run of that hour gives the same table).
2. ``rewrite_data_files`` — bin-pack small files and rewrite data files that carry delete files
   (merge-on-read MERGE/DELETE leave them), applying the deletes; dangling deletes are dropped.
3. ``rewrite_position_delete_files`` — compact the remaining position delete files.
4. ``expire_snapshots`` — expire snapshots older than ``maintenance.snapshot_retention_days``,
   keeping at least ``maintenance.retain_last`` per table. Iceberg never expires a snapshot a branch
   or tag points at (write-audit-publish branches, user tags), so those stay readable.
5. ``remove_orphan_files`` — delete files no snapshot references, only when older than
   ``maintenance.orphan_file_age_days`` (default 3): a write that has not committed yet has
   unreferenced files too, and they are never that old.
6. ``expire_gate_results`` — not a table step: delete the GX validation results and Data Docs
   pages of gates run more than ``maintenance.gate_results_retention_days`` ago (default 30) from
   the GX folder of the state folder, and rebuild the Data Docs index
   (:mod:`spark_jobs.gate_history`). ``ops.gate_results`` keeps the latest outcome of every stage
   and hour (a re-run's replaces the earlier one's). It runs when the whole lakehouse is
   maintained, not when ``tables`` are named.

The reference time ("now") is the DAG run's ``data_interval_end``, so a re-run computes the same
cut-offs; a reference time in the future is refused (it would treat in-flight files as orphans).

Not racing the hourly writers
-----------------------------
1. **One write at a time.** Every Airflow task that commits to an Iceberg table — the hourly DAG's
   land/normalize/compact/publish and every step here — runs in the Airflow pool
   ``lakehouse_writes`` with one slot (:mod:`cdclake.dag_defaults`). A maintenance step never
   commits while an hourly write is running, and vice versa; hourly tasks queue for at most one
   maintenance step (one step is one task, so hourly tasks interleave between steps).
2. **Backstop: optimistic concurrency.** Should something else commit meanwhile (a manual job, a
   second Airflow installation), Iceberg detects the conflict at commit time and retries the commit
   on the new table state; each table gets ``commit.retry.num-retries`` of at least
   :data:`COMMIT_RETRIES`. ``rewrite_data_files`` runs with partial progress, so a file group that
   still conflicts fails alone (reported, retried next day) instead of the whole rewrite.
3. Orphan removal only deletes files older than the safety margin (above), so it cannot remove the
   files of a write that is still running.
4. **Never under an hour in flight.** An hour's audit branches are made from ``main`` when its
   attempt begins, and its publish fast-forwards ``main`` to them, which Iceberg refuses once
   ``main`` has moved. The steps that commit to ``main`` (:data:`MAIN_MOVING_STEPS`) therefore
   defer a table that holds an ``audit_*`` branch: it is reported ``DEFERRED``, the task fails, and
   Airflow retries it once the hour is published. The check and the step run in one task of the
   one-slot pool, so no hourly write begins in between. A branch left by an hour that failed its
   gate defers that table until the hour is re-run or discarded (the message names it).

A table whose step fails does not stop the other tables; the step reports every failure at the
end (:class:`MaintenanceError`) so the task fails and Airflow retries it (all steps are idempotent).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdclake.config import MaintenanceConfig
from cdclake.retention import LAYERS as RETENTION_LAYERS
from cdclake.retention import RetentionConfig
from spark_jobs.identifiers import CURRENT_NAMESPACE, KEY_BUCKETS, PURGED_BEFORE_PROPERTY, TOMBSTONE_SUFFIX

if TYPE_CHECKING:  # importable without pyspark: the maintenance DAG reads STEPS at parse time
    from pyspark.sql import SparkSession

    from cdclake.config import PipelineConfig

# The namespaces of spark_jobs.tables.NAMESPACES (tests check they agree).
NAMESPACES = ("raw", "ops", "cdc", "current", "history")

TABLE_STEPS = (
    "purge_tombstones",
    "rewrite_data_files",
    "rewrite_position_delete_files",
    "expire_snapshots",
    "remove_orphan_files",
)
# The steps that commit a new snapshot to main (expiring snapshots and removing orphans do not).
MAIN_MOVING_STEPS = frozenset({"purge_tombstones", "rewrite_data_files", "rewrite_position_delete_files"})
AUDIT_BRANCH_PREFIX = "audit_"  # cdclake.table_names.audit_branch
GATE_RESULTS_STEP = "expire_gate_results"
RETENTION_STEP = "expire_hours"
STEPS = (RETENTION_STEP, *TABLE_STEPS, GATE_RESULTS_STEP)
# What the retention step's StepResult names in place of a table.
HOURS_TARGET = "hours"
# What the gate-results step's StepResult names in place of a table.
GX_TARGET = "gx"
COMMIT_RETRIES = 10
TOMBSTONE_TIME_COLUMN = "_cdc_event_time"
# A run's reference time may lie this far ahead of the machine's clock (clock skew), no further.
FUTURE_TOLERANCE = dt.timedelta(minutes=5)

_NAME_PART = re.compile(r"^[a-z0-9_]+$")

Metrics = dict[str, int]
TableFilter = Callable[[str], bool]
# (spark, catalog, "ns.table") -> metrics of what the step did to the table
TableAction = Callable[["SparkSession", str, str], Metrics]


class MaintenanceError(RuntimeError):
    """A maintenance step failed for one or more tables; the message lists them and why."""


@dataclass(frozen=True)
class MaintenanceOptions(MaintenanceConfig):
    """The knobs of the steps: ``maintenance:`` of the pipeline configuration, plus the tombstone
    retention of ``compaction:``."""

    tombstone_retention_days: int = 7


@dataclass(frozen=True)
class StepResult:
    step: str
    table: str
    status: str  # "OK", "FAILED" or "DEFERRED" (an hour in flight holds the table)
    metrics: dict[str, int] = field(default_factory=dict)
    message: str = ""


@dataclass
class MaintenanceSummary:
    as_of: dt.datetime
    run_id: str
    results: list[StepResult] = field(default_factory=list)

    @property
    def failures(self) -> list[StepResult]:
        return [r for r in self.results if r.status != "OK"]


# ----------------------------------------------------------------------------------- names


def checked_name(name: str, what: str = "table") -> str:
    """``ns.table`` with every part matching ``[a-z0-9_]+``; anything else is refused, never quoted."""
    parts = name.split(".")
    if not all(_NAME_PART.match(p) for p in parts):
        raise MaintenanceError(
            f"{what} name {name!r} has characters outside [a-z0-9_]; maintenance only handles tables "
            "named by cdclake (rename or drop the table, or maintain it by hand)")
    return name


def sql_text(value: str) -> str:
    """A Spark SQL string literal (for already-validated names and timestamps)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def timestamp_literal(moment: dt.datetime) -> str:
    """``TIMESTAMP '2024-01-01 00:00:00.000000'`` for a naive UTC datetime (the session is UTC)."""
    return f"TIMESTAMP {sql_text(moment.strftime('%Y-%m-%d %H:%M:%S.%f'))}"


def lakehouse_tables(spark: SparkSession, catalog: str, namespaces: Iterable[str] = NAMESPACES) -> list[str]:
    """``ns.table`` of every table in ``namespaces`` that exist in ``catalog``, sorted."""
    checked_name(catalog, "catalog")
    existing = {r[0] for r in spark.sql(f"SHOW NAMESPACES IN {catalog}").collect()}
    tables: list[str] = []
    for namespace in namespaces:
        if checked_name(namespace, "namespace") not in existing:
            continue
        for row in spark.sql(f"SHOW TABLES IN {catalog}.{namespace}").collect():
            if not row["isTemporary"]:
                tables.append(f"{namespace}.{row['tableName']}")
    return sorted(tables)


def audit_branches(spark: SparkSession, catalog: str, tables: Iterable[str]) -> dict[str, list[str]]:
    """``ns.table`` -> the hours' audit branches it holds (written, not yet published), for those
    of ``tables`` that hold any: one query for them all."""
    tables = [checked_name(t) for t in tables]
    if not tables:
        return {}
    union = " UNION ALL ".join(
        f"SELECT {sql_text(t)} AS t, name FROM {checked_name(catalog, 'catalog')}.{t}.refs "
        f"WHERE type = 'BRANCH' AND startswith(name, {sql_text(AUDIT_BRANCH_PREFIX)})" for t in tables)
    found: dict[str, list[str]] = {}
    for row in spark.sql(union).collect():
        found.setdefault(row["t"], []).append(row["name"])
    return {t: sorted(names) for t, names in found.items()}


def _deferred(branches: list[str]) -> str:
    return (f"deferred: an hour in flight holds branch {', '.join(branches)} (main must not move before it "
            "publishes); retried later. A branch left by a failed hour stays until the hour is re-run or "
            "discarded (python -m spark_jobs.jobs.publish --action discard --hour <hour> --run-id <id>)")


def is_tombstone_table(table: str) -> bool:
    namespace, _, name = table.partition(".")
    return namespace == CURRENT_NAMESPACE and name.endswith(TOMBSTONE_SUFFIX)


# ----------------------------------------------------------------------------------- steps


def _call(spark: SparkSession, catalog: str, procedure: str, table: str, **args: str) -> list[dict[str, Any]]:
    """``CALL <catalog>.system.<procedure>(table => '<table>', ...)``; args are SQL expressions."""
    # The table argument names its catalog too: Iceberg tries a bare ``current`` as a catalog first.
    catalog = checked_name(catalog, "catalog")
    qualified = f"{catalog}.{checked_name(table)}"
    named = [f"table => {sql_text(qualified)}"] + [f"{k} => {v}" for k, v in args.items()]
    statement = f"CALL {catalog}.system.{procedure}({', '.join(named)})"
    return [r.asDict() for r in spark.sql(statement).collect()]


def _counts(rows: list[dict[str, Any]]) -> Metrics:
    totals: dict[str, int] = {}
    for row in rows:
        for key, value in row.items():
            if isinstance(value, int) and not isinstance(value, bool):
                totals[key] = totals.get(key, 0) + value
    return totals


def _option_map(options: dict[str, str]) -> str:
    return "map(" + ", ".join(f"{sql_text(k)}, {sql_text(v)}" for k, v in options.items()) + ")"


def ensure_commit_retries(spark: SparkSession, catalog: str, table: str,
                          minimum: int = COMMIT_RETRIES) -> bool:
    """Raise ``commit.retry.num-retries`` to ``minimum`` where lower; True when it changed the table."""
    qualified = f"{checked_name(catalog, 'catalog')}.{checked_name(table)}"
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {qualified}").collect()}
    current = props.get("commit.retry.num-retries")
    if current is not None and current.isdigit() and int(current) >= minimum:
        return False
    spark.sql(f"ALTER TABLE {qualified} SET TBLPROPERTIES ('commit.retry.num-retries'='{int(minimum)}')")
    return True


def purge_tombstones(spark: SparkSession, catalog: str, table: str, cutoff: dt.datetime) -> Metrics:
    """Delete the tombstones of ``table`` (a ``__tombstones`` table) whose event time is before ``cutoff``."""
    qualified = f"{checked_name(catalog, 'catalog')}.{checked_name(table)}"
    if TOMBSTONE_TIME_COLUMN not in spark.table(qualified).columns:
        raise MaintenanceError(f"{table} has no {TOMBSTONE_TIME_COLUMN} column: it is not a tombstone table "
                               f"of spark_jobs.compact; rename it (tables ending {TOMBSTONE_SUFFIX} are "
                               "reserved for tombstones)")
    condition = f"{TOMBSTONE_TIME_COLUMN} < {timestamp_literal(cutoff)}"
    expired = spark.sql(f"SELECT count(*) FROM {qualified} WHERE {condition}").collect()[0][0]
    if expired:  # no empty DELETE commits
        # The cut-off first: should the DELETE fail, compaction only looks up more history.
        record_purge_cutoff(spark, qualified, cutoff)
        spark.sql(f"DELETE FROM {qualified} WHERE {condition}")
    return {"purged_tombstones": int(expired)}


def record_purge_cutoff(spark: SparkSession, qualified: str, cutoff: dt.datetime) -> None:
    """Raise the tombstone table's ``cdc.tombstones-purged-before`` to ``cutoff`` (UTC)."""
    if cutoff.tzinfo is not None:
        cutoff = cutoff.astimezone(dt.UTC).replace(tzinfo=None)
    micros = (cutoff - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    found = [r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {qualified}").collect()
             if r["key"] == PURGED_BEFORE_PROPERTY]
    if found and int(found[0]) >= micros:
        return
    spark.sql(f"ALTER TABLE {qualified} SET TBLPROPERTIES ('{PURGED_BEFORE_PROPERTY}'='{micros}')")


def rewrite_data_files(spark: SparkSession, catalog: str, table: str, options: MaintenanceOptions) -> Metrics:
    """Bin-pack small files and apply delete files; first makes sure commits retry on conflict, and
    buckets a current table that has grown large (:func:`bucket_when_large`), rewriting all its files."""
    raised = ensure_commit_retries(spark, catalog, table)
    bucketed = bucket_when_large(spark, catalog, table, options.bucket_rows)
    rewrite = {
        "min-input-files": str(options.min_input_files),
        "delete-file-threshold": str(options.delete_file_threshold),
        "remove-dangling-deletes": "true",
        "partial-progress.enabled": "true",
    }
    if bucketed:
        rewrite["rewrite-all"] = "true"
    if options.target_file_size_bytes:
        rewrite["target-file-size-bytes"] = str(options.target_file_size_bytes)
    metrics = _counts(_call(spark, catalog, "rewrite_data_files", table, options=_option_map(rewrite)))
    return {**metrics, "commit_retries_raised": int(raised), "bucketed": int(bucketed)}


def bucket_when_large(spark: SparkSession, catalog: str, table: str, bucket_rows: int) -> bool:
    """Partition a current-state table by ``bucket(KEY_BUCKETS, _cdc_key)`` once its ``main`` holds
    ``bucket_rows`` live rows. Compaction creates it unpartitioned (a small table's MERGE costs less
    so); a large one's MERGE then reads only the buckets its keys fall in. True when it did."""
    namespace, _, _name = table.partition(".")
    if namespace != CURRENT_NAMESPACE or is_tombstone_table(table):
        return False
    qualified = f"{catalog}.{checked_name(table)}"
    described = spark.sql(f"DESCRIBE TABLE {qualified}").collect()
    if any(str(r["col_name"]).startswith("Part ") for r in described):
        return False  # partitioned already
    found = spark.sql(f"SELECT s.summary FROM {qualified}.snapshots s JOIN {qualified}.refs r "
                      "ON s.snapshot_id = r.snapshot_id WHERE r.name = 'main'").collect()
    summary = dict(found[0]["summary"] or {}) if found else {}
    live = sum(int(summary.get(k, 0)) * sign for k, sign in (
        ("total-records", 1), ("total-position-deletes", -1), ("total-equality-deletes", -1)))
    if live < bucket_rows:
        return False
    # The write order first: a table partitioned but still written unclustered would scatter
    # small files; killed in between, the next run does both again.
    spark.sql(f"ALTER TABLE {qualified} WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY _cdc_key")
    spark.sql(f"ALTER TABLE {qualified} ADD PARTITION FIELD bucket({KEY_BUCKETS}, _cdc_key)")
    return True


def rewrite_position_delete_files(spark: SparkSession, catalog: str, table: str,
                                  options: MaintenanceOptions) -> Metrics:
    rewrite = {"min-input-files": str(options.min_input_files)}
    rows = _call(spark, catalog, "rewrite_position_delete_files", table, options=_option_map(rewrite))
    return _counts(rows)


def expire_snapshots(spark: SparkSession, catalog: str, table: str, older_than: dt.datetime,
                     retain_last: int) -> Metrics:
    return _counts(_call(spark, catalog, "expire_snapshots", table,
                         older_than=timestamp_literal(older_than), retain_last=str(int(retain_last))))


def remove_orphan_files(spark: SparkSession, catalog: str, table: str, older_than: dt.datetime) -> Metrics:
    rows = _call(spark, catalog, "remove_orphan_files", table, older_than=timestamp_literal(older_than))
    return {"removed_orphan_files": len(rows)}


# ----------------------------------------------------------------------------------- driver


def step_functions(options: MaintenanceOptions,
                   as_of: dt.datetime) -> dict[str, tuple[TableFilter, TableAction]]:
    """Step name -> (which tables it applies to, what it does to one table)."""
    tombstone_cutoff = as_of - dt.timedelta(days=options.tombstone_retention_days)
    snapshot_cutoff = as_of - dt.timedelta(days=options.snapshot_retention_days)
    orphan_cutoff = as_of - dt.timedelta(days=options.orphan_file_age_days)

    def every_table(_: str) -> bool:
        return True

    return {
        "purge_tombstones": (is_tombstone_table,
                             lambda s, c, t: purge_tombstones(s, c, t, tombstone_cutoff)),
        "rewrite_data_files": (every_table, lambda s, c, t: rewrite_data_files(s, c, t, options)),
        "rewrite_position_delete_files": (every_table,
                                          lambda s, c, t: rewrite_position_delete_files(s, c, t, options)),
        "expire_snapshots": (every_table,
                             lambda s, c, t: expire_snapshots(s, c, t, snapshot_cutoff, options.retain_last)),
        "remove_orphan_files": (every_table, lambda s, c, t: remove_orphan_files(s, c, t, orphan_cutoff)),
    }


def maintain(spark: SparkSession, catalog: str, as_of: dt.datetime, run_id: str,
             options: MaintenanceOptions, steps: Iterable[str] = STEPS, *,
             tables: Iterable[str] | None = None, namespaces: Iterable[str] = NAMESPACES,
             gx_root: Path | None = None, now: dt.datetime | None = None,
             retention: RetentionConfig | None = None) -> MaintenanceSummary:
    """Run ``steps`` (in :data:`STEPS` order) over every table of ``namespaces`` (or only ``tables``,
    ``ns.table`` names that must exist); ``as_of`` is the reference time (naive = UTC).
    ``gx_root`` is the gates' GX folder (``<state>/gx``), which the gate-results step needs;
    ``retention`` the layers' retention, which the expire-hours step applies."""
    wanted = list(steps)
    unknown = sorted(set(wanted) - set(STEPS))
    if unknown:
        raise MaintenanceError(f"unknown maintenance step(s) {unknown}; choose from {list(STEPS)}")
    if as_of.tzinfo is not None:
        as_of = as_of.astimezone(dt.UTC).replace(tzinfo=None)
    clock = now or dt.datetime.now(dt.UTC).replace(tzinfo=None)
    if as_of > clock + FUTURE_TOLERANCE:
        raise MaintenanceError(
            f"reference time {as_of:%Y-%m-%d %H:%M:%S} UTC lies in the future (now {clock:%H:%M:%S}); "
            "pass the run's data_interval_end: a future time would treat in-flight files as orphans")
    gx_folder = _gate_results_folder(wanted, tables, gx_root)
    summary = MaintenanceSummary(as_of, run_id)
    listed = lakehouse_tables(spark, catalog, namespaces)
    if tables is not None:
        chosen = sorted({checked_name(t) for t in tables})
        missing = [t for t in chosen if t not in listed]
        if missing:
            raise MaintenanceError(f"no lakehouse table(s) {missing} in namespaces {list(namespaces)}; "
                                   f"existing: {listed}")
        listed = chosen
    if RETENTION_STEP in wanted and tables is None and retention is not None and \
            any(retention.days(layer) is not None for layer in RETENTION_LAYERS):
        summary.results.append(_expire_hours(spark, catalog, as_of, run_id, retention))
    functions = step_functions(options, as_of)
    for step in (s for s in TABLE_STEPS if s in wanted):
        applies, action = functions[step]
        chosen = list(filter(applies, listed))
        in_flight = audit_branches(spark, catalog, chosen) if step in MAIN_MOVING_STEPS else {}
        for table in chosen:
            if table in in_flight:
                deferred = StepResult(step, table, "DEFERRED", message=_deferred(in_flight[table]))
                summary.results.append(deferred)
                continue
            try:
                metrics = action(spark, catalog, table)
                summary.results.append(StepResult(step, table, "OK", metrics))
            except Exception as exc:  # noqa: BLE001 - one table's failure must not stop the others
                summary.results.append(StepResult(step, table, "FAILED", message=_first_line(exc)))
    if gx_folder is not None:
        summary.results.append(_expire_gate_results(gx_folder, as_of, options))
    return summary


def _expire_hours(spark: SparkSession, catalog: str, as_of: dt.datetime, run_id: str,
                  retention: RetentionConfig) -> StepResult:
    """Each layer whose table holds no hour in flight is expired; the others are deferred."""
    from spark_jobs import retention as expiry

    kept = {layer: table for layer, table in expiry.TABLES.items() if retention.days(layer) is not None}
    in_flight = audit_branches(spark, catalog, sorted(kept.values()))
    free = [layer for layer, table in kept.items() if table not in in_flight]
    try:
        metrics = expiry.expire(spark, retention, as_of, run_id, free)
    except Exception as exc:  # noqa: BLE001 - reported like a table's failure: the task fails
        return StepResult(RETENTION_STEP, HOURS_TARGET, "FAILED", message=_first_line(exc))
    if in_flight:
        branches = sorted({b for names in in_flight.values() for b in names})
        return StepResult(RETENTION_STEP, HOURS_TARGET, "DEFERRED", metrics,
                          f"{', '.join(sorted(in_flight))}: {_deferred(branches)}")
    return StepResult(RETENTION_STEP, HOURS_TARGET, "OK", metrics)


def _gate_results_folder(wanted: list[str], tables: Iterable[str] | None,
                         gx_root: Path | None) -> Path | None:
    """The GX folder the gate-results step maintains in this run, or None when it does not run
    (not wanted, or only named tables are maintained)."""
    if tables is not None and set(wanted) == {GATE_RESULTS_STEP}:
        raise MaintenanceError(f"{GATE_RESULTS_STEP} maintains the GX folder, not tables: "
                               "run it without naming tables")
    if GATE_RESULTS_STEP not in wanted or tables is not None:
        return None
    if gx_root is None:
        raise MaintenanceError(f"{GATE_RESULTS_STEP} needs the GX folder of the gates (gx_root)")
    return gx_root


def _expire_gate_results(gx_root: Path, as_of: dt.datetime, options: MaintenanceOptions) -> StepResult:
    from spark_jobs.gate_history import expire_gate_results

    cutoff = as_of - dt.timedelta(days=options.gate_results_retention_days)
    try:
        return StepResult(GATE_RESULTS_STEP, GX_TARGET, "OK", expire_gate_results(gx_root, cutoff))
    except Exception as exc:  # noqa: BLE001 - reported like a table's failure: the task fails
        return StepResult(GATE_RESULTS_STEP, GX_TARGET, "FAILED", message=_first_line(exc))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:500]


def options_from_config(config: PipelineConfig) -> MaintenanceOptions:
    return MaintenanceOptions(**asdict(config.maintenance),
                              tombstone_retention_days=int(config.tombstone_retention_days))


def run(spark: SparkSession, config: PipelineConfig, as_of: dt.datetime, run_id: str,
        steps: tuple[str, ...] = STEPS, tables: tuple[str, ...] | None = None) -> MaintenanceSummary:
    """Maintain every lakehouse table (or only ``tables``) and the gates' GX folder as of
    ``as_of`` (naive UTC)."""
    return maintain(spark, config.catalog_name, as_of, run_id,
                    options_from_config(config), steps, tables=tables,
                    gx_root=Path(config.home) / "gx", retention=config.retention)
