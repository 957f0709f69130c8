"""Build changelog rows for compaction tests with the canonical ``new_change_row``."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdclake.formats.canonical import (
    CHANGE_ROW_DDL,
    CHANGE_ROW_FIELDS,
    TIME_FIELDS,
    RawMessage,
    micros_to_datetime,
    new_change_row,
)
from spark_jobs.tables import CHANGELOG, ensure_tables

BASE = dt.datetime(2024, 1, 1, 0, 0)


def hour(n: int) -> dt.datetime:
    return BASE + dt.timedelta(hours=n)


def micros(moment: dt.datetime) -> int:
    return int((moment - dt.datetime(1970, 1, 1)).total_seconds() * 1_000_000)


class Changes:
    """Change rows for one source table; each call takes the next Kafka offset unless given one."""

    def __init__(
        self,
        database: str | None,
        table: str,
        keys: list[str] | None = None,
        types: dict[str, str] | None = None,
        topic: str = "cdc.test",
        fmt: str = "test",
        schema: str | None = None,
    ) -> None:
        self.database, self.table, self.keys = database, table, keys or []
        self.schema = schema
        self.types, self.topic, self.fmt = types or {}, topic, fmt
        self.offset = 0

    def row(
        self,
        op: str,
        *,
        after: dict[str, Any] | None = None,
        before: dict[str, Any] | None = None,
        full: bool = True,
        at: dt.datetime | None = None,
        seq: int | None = None,
        offset: int | None = None,
        partition: int = 0,
        record_index: int = 0,
        row_key: str | None = None,
        ddl: str | None = None,
        types: dict[str, str] | None = None,
        keys: list[str] | None = None,
    ) -> dict[str, Any]:
        if offset is None:
            offset, self.offset = self.offset, self.offset + 1
        keys = self.keys if keys is None else keys
        if row_key is None and keys:
            image = after if op != "DELETE" else before
            image = image if image and all(k in image for k in keys) else (before or after)
            assert image is not None, "a keyed change needs an image holding its key"
            row_key = "[" + ",".join(f'"{image[k]}"' for k in keys) + "]"
        message = RawMessage(value=b"", topic=self.topic, partition=partition, offset=offset)
        column_types = dict(self.types if types is None else types)
        return new_change_row(
            self.fmt,
            message,
            record_index,
            database=self.database,
            schema_name=self.schema,
            table_name=self.table,
            op=op,
            primary_key_columns=list(keys),
            row_key=row_key,
            before=before,
            after=after,
            after_is_full=full,
            column_types=column_types,
            event_time=micros(at or BASE),
            source_sequence=None if seq is None else f"{seq:020d}",
            ddl=ddl,
        )


def write_hour(spark: SparkSession, n: int, rows: list[dict[str, Any]], run_id: str = "normalize__1") -> None:
    """Replace landing hour ``n`` of the changelog with ``rows``."""
    ensure_tables(spark)
    df = changelog_frame(spark, n, rows, run_id)
    df.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(n)).cast("timestamp"))


def changelog_frame(spark: SparkSession, n: int, rows: list[dict[str, Any]], run_id: str) -> DataFrame:
    records = []
    for row in rows:
        record = dict(row, landed_hour=micros(hour(n)), run_id=run_id)
        for name in TIME_FIELDS:
            value = record[name]
            record[name] = micros_to_datetime(value) if isinstance(value, int) else value
        records.append(tuple(record[f] for f in CHANGE_ROW_FIELDS))
    return spark.createDataFrame(records, CHANGE_ROW_DDL)
