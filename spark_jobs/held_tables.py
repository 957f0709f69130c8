"""Current tables held back: one table's failed compaction never stops the others' hour.

When compacting a source table fails (a type it cannot hold, a refused name, a Spark error), its
current table keeps its last good state and is *held* from that hour on: a row in
``cdc.held_tables`` names it, the first hour not applied (``since``), the latest hour it failed
and why. The hour's other tables compact and publish. Later hours do not apply a held table's
changes on top of the gap; each one tries again with every change from ``since`` on (the fold of
a set of changes does not depend on how it is split into hours), so once the cause is gone (a
transient error, or a setting fixed and the hours from ``since`` re-run) the table catches up and
its row goes.

The table is written through the hour's audit branch like the current tables: a hold or a release
is published with its hour, and a failed attempt's is dropped with the attempt.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.publish import tables_with_branch
from spark_jobs.session import local_frame
from spark_jobs.tables import HELD_TABLES

WAP_BRANCH = "spark.wap.branch"

# (database, source schema, table): the source table as compaction keys it (see compact.py).
SourceTable = tuple[str | None, str | None, str | None]


@dataclass(frozen=True)
class Hold:
    source_table: SourceTable
    table: str  # current.<db>__<table>
    source: str  # db.table, as the summary names it
    since: dt.datetime  # the first landing hour not applied to the table
    failed_hour: dt.datetime  # the latest hour whose compaction of it failed
    message: str
    run_id: str

    def reason(self) -> str:
        return (f"held back since {self.since:%Y-%m-%dT%H:00:00Z}, last failed in "
                f"{self.failed_hour:%Y-%m-%dT%H:00:00Z}: {self.message}")

    def line(self) -> str:
        return f"{self.table} ({self.source}) {self.reason()}"


def _frame(spark: SparkSession, branch: str | None = None) -> DataFrame:
    if branch and tables_with_branch(spark, [HELD_TABLES], branch):
        return spark.table(f"{HELD_TABLES}.branch_{branch}")
    return spark.table(HELD_TABLES)  # the session's write-audit-publish branch when it holds one


def read(spark: SparkSession, branch: str | None = None) -> dict[SourceTable, Hold]:
    """The held tables (of ``branch`` when the table holds it, else as the session reads it)."""
    holds = {}
    for r in _frame(spark, branch).collect():
        key = (r["database"], r["source_schema"], r["table_name"])
        holds[key] = Hold(key, r["current_table"], r["source"], r["since"], r["failed_hour"],
                          r["message"] or "", r["run_id"])
    return holds


def write(spark: SparkSession, holds: Iterable[Hold]) -> None:
    """Replace the table's rows with ``holds`` (a few rows: one commit, through the session's
    write-audit-publish branch when it has one)."""
    rows = [{"current_table": h.table, "source": h.source, "database": h.source_table[0],
             "source_schema": h.source_table[1], "table_name": h.source_table[2], "since": h.since,
             "failed_hour": h.failed_hour, "message": h.message, "run_id": h.run_id,
             "recorded_at": dt.datetime.now(dt.UTC).replace(tzinfo=None)} for h in holds]
    frame = local_frame(spark, rows, spark.table(HELD_TABLES).schema)
    frame.coalesce(1).writeTo(HELD_TABLES).option("distribution-mode", "none").overwrite(F.lit(True))
