"""Hours of test traffic for the gates: raw records and ledger rows written straight to the tables."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_jobs.tables import OFFSET_LEDGER, RAW_MESSAGES
from tests.normalize import mixed_traffic

# The mixed hour without its deliberately bad messages (the last five): a clean hour.
TOPIC_FORMATS = {t: f for t, f in mixed_traffic.TOPIC_FORMATS.items() if t != "it.oms"}
JUNK = b'{"data": [ {"id": "1"} '  # INVALID_JSON


def clean_messages() -> list[tuple[str, bytes | None, bytes | None]]:
    good = mixed_traffic.messages()[:-5]
    return [m for m in good if m[0] in TOPIC_FORMATS]


def write_hour(spark: SparkSession, hour: dt.datetime, messages: list[tuple[str, bytes | None, bytes | None]],
               run_id: str = "land-run") -> list[tuple]:
    """Raw records (partition 0, offsets from hour-based bases) and a matching ledger; returns raw rows."""
    base = hour.hour * 1000
    next_offset: dict[str, int] = {}
    records: list[tuple] = []
    for i, (topic, key, value) in enumerate(messages):
        offset = next_offset.get(topic, base)
        next_offset[topic] = offset + 1
        records.append((topic, 0, offset, hour + dt.timedelta(minutes=5, seconds=i), 0, key, value, [],
                        hour, run_id, None))
    spark.createDataFrame(records, spark.table(RAW_MESSAGES).schema).writeTo(RAW_MESSAGES).overwrite(
        F.col("landed_hour") == F.lit(hour))
    ledger = [(topic, 0, hour, base, end, end - base, base, end - 1, run_id, "landed", None, None, 0, None, 0)
              for topic, end in sorted(next_offset.items())]
    spark.createDataFrame(ledger, spark.table(OFFSET_LEDGER).schema).writeTo(OFFSET_LEDGER).overwrite(
        F.col("landed_hour") == F.lit(hour))
    return records
