"""Other systems' documented change-apply examples, replayed through compaction.

Each example is a change feed and the table it ends in, both stated in that system's official
documentation (Databricks AUTO CDC, Apache Doris' sequence column, batch delete and partial column
updates, ClickHouse's ReplacingMergeTree, StarRocks' Primary Key loads, Paimon's partial-update
merge engine, BigQuery CDC, Hudi's payloads, Airbyte's Append + Deduped sync, Flink's versioned
tables, Kafka's log compaction) or own tests (Materialize's ``ENVELOPE UPSERT``). The feeds are
written as messages of a vendor format that carries what the example relies on — GoldenGate
``pos`` for a version/sequence/cursor, Debezium ``source.ts_ms`` for an event time, a flattened
Debezium topic (Kafka key, tombstones) for a keyed Kafka topic, Canal or Maxwell (event time and
Kafka offset, i.e. arrival order) where the example has none — in
``tests/fixtures/<format>/<system>_<example>_constructed/``; each ``SOURCE.md`` quotes the page
or test (repository, path, commit) and its stated result. Each test asserts the whole current
table. Where our result differs from the documented one by design, the test says why and asserts
ours.
"""

from __future__ import annotations

import datetime as dt

import pytest

from spark_jobs.maintenance import purge_tombstones
from tests.compaction.test_real_messages import compact, decoded, table

pytestmark = pytest.mark.slow



def replayed(spark, case: str, database: str, hours: tuple[tuple[int, slice], ...],
             table_name: str, columns: tuple[str, ...]) -> list[tuple[str | None, ...]]:
    """The fixture's rows (renamed into ``database``) compacted hour by hour, each hour the
    slice of rows it names, in the order given; then ``current.<database>__<table_name>``."""
    rows = decoded(case, database)
    for n, part in hours:
        compact(spark, n, rows[part])
    return table(spark, f"current.{database}__{table_name}", columns)

def test_doris_sequence_column_example(spark):
    """Doris "Sequence Column" usage example (three stream loads into a Unique table whose
    sequence column is ``modify_date``): after each load the row with the largest sequence is the
    one kept — ``c`` (2020-03-05) after loads 1 and 2 (load 2 only brings older ones), ``w``
    (2020-03-23) after load 3. One load per hour, as Doris queries after each; then the same
    messages in one hour, and a re-run of the first hour, end in the same row."""
    columns = ("USER_ID", "DATE", "GROUP_ID", "MODIFY_DATE", "KEYWORD")
    case = "ogg_json/doris_sequence_column_constructed"
    c_row = [("1", "2020-02-22", "1", "2020-03-05", "c")]
    w_row = [("1", "2020-02-22", "1", "2020-03-23", "w")]

    rows = decoded(case, "doc_doris_seq")
    loads = {601: rows[:6], 602: rows[6:8], 603: rows[8:]}
    name = "current.doc_doris_seq__test__test_table"
    for n, expected in ((601, c_row), (602, c_row), (603, w_row)):
        compact(spark, n, loads[n])
        assert table(spark, name, columns) == expected, n
    compact(spark, 601, loads[601])  # a re-run of the first load's hour
    assert table(spark, name, columns) == w_row

    compact(spark, 604, decoded(case, "doc_doris_seq_one"))
    assert table(spark, "current.doc_doris_seq_one__test__test_table", columns) == w_row


def test_doris_batch_delete_with_sequence_column(spark):
    """Doris "Batch Deletion" use case 4 (Unique table, sequence column ``age``): from li(10),
    wang(14), zhang(12), a DELETE of li with sequence 10 (equal: "larger or equal") deletes li; a
    DELETE of li with sequence 9 does not. Each from the documented "before" table, delete in the
    next hour."""
    columns = ("NAME", "GENDER", "AGE")
    case = "ogg_json/doris_batch_delete_sequence_constructed"

    rows = decoded(case, "doc_doris_del_eq")
    compact(spark, 611, rows[:3])
    compact(spark, 612, rows[3:4])
    assert table(spark, "current.doc_doris_del_eq__test__table1", columns) == [
        ("wang", "male", "14"), ("zhang", "male", "12")]

    rows = decoded(case, "doc_doris_del_lt")
    compact(spark, 613, rows[:3])
    compact(spark, 614, rows[4:5])
    assert table(spark, "current.doc_doris_del_lt__test__table1", columns) == [
        ("li", "male", "10"), ("wang", "male", "14"), ("zhang", "male", "12")]


def test_clickhouse_replacingmergetree_with_version(spark):
    """ClickHouse ReplacingMergeTree(ver[, is_deleted]) examples, ``ver`` as GoldenGate ``pos``.

    ``mySecondReplacingMT``: the row with the biggest version wins, so 'first' (01:01:01) stays
    although 'second' (00:00:00) is inserted after it (here: in a later hour).

    ``myThirdReplacingMT``: an insert and a deleted row with the same version — the last inserted
    wins, 0 rows (ours: the DELETE is later in the Kafka tie-break: 0 rows). ClickHouse then runs
    ``OPTIMIZE ... FINAL CLEANUP``, which drops the deleted row, and a later INSERT with an
    *older* version (00:00:00) shows again. By design ours differs there: the DELETE's tombstone
    keeps its order key, so a change older than the delete never resurrects the row (the
    resurrection is what CLEANUP's loss of the delete causes); the table stays empty, also after
    a re-run. Not even the tombstone purge after the retention (our analogue of CLEANUP) changes
    that: compaction then reads the key's history, which keeps the delete."""
    columns = ("KEY", "SOMECOL", "EVENTTIME")
    rows = decoded("ogg_json/clickhouse_replacingmergetree_constructed", "doc_ch_ver")
    second = "current.doc_ch_ver__demo__mysecondreplacingmt"
    third = "current.doc_ch_ver__demo__mythirdreplacingmt"
    first_row = [("1", "first", "2020-01-01 01:01:01")]

    compact(spark, 621, [rows[0], rows[2], rows[3]])
    assert table(spark, second, columns) == first_row
    assert table(spark, third, columns) == []  # ClickHouse: "0 rows in set"

    compact(spark, 622, [rows[1], rows[4]])
    assert table(spark, second, columns) == first_row
    assert table(spark, third, columns) == []  # ClickHouse after CLEANUP: (1, first, 00:00:00)
    compact(spark, 621, [rows[0], rows[2], rows[3]])  # a re-run
    assert table(spark, second, columns) == first_row
    assert table(spark, third, columns) == []

    # ClickHouse's CLEANUP drops the deleted row; ours drops tombstones after the retention
    # (maintenance ``purge_tombstones``), but a change landing after that, older than the delete,
    # is applied from the key's history, delete included: no row (ClickHouse shows one).
    rows = decoded("ogg_json/clickhouse_replacingmergetree_constructed", "doc_ch_cleanup")
    compact(spark, 623, rows[2:4])
    assert _purge(spark, "current.doc_ch_cleanup__demo__mythirdreplacingmt") == 1
    compact(spark, 624, rows[4:])
    assert table(spark, "current.doc_ch_cleanup__demo__mythirdreplacingmt", columns) == []


def _purge(spark, name: str) -> int:
    """Drop the tombstones of ``name`` (all: the cut-off is after the fixture's 2020 events), as
    the maintenance DAG does once ``tombstone_retention_days`` have passed."""
    metrics = purge_tombstones(spark, "lakehouse", f"{name}__tombstones", dt.datetime(2021, 1, 1))
    return int(metrics["purged_tombstones"])


def test_clickhouse_cleanup_case_rerun_after_tombstone_purge_is_idempotent(spark):
    """ClickHouse's ReplacingMergeTree(ver, is_deleted) example, CLEANUP step: insert and delete
    at version 01:01:01 (hour A), the delete's tombstone purged (retention), then an insert at the
    older version 00:00:00 (hour B). Running hour B again gives the table its first run gave
    ("re-runs idempotent"): no row, both times. (Before the purge cut-off was recorded, the
    first run inserted the row and the re-run removed it.)"""
    columns = ("KEY", "SOMECOL", "EVENTTIME")
    name = "current.doc_ch_rerun__demo__mythirdreplacingmt"
    rows = decoded("ogg_json/clickhouse_replacingmergetree_constructed", "doc_ch_rerun")
    compact(spark, 626, rows[2:4])
    assert _purge(spark, name) == 1
    compact(spark, 627, rows[4:])
    assert table(spark, name, columns) == []
    compact(spark, 627, rows[4:])
    assert table(spark, name, columns) == []


def test_clickhouse_replacingmergetree_without_version(spark):
    """ClickHouse ReplacingMergeTree without ``ver``: "the last inserted 'wins'" — 'second'
    although its ``eventTime`` column is older. As Canal messages with the same ``es``: only the
    Kafka offset (arrival) orders them."""
    columns = ("key", "someCol", "eventTime")
    compact(spark, 631, decoded("canal_json/clickhouse_replacingmergetree_no_ver_constructed",
                                "doc_ch_nover"))
    assert table(spark, "current.doc_ch_nover__myfirstreplacingmt", columns) == [
        ("1", "second", "2020-01-01 00:00:00")]


def test_starrocks_upsert_and_delete_loads(spark):
    """StarRocks "Change data through loading": ``table1`` (UPSERT: 101 updated to 100, 102
    inserted), ``table2`` (DELETE of 101), ``table3`` (``__op`` 1/0/0: 101 deleted, 102 updated
    to 70, 103 inserted). The tables' INSERTs in one hour, the loads in the next, as Canal
    messages in arrival order."""
    columns = ("id", "name", "score")
    rows = decoded("canal_json/starrocks_upsert_delete_constructed", "doc_sr")
    compact(spark, 641, [rows[i] for i in (0, 3, 4, 6, 7)])
    compact(spark, 642, [rows[i] for i in (1, 2, 5, 8, 9, 10)])
    assert table(spark, "current.doc_sr__table1", columns) == [
        ("101", "Lily", "100"), ("102", "Rose", "100")]
    assert table(spark, "current.doc_sr__table2", columns) == [("102", "Bob", "90")]
    assert table(spark, "current.doc_sr__table3", columns) == [
        ("102", "Sam", "70"), ("103", "Stan", "80")]


def test_starrocks_partial_and_conditional_updates(spark):
    """StarRocks partial update (``table4``) and conditional update (``table5``,
    ``merge_condition: version``, version as GoldenGate ``pos``).

    ``table5``: the load's 101 (version 1) does not replace the stored version 2; 102 (version 3)
    does: 101 2 80, 102 3 100, as StarRocks states.

    ``table4``: 101 Tom 80 + partial (id, name) rows 101 Lily, 102 Rose, 103 Alice. StarRocks
    states 101 Lily 80, 102 Rose 0, 103 Alice 0: for a row that does not exist it "fills default
    values" (``score`` is ``NOT NULL`` int, default 0). By design ours leaves a column no change
    carried NULL: the feed does not say the source's defaults, and we do not invent values. So
    102 and 103 have a NULL score; 101 keeps its 80 (a partial image updates only its columns)."""
    rows = decoded("ogg_json/starrocks_partial_conditional_update_constructed", "doc_sr_pc")
    compact(spark, 651, [rows[i] for i in (0, 4, 5)])
    compact(spark, 652, [rows[i] for i in (1, 2, 3, 6, 7)])
    assert table(spark, "current.doc_sr_pc__test_db__table4", ("ID", "NAME", "SCORE")) == [
        ("101", "Lily", "80"), ("102", "Rose", None), ("103", "Alice", None)]
    assert table(spark, "current.doc_sr_pc__test_db__table5", ("ID", "VERSION", "SCORE")) == [
        ("101", "2", "80"), ("102", "3", "100")]


def test_paimon_partial_update_example(spark):
    """Paimon ``partial-update`` merge engine: <1, 23.0, 10, NULL>, <1, NULL, NULL, 'This is a
    book'>, <1, 25.2, NULL, NULL> end as <1, 25.2, 10, 'This is a book'>. Paimon's NULL means
    "not given"; in GoldenGate updates the columns are left out (a compressed update). In one
    hour, and one record an hour."""
    columns = ("K", "A", "B", "C")
    expected = [("1", "25.2", "10", "This is a book")]
    case = "ogg_json/paimon_partial_update_constructed"

    compact(spark, 661, decoded(case, "doc_paimon_pu"))
    assert table(spark, "current.doc_paimon_pu__demo__t", columns) == expected

    rows = decoded(case, "doc_paimon_pu_hours")
    for n, row in zip((662, 663, 664), rows, strict=True):
        compact(spark, n, [row])
    assert table(spark, "current.doc_paimon_pu_hours__demo__t", columns) == expected


def test_bigquery_cdc_upsert_delete_example(spark):
    """BigQuery CDC "Example of UPSERT and DELETE values": 100 Charlie 2000, 101 Tal 3000, 102 Lee
    5000, then DELETE 100, UPSERT 101 Tal 8000, UPSERT 105 Izumi 6000 → 101 Tal 8000, 102 Lee
    5000, 105 Izumi 6000. As Maxwell messages (arrival order): the table's rows in one hour, the
    changes in the next; and the two hours landing in reverse order (the older inserts land last:
    they neither resurrect 100 nor undo 101's update)."""
    columns = ("ID", "Name", "Salary")
    expected = [("101", "Tal", "8000"), ("102", "Lee", "5000"), ("105", "Izumi", "6000")]
    case = "maxwell_json/bigquery_cdc_upsert_delete_constructed"

    first, changes = slice(None, 3), slice(3, None)
    assert replayed(spark, case, "doc_bq", ((671, first), (672, changes)), "employees",
                    columns) == expected
    assert replayed(spark, case, "doc_bq_reversed", ((673, changes), (674, first)), "employees",
                    columns) == expected


def test_hudi_payload_examples_by_ordering_field(spark):
    """Hudi "Record Payloads" examples (ordering field ``ts`` as GoldenGate ``pos``), the stored
    record in one hour and the incoming one in the next.

    ``DefaultHoodieRecordPayload``: stored 1 2 name_2 price_2, incoming 1 1 name_1 price_1 → the
    stored record stays. ``PartialUpdateAvroPayload``: stored 1 2 name_1 null, incoming 1 1 null
    price_1 → 1 2 name_1 price_1; with NULL as "not given" (columns left out of the changes) ours
    is the same. By design, where the stored record is a *full* image whose PRICE is NULL, ours
    keeps the NULL: a later full image states the whole row, and an older change does not fill it
    (Hudi's payload fills NULLs from older records)."""
    columns = ("ID", "TS", "NAME", "PRICE")
    rows = decoded("ogg_json/hudi_payload_ordering_constructed", "doc_hudi")
    compact(spark, 681, [rows[0], rows[2], rows[4]])
    compact(spark, 682, [rows[1], rows[3], rows[5]])
    assert table(spark, "current.doc_hudi__demo__default_payload", columns) == [
        ("1", "2", "name_2", "price_2")]
    assert table(spark, "current.doc_hudi__demo__partial_payload", columns) == [
        ("1", "2", "name_1", "price_1")]
    assert table(spark, "current.doc_hudi__demo__partial_payload_full_row", columns) == [
        ("1", "2", "name_1", None)]


def test_clickhouse_versionedcollapsing_example_as_keyless_multiset(spark):
    """ClickHouse VersionedCollapsingMergeTree "Example of Use": state (…, 5, 146, v1), its
    cancel row, state (…, 6, 185, v2) → FINAL (…, 6, 185, v2). State/cancel rows are the
    insert/delete of whole rows of a keyless table (a multiset). In ClickHouse's two inserts as
    two hours; with the second landing first ("the order of rows does not matter"); in one hour."""
    columns = ("USERID", "PAGEVIEWS", "DURATION", "VERSION")
    expected = [("4324182021466249494", "6", "185", "2")]
    case = "ogg_json/clickhouse_versionedcollapsing_keyless_constructed"

    first, second = slice(None, 1), slice(1, None)
    assert replayed(spark, case, "doc_ch_vc", ((691, first), (692, second)), "demo__uact",
                    columns) == expected
    assert replayed(spark, case, "doc_ch_vc_reversed", ((693, second), (694, first)), "demo__uact",
                    columns) == expected

    compact(spark, 695, decoded(case, "doc_ch_vc_one"))
    assert table(spark, "current.doc_ch_vc_one__demo__uact", columns) == expected


def test_databricks_auto_cdc_example_ends_in_databricks_scd1_tables(spark):
    """Databricks' AUTO CDC example feed (as GoldenGate messages, ordered by ``pos``): out-of-order
    updates and an update after the delete end as Databricks' SCD type 1 table says; with its
    TRUNCATE at sequence 3, only the row changed after it remains. In one hour, and spread over
    three hours in arrival order, with re-runs."""
    columns = ("USERID", "NAME", "CITY")
    without_truncate = [("124", "Raul", "Oaxaca"), ("125", "Mercedes", "Guadalajara"),
                        ("126", "Lily", "Cancun")]
    with_truncate = [("125", "Mercedes", "Guadalajara")]
    case = "ogg_json/databricks_auto_cdc_example_constructed"

    compact(spark, 330, decoded(case, "real_dbx_one")[:8])
    assert table(spark, "current.real_dbx_one__demo__users", columns) == without_truncate

    rows = decoded(case, "real_dbx_all")
    compact(spark, 331, rows)
    assert table(spark, "current.real_dbx_all__demo__users", columns) == with_truncate

    rows = decoded(case, "real_dbx_hours")
    for n, batch in ((332, rows[:4]), (333, rows[4:8]), (334, rows[8:])):
        compact(spark, n, batch)
    assert table(spark, "current.real_dbx_hours__demo__users", columns) == with_truncate
    for n in (333, 332, 334):
        compact(spark, n, {332: rows[:4], 333: rows[4:8], 334: rows[8:]}[n])
        assert table(spark, "current.real_dbx_hours__demo__users", columns) == with_truncate, n


def test_doris_partial_column_update_examples(spark):
    """Doris "Partial Column Update": ``order_tbl`` 1 100 'Pending Payment' + (1, 'Pending
    Shipment') → 1 100 'Pending Shipment'; ``user_profile`` with ``partial_update_new_key_behavior
    =APPEND``: 1 updated (balance, time), 3 and 18 inserted with NULL name, age, city; flexible
    partial update of ``t1`` (rows 0-5): 0 deleted (``__DORIS_DELETE_SIGN__``), each row's given
    columns set, ``{"k": 5, "v5": null}`` sets NULL, key 6 inserted. Partial rows are GoldenGate
    compressed updates, in load order (``pos``); the tables' rows in one hour, the loads in the
    next, and all in one hour.

    Doris' ``t1`` row 6 is ``6 999 9876 777 1234 NULL``: v2 and v4 take their column defaults. By
    design ours leaves a column no change carried NULL (the feed does not carry the source's
    defaults; as for StarRocks' partial update above): ``6 999 NULL 777 NULL NULL``. Every other
    row of the three tables is Doris'."""
    t1_columns = ("K", "V1", "V2", "V3", "V4", "V5")
    t1 = [("1", "10", "111", "111", "1", "1"), ("2", "2", "20", "2", "222", "25"),
          ("3", "3", "3", "30", "3", "3"), ("4", "43", "4", "99", "20", "4"),
          ("5", "5", "5", "5", "5", None),
          ("6", "999", None, "777", None, None)]  # Doris: 6 999 9876 777 1234 NULL (defaults)
    profile_columns = ("ID", "NAME", "AGE", "CITY", "BALANCE", "LAST_ACCESS_TIME")
    profile = [("1", "kevin", "18", "shenzhen", "500", "2023-07-03 12:00:01"),
               ("18", None, None, None, "9999999", "2023-07-03 12:00:03"),
               ("3", None, None, None, "23", "2023-07-03 12:00:02")]
    order = [("1", "100", "Pending Shipment")]
    case = "ogg_json/doris_partial_column_update_constructed"

    rows = decoded(case, "doc_doris_pcu")
    compact(spark, 741, rows[:8])
    assert table(spark, "current.doc_doris_pcu__d1__t1", t1_columns) == [
        (str(k),) * 6 for k in range(6)]
    compact(spark, 742, rows[8:])
    assert table(spark, "current.doc_doris_pcu__d1__t1", t1_columns) == t1
    assert table(spark, "current.doc_doris_pcu__db1__user_profile", profile_columns) == profile
    assert table(spark, "current.doc_doris_pcu__db1__order_tbl",
                 ("ORDER_ID", "ORDER_AMOUNT", "ORDER_STATUS")) == order

    compact(spark, 743, decoded(case, "doc_doris_pcu_one"))
    assert table(spark, "current.doc_doris_pcu_one__d1__t1", t1_columns) == t1
    assert table(spark, "current.doc_doris_pcu_one__db1__user_profile", profile_columns) == profile
    assert table(spark, "current.doc_doris_pcu_one__db1__order_tbl",
                 ("ORDER_ID", "ORDER_AMOUNT", "ORDER_STATUS")) == order


def test_airbyte_incremental_append_deduped_example(spark):
    """Airbyte "Incremental Sync - Append + Deduped" (primary key ``name``, cursor ``updated_at``
    as GoldenGate ``pos``): Louis XVI false 1754, Marie Antoinette false 1755; the delta Louis XVI
    false 1785; the delta Louis XVI and Marie Antoinette true 1793 — after each sync the table
    Airbyte states. One sync an hour, then the last delta re-sent ("sources should prefer
    resending data"): the same table. And with the 1785 delta landing after the 1793 one: the
    table is deduplicated by the cursor, as Airbyte's ("sorting the data using the cursor
    field"), not by arrival."""
    columns = ("NAME", "DECEASED", "UPDATED_AT")
    final = [("Louis XVI", "true", "1793"), ("Marie Antoinette", "true", "1793")]
    case = "ogg_json/airbyte_incremental_append_deduped_constructed"
    name = "current.doc_airbyte__demo__people"

    rows = decoded(case, "doc_airbyte")
    compact(spark, 744, rows[:2])
    assert table(spark, name, columns) == [
        ("Louis XVI", "false", "1754"), ("Marie Antoinette", "false", "1755")]
    compact(spark, 745, rows[2:3])
    assert table(spark, name, columns) == [
        ("Louis XVI", "false", "1785"), ("Marie Antoinette", "false", "1755")]
    compact(spark, 746, rows[3:5])
    assert table(spark, name, columns) == final
    compact(spark, 747, rows[5:])  # the re-sent delta
    assert table(spark, name, columns) == final

    rows = decoded(case, "doc_airbyte_late")
    for n, batch in ((748, rows[:2]), (749, rows[3:5]), (750, rows[2:3])):
        compact(spark, n, batch)
    assert table(spark, "current.doc_airbyte_late__demo__people", columns) == final


def test_flink_versioned_table_products_example(spark):
    """Flink "Versioned Tables": the ``products`` changelog (Debezium, ``update_time`` =
    ``source.ts_ms``, on 2024-05-01) — INSERT p_001 scooter 11.11 (00:01) and p_002 basketball
    23.11 (00:02), updates to 12.99 and 19.99 (12:00), DELETE of p_001 (18:00). As Flink states,
    the table after the inserts ("at 10:00:00") and after the updates ("at 13:00:00"), with
    ``update_time`` as our ``_cdc_event_time``; after the delete only p_002 ("deleted from the
    catalog at 18:00:00"). One time step an hour; and the three hours landing in reverse."""
    columns = ("product_id", "product_name", "price", "_cdc_event_time")
    final = [("p_002", "basketball", "19.99", "2024-05-01 12:00:00")]
    case = "debezium_json/flink_versioned_table_products_constructed"
    name = "current.doc_flink_vt__products"

    rows = decoded(case, "doc_flink_vt")
    compact(spark, 751, rows[:2])
    assert table(spark, name, columns) == [("p_001", "scooter", "11.11", "2024-05-01 00:01:00"),
                                           ("p_002", "basketball", "23.11", "2024-05-01 00:02:00")]
    compact(spark, 752, rows[2:4])
    assert table(spark, name, columns) == [("p_001", "scooter", "12.99", "2024-05-01 12:00:00"),
                                           ("p_002", "basketball", "19.99", "2024-05-01 12:00:00")]
    compact(spark, 753, rows[4:])
    assert table(spark, name, columns) == final

    assert replayed(spark, case, "doc_flink_vt_reversed",
                    ((754, slice(4, None)), (755, slice(2, 4)), (756, slice(None, 2))),
                    "products", columns) == final


def test_kafka_log_compaction_example(spark):
    """Kafka's log compaction example: ``123 => bill@microsoft.com``, ``... bill@gatesfoundation
    .org``, ``... bill@gmail.com`` on a topic keyed by user id keep "the last update for each
    primary key (e.g. bill@gmail.com)"; a null payload for the key (a tombstone, "a delete from the
    log") removes "any prior message with that key". As a flattened Debezium topic (Kafka key,
    bare rows, tombstones): one message an hour, then the tombstone; and the tombstone's hour
    landing before the three emails (later in the log: no row)."""
    columns = ("id", "email")
    case = "debezium_json/kafka_log_compaction_emails_constructed"
    name = "current.doc_kafka_lc__user_emails"

    rows = decoded(case, "doc_kafka_lc")
    for n, row in zip((757, 758, 759), rows[:3], strict=True):
        compact(spark, n, [row])
    assert table(spark, name, columns) == [("123", "bill@gmail.com")]
    compact(spark, 760, rows[3:])
    assert table(spark, name, columns) == []

    assert replayed(spark, case, "doc_kafka_lc_reversed",
                    ((761, slice(3, None)), (762, slice(None, 3))), "user_emails", columns) == []


def test_materialize_upsert_envelope_examples(spark):
    """Materialize testdrive ``kafka-upsert-sources.td``, ``ENVELOPE UPSERT`` (key, value; a null
    value deletes the key), as flattened Debezium topics. ``avroavro`` (9 messages) ends in fish
    fish 1000, birdmore geese 56, mammalmore moose 2. ``realtimeavroavro`` (key ``f3, f4``, either
    may be NULL): after 8 messages fire/yang dog 42, NULL/yin sheep 54, water/NULL crocodile 7;
    after 8 more (a delete of a key that never existed, NULL/yin deleted and re-inserted) fire/yang
    dog 42, air/qi chicken 47, NULL/yin dog 243, earth/dao rhinoceros 211. The values leave the key
    out; as in Materialize (``key f1 f2``), the Kafka key's fields are table columns too."""
    rows = decoded("debezium_json/materialize_upsert_avro_key_constructed", "doc_mz_upsert")
    compact(spark, 763, rows)
    assert table(spark, "current.doc_mz_upsert__avroavro", ("_cdc_key", "key", "f1", "f2")) == [
        ('["birdmore"]', "birdmore", "geese", "56"), ('["fish"]', "fish", "fish", "1000"),
        ('["mammalmore"]', "mammalmore", "moose", "2")]

    columns = ("_cdc_key", "f3", "f4", "f1", "f2")
    name = "current.doc_mz_upsert__realtimeavroavro"
    rows = decoded("debezium_json/materialize_upsert_composite_key_constructed", "doc_mz_upsert")
    compact(spark, 764, rows[:8])
    assert table(spark, name, columns) == [
        ('["fire","yang"]', "fire", "yang", "dog", "42"),
        ('["water",null]', "water", None, "crocodile", "7"),
        ('[null,"yin"]', None, "yin", "sheep", "54")]
    compact(spark, 765, rows[8:])
    assert table(spark, name, columns) == [
        ('["air","qi"]', "air", "qi", "chicken", "47"),
        ('["earth","dao"]', "earth", "dao", "rhinoceros", "211"),
        ('["fire","yang"]', "fire", "yang", "dog", "42"),
        ('[null,"yin"]', None, "yin", "dog", "243")]
