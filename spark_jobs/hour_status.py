"""What compaction and publish did to each hour, in ``ops.hour_status``.

Landing, normalize and the gates keep their own records (``ops.offset_ledger``, ``ops.run_stats``,
``ops.gate_results``); compaction and publish record theirs here, a row per hour and stage:

* ``compact``: ``OK``, or ``PARTIAL`` when some tables failed and are held back (which and why in
  ``message``; see ``held_tables``), with the current tables the hour wrote;
* ``publish``: ``PUBLISHING`` with the tables about to be published, before the first
  fast-forward, then ``PUBLISHED`` with each table and the snapshot id its ``main`` then holds.
  An hour left ``PUBLISHING`` was interrupted: running publish again completes it.

An hour is fully published when its ``publish`` row says ``PUBLISHED``; ``cdclake hours`` shows
every stage of a range of hours side by side.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_jobs.session import local_frame
from spark_jobs.tables import HOUR_STATUS, replace_small

COMPACT, PUBLISH = "compact", "publish"
OK, PARTIAL = "OK", "PARTIAL"
PUBLISHING, PUBLISHED = "PUBLISHING", "PUBLISHED"


def record(spark: SparkSession, hour: dt.datetime, stage: str, run_id: str, status: str,
           tables: Sequence[tuple[str, int | None]], message: str | None = None) -> None:
    """Replace the hour's row of ``stage`` (one small commit)."""
    row = {"landed_hour": hour, "stage": stage, "status": status, "run_id": run_id,
           "tables": [{"name": name, "snapshot_id": snapshot} for name, snapshot in tables],
           "message": message, "recorded_at": dt.datetime.now(dt.UTC).replace(tzinfo=None)}
    frame = local_frame(spark, [row], spark.table(HOUR_STATUS).schema)
    replace_small(frame, HOUR_STATUS, (F.col("landed_hour") == F.lit(hour).cast("timestamp"))
                  & (F.col("stage") == F.lit(stage)))


def recorded(spark: SparkSession, hour: dt.datetime, stage: str) -> tuple[str, list[str]] | None:
    """The hour's row of ``stage``: its status and table names; None when there is none."""
    rows = (spark.table(HOUR_STATUS)
            .where((F.col("landed_hour") == F.lit(hour).cast("timestamp")) & (F.col("stage") == stage))
            .select("status", "tables.name").collect())
    return (rows[0]["status"], list(rows[0]["name"] or [])) if rows else None
