"""Pure-Python parts of compaction: fold, names, types, DDL parsing (no Spark)."""

from __future__ import annotations

import pytest

from cdclake.formats.logical_types import IncompatibleTypeChange, spark_type, widen
from spark_jobs.compaction.ddl import ddl_added_columns
from spark_jobs.compaction.events import order_key
from spark_jobs.compaction.fold import fold_key
from spark_jobs.identifiers import current_table_name, find_collisions, quote_table, source_label


def ev(kind: str, offset: int, image: str | None = None, key: str = "k", keyless: bool = False) -> dict:
    return {"key": key, "keyless": keyless, "kind": kind, "image": image, "part": 0,
            "order_key": order_key(None, offset, 0, offset, 0), "kafka_topic": "t", "kafka_partition": 0,
            "kafka_offset": offset, "record_index": 0, "op": "UPDATE", "event_us": offset, "run_id": "r"}


def test_fold_is_order_independent_and_counts_duplicates_once():
    events = [ev("FULL", 1, '{"a": "1", "b": "1"}'), ev("PARTIAL", 2, '{"b": "2"}'),
              ev("PARTIAL", 3, '{"c": null}'), ev("PARTIAL", 2, '{"b": "2"}')]
    expected = fold_key(events, "ABSENT")
    assert expected["vals"] == '{"a": "1", "b": "2", "c": null}' and expected["replace"]
    assert fold_key(list(reversed(events)), "ABSENT") == expected


def test_order_is_event_time_then_sequence_then_kafka_coordinates():
    """One total order whether a change has a vendor sequence or only a time."""
    snapshot = order_key(None, None, 3, 900, 0)  # a full-load row: no time, no sequence
    early = order_key("00000000000000000009", 1_000, 0, 5, 0)
    unsequenced = order_key(None, 2_000, 1, 1, 0)
    same_time_seq = order_key("00000000000000000007", 3_000, 0, 7, 0)
    same_time_seq_later = order_key("00000000000000000008", 3_000, 0, 6, 0)
    same_time_none = order_key(None, 3_000, 0, 2, 0)
    late = order_key("00000000000000000001", 4_000, 0, 1, 0)
    real = [snapshot, early, unsequenced, same_time_seq, same_time_seq_later, same_time_none, late]
    assert sorted(real[3:] + real[:3]) == sorted(real[4:] + real[:4]) == real
    # Keys of the earlier layout (S<sequence>, T<time>) are older than every key of this one.
    assert max("S00000000000000000009|", "T00000000000000099999|") < snapshot


def test_partial_onto_present_row_sets_only_its_columns():
    result = fold_key([ev("PARTIAL", 2, '{"b": "2"}')], "PRESENT")
    assert (result["replace"], result["set_cols"], result["deleted"]) == (False, '["b"]', False)


def test_keyless_count_never_below_zero():
    events = [ev("DEC", 1, "{}", keyless=True), ev("INC", 2, "{}", keyless=True)]
    assert fold_key(events, "ABSENT")["count"] == 1


def test_names_are_sanitised_and_collisions_found():
    assert current_table_name("test01", "test ") == "current.test01__test"
    assert current_table_name(None, "Order-Items") == "current.nodb__order_items"
    assert find_collisions([("a", None, "B"), ("a", None, "b"), ("c", None, "d")]) == \
        {"current.a__b": ["a.B", "a.b"]}
    assert quote_table("current.x`y") == "`current`.`x``y`"


def test_non_ascii_and_punctuation_only_names_are_readable_and_distinct():
    names = [current_table_name("shop", t) for t in ("订单", "用户", "café", "cafe", "---", "___")]
    assert names == ["current.shop__dingdan_3d5436ea", "current.shop__yonghu_0d0e1a86",
                     "current.shop__cafe_850f7dc4", "current.shop__cafe", "current.shop__x_cb3f91d5",
                     "current.shop__x_bda25155"]
    # One spelling, one name: the NFD form of "café" is the same table as its NFC form.
    assert current_table_name("shop", "cafe\u0301") == "current.shop__cafe_850f7dc4"
    assert find_collisions([("shop", None, "订单"), ("shop", None, "用户")]) == {}


def test_a_schema_other_than_the_database_is_part_of_the_table_name():
    # Oracle / PostgreSQL / OceanBase tenants: same table name in two schemas = two tables.
    assert current_table_name(None, "EMP", "HR") == "current.nodb__hr__emp"
    assert current_table_name(None, "EMP", "SCOTT") == "current.nodb__scott__emp"
    assert current_table_name("shop", "orders", "public") == "current.shop__public__orders"
    # MySQL has none; CloudCanal repeats the database as the schema: both are the 2-part name.
    assert current_table_name("pay", "orders", None) == current_table_name("pay", "orders", "pay") == \
        "current.pay__orders"
    assert source_label(None, "EMP", "HR") == "HR.EMP" and source_label("pay", "orders", "pay") == \
        "pay.orders"
    assert source_label(None, "product", "test") == "test.product"  # AWS DMS: schema-name, table-name
    assert find_collisions([(None, "HR", "EMP"), (None, "SCOTT", "EMP"), ("pay", "pay", "orders"),
                            ("pay", None, "orders")]) == {}


def test_a_table_named_like_another_tables_tombstones_collides_with_it():
    assert find_collisions([("db", None, "t"), ("db", "t", "tombstones")]) == {
        "current.db__t": ["db.t", "db.t.tombstones"],
        "current.db__t__tombstones": ["db.t", "db.t.tombstones"],
    }


def test_types_widen_commutatively_and_refuse_loss():
    assert spark_type("DECIMAL(700,3)") == "string" and spark_type("DECIMAL") == "string"
    assert widen("bigint", "decimal(20,0)") == widen("decimal(20,0)", "bigint") == "decimal(20,0)"
    assert widen("decimal(10,2)", "decimal(12,4)") == "decimal(12,4)"
    with pytest.raises(IncompatibleTypeChange):
        widen("string", "bigint", "t column 'c'")


def test_ddl_add_column():
    assert ddl_added_columns("ALTER TABLE t ADD COLUMN `b` INT, ADD c decimal(10, 2)") == [
        ("b", "LONG"), ("c", "DECIMAL(10,2)")]
    assert ddl_added_columns("CREATE TABLE t (a int)") == []


@pytest.mark.parametrize(("ddl", "columns"), [
    # Canal's real ALTER (tests/fixtures/canal_json/wild_canal_category_crlf_alter): no PRIMARY column.
    ("ALTER TABLE `rights_package`.`base_data_id_mapping` \r\nADD COLUMN `id` bigint(20) NOT NULL "
     "AUTO_INCREMENT COMMENT 'id' FIRST,\r\nADD PRIMARY KEY (`id`)", [("id", "LONG")]),
    ("ALTER TABLE t ADD INDEX idx (a)", []),
    ("alter table t add unique key u (a), add fulltext ft (b), add key k (c)", []),
    ("ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (a) REFERENCES x(id)", []),
    ("ALTER TABLE t ADD CHECK (a > 0)", []),
    # Quoted, or after COLUMN, the same words are column names.
    ("ALTER TABLE t ADD COLUMN key int, ADD `primary` varchar(3)", [("key", "LONG"), ("primary", "STRING")]),
])
def test_ddl_add_index_key_or_constraint_is_no_column(ddl: str, columns: list[tuple[str, str]]):
    assert ddl_added_columns(ddl) == columns


def test_query_command_is_registered():
    from cdclake.cli import build_parser

    args = build_parser().parse_args(["query", "select 1", "--format", "json"])
    assert (args.sql, args.format) == ("select 1", "json")


@pytest.mark.parametrize(("ddl", "columns"), [
    ("alter table test.e add column torvalds bigint unsigned after m", [("torvalds", "DECIMAL(20,0)")]),
    ("ALTER TABLE t ADD COLUMN c int(10) unsigned zerofill", [("c", "LONG")]),
    ("ALTER TABLE public.t ADD COLUMN c timestamp(6) without time zone NOT NULL", [("c", "TIMESTAMP_NTZ")]),
    ("ALTER TABLE public.t ADD COLUMN c timestamp with time zone, ADD COLUMN d double precision DEFAULT 1",
     [("c", "TIMESTAMP"), ("d", "DOUBLE")]),
    ("ALTER TABLE t ADD COLUMN (c1 INT, c2 VARCHAR(10), c3 decimal(12, 4) unsigned)",
     [("c1", "LONG"), ("c2", "STRING"), ("c3", "DECIMAL(12,4)")]),
    ("ALTER TABLE hr.emp ADD (bonus NUMBER(10,2), note VARCHAR2(20), CONSTRAINT pk PRIMARY KEY (id))",
     [("bonus", "DECIMAL(10,2)"), ("note", "STRING")]),
    ("ALTER TABLE dbo.t ADD c datetime2 NULL", [("c", "TIMESTAMP_NTZ")]),
    ("ALTER TABLE t ADD m money, ADD s smallint", [("m", "DECIMAL"), ("s", "LONG")]),
    ("ALTER TABLE t ADD COLUMN y YEAR, ADD f BOOLEAN, ADD g int8, ADD b bit(8), ADD j jsonb",
     [("y", "LONG"), ("f", "BOOLEAN"), ("g", "LONG"), ("b", "BINARY"), ("j", "JSON")]),
    # SQL Server lists definitions after one ADD (T-SQL has no COLUMN keyword).
    ("ALTER TABLE dbo.t ADD c1 int, c2 varchar(10) NULL CONSTRAINT df DEFAULT ('a,b'), "
     "CONSTRAINT pk PRIMARY KEY (id)", [("c1", "LONG"), ("c2", "STRING")]),
    # Other clauses of the same ALTER are not columns; commas in defaults do not split.
    ("ALTER TABLE t ADD COLUMN a int DEFAULT 'x,y', DROP COLUMN b, ADD c decimal(10, 2),",
     [("a", "LONG"), ("c", "DECIMAL(10,2)")]),
    ("ALTER TABLE t ADD a int, DROP COLUMN b, MODIFY d int", [("a", "LONG")]),
])
def test_ddl_add_column_reads_the_whole_type_as_the_decoders_do(ddl: str, columns: list[tuple[str, str]]):
    assert ddl_added_columns(ddl) == columns
