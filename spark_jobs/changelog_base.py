"""The changelog base: what expired changelog hours leave behind (``retention.changelog_days``).

Compaction's slow path and SCD2 history fold a key's whole changelog. Once hours of
``cdc.changelog`` expire, ``cdc.changelog_base`` stands in for them, as Kafka's log compaction
keeps a topic's last record per key: per source table (and topic) and key, one change row that
folds every expired change of the key.

* A live key: its last change row with a full after image (the folded state), no before image
  and ``row_key`` set to the key, so it makes one FULL event at the last change's order key.
* A deleted key: a DELETE row at its delete's order key (a late, older change stays deleted).
* A keyless row: one INSERT per remaining copy (negative ``record_index``: no Kafka message has
  one).
* A table's newest expired TRUNCATE, as it was; the changes before it are not folded, as
  compaction skips them.

Each row keeps its change's lineage (Kafka coordinates, landing hour, run id), so erasure finds
it like a changelog row. ``base_through`` (on every row, and on a marker row with no table) is
the newest hour folded in: readers take the changelog's later hours only, so a stop between
writing the base and deleting the hours changes nothing. A fold of the same set of changes is the
same state, except for a change that lands after its key's folded changes expired yet is older
than the last of them: it sorts before the base row, whose full image then hides it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from cdclake.formats.canonical import CHANGE_ROW_DDL, CHANGE_ROW_FIELDS
from cdclake.table_names import CHANGELOG_BASE
from spark_jobs.compaction.events import change_events
from spark_jobs.compaction.fold import fold_events
from spark_jobs.session import local_frame
from spark_jobs.tables import CHANGELOG, in_catalog

THROUGH = "base_through"
# Events are folded per source table and topic (``_topic``: the fold's own result has a topic).
_WITHIN = ("_topic", "database", "source_schema", "table_name")
_COORDINATES = ("kafka_topic", "kafka_partition", "kafka_offset", "record_index")
_MARK = "BASE_MARK"  # the marker row's op: no change has it, so it makes no event


def exists(spark: SparkSession) -> bool:
    return bool(spark.catalog.tableExists(in_catalog(spark, CHANGELOG_BASE)))


def through(spark: SparkSession) -> dt.datetime | None:
    """The newest changelog hour folded into the base, None while there is no base."""
    if not exists(spark):
        return None
    value = spark.table(CHANGELOG_BASE).agg(F.max(THROUGH)).collect()[0][0]
    return value if isinstance(value, dt.datetime) else None


def rows(spark: SparkSession) -> DataFrame:
    """The base's change rows, in the changelog's columns (the marker row left out)."""
    return (spark.table(CHANGELOG_BASE).where(F.col("table_name").isNotNull())
            .select(*CHANGE_ROW_FIELDS))


def readable_changes(spark: SparkSession, changelog: DataFrame,
                     base_through: dt.datetime | None) -> DataFrame:
    """``changelog`` (rows of ``cdc.changelog``) after the base's hours, with the base's rows."""
    if base_through is None:
        return changelog
    later = changelog.where(F.col("landed_hour") > F.lit(base_through).cast("timestamp"))
    return later.unionByName(rows(spark))


def fold_into_base(spark: SparkSession, new_through: dt.datetime) -> int:
    """Fold the changelog's hours up to ``new_through`` into the base (one commit that replaces
    it); returns the base's rows. The hours are deleted from the changelog afterwards, by the
    caller."""
    old_through = through(spark)
    if old_through is not None and old_through >= new_through:
        return spark.table(CHANGELOG_BASE).count() - 1
    changes = spark.table(CHANGELOG).where(F.col("landed_hour") <= F.lit(new_through).cast("timestamp"))
    if old_through is not None:
        changes = readable_changes(spark, changes, old_through)
    changes = changes.dropDuplicates(list(_COORDINATES) + ["row_key", "op"]).localCheckpoint()
    base = _base_rows(changes).unionByName(_marker(spark)).withColumn(
        THROUGH, F.lit(new_through).cast("timestamp"))
    if not exists(spark):
        spark.sql(f"CREATE TABLE IF NOT EXISTS {in_catalog(spark, CHANGELOG_BASE)} "
                  f"({CHANGE_ROW_DDL}, {THROUGH} timestamp) USING iceberg "
                  "TBLPROPERTIES ('format-version'='2')")
    base = base.localCheckpoint()
    base.writeTo(CHANGELOG_BASE).overwrite(F.lit(True))
    return base.count() - 1


def _marker(spark: SparkSession) -> DataFrame:
    row = {name: _MARK if name == "op" else None for name in CHANGE_ROW_FIELDS}
    schema = StructType.fromDDL(CHANGE_ROW_DDL)
    assert isinstance(schema, StructType)
    return local_frame(spark, [row], schema)


def _base_rows(changes: DataFrame) -> DataFrame:
    """One folded change row per key (see the module docstring) and each table's newest TRUNCATE."""
    events = change_events(changes).withColumn("_topic", F.col("kafka_topic"))
    table = list(_WITHIN)
    truncates = (events.where(F.col("kind") == "TRUNCATE").groupBy(*table)
                 .agg(F.max("order_key").alias("_truncated_before")))
    keyed = (events.where(F.col("key").isNotNull() & (F.col("kind") != "TRUNCATE"))
             .join(truncates.withColumnsRenamed({c: f"_t_{c}" for c in table}),
                   [F.col(c).eqNullSafe(F.col(f"_t_{c}")) for c in table], "left")
             .where(F.col("_truncated_before").isNull() | (F.col("order_key") > F.col("_truncated_before")))
             .drop("_truncated_before", *[f"_t_{c}" for c in table]))
    folded = fold_events(keyed.withColumn("base", F.lit("ABSENT")).withColumn("stored_count", F.lit(0)),
                         within=table)
    # The change row each key's last event came from (its lineage), by its coordinates.
    order = Window.partitionBy(*table, "key").orderBy(F.col("order_key").desc(), F.col("part").desc(),
                                                      F.col("kind").desc())
    last = (keyed.withColumn("_n", F.row_number().over(order)).where(F.col("_n") == 1)
            .select(*table, "key", "record_index"))
    lineage = changes.dropDuplicates(list(_COORDINATES)).select(
        *[F.col(c).alias(f"_c_{c}") for c in CHANGE_ROW_FIELDS])
    # Null-safe: a source without a schema (most) has none.
    joined = (folded.join(last.withColumnsRenamed({c: f"_l_{c}" for c in table + ["key"]}),
                          [folded[c].eqNullSafe(F.col(f"_l_{c}")) for c in [*table, "key"]])
              .join(lineage, [F.col("kafka_topic") == F.col("_c_kafka_topic"),
                              F.col("kafka_partition") == F.col("_c_kafka_partition"),
                              F.col("kafka_offset") == F.col("_c_kafka_offset"),
                              F.col("record_index") == F.col("_c_record_index")]))
    copies = F.when(F.col("keyless"), F.sequence(F.lit(1), F.greatest(F.col("count"), F.lit(1))))\
        .otherwise(F.array(F.lit(0)))
    spread = joined.where(~F.col("keyless") | (F.col("count") > 0)).withColumn("_copy", F.explode(copies))
    state = F.from_json("vals", "map<string,string>")
    synthesized: Mapping[str, Column] = {
        "op": F.when(F.col("keyless"), F.lit("INSERT")).when(F.col("deleted"), F.lit("DELETE"))
        .when(F.col("_c_op").isin("INSERT", "SNAPSHOT"), F.col("_c_op")).otherwise(F.lit("UPDATE")),
        "record_index": F.when(F.col("keyless"), -F.col("_copy")).otherwise(F.col("record_index")),
        "row_key": F.when(F.col("keyless"), F.lit(None).cast("string")).otherwise(F.col("key")),
        "primary_key_columns": F.when(F.col("keyless"), F.array().cast("array<string>"))
        .otherwise(F.col("_c_primary_key_columns")),
        "before": F.lit(None).cast("map<string,string>"),
        "after": F.when(F.col("deleted") & ~F.col("keyless"), F.lit(None).cast("map<string,string>"))
        .otherwise(state),
        "after_is_full": F.lit(True),
    }
    folded_rows = spread.select(*[synthesized.get(c, F.col(f"_c_{c}")).alias(c) for c in CHANGE_ROW_FIELDS])
    newest = Window.partitionBy(*table).orderBy(F.col("order_key").desc())
    truncate_rows = (events.where(F.col("kind") == "TRUNCATE").withColumn("_n", F.row_number().over(newest))
                     .where(F.col("_n") == 1).select(*_COORDINATES))
    newest_truncates = (changes.join(truncate_rows, list(_COORDINATES), "left_semi")
                        .where(F.col("op") == "TRUNCATE"))
    return folded_rows.unionByName(newest_truncates)
