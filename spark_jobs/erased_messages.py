"""Reads of ``ops.erased_messages``: the Kafka messages an erasure removed from raw.

An erasure (``spark_jobs.erasure``) deletes one key's change rows and the raw messages they came
from, and records those messages' coordinates first. A message can carry change rows of several
keys, so the other keys' rows stay in ``cdc.changelog`` while their raw message is gone. Kafka may
still hold the message, and a re-run rebuilds an hour from its raw copy: landing must never write
an erased message back into raw, and normalize must keep the surviving rows it can no longer
decode. Both ask here, once per hour, whether the hour has any erased message (a read of a tiny
table); only then do they join with the coordinates.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.session import local_frame
from spark_jobs.tables import ERASED_MESSAGES

# A Kafka message's coordinates: (topic, partition, offset).
Coordinate = tuple[str, int, int]

COORDINATE_SCHEMA = T.StructType([
    T.StructField("topic", T.StringType(), False),
    T.StructField("partition", T.IntegerType(), False),
    T.StructField("offset", T.LongType(), False),
])


def erased_coordinates(spark: SparkSession, hour: dt.datetime | None = None,
                       topics: Sequence[str] | None = None) -> DataFrame:
    """The erased messages' (topic, partition, offset), each once (two erasures of keys of one
    message record it twice), of ``hour`` and ``topics`` when given."""
    rows = spark.table(ERASED_MESSAGES)
    if hour is not None:
        rows = rows.where(F.col("landed_hour") == F.lit(hour).cast("timestamp"))
    if topics is not None:
        rows = rows.where(F.col("topic").isin(list(topics)))
    return rows.select("topic", "partition", "offset").distinct()


def collect_erased(spark: SparkSession, hour: dt.datetime,
                   topics: Sequence[str] | None = None) -> list[Coordinate]:
    """:func:`erased_coordinates` of ``hour``, collected and sorted (usually none, else few)."""
    return sorted((r["topic"], r["partition"], r["offset"])
                  for r in erased_coordinates(spark, hour, topics).collect())


def counts_by_topic(coordinates: Iterable[Coordinate]) -> dict[str, int]:
    """Erased messages per topic."""
    return dict(Counter(topic for topic, _partition, _offset in coordinates))


def coordinates_frame(spark: SparkSession, coordinates: Sequence[Coordinate]) -> DataFrame:
    """Collected coordinates as a small local frame (topic, partition, offset) to join with."""
    return local_frame(spark, list(coordinates), COORDINATE_SCHEMA)


def _on(frame: DataFrame, erased: DataFrame, columns: Sequence[str]) -> list:
    topic, partition, offset = columns
    return [frame[topic] == erased["topic"], frame[partition] == erased["partition"],
            frame[offset] == erased["offset"]]


def without_erased(frame: DataFrame, erased: DataFrame,
                   columns: Sequence[str] = ("topic", "partition", "offset")) -> DataFrame:
    """``frame``'s rows whose coordinates (``columns``: topic, partition, offset) are not in
    ``erased`` (a small frame of :data:`COORDINATE_SCHEMA`, broadcast)."""
    erased = F.broadcast(erased.alias("erased"))
    return frame.join(erased, _on(frame, erased, columns), "left_anti")


def at_erased(frame: DataFrame, erased: DataFrame,
              columns: Sequence[str] = ("topic", "partition", "offset")) -> DataFrame:
    """``frame``'s rows whose coordinates are in ``erased`` (see :func:`without_erased`)."""
    erased = F.broadcast(erased.alias("erased"))
    return frame.join(erased, _on(frame, erased, columns), "left_semi")
