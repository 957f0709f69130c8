"""The lakehouse's fixed tables: names, schemas, partitioning and sort orders, in one place.

Every job calls :func:`ensure_tables` (idempotent ``CREATE ... IF NOT EXISTS``). The names are
constants of the product (``cdclake.table_names``), never taken from messages; per-source
``current.*`` tables are made by the compaction job from sanitised identifiers.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession

from cdclake.formats.canonical import CHANGE_ROW_DDL
from cdclake.table_names import (
    CHANGELOG,
    ERASED_MESSAGES,
    ERASURES,
    EXPIRED_HOURS,
    GATE_RESULTS,
    HELD_TABLES,
    HOUR_STATUS,
    NAMESPACES,
    OFFSET_LEDGER,
    QUARANTINE,
    RAW_MESSAGES,
    RUN_STATS,
    TOPIC_STARTS,
)

RAW_MESSAGES_DDL = """
    topic string NOT NULL,
    `partition` int NOT NULL,
    `offset` bigint NOT NULL,
    `timestamp` timestamp,
    timestamp_type int,
    key binary,
    value binary,
    headers array<struct<key: string, value: binary>>,
    landed_hour timestamp NOT NULL,
    run_id string NOT NULL,
    landed_at timestamp
"""

OFFSET_LEDGER_DDL = """
    topic string NOT NULL,
    `partition` int NOT NULL,
    landed_hour timestamp NOT NULL,
    planned_start bigint NOT NULL,
    planned_end bigint NOT NULL,
    landed_count bigint,
    first_offset bigint,
    last_offset bigint,
    run_id string NOT NULL,
    status string NOT NULL,
    message string,
    recorded_at timestamp,
    late_messages bigint,
    max_lateness_ms bigint,
    erased_messages bigint
"""

# Where each topic's history begins (see cdclake.topic_starts): one row per topic.
TOPIC_STARTS_DDL = """
    topic string NOT NULL,
    start_hour timestamp NOT NULL,
    origin string NOT NULL,
    run_id string NOT NULL,
    recorded_at timestamp
"""

# Hours of a layer dropped by retention (see spark_jobs.retention): one row per layer and hour.
EXPIRED_HOURS_DDL = """
    layer string NOT NULL,
    landed_hour timestamp NOT NULL,
    row_count bigint,
    run_id string NOT NULL,
    expired_at timestamp
"""

# Erasures of one key of one current table (see spark_jobs.erasure): one row per erasure. The key
# itself is never stored, only its hash salted with the lake's own secret.
ERASURES_DDL = """
    erasure_id string NOT NULL,
    current_table string NOT NULL,
    key_hash string NOT NULL,
    reason string NOT NULL,
    status string NOT NULL,
    requested_at timestamp NOT NULL,
    completed_at timestamp,
    erased_through timestamp,
    removed_rows array<struct<table_name: string, row_count: bigint>>,
    raw_messages bigint,
    snapshots_expired bigint,
    files_removed bigint,
    run_id string NOT NULL
"""

# The Kafka messages an erasure removed from raw (see spark_jobs.erasure): landing never lands
# them again, and normalize keeps the other keys' change rows they carried.
ERASED_MESSAGES_DDL = """
    erasure_id string NOT NULL,
    topic string NOT NULL,
    `partition` int NOT NULL,
    `offset` bigint NOT NULL,
    landed_hour timestamp NOT NULL
"""

QUARANTINE_DDL = """
    kafka_topic string NOT NULL,
    kafka_partition int NOT NULL,
    kafka_offset bigint NOT NULL,
    kafka_timestamp timestamp,
    key binary,
    value binary,
    format_tried string,
    reason_code string NOT NULL,
    message string NOT NULL,
    landed_hour timestamp NOT NULL,
    run_id string NOT NULL,
    quarantined_at timestamp
"""

# Long-format counters per hour and topic: metric is one of raw_messages, decoded_messages,
# control_messages, quarantined_messages, change_rows; the other columns break it down.
RUN_STATS_DDL = """
    stage string NOT NULL,
    landed_hour timestamp NOT NULL,
    run_id string NOT NULL,
    topic string NOT NULL,
    metric string NOT NULL,
    source_format string,
    op string,
    table_name string,
    reason_code string,
    control_kind string,
    value bigint NOT NULL
"""

GATE_RESULTS_DDL = """
    stage string NOT NULL,
    landed_hour timestamp NOT NULL,
    run_id string NOT NULL,
    suite string NOT NULL,
    expectation string NOT NULL,
    column_name string,
    success boolean NOT NULL,
    observed_value string,
    details string,
    validated_at timestamp
"""

# What compaction and publish did to an hour (see spark_jobs.hour_status).
HOUR_STATUS_DDL = """
    landed_hour timestamp NOT NULL,
    stage string NOT NULL,
    status string NOT NULL,
    run_id string NOT NULL,
    tables array<struct<name: string, snapshot_id: bigint>>,
    message string,
    recorded_at timestamp
"""

# Current tables whose compaction failed, held back from an hour on (see spark_jobs.held_tables).
HELD_TABLES_DDL = """
    current_table string NOT NULL,
    source string NOT NULL,
    database string,
    source_schema string,
    table_name string,
    since timestamp NOT NULL,
    failed_hour timestamp NOT NULL,
    message string,
    run_id string NOT NULL,
    recorded_at timestamp
"""

# (name, columns DDL, partitioning, write order: see WRITE_ORDER)
TABLES: tuple[tuple[str, str, str, str], ...] = (
    # Partitioned by hour and topic: a landing replaces exactly its (hour, topic) partitions, so
    # landing some topics of an hour never touches the others.
    (RAW_MESSAGES, RAW_MESSAGES_DDL, "landed_hour, topic", "topic, `partition`, `offset`"),
    (OFFSET_LEDGER, OFFSET_LEDGER_DDL, "", "landed_hour, topic, `partition`"),
    (TOPIC_STARTS, TOPIC_STARTS_DDL, "", "topic"),
    (EXPIRED_HOURS, EXPIRED_HOURS_DDL, "", "landed_hour, layer"),
    (ERASURES, ERASURES_DDL, "", "requested_at, erasure_id"),
    (ERASED_MESSAGES, ERASED_MESSAGES_DDL, "", "topic, `partition`, `offset`"),
    # Partitioned by landing hour (the unit of replacement); each write task's rows sorted by
    # table and event time (OWN_PROPERTIES), so that per-table reads skip files and row groups
    # by their min/max statistics.
    (CHANGELOG, CHANGE_ROW_DDL, "landed_hour",
     "database, table_name, event_time, kafka_partition, kafka_offset, record_index"),
    (QUARANTINE, QUARANTINE_DDL, "landed_hour", "kafka_topic, kafka_partition, kafka_offset"),
    # Partitioned by what their writers replace (hour, stage), so an overwrite drops whole
    # files: Iceberg refuses a filtered overwrite that would split a file.
    (RUN_STATS, RUN_STATS_DDL, "landed_hour, stage", "landed_hour, stage, topic"),
    (GATE_RESULTS, GATE_RESULTS_DDL, "landed_hour, stage", "landed_hour, stage"),
    (HOUR_STATUS, HOUR_STATUS_DDL, "landed_hour, stage", "landed_hour, stage"),
    (HELD_TABLES, HELD_TABLES_DDL, "", "current_table"),
)


# Every fixed table's properties, and a table's own (OWN_PROPERTIES) over them.
PROPERTIES = {
    "format-version": "2", "write.distribution-mode": "hash", "write.merge.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read", "write.wap.enabled": "true",
}
# The changelog is written sorted within each task (distribution ``none``: Iceberg's ``WRITE
# LOCALLY ORDERED BY``), not range-partitioned across tasks (``WRITE ORDERED BY``: a sampling job
# and a shuffle of every row). Its write tasks read the raw hour, whose files each hold one
# topic, so a file holds the tables of few topics; its smaller row groups let a read of one
# table skip the rest of a file. The range write made normalize slower (bench/normalize).
OWN_PROPERTIES = {CHANGELOG: {"write.distribution-mode": "none",
                              "write.parquet.row-group-size-bytes": str(16 * 1024 * 1024)}}
# How each distribution mode's rows are ordered. Both keep the mode (``WRITE ORDERED BY`` would
# switch to range: a sampling job before every write, which reads a landing's Kafka ranges twice).
WRITE_ORDER = {"none": "LOCALLY ORDERED BY", "hash": "DISTRIBUTED BY PARTITION LOCALLY ORDERED BY"}


def in_catalog(spark: SparkSession, name: str) -> str:
    """``current.a__b`` -> ``<catalog>.current.a__b``. Iceberg's SQL extensions (``ALTER TABLE ...
    WRITE``/``CREATE BRANCH``, procedures' ``table`` argument) first try a name's leading part as
    a catalog and log a warning with a stack trace when it is none; the full name avoids that."""
    return f"{spark.conf.get('spark.sql.defaultCatalog')}.{name}"


def ensure_tables(spark: SparkSession) -> None:
    """Create the namespaces and fixed tables that do not exist yet (format version 2).

    Names are qualified with the catalog so Spark does not first try ``raw`` as a catalog, and
    existing tables are left alone (no metadata commit per job).
    """
    catalog = spark.conf.get("spark.sql.defaultCatalog")
    # A listing per level, not a catalog call per namespace and table: every job calls this.
    namespaces = {r[0] for r in spark.sql(f"SHOW NAMESPACES IN {catalog}").collect()}
    for namespace in NAMESPACES:
        if namespace not in namespaces:
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.{namespace}")
    existing = {f"{namespace}.{r['tableName']}" for namespace in sorted({t[0].split(".")[0] for t in TABLES})
                for r in spark.sql(f"SHOW TABLES IN {catalog}.{namespace}").collect()}
    for short_name, columns, partitioning, order in TABLES:
        name = f"{catalog}.{short_name}"
        if short_name in existing:
            continue
        partition_clause = f"PARTITIONED BY ({partitioning})" if partitioning else ""
        properties = {**PROPERTIES, **OWN_PROPERTIES.get(short_name, {})}
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {name} ({columns}) USING iceberg {partition_clause} "
            "TBLPROPERTIES (" + ", ".join(f"'{k}'='{v}'" for k, v in properties.items()) + ")"
        )
        spark.sql(f"ALTER TABLE {name} WRITE {WRITE_ORDER[properties['write.distribution-mode']]} {order}")


def replace_small(frame: DataFrame, table: str, condition: Column) -> None:
    """Replace the rows matching ``condition`` with ``frame``, a few rows (run stats, gate results,
    an hour's quarantine): one task writes one file, in the table's sort order, without the range
    shuffle and its sampling job that a distributed write plans (half the write's time)."""
    frame.coalesce(1).writeTo(table).option("distribution-mode", "none").overwrite(condition)
