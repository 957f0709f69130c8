"""Real messages captured by other projects, decoded and compacted, end in the state those projects
assert: the whole current table, hour by hour where the project checks it hour by hour. Also a
flattened Debezium topic, whose deletes are nothing but tombstones.

The messages are the fixtures under ``tests/fixtures/<format>/<source>/`` (each ``SOURCE.md`` names
the repository, path and commit). Each source gets its own database name here, so that sources
capturing the same demo table (Flink's and Paimon's ``products``) do not share a current table.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from pyspark.sql import functions as F

from cdclake.decode_cli import read_keys, read_messages
from spark_jobs.compact import compact_hour
from spark_jobs.formats import get_decoder
from spark_jobs.formats.base import FormatOptions
from spark_jobs.formats.decoding import decode_batch
from spark_jobs.tables import CHANGELOG, ensure_tables
from tests.compaction.changes import changelog_frame, hour
from tests.formats.fixture_cases import all_cases

pytestmark = pytest.mark.slow

COLUMNS = ("id", "name", "description", "weight")
# Flink's demo ``products`` rows 104-110 after its updates: the same in its Canal and Debezium data.
FLINK_104_TO_110 = [
    ("104", "hammer", "12oz carpenter's hammer", "0.75"),
    ("105", "hammer", "14oz carpenter's hammer", "0.875"),
    ("106", "hammer", "18oz carpenter hammer", "1.0"),
    ("107", "rocks", "box of assorted rocks", "5.1"),
    ("108", "jacket", "water resistent black wind breaker", "0.1"),
    ("109", "spare tire", "24 inch spare tire", "22.2"),
    ("110", "jacket", "new water resistent white wind breaker", "0.5"),
]


def decoded(case_id: str, database: str) -> list[dict[str, Any]]:
    """The fixture's change rows (canonical, in message order), renamed into ``database``."""
    [case] = [c for c in all_cases() if c.id == case_id]
    decoder = get_decoder(case.format_id, FormatOptions(**case.options()))
    keys = read_keys(case.keys_path) if case.keys_path else None
    messages = [m for _, m in read_messages(case.input_path, False, keys, case.whole_file)]
    result = decode_batch(decoder, messages)
    assert result.rejected == []
    return [dict(row, database=database) for row in result.rows]


def compact(spark, n: int, rows: list[dict[str, Any]]) -> None:
    ensure_tables(spark)
    frame = changelog_frame(spark, n, rows, run_id=f"normalize__{n}")
    frame.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(n)).cast("timestamp"))
    summary = compact_hour(spark, hour(n), f"compact__{n}")
    assert summary.failures == [], summary.failures


def table(spark, name: str, columns: tuple[str, ...]) -> list[tuple[str | None, ...]]:
    """Data columns as text (what the source sent), sorted: the whole table."""
    found = spark.table(name).collect()
    return sorted(tuple(None if r[c] is None else str(r[c]) for c in columns) for r in found)


def test_flink_canal_data_ends_in_flinks_final_state(spark):
    """apache/flink canal-data.txt: CanalJsonSerDeSchemaTest's 26-entry changelog, applied."""
    compact(spark, 300, decoded("canal_json/flink_canal_data", "real_flink_canal"))
    assert table(spark, "current.real_flink_canal__products2", COLUMNS) == [
        ("101", "scooter", "Small 2-wheel scooter", "5.17"),
        *FLINK_104_TO_110,
    ]


def test_paimon_debezium_schema_evolution_hour_by_hour(spark):
    """apache/paimon kafka/debezium/table/schemaevolution data-1, -2, -3 as three hours: after each,
    the table equals KafkaSyncTableActionITCase.testSchemaEvolutionImpl's expected rows (Paimon
    reads every column as STRING; its NULL is a column the row never had)."""
    rows = decoded("debezium_json/paimon_table_schemaevolution", "real_paimon_dbz")
    by_file = {1: rows[0:2], 2: rows[2:4], 3: rows[4:8]}
    assert [r["kafka_offset"] for r in rows] == list(range(8))
    name = "current.real_paimon_dbz__product"

    compact(spark, 311, by_file[1])
    assert table(spark, name, COLUMNS) == [
        ("101", "scooter", "Small 2-wheel scooter", "3.14"),
        ("102", "car battery", "12V car battery", "8.1"),
    ]
    compact(spark, 312, by_file[2])
    assert table(spark, name, (*COLUMNS, "age")) == [
        ("101", "scooter", "Small 2-wheel scooter", "3.14", None),
        ("102", "car battery", "12V car battery", "8.1", None),
        ("103", "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", "0.8", "18"),
        ("104", "hammer", "12oz carpenter's hammer", "0.75", "24"),
    ]
    compact(spark, 313, by_file[3])
    assert table(spark, name, (*COLUMNS, "age", "address")) == [
        ("102", "car battery", "12V car battery", "8.1", None, None),
        ("103", "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", "0.8", "18",
         None),
        ("104", "hammer", "12oz carpenter's hammer", "0.75", "24", None),
        ("105", "hammer", "14oz carpenter's hammer", "0.875", None, "Beijing"),
        ("107", "rocks", "box of assorted rocks", "5.3", None, None),
    ]


def _float32(value: Any) -> float:
    return struct.unpack("f", struct.pack("f", float(value)))[0]


def test_flink_debezium_keyless_table_ends_in_flinks_final_state(spark):
    """apache/flink debezium-data-schema-include.txt: no Kafka key and no key in the messages, so
    ``products`` is a keyless multiset; updates and the delete must find their exact before rows.
    Flink reads ``weight`` as FLOAT: the exact doubles Debezium sent round to Flink's values."""
    compact(spark, 320, decoded("debezium_json/flink_mysql_schema_include", "real_flink_dbz"))
    found = table(spark, "current.real_flink_dbz__products", COLUMNS)
    flink = [
        ("101", "scooter", "Small 2-wheel scooter", "3.14"),
        ("102", "car battery", "12V car battery", "8.1"),
        ("103", "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", "0.8"),
        *FLINK_104_TO_110,
    ]
    assert [row[:3] for row in found] == [row[:3] for row in flink]
    assert [_float32(row[3]) for row in found] == [_float32(row[3]) for row in flink]


def test_flattened_debezium_topic_tombstone_deletes_the_row(spark):
    """ExtractNewRecordState with its defaults: bare rows are upserts, the tombstone deletes 1004."""
    compact(spark, 330, decoded("debezium_json/flattened_topic_tombstones", "flat_dbz"))
    assert table(spark, "current.flat_dbz__customers", ("id", "first_name", "last_name", "email")) == [
        ("1005", "Sarah", "Thompson", "kitt@acme.com"),
        ("1006", "Kenneth", "Anderson", "kander@acme.com"),
    ]
    tombstones = spark.table("current.flat_dbz__customers__tombstones").collect()
    assert [r["_cdc_key"] for r in tombstones] == ['["1004"]']


def test_maxwell_updates_merge_into_the_stored_row(spark):
    """apache/flink maxwell-data.txt ends in Flink's final state (the same as its Canal data), and
    Maxwell's own ``test_minimal`` (``binlog_row_image=minimal``: an update's ``data`` holds the key
    and the columns it set) keeps the columns the updates left out."""
    compact(spark, 340, decoded("maxwell_json/flink_maxwell_data", "real_flink_maxwell")
            + decoded("maxwell_json/maxwell_it_test_minimal", "real_maxwell_minimal"))
    assert table(spark, "current.real_flink_maxwell__product", COLUMNS) == [
        ("101", "scooter", "Small 2-wheel scooter", "5.17"),
        *FLINK_104_TO_110,
    ]
    assert table(spark, "current.real_maxwell_minimal__test_table", ("id", "a", "b")) == [
        ("1", "avalue", None),
        ("2", "avalue3", "bvalue2"),
    ]
    assert table(spark, "current.real_maxwell_minimal__test_table_2", ("id", "i1", "i2", "i3")) == [
        ("1", "555", "777", "444"),
    ]
