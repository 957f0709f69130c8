"""Writing folded keys into a current table: typed MERGE sources, the values check, the MERGE of
keyed and keyless rows, tombstones, and TRUNCATE."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdclake.formats.logical_types import (
    cast_text,
)
from spark_jobs.compaction.layout import META_COLUMNS, OCCURRENCE, TRUNCATE_PROPERTY, IncompatibleSchemaChange
from spark_jobs.compaction.schema import change_column_type, sql_literal, table_properties, table_schema
from spark_jobs.identifiers import (
    quote,
    quote_table,
    tombstone_table_name,
)


def typed_source(results: DataFrame, columns: dict[str, str]) -> DataFrame:
    """Fold results -> MERGE source: typed data columns + metadata + merge flags."""
    vals = F.from_json("vals", "map<string,string>")
    typed = results.withColumn("_vals", vals)
    select = [F.expr(cast_text(f"_vals[{sql_literal(name)}]", sql_type)).alias(name)
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


@dataclass(frozen=True)
class ValueCheck:
    """A typed column's new values that do not fit it."""
    bad: str | None  # the least value that fits no column type
    digits: int | None  # a bigint column's widest value beyond int64


def bad_value_sql(text: str, sql_type: str) -> str:
    """Spark SQL: the canonical text ``text`` is a value that does not fit ``sql_type``."""
    bad = f"{text} IS NOT NULL AND {cast_text(text, sql_type)} IS NULL"
    if sql_type in _DATE_TYPES:
        bad += f" AND NOT ({text} RLIKE {sql_literal(_NO_DATE)})"
    elif sql_type.startswith("decimal"):
        bad += f" AND NOT ({text} RLIKE {sql_literal(_NO_NUMBER)})"
    return bad


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
        text = f"_vals[{sql_literal(name)}]"
        bad = bad_value_sql(text, sql_type)
        aggs.append(F.expr(f"min(CASE WHEN {bad} THEN {text} END)").alias(f"bad{i}"))
        if sql_type == "bigint":
            aggs.append(F.expr(f"max(CASE WHEN {bad} AND try_cast({text} AS decimal(38,0)) IS NOT NULL "
                               f"THEN length(regexp_replace({text}, '^[-+]', '')) END)").alias(f"wide{i}"))
    stats = results.where(~F.col("deleted")).withColumn("_vals", vals).agg(*aggs).collect()[0].asDict()
    return widen_or_refuse(spark, table, columns, {
        name: ValueCheck(stats[f"bad{i}"], stats.get(f"wide{i}"))
        for i, name in enumerate(sorted(typed_cols))})


def widen_or_refuse(spark: SparkSession, table: str, columns: dict[str, str],
                    checks: Mapping[str, ValueCheck]) -> dict[str, str]:
    """Act on :func:`check_values`' findings: widen, or refuse the first column (by name) that a
    value does not fit. Returns the (possibly widened) columns."""
    out = dict(columns)
    for name in sorted(checks):
        check = checks[name]
        if check.digits:
            widened = "decimal(20,0)" if check.digits <= 20 else "decimal(38,0)"
            change_column_type(spark, table, name, columns[name], widened)
            out[name] = table_schema(spark, table)[name]
            continue
        if check.bad is not None:
            raise IncompatibleSchemaChange(
                f"{table} column {name!r} is {columns[name]} but a change holds {str(check.bad)[:80]!r}, "
                "which does not fit; type the column as text (the topic's string_columns) and "
                "recreate the table (drop it and re-run its hours), or fix the source")
    return out


def merge_keyed(spark: SparkSession, table: str, source: DataFrame, columns: dict[str, str]) -> None:
    view = f"_cdc_src_{abs(hash(table)) % 10**8}"
    source.createOrReplaceTempView(view)
    meta = [n for n, _ in META_COLUMNS]
    sets = [f"{quote(c)} = CASE WHEN s._cdc_m_replace OR array_contains(s._cdc_m_set, {sql_literal(c)}) "
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


def append_tombstones(source: DataFrame, table: str) -> None:
    """The tombstones of ``source``'s deleted keys, none of which has one yet."""
    source.where(F.col("_cdc_m_deleted")).select(*[n for n, _ in META_COLUMNS]).writeTo(
        quote_table(tombstone_table_name(table))).append()


def apply_truncate(spark: SparkSession, table: str, truncate_key: str) -> None:
    """Delete the rows and tombstones older than the hour's TRUNCATE and record its order key.
    Also when the key is recorded already: an attempt that recorded it may have been discarded
    before it published its deletes (the deletes find nothing when it had)."""
    t = quote_table(table)
    spark.sql(f"DELETE FROM {t} WHERE _cdc_order_key < {sql_literal(truncate_key)}")
    spark.sql(f"DELETE FROM {quote_table(tombstone_table_name(table))} "
              f"WHERE _cdc_order_key < {sql_literal(truncate_key)}")
    if table_properties(spark, table).get(TRUNCATE_PROPERTY) != truncate_key:
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('{TRUNCATE_PROPERTY}'={sql_literal(truncate_key)})")
