"""``ops.topic_starts``: where each topic's history begins (rules: ``cdclake.topic_starts``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from pyspark.sql import SparkSession

from cdclake.topic_starts import StartRules, TopicStart, new_starts
from spark_jobs.session import local_frame
from spark_jobs.tables import OFFSET_LEDGER, TOPIC_STARTS

_UPDATE_VIEW = "cdclake_topic_starts_update"


def read(spark: SparkSession) -> dict[str, TopicStart]:
    return {r["topic"]: TopicStart(r["topic"], r["start_hour"], r["origin"])
            for r in spark.table(TOPIC_STARTS).select("topic", "start_hour", "origin").collect()}


def resolve(spark: SparkSession, rules: StartRules, topics: Sequence[str],
            run_id: str) -> dict[str, TopicStart]:
    """The recorded starts of ``topics`` before landing them, recording the ones the configuration
    chose that are new or changed (a topic without one begins at its first landed hour)."""
    recorded = read(spark)
    fresh = (rules.lake_start is not None and not recorded
             and not spark.table(OFFSET_LEDGER).limit(1).collect())
    changed = new_starts(rules, recorded, topics, fresh)
    if changed:
        record(spark, changed, run_id)
        recorded.update({s.topic: s for s in changed})
    return {t: recorded[t] for t in topics if t in recorded}


def record(spark: SparkSession, starts: Sequence[TopicStart], run_id: str) -> None:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    rows = [{"topic": s.topic, "start_hour": s.hour, "origin": s.origin, "run_id": run_id, "recorded_at": now}
            for s in starts]
    local_frame(spark, rows, spark.table(TOPIC_STARTS).schema).createOrReplaceTempView(_UPDATE_VIEW)
    try:
        spark.sql(f"""
            MERGE INTO {TOPIC_STARTS} t USING {_UPDATE_VIEW} s ON t.topic = s.topic
            WHEN MATCHED THEN UPDATE SET *
            WHEN NOT MATCHED THEN INSERT *""")
    finally:
        spark.catalog.dropTempView(_UPDATE_VIEW)
