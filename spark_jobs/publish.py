"""Write-audit-publish with Iceberg branches: analysts only ever read hours that passed their gates.

For an hour, every table the hour writes to and analysts read (``cdc.changelog``,
``cdc.quarantine``, ``cdc.held_tables`` and the ``current.*`` and ``history.*`` tables compaction
touches) gets an audit branch
``audit_<yyyymmdd>T<hh>`` made from ``main``'s current snapshot (:func:`start_audit`). The jobs
write the hour to that branch (``normalize.table_ref(table, branch)``), the gates validate the
branch, and :func:`publish` fast-forwards ``main`` to it and drops it. Spark SQL (``spark.table``,
``SELECT ... FROM t``) and pyiceberg scans (``cdclake query``) read ``main`` only, so unaudited data
is never what they see. A failed gate leaves ``main`` untouched and the branch in place for
inspection (``SELECT ... FROM cdc.changelog.branch_audit_20240301T10``); re-running the hour starts a
fresh branch, :func:`discard` drops it without publishing.

Each attempt at an hour starts clean (:func:`begin_attempt`): the changelog's audit branch marks an
attempt in flight. It is created before any other table's branch and, in :func:`publish` and
:func:`discard`, dropped after every other one, so while any table holds the hour's branch the
changelog holds it too. A new attempt that finds the changelog's branch drops the hour's branch on
every table first, so no row, table property or stray branch of a failed attempt reaches ``main``,
whether or not ``main`` moved in between. An interrupted publish is completed by running publish
again: it fast-forwards the tables that still hold the branch.

Why fast-forward always applies: the hourly DAG runs with ``max_active_runs=1``, so the hours of
one table are audited and published one after the other and nothing commits to ``main`` of these
tables between an hour's :func:`start_audit` and its :func:`publish` — ``main`` is still an ancestor
of the branch. Should something have committed to ``main`` anyway (a manual write), Iceberg refuses
the fast-forward instead of losing that commit; re-run the hour. Operational tables
(``raw.kafka_messages``, ``ops.*``) are written straight to ``main``: the gates read them and nobody
needs them hidden.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Sequence

from pyspark.sql import SparkSession

from cdclake.table_names import audit_branch
from spark_jobs import hour_status
from spark_jobs.identifiers import (
    CURRENT_NAMESPACE,
    HISTORY_NAMESPACE,
    history_table_name,
    quote_table,
    tombstone_table_name,
)
from spark_jobs.session import concurrently
from spark_jobs.tables import CHANGELOG, HELD_TABLES, QUARANTINE, in_catalog

log = logging.getLogger(__name__)

AUDITED_TABLES = (CHANGELOG, QUARANTINE)  # branched when an attempt begins
# What the publish job does to the hour's audit branch (see apply_action).
ACTIONS = ("start", "publish", "discard")
# Branched by compaction's first write to them, like the current.* tables an hour touches.
COMPACTION_TABLES = (HELD_TABLES,)


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def branch_names(spark: SparkSession, table: str) -> set[str]:
    """The table's branches (``main`` only once it has a snapshot)."""
    rows = spark.sql(f"SELECT name FROM {quote_table(table)}.refs WHERE type = 'BRANCH'").collect()
    return {r["name"] for r in rows}


def tables_with_branch(spark: SparkSession, tables: Iterable[str], branch: str) -> list[str]:
    """Those of ``tables`` that hold ``branch``, in their order: one query for them all (a
    query per table costs a Spark job each, which an hour of hundreds of tables feels)."""
    tables = list(tables)
    if not tables:
        return []
    union = " UNION ALL ".join(f"SELECT {_literal(t)} AS t FROM {quote_table(t)}.refs "
                               f"WHERE type = 'BRANCH' AND name = {_literal(branch)}" for t in tables)
    found = {r["t"] for r in spark.sql(union).collect()}
    return [t for t in tables if t in found]


def _changelog_last(tables: Iterable[str]) -> list[str]:
    """The changelog's branch is the attempt's marker: the last to go (see the module doc)."""
    tables = list(tables)
    return [t for t in tables if t != CHANGELOG] + [t for t in tables if t == CHANGELOG]


def begin_attempt(spark: SparkSession, hour: dt.datetime,
                  tables: Iterable[str] = AUDITED_TABLES, threads: int = 1) -> str:
    """Start an attempt at ``hour``: drop what an earlier unpublished attempt left on any table
    (when the changelog still holds the hour's branch), then branch ``tables`` fresh from main."""
    branch = audit_branch(hour)
    if tables_with_branch(spark, [CHANGELOG], branch):
        left = audited_tables(spark, hour)
        log.warning("hour %s: an earlier attempt left branch %s on %s; dropped before this attempt",
                    hour.isoformat(), branch, ", ".join(left))
        discard(spark, left, hour, threads)
    return start_audit(spark, tables, hour)


def start_audit(spark: SparkSession, tables: Iterable[str], hour: dt.datetime) -> str:
    """(Re)create the hour's audit branch of each table from ``main``'s current snapshot."""
    branch = audit_branch(hour)
    for table in tables:
        t = quote_table(in_catalog(spark, table))
        if "main" not in branch_names(spark, table):
            # A table that was never written has no snapshot: commit an empty append so that the
            # branch and main share an ancestor and main exists for readers (both ends of WAP).
            spark.sql(f"INSERT INTO {t} SELECT * FROM {t} WHERE false")
        spark.sql(f"ALTER TABLE {t} DROP BRANCH IF EXISTS `{branch}`")
        spark.sql(f"ALTER TABLE {t} CREATE BRANCH `{branch}`")
        log.info("%s: audit branch %s created from main", table, branch)
    return branch


def publish(spark: SparkSession, tables: Iterable[str], hour: dt.datetime,
            run_id: str = "manual", threads: int = 1) -> list[str]:
    """Fast-forward ``main`` of each table to the hour's audit branch, then drop the branch.

    Tables without the branch are skipped (already published, or not written this hour), so a
    second call completes an interrupted one; the tables published are returned, the changelog
    last; ``threads`` tables at a time. ``ops.hour_status`` records the hour ``PUBLISHING`` before
    the first fast-forward and
    ``PUBLISHED``, with each table's snapshot, after the last (see ``spark_jobs.hour_status``).
    """
    branch = audit_branch(hour)
    pending = _changelog_last(tables_with_branch(spark, tables, branch))
    if not pending:
        return []
    earlier = hour_status.recorded(spark, hour, hour_status.PUBLISH)
    interrupted = earlier[1] if earlier and earlier[0] == hour_status.PUBLISHING else []
    already = [t for t in interrupted if t not in pending]  # published by the interrupted call
    hour_status.record(spark, hour, hour_status.PUBLISH, run_id, hour_status.PUBLISHING,
                       [(t, None) for t in already + pending])
    snapshots = main_snapshots(spark, already)

    def fast_forward(table: str) -> int:
        [result] = spark.sql(f"CALL system.fast_forward(table => {_literal(in_catalog(spark, table))}, "
                             f"branch => 'main', to => {_literal(branch)})").collect()
        spark.sql(f"ALTER TABLE {quote_table(in_catalog(spark, table))} DROP BRANCH IF EXISTS `{branch}`")
        log.info("%s: main fast-forwarded to %s", table, branch)
        return int(result["updated_ref"])

    # The changelog's branch marks the attempt: it goes once every other table is published.
    others = [t for t in pending if t != CHANGELOG]
    snapshots.update(zip(others, concurrently(spark, others, fast_forward, threads), strict=True))
    if CHANGELOG in pending:
        snapshots[CHANGELOG] = fast_forward(CHANGELOG)
    hour_status.record(spark, hour, hour_status.PUBLISH, run_id, hour_status.PUBLISHED,
                       [(t, snapshots[t]) for t in already + pending])
    return pending


def main_snapshots(spark: SparkSession, tables: Sequence[str]) -> dict[str, int]:
    """Each table's ``main`` snapshot id, in one query."""
    if not tables:
        return {}
    union = " UNION ALL ".join(f"SELECT {_literal(t)} AS t, snapshot_id FROM {quote_table(t)}.refs "
                               "WHERE name = 'main'" for t in tables)
    return {r["t"]: r["snapshot_id"] for r in spark.sql(union).collect()}


def discard(spark: SparkSession, tables: Iterable[str], hour: dt.datetime, threads: int = 1) -> None:
    """Drop the hour's audit branch of each table (``threads`` at a time, the changelog last);
    ``main`` stays as it is."""
    branch = audit_branch(hour)

    def drop(table: str) -> None:
        spark.sql(f"ALTER TABLE {quote_table(in_catalog(spark, table))} DROP BRANCH IF EXISTS `{branch}`")

    tables = list(tables)
    concurrently(spark, [t for t in tables if t != CHANGELOG], drop, threads)
    if CHANGELOG in tables:
        drop(CHANGELOG)


def current_tables(spark: SparkSession) -> list[str]:
    """Every table in the ``current`` namespace (current-state and tombstone tables)."""
    return namespace_tables(spark, CURRENT_NAMESPACE)


def namespace_tables(spark: SparkSession, namespace: str) -> list[str]:
    if not spark.catalog.databaseExists(namespace):
        return []
    rows = spark.sql(f"SHOW TABLES IN `{namespace}`").collect()
    return sorted(f"{namespace}.{r['tableName']}" for r in rows)


def audited_tables(spark: SparkSession, hour: dt.datetime,
                   candidates: Sequence[str] | None = None) -> list[str]:
    """Tables that hold the hour's audit branch (default candidates: changelog, quarantine, current.*)."""
    pool = list(candidates) if candidates is not None else audit_candidates(spark)
    return tables_with_branch(spark, pool, audit_branch(hour))


def audit_candidates(spark: SparkSession) -> list[str]:
    """Every table an hour may audit: the changelog, the quarantine, the held tables, the
    current.* and the history.* tables."""
    return [*AUDITED_TABLES, *COMPACTION_TABLES, *current_tables(spark),
            *namespace_tables(spark, HISTORY_NAMESPACE)]


def hour_candidates(spark: SparkSession, hour: dt.datetime) -> list[str] | None:
    """The tables the hour may have written to its audit branch: the changelog, the quarantine,
    the held tables, and the current tables compaction recorded for the hour in
    ``ops.hour_status`` with their tombstone and history tables; None when compaction recorded
    nothing for the hour (then every table is a candidate: :func:`audit_candidates`). An hour's
    gate and publish then look at the tables it touched, not at every table of the lakehouse."""
    compacted = hour_status.recorded(spark, hour, hour_status.COMPACT)
    if compacted is None:
        return None
    existing = set(current_tables(spark)) | set(namespace_tables(spark, HISTORY_NAMESPACE))
    touched = [name for table in compacted[1]
               for name in (table, tombstone_table_name(table), history_table_name(table))
               if name in existing]
    return list(dict.fromkeys([*AUDITED_TABLES, *COMPACTION_TABLES, *touched]))


def apply_action(spark: SparkSession, hour: dt.datetime, run_id: str, action: str = "publish",
                 tables: Sequence[str] | None = None, threads: int = 1) -> list[str]:
    """Apply ``action`` (:data:`ACTIONS`) to the hour's audit branch, ``threads`` tables at a time;
    returns the tables it touched."""
    if action == "start":
        chosen = list(dict.fromkeys([*AUDITED_TABLES, *(tables or ())]))
        begin_attempt(spark, hour, chosen, threads)
        return chosen
    if action == "publish":
        chosen = list(tables) if tables else hour_candidates(spark, hour) or audit_candidates(spark)
        return publish(spark, chosen, hour, run_id, threads)
    chosen = list(tables) if tables else audited_tables(spark, hour)
    discard(spark, chosen, hour, threads)
    return chosen
