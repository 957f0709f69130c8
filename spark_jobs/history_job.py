"""Rebuild one SCD2 history table from the changelog alone (see ``spark_jobs.history``).

    cdclake history rebuild --table current.shop__orders

Reads every change of the table's source table in ``cdc.changelog`` (``main``: published hours)
and replaces ``history.<db>__<table>`` with the versions they give, in one commit. Refused while
an hour is in flight (the table holds an audit branch) or for a keyless table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from cdclake.exceptions import CdclakeError
from spark_jobs import compact, history
from spark_jobs.compact_job import options_from_config
from spark_jobs.identifiers import SOURCE_SCHEMA_SQL, current_table_name, history_table_name
from spark_jobs.maintenance import audit_branches
from spark_jobs.tables import CHANGELOG, ensure_tables

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig


class HistoryError(CdclakeError):
    """The history table cannot be rebuilt; the message says why."""


def current_of(name: str) -> str:
    """``current.shop__orders``, ``history.shop__orders`` or ``shop__orders`` -> the current table."""
    return "current." + name.split(".", 1)[-1]


def rebuild(spark: SparkSession, config: PipelineConfig, name: str) -> int:
    """Rebuild the history of current table ``name``; returns its number of versions."""
    ensure_tables(spark)
    table = current_of(name)
    if not compact.table_exists(spark, table):
        raise HistoryError(f"{table} does not exist (cdclake tables lists the tables)")
    properties = compact.table_properties(spark, table)
    if properties.get(compact.KEYLESS_PROPERTY) == "true":
        raise HistoryError(f"{table} is keyless: its rows have no identity to keep a history of")
    catalog = str(spark.conf.get("spark.sql.defaultCatalog"))
    existing = [t for t in (table, history_table_name(table)) if compact.table_exists(spark, t)]
    held = audit_branches(spark, catalog, existing)
    if held:
        branches = sorted({b for names in held.values() for b in names})
        raise HistoryError(f"an hour is in flight on {', '.join(sorted(held))} (branches "
                           f"{', '.join(branches)}); rebuild once it publishes")
    options = options_from_config(config)
    topic = properties.get(compact.TOPIC_PROPERTY)
    changes = compact.table_space(spark.table(CHANGELOG), options.table_prefixes)
    if topic is not None:
        changes = changes.where(F.col("kafka_topic") == F.lit(topic))
    sources = changes.select("database", F.expr(SOURCE_SCHEMA_SQL).alias("source_schema"),
                             "table_name").distinct().collect()
    matching = [(r["database"], r["source_schema"], r["table_name"]) for r in sources
                if current_table_name(r["database"], r["table_name"], r["source_schema"]) == table]
    if not matching:
        raise HistoryError(f"cdc.changelog holds no change of {table}'s source table")
    [source_table] = matching
    mine = compact.table_changes(spark, CHANGELOG, options, source_table, topic, None)
    declared = compact.declared_columns(mine).get(source_table, {})
    spellings = compact.table_spellings(spark, table, mine, declared)
    if spellings:
        mine = compact.table_changes(spark, CHANGELOG, options, source_table, topic, spellings)
    columns = {n: t for n, t in compact.table_schema(spark, table).items() if not n.startswith("_cdc_")}
    source = properties.get(compact.SOURCE_PROPERTY) or table
    history.update(spark, table, source, mine, None, columns, options.buckets)
    return spark.table(history_table_name(table)).count()
