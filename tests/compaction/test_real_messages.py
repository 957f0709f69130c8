"""Real messages captured by other projects, decoded and compacted, end in the state those projects
assert: the whole current table, hour by hour where the project checks it hour by hour. Also a
flattened Debezium topic, whose deletes are nothing but tombstones.

The messages are the fixtures under ``tests/fixtures/<format>/<source>/`` (each ``SOURCE.md`` names
the repository, path and commit). Each source gets its own database name here, so that sources
capturing the same demo table (Flink's and Paimon's ``products``) do not share a current table.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import pytest
from pyspark.sql import functions as F

from cdclake.decode_cli import read_keys, read_messages
from cdclake.formats import get_decoder
from cdclake.formats.base import FormatOptions
from cdclake.formats.decoding import decode_batch
from spark_jobs.compact import compact_hour
from spark_jobs.identifiers import current_table_name
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


def compact(spark, n: int, rows: list[dict[str, Any]], failing: tuple[str, ...] = ()) -> list[Any]:
    """Land ``rows`` as hour ``n`` and compact it; only the tables named in ``failing`` may fail
    (their results are returned)."""
    ensure_tables(spark)
    frame = changelog_frame(spark, n, rows, run_id=f"normalize__{n}")
    frame.writeTo(CHANGELOG).overwrite(F.col("landed_hour") == F.lit(hour(n)).cast("timestamp"))
    summary = compact_hour(spark, hour(n), f"compact__{n}")
    assert sorted(f.table for f in summary.failures) == sorted(failing), summary.failures
    return summary.failures


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


# Paimon's Kafka CDC ITCases (apache/paimon, paimon-flink/paimon-flink-cdc/src/test/java/org/apache/
# paimon/flink/action/cdc/kafka/). Paimon reads these schemaless messages as STRING columns and prints
# rows as ``+I[v1, v2, ...]``; its NULL is a column the row never had (our NULL too). Its names are
# the messages' names here (no case folding in these tests), so the rows below are its ``expected``
# lists verbatim, as tuples.
PAIMON_101 = ("101", "scooter", "Small 2-wheel scooter", "3.14")
PAIMON_102 = ("102", "car battery", "12V car battery", "8.1")
PAIMON_103 = ("103", "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", "0.8")
PAIMON_104 = ("104", "hammer", "12oz carpenter's hammer", "0.75")
PAIMON_105 = ("105", "hammer", "14oz carpenter's hammer", "0.875")
PAIMON_107 = ("107", "rocks", "box of assorted rocks", "5.3")


def _weights_as_float32(rows: Sequence[tuple[str | None, ...]]) -> list[tuple[Any, ...]]:
    """``weight`` (4th column) through FLOAT: GoldenGate writes the FLOAT column's exact double
    (``3.140000104904175``) where Paimon's and SeaTunnel's files or readers give ``3.14``."""
    return [(*r[:3], None if r[3] is None else _float32(r[3]), *r[4:]) for r in rows]


def test_paimon_table_schema_evolution_dms_maxwell_ogg(spark):
    """apache/paimon KafkaSyncTableActionITCase.testSchemaEvolutionImpl (commit 02b973be), run by
    the aws-dms, maxwell and ogg ITCases: data-1, -2, -3 written one file at a time, the whole
    table asserted after each. One hour per file here, the three formats side by side.

    DMS (``paimon_aws_dms_table``, key ``id`` as Paimon's ``--primary_keys id``) holds all three
    files: after each hour its table is Paimon's list exactly. Maxwell and OGG's data-1 (the
    inserts of 101 and 102) is not stored, so their tables are Paimon's lists less the rows only
    data-1 inserts: 101 and 102 after data-2, 102 after data-3 (data-3's delete of 101 finds no
    row). OGG's data-3 arrives out of trail order (pos 158, 152, 149); ``pos`` orders it. OGG's
    ``weight`` is the FLOAT's exact double, compared through float32. The later lines of the
    fixtures (data-4's null weight, the metadata-column and OGG event files) belong to other tests.
    """
    dms = decoded("aws_dms_json/paimon_aws_dms_table", "real_paimon_dms_table")
    maxwell = decoded("maxwell_json/paimon_maxwell_table", "real_paimon_maxwell_table")
    ogg = decoded("ogg_json/paimon_ogg_table", "real_paimon_ogg_table")
    dms_t = current_table_name("real_paimon_dms_table", "product", "test")
    maxwell_t = current_table_name("real_paimon_maxwell_table", "product")
    ogg_t = current_table_name("real_paimon_ogg_table", "TBL_TEST", "OGG")
    with_age, with_address = (*COLUMNS, "age"), (*COLUMNS, "age", "address")

    compact(spark, 401, dms[0:2])
    assert table(spark, dms_t, COLUMNS) == [PAIMON_101, PAIMON_102]

    compact(spark, 402, dms[2:4] + maxwell[0:2] + ogg[0:2])
    after_data_2 = [
        (*PAIMON_101, None),
        (*PAIMON_102, None),
        (*PAIMON_103, "18"),
        (*PAIMON_104, "24"),
    ]
    assert table(spark, dms_t, with_age) == after_data_2
    assert table(spark, maxwell_t, with_age) == after_data_2[2:]
    assert _weights_as_float32(table(spark, ogg_t, with_age)) == _weights_as_float32(after_data_2[2:])

    compact(spark, 403, dms[4:8] + maxwell[2:6] + ogg[2:6])
    after_data_3 = [
        (*PAIMON_102, None, None),
        (*PAIMON_103, "18", None),
        (*PAIMON_104, "24", None),
        (*PAIMON_105, None, "Beijing"),
        (*PAIMON_107, None, None),
    ]
    assert table(spark, dms_t, with_address) == after_data_3
    assert table(spark, maxwell_t, with_address) == after_data_3[1:]
    assert _weights_as_float32(table(spark, ogg_t, with_address)) == _weights_as_float32(after_data_3[1:])


def test_paimon_ogg_cdc_operations_insert_update_delete(spark):
    """apache/paimon KafkaSyncTableActionITCase.testCDCOperations (commit 02b973be; ogg-json):
    event-insert, event-update, event-delete written one at a time, the table asserted after each.

    After the delete our ``OGG.EVENT`` table is Paimon's final list (101, 102), and after the update
    103 weighs 8.1 as Paimon expects. After the insert Paimon lists 103 at ``5.1``, but the only
    stored event-insert.txt (commit 9c0fa6c9) writes ``5.179999828338623`` for 103 (Paimon's reader
    keeps the text: its own file and assertion disagree there); we assert the message's value.
    Weights are GoldenGate's FLOAT doubles, compared through float32 with Paimon's 3.14 and 8.1."""
    rows = decoded("ogg_json/paimon_ogg_table", "real_paimon_ogg_event")
    name = current_table_name("real_paimon_ogg_event", "EVENT", "OGG")
    assert [r["table_name"] for r in rows[6:]] == ["EVENT"] * 5

    compact(spark, 405, rows[6:9])
    assert _weights_as_float32(table(spark, name, COLUMNS)) == _weights_as_float32([
        PAIMON_101, PAIMON_102, ("103", "scooter", "Big 2-wheel scooter ", "5.179999828338623"),
    ])
    compact(spark, 406, rows[9:10])
    assert _weights_as_float32(table(spark, name, COLUMNS)) == _weights_as_float32([
        PAIMON_101, PAIMON_102, ("103", "scooter", "Big 2-wheel scooter ", "8.1"),
    ])
    compact(spark, 407, rows[10:11])
    assert _weights_as_float32(table(spark, name, COLUMNS)) == _weights_as_float32([PAIMON_101, PAIMON_102])


def test_paimon_startup_modes(spark):
    """apache/paimon KafkaSyncTableActionITCase (commit 02b973be) startup modes, for aws-dms,
    maxwell, ogg and debezium: startupmode data-1 is in the topic before the job starts, data-2
    after. ``testStarUpOptionEarliest``/``Group`` read both: 101-104. ``testStarUpOptionSpecific``
    (partition 0, offset 1) reads data-1 from its second record: 102 only (also for canal,
    ``[1, 2, two]`` as ``pt, _id, v1``). ``testStarUpOptionLatest``/``Timestamp`` read data-2
    only: 103, 104. The startup mode is the consumer's choice of offsets; here each mode's records
    go to their own database, data-1 in one hour and data-2 in the next. DMS and maxwell's data-1 is
    the watermark copy of the same two inserts (see their SOURCE.md); key ``id`` as Paimon's."""
    fixtures = {
        "dms": "aws_dms_json/paimon_aws_dms_table_startupmode",
        "maxwell": "maxwell_json/paimon_maxwell_table_startupmode",
        "ogg": "ogg_json/paimon_ogg_table_startupmode",
        "dbz": "debezium_json/paimon_debezium_startupmode",
    }
    first, second = [], []
    for fmt, case_id in fixtures.items():
        earliest = decoded(case_id, f"real_paimon_{fmt}_earliest")
        specific = decoded(case_id, f"real_paimon_{fmt}_specific")
        latest = decoded(case_id, f"real_paimon_{fmt}_latest")
        assert [r["kafka_offset"] for r in earliest] == [0, 1, 2, 3]
        first += earliest[0:2] + specific[1:2]
        second += earliest[2:4] + latest[2:4]
    canal = decoded("canal_json/paimon_canal_startupmode", "real_paimon_canal_specific")
    assert [r["kafka_offset"] for r in canal] == [0, 1]

    compact(spark, 411, first + canal[1:2])
    compact(spark, 412, second)
    for fmt in fixtures:
        [name] = {current_table_name(r["database"], r["table_name"], r["schema_name"]) for r in first
                  if r["database"] == f"real_paimon_{fmt}_earliest"}
        assert table(spark, name, COLUMNS) == [PAIMON_101, PAIMON_102, PAIMON_103, PAIMON_104]
        assert table(spark, name.replace("_earliest__", "_specific__"), COLUMNS) == [PAIMON_102]
        assert table(spark, name.replace("_earliest__", "_latest__"), COLUMNS) == [PAIMON_103, PAIMON_104]
    assert table(spark, "current.real_paimon_canal_specific__schema_evolution_1", ("pt", "_id", "v1")) == [
        ("1", "2", "two"),
    ]


def test_paimon_database_sync_schema_evolution(spark):
    """apache/paimon KafkaSyncDatabaseActionITCase.testSchemaEvolutionImpl (commit 1813e0cc), as
    ``testSchemaEvolutionOneTopic`` writes it: topic0 and topic1 data-1, assert ``t1`` and ``t2``;
    then both data-2 files, assert again. One hour per stage, aws-dms, debezium and maxwell.

    DMS (key ``id`` as Paimon is told): Paimon's lists at both stages. Debezium: ``t1`` has no
    Kafka key (keyless: four distinct rows, Paimon's list) and ``t2`` is keyed by its Kafka key, so
    data-2's re-inserts of 103/104 replace data-1's rows: Paimon's list for the keyed formats.
    Paimon's debezium branch lists both the old and new 103/104 side by side because its debezium
    database sync creates ``t2`` without a primary key (those cases are ``@Disabled`` in
    KafkaDebeziumSyncDatabaseActionITCase); a keyed table holds one row per key. Maxwell's topic1
    data-2 is not stored: its ``t2`` keeps data-1's rows (no ``address``) at the second stage."""
    dms = decoded("aws_dms_json/paimon_aws_dms_db_schemaevolution", "real_paimon_dms_db")
    dbz = decoded("debezium_json/paimon_debezium_db_schemaevolution", "real_paimon_dbz_db")
    maxwell = decoded("maxwell_json/paimon_maxwell_db_schemaevolution", "real_paimon_maxwell_db")
    tables = {
        "dms": (current_table_name("real_paimon_dms_db", "t1", "paimon_sync_database"),
                current_table_name("real_paimon_dms_db", "t2", "paimon_sync_database")),
        "dbz": ("current.real_paimon_dbz_db__t1", "current.real_paimon_dbz_db__t2"),
        "maxwell": ("current.real_paimon_maxwell_db__t1", "current.real_paimon_maxwell_db__t2"),
    }

    compact(spark, 421, dms[0:4] + dbz[0:4] + maxwell[0:4])
    for t1, t2 in tables.values():
        assert table(spark, t1, COLUMNS) == [PAIMON_101, PAIMON_102]
        assert table(spark, t2, COLUMNS) == [PAIMON_103, PAIMON_104]

    compact(spark, 422, dms[4:8] + dbz[4:8] + maxwell[4:6])
    t1_final = [(*PAIMON_101, None), (*PAIMON_102, None), (*PAIMON_103, "19"), (*PAIMON_104, "25")]
    t2_final = [(*PAIMON_103, "Beijing"), (*PAIMON_104, "Shanghai")]
    for fmt, (t1, t2) in tables.items():
        assert table(spark, t1, (*COLUMNS, "age")) == t1_final
        if fmt == "maxwell":
            assert table(spark, t2, COLUMNS) == [PAIMON_103, PAIMON_104]
        else:
            assert table(spark, t2, (*COLUMNS, "address")) == t2_final


def test_paimon_canal_schema_evolution_without_ddl(spark):
    """apache/paimon KafkaCanalSyncTableActionITCase.testSchemaEvolutionWithMissingDdl (commit
    02b973be): canal data-2 .. data-5 (data-1 is not stored), one hour per file; the final list.

    Paimon's sync-table action writes ``schema_evolution_1`` and ``_2`` into one table keyed
    ``(pt, _id)``; ours are two tables keyed ``_id`` (a table is database + table). Together they
    hold Paimon's final list value for value, less ``[1, 1, one]``, which only data-1 inserts:
    ``_1``: 3, 7, 9; ``_2``: 2, 4, 6, 8; 5 inserted and deleted. Paimon's canal reader keeps the
    message texts for these columns (BIGINT, DECIMAL(8,3), DOUBLE) and prints VARBINARY as bytes:
    ``v4`` is a BINARY column here holding the same bytes (``nine.bin.long``)."""
    rows = decoded("canal_json/paimon_canal_schemaevolutionmissingddl", "real_paimon_canal_noddl")
    columns = ("pt", "_id", "v1", "v2", "v3", "v4", "v5")
    files = {431: range(3), 432: range(3, 7), 433: range(7, 9), 434: range(9, 11)}  # Kafka offsets
    for n, offsets in files.items():
        compact(spark, n, [r for r in rows if r["kafka_offset"] in offsets])
    assert table(spark, "current.real_paimon_canal_noddl__schema_evolution_1", columns) == [
        ("1", "9", "nine", "90000000000", "99999.999", str(b"nine.bin.long"), "9.00000000009"),
        ("2", "3", "three", "30000000000", None, None, None),
        ("2", "7", "seven", "70000000000", None, None, None),
    ]
    assert table(spark, "current.real_paimon_canal_noddl__schema_evolution_2", columns) == [
        ("1", "2", "second", None, None, None, None),
        ("1", "6", "six", "60", None, None, None),
        ("2", "4", "four", None, None, str(b"four.bin.long"), "4.00000000004"),
        ("2", "8", "very long string", "80000000000", None, None, None),
    ]


def test_paimon_keyless_table_and_null_record(spark):
    """apache/paimon KafkaCanalSyncTableActionITCase.testSynchronizeNonPkTable (commit 02b973be):
    ``pkNames`` is empty and two identical INSERTs give ``+I[five, 50]`` twice; our keyless table
    is a multiset and holds both copies. KafkaDebeziumSyncTableActionITCase.testMessageWithNullValue
    (commit 93a71c13): a record with a null value between two files changes nothing; the table is
    ``+I[1, A]``, ``+I[2, B]`` (key ``id`` as Paimon's ``--primary_keys id``)."""
    compact(spark, 441, decoded("canal_json/paimon_canal_nonpk", "real_paimon_nonpk")
            + decoded("debezium_json/paimon_debezium_nullvalue", "real_paimon_nullvalue"))
    assert table(spark, "current.real_paimon_nonpk__t", ("v0", "v1")) == [("five", "50"), ("five", "50")]
    assert table(spark, "current.real_paimon_nullvalue__test", ("id", "value")) == [("1", "A"), ("2", "B")]


def test_risingwave_kafka_slt_tables(spark):
    """risingwavelabs/risingwave e2e_test/source/basic/kafka.slt (commits 074a0d1d, 3f863dc4) and
    source_legacy/basic/kafka.slt (02b783eb): the tables its queries print, each from its topic
    (keys as the slt tables declare them, via the fixtures' options).

    - ``add_column_after_create_table`` (debezium_log_missing_column_in_old_rows): the five rows.
    - ``s13`` (maxwell_json): ``1 tom 0 2017-12-31 16:00:01``, ``2 chi 1 1999-12-31 16:00:01``;
      Maxwell sends no types, so ``birthday`` is Maxwell's text, RisingWave's ``timestamp`` prints
      the same wall clock.
    - ``debezium_ignore_key`` (debezium_mess_key, garbage Kafka keys): ``count(order_id)`` 3.
    - ``dbz_ignore_case_json``: keys ``56165 1``, ``56166 1``, ``56166 2``; we keep the message's
      upper-case names (RisingWave matches them case-insensitively to its lower-case columns)."""
    compact(spark, 451, decoded("debezium_json/risingwave_missing_column_in_old_rows", "real_rw_add_column")
            + decoded("maxwell_json/risingwave_maxwell_json", "real_rw_s13")
            + decoded("debezium_json/risingwave_mess_key", "real_rw_mess_key")
            + decoded("debezium_json/risingwave_ignore_case_json", "real_rw_ignore_case"))
    customers = ("id", "first_name", "last_name", "email")
    assert table(spark, "current.real_rw_add_column__customers", customers) == [
        ("1001", "Sally", None, "sally.thomas@acme.com"),
        ("1002", "George", None, "gbailey@foobar.com"),
        ("1003", "Edward", None, "ed@walker.com"),
        ("1004", "Anne1", "Kretchmar", "annek@noanswer.org"),
        ("1005", "add", "add2", "add"),
    ]
    assert table(spark, "current.real_rw_s13__t", ("id", "name", "is_adult", "birthday")) == [
        ("1", "tom", "0", "2017-12-31 16:00:01"),
        ("2", "chi", "1", "1999-12-31 16:00:01"),
    ]
    assert len(table(spark, "current.real_rw_mess_key__public__orders", ("order_id",))) == 3
    assert table(spark, "current.real_rw_ignore_case__lineitem", ("L_ORDERKEY", "L_LINENUMBER")) == [
        ("56165", "1"), ("56166", "1"), ("56166", "2"),
    ]


def test_risingwave_kafka_slt_tables_where_we_differ(spark):
    """risingwavelabs/risingwave e2e_test/source/basic/kafka.slt, two tables where our documented
    behaviour differs from what RisingWave's query prints.

    - ``drop_column_after_create_table`` (debezium_log_missing_column_in_new_rows, commit 3f863dc4):
      RisingWave prints 1004 as ``Anne1 Kretchmar``; the update's ``after`` is a complete Debezium
      row image without ``last_name`` (the column was dropped upstream), and a full image replaces
      the row, so our 1004 has no ``last_name``. The other four rows equal the slt's.
    - ``s15`` (canal_json_double_field, commit 074a0d1d): RisingWave counts 2 rows: its Canal
      parser upserts ``data`` and never reads ``old``, so the key moves 1->5 and 3->7 leave 1 and 3
      behind, and it drops the row whose int key is ``"a"``. We move the keys (the before image is
      ``data`` overlaid with ``old``) and the DELETEs remove 5 and 7, but the row whose ``v1`` is
      ``"a"`` (kept as the vendor's text with a warning, ``mysqlType`` int -> LONG) cannot be
      represented in a bigint column: compaction fails the whole table and writes nothing of it
      (compact.py: "a value that does not fit its column fails that table"); the other table of
      the hour is compacted. Nothing is dropped silently, as RisingWave does; the next test types
      ``v1`` as text (``string_columns``) and the table compacts."""
    s15 = current_table_name("real_rw_s15", "demo")
    rows = (decoded("debezium_json/risingwave_missing_column_in_new_rows", "real_rw_drop_column")
            + decoded("canal_json/risingwave_canal_json_double_field", "real_rw_s15"))
    [failure] = compact(spark, 452, rows, failing=(s15,))
    assert "'v1' is bigint but a change holds 'a'" in failure.message
    assert not spark.catalog.tableExists(s15) or table(spark, s15, ("v1", "v2")) == []
    columns = ("id", "first_name", "last_name", "email")
    assert table(spark, "current.real_rw_drop_column__customers", columns) == [
        ("1001", "Sally", "Thomas", "sally.thomas@acme.com"),
        ("1002", "George", "Bailey", "gbailey@foobar.com"),
        ("1003", "Edward", "Walker", "ed@walker.com"),
        ("1004", "Anne1", None, "annek@noanswer.org"),
        ("1005", "add", None, "add"),
    ]


def test_string_columns_let_the_table_with_a_value_its_type_cannot_hold_compact(spark):
    """The way out of the ``s15`` failure above: the topic types ``v1`` STRING
    (``string_columns``), the hour is decoded again and the table compacts. Of the three inserted
    rows, 1 and 3 move to 5 and 7 and are deleted: ``a`` is left, its key the text ``a``."""
    [case] = [c for c in all_cases() if c.id == "canal_json/risingwave_canal_json_double_field"]
    options = FormatOptions(**case.options(), string_columns={"demo.demo": ("v1",)})
    messages = [m for _, m in read_messages(case.input_path, False, None, case.whole_file)]
    result = decode_batch(get_decoder(case.format_id, options), messages)
    assert result.rejected == []
    rows = [dict(row, database="real_rw_s15_text") for row in result.rows]
    assert {row["column_types"]["v1"] for row in rows} == {"STRING"}
    compact(spark, 454, rows)
    name = current_table_name("real_rw_s15_text", "demo")
    assert table(spark, name, ("v1", "v2")) == [("a", "1")]
    assert {f.name: f.dataType.simpleString() for f in spark.table(name).schema
            if f.name in ("v1", "v2")} == {"v1": "string", "v2": "bigint"}


def test_seatunnel_maxwell_and_ogg_changelogs_end_in_their_final_state(spark):
    """apache/seatunnel MaxWellJsonSerDeSchemaTest.runTest (commit 0e7ee4cd, maxwell-data-filter-
    table.txt) and OggJsonSerDeSchemaTest.runTest (commit 082e252f, ogg-data-filter-table.txt)
    assert the changelog each file decodes to (26 and 20 entries); the table those changelogs fold
    to is asserted here. Maxwell: Flink's final ``products`` (the same data, each line naming its
    key). OGG: 101-110 after the updates of 106, 107 and 110, 111 inserted, updated and deleted.
    SeaTunnel reads ``weight`` as FLOAT: GoldenGate's exact doubles are compared through float32."""
    compact(spark, 453, decoded("maxwell_json/seatunnel_maxwell_filter_table", "real_st_maxwell")
            + decoded("ogg_json/seatunnel_ogg_filter_table", "real_st_ogg"))
    assert table(spark, "current.real_st_maxwell__product", COLUMNS) == [
        ("101", "scooter", "Small 2-wheel scooter", "5.17"),
        *FLINK_104_TO_110,
    ]
    found = table(spark, "current.real_st_ogg__ogg__tbl_test", COLUMNS)
    assert _weights_as_float32(found) == _weights_as_float32([
        PAIMON_101,
        PAIMON_102,
        PAIMON_103,
        ("104", "hammer", "12oz carpenter's hammer", "0.75"),
        ("105", "hammer", "14oz carpenter's hammer", "0.875"),
        *FLINK_104_TO_110[2:],
    ])


def test_debezium_and_canal_consumers_final_tables(spark):
    """Three more projects' final states, each from its fixture's SOURCE.md.

    - apache/seatunnel KafkaFormatIT (canal_data.txt): the Postgres sink table is 1101..1108 with
      1101 weighing 4.56 and 1107 7.88; 1109 deleted.
    - pathwaycom/pathway test_debezium_reads_ok (sample_debezium.txt): 1001..1004 inserted, 1005
      inserted, renamed and deleted, so the table is 1001..1004.
    - ArroyoSystems/arroyo debezium_pass_through: the golden net changes for these lines are 3107
      and 3108 Cancelled, 3142 inserted and deleted (absent). ``price`` keeps the message's text.
    """
    compact(spark, 470, decoded("canal_json/seatunnel_kafka_format_canal", "real_st_canal")
            + decoded("debezium_json/pathway_sample_debezium", "real_pathway")
            + decoded("debezium_json/arroyo_aggregate_updates", "real_arroyo"))
    assert table(spark, "current.real_st_canal__products", COLUMNS) == [
        ("1101", "scooter", "Small 2-wheel scooter", "4.56"),
        ("1102", "car battery", "12V car battery", "8.1"),
        ("1103", "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", "0.8"),
        ("1104", "hammer", "12oz carpenter's hammer", "0.75"),
        ("1105", "hammer", "14oz carpenter's hammer", "0.875"),
        ("1106", "hammer", "16oz carpenter's hammer", "1.0"),
        ("1107", "rocks", "box of assorted rocks", "7.88"),
        ("1108", "jacket", "water resistent black wind breaker", "0.1"),
    ]
    assert table(spark, "current.real_pathway__customers", ("id", "first_name", "last_name", "email")) == [
        ("1001", "Sally", "Thomas", "sally.thomas@acme.com"),
        ("1002", "George", "Bailey", "gbailey@foobar.com"),
        ("1003", "Edward", "Walker", "ed@walker.com"),
        ("1004", "Anne", "Kretchmar", "annek@noanswer.org"),
    ]
    orders = current_table_name("real_arroyo", "orders", "public")
    assert table(spark, orders, ("id", "customer_name", "product_name", "quantity", "price", "status")) == [
        ("3107", "Brenda Garcia", "Headphones", "3", "392.25", "Cancelled"),
        ("3108", "John Henry", "Laptop", "1", "320.1", "Cancelled"),
    ]


def test_mongodb_fields_of_changing_type_are_exact_text_columns(spark):
    """A MongoDB collection is schemaless: ``_id`` is an ObjectId in one document, a NumberLong
    in the next and a sub-document in the third (drs_mongo/shell_types); ``qty`` is an int here
    and absent there. Typed by the first document, the table would fail at the second; the
    columns are strings of the exact canonical text instead (what Paimon's MongoDB sync does)."""
    compact(spark, 480, decoded("drs_mongo/shell_types", "real_mongo_shell")
            + decoded("drs_mongo/update_forms", "real_mongo_forms"))
    shell = "current.real_mongo_shell__orders"
    assert {t for c, t in spark.table(shell).dtypes if not c.startswith("_cdc_")} == {"string"}
    assert table(spark, shell, ("_id", "qty", "total", "huge", "price", "at", "raw", "x", "w", "y")) == [
        ("42", None, None, None, None, None, None, "-0.0001", "2023-05-17T09:18:31.439Z", "AAE="),
        ("64650cf67dc36a464e76e583", "7", "9223372036854775807", "12345678901234567890",
         "1234567890123456789012345678.90", "2023-05-17T09:18:31.439Z", "aGVsbG8=", None, None, None),
        ('{"tenant":1,"no":"A-1"}', None, None, None, None, None, None, None, None, None),
    ]
    forms = "current.real_mongo_forms__orders"
    assert table(spark, forms, ("_id", "qty", "status", "note")) == [("5", None, None, None)]

