"""dts_avro specifics beyond the fixtures: shipped schemas, legacy fallback, robustness."""

from __future__ import annotations

import hashlib
import io
import random
from importlib import resources
from typing import Any, cast

import fastavro
import pytest

from cdclake.formats import errors
from cdclake.formats.canonical import RawMessage
from cdclake.formats.dts_avro import DtsAvroDecoder, primary_key_from_tags, split_object_name
from cdclake.formats.errors import DecodeError
from tests.formats import dts_avro_fixture_maker as maker

SHIPPED = {
    "aliyun_dts_record.avsc": "ee55b97b39d7868dfad9a9845552190b0b1fa3a489dc7216f9b037b077acf5ea",
    "aliyun_dts_record_legacy_no_bornTimestamp.avsc":
        "048944388f58fa24e641617976772836b81b67568e562d1761bcfa1f4efd4fb1",
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_schema_is_the_vendor_file_byte_for_byte(name: str) -> None:
    data = resources.files("cdclake.formats").joinpath("avro", name).read_bytes()
    assert hashlib.sha256(data).hexdigest() == SHIPPED[name]


def test_object_name_restores_escaped_dots() -> None:
    assert split_object_name("app\\u002Ev2.public.events") == ["app.v2", "public", "events"]
    assert split_object_name("mydb") == ["mydb"]


def test_key_is_primary_else_first_unique_else_none() -> None:
    assert primary_key_from_tags({"pk_uk_info": '{"uk_a":["a"],"PRIMARY":["id"]}'}) == ["id"]
    assert primary_key_from_tags({"pk_uk_info": '{"uk_a":["a","b"]}'}) == ["a", "b"]
    assert primary_key_from_tags({}) == []


def _datum(legacy: bool) -> bytes:
    rec = maker.record("INSERT", "shop.orders", maker.ORDERS, None,
                       maker.orders_image("1", "x", "1.00", "NEW"), tags=maker.PK,
                       born=None if legacy else 1696984408)
    return maker.encode(rec, legacy=legacy)


def test_legacy_datum_is_a_prefix_and_decodes_the_same() -> None:
    legacy, current = _datum(True), _datum(False)
    assert current.startswith(legacy)
    decoder = DtsAvroDecoder()
    rows_legacy = decoder.decode(RawMessage(value=legacy)).rows
    rows_current = decoder.decode(RawMessage(value=current)).rows
    assert rows_legacy == rows_current


def test_garbage_and_truncation_only_ever_raise_invalid_avro() -> None:
    good = _datum(False)
    rng = random.Random(7)
    samples = [good[:n] for n in range(1, len(good))]
    samples += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80))) for _ in range(300)]
    decoder = DtsAvroDecoder()
    for data in samples:
        try:
            decoder.decode(RawMessage(value=data))
        except DecodeError as exc:
            assert exc.reason in (errors.INVALID_AVRO, errors.INVALID_OP, errors.MISSING_FIELD,
                                  errors.INVALID_FIELD), exc
    with pytest.raises(DecodeError) as info:
        decoder.decode(RawMessage(value=good[:-3]))
    assert info.value.reason == errors.INVALID_AVRO


def test_union_branches_with_the_same_fields_stay_distinct() -> None:
    """Float and Decimal both have value/precision/scale: the branch name must decide."""
    fields = [("f", 5), ("d", 246)]
    rec = maker.record("INSERT", "db.t", fields, None, [
        maker.v("Float", {"value": 0.1, "precision": 0, "scale": 0}),
        maker.v("Decimal", {"value": "0.10", "precision": 3, "scale": 2})])
    row = DtsAvroDecoder().decode(RawMessage(value=maker.encode(rec))).rows[0]
    assert row["after"] == {"f": "0.1", "d": "0.10"}
    assert row["column_types"] == {"f": "DOUBLE", "d": "DECIMAL(3,2)"}


def test_fixture_maker_round_trips_through_fastavro() -> None:
    data = _datum(False)
    back = cast(dict[str, Any], fastavro.schemaless_reader(io.BytesIO(data), maker.CURRENT))
    assert back["objectName"] == "shop.orders"


def test_mysql_placeholder_txid_is_no_transaction_but_a_gtid_tag_is() -> None:
    """Real MySQL records all carry sourceTxid "0" (cloudkdb/demo printout): not one transaction."""
    decoder = DtsAvroDecoder()

    def txid(rec: dict) -> str | None:
        return decoder.decode(RawMessage(value=maker.encode(rec))).rows[0]["transaction_id"]

    assert txid(maker.record("INSERT", "db.t", [("a", 8)], None, [maker.integer("1")])) is None
    assert txid(maker.record("DDL", "db", None, None, "create table t(a int)",
                             tags={"GTID": "281c62dc:108156"})) == "281c62dc:108156"
    assert txid(maker.record("INSERT", "db.public.t", [("a", 20)], None, [maker.integer("1")],
                             source="PostgreSQL", txid="731")) == "731"


def test_keyless_rds_table_is_keyed_by_its_hidden_row_id() -> None:
    """Alibaba E-MapReduce's FromDTSAvroUDF example: a keyless RDS table (pk_uk_info "{}") whose
    records carry RDS's implicit key ``__#alibaba_rds_row_id#__``; an UPDATE of id 1 -> 2."""
    fields = [("id", 3), ("name", 253), ("__#alibaba_rds_row_id#__", 8)]

    def image(i: str) -> list:
        return [maker.integer(i, 4), maker.chars("jack"), maker.integer("44")]

    row = _row(maker.record("UPDATE", "test.students", fields, image("1"), image("2"),
                            tags={"pk_uk_info": "{}"}))
    assert (row["primary_key_columns"], row["row_key"]) == (["__#alibaba_rds_row_id#__"], '["44"]')
    assert (row["before"]["id"], row["after"]["id"]) == ("1", "2")
    keyed = _row(maker.record("INSERT", "test.students", fields, None, image("1"), tags=maker.PK))
    assert keyed["primary_key_columns"] == ["id"]
    plain = _row(maker.record("INSERT", "test.students", fields[:2], None, image("1")[:2],
                              tags={"pk_uk_info": "{}"}))
    assert (plain["primary_key_columns"], plain["row_key"]) == ([], None)


def test_sharded_drds_record_reports_the_logical_table_not_the_shard() -> None:
    """yungkei/flink-dts-demo printed a PolarDB-X record of shard ``..._0005.sample_order_real_aeje_11``
    with ``l_db_name``/``l_tb_name`` tags: every shard must land in the one logical table."""
    decoder = DtsAvroDecoder()

    def names(object_name: str | None, tags: dict, op: str = "INSERT") -> tuple:
        fields, after = ([("id", 3)], [maker.integer("1", 4)]) if op == "INSERT" else (None, "ddl")
        row = decoder.decode(RawMessage(value=maker.encode(
            maker.record(op, object_name, fields, None, after, tags=tags)))).rows[0]
        return row["database"], row["schema_name"], row["table_name"]

    logical = {**maker.PK, "l_db_name": "shop", "l_tb_name": "orders"}
    assert names("shop_pyii_0005.orders_aeje_11", logical) == ("shop", None, "orders")
    assert names("shop_pyii_0006.orders_aeje_12", logical) == ("shop", None, "orders")
    assert names("shop_pyii_0005.orders_aeje_11", maker.PK) == ("shop_pyii_0005", None, "orders_aeje_11")
    assert names("shop_pyii_0005", {"l_db_name": "shop"}, op="DDL") == ("shop", None, None)


def test_timestamp_with_time_zone_early_year_and_invalid_value() -> None:
    fields = [("id", 8), ("early", 18), ("bad", 18)]
    zoned = maker.v("TimestampWithTimeZone", {"value": {
        "year": 1, "month": 1, "day": 2, "hour": 0, "minute": 0, "second": 0, "millis": None},
        "timezone": "+08:00"})
    invalid = maker.v("TimestampWithTimeZone", {"value": {
        "year": 0, "month": 0, "day": 0, "hour": 0, "minute": 0, "second": 0, "millis": None},
        "timezone": "+08:00"})
    rec = maker.record("INSERT", "db.t", fields, None, [maker.integer("1"), zoned, invalid],
                       tags={"pk_uk_info": '{"PRIMARY":["id"]}'})
    row = DtsAvroDecoder().decode(RawMessage(value=maker.encode(rec))).rows[0]
    assert row["after"]["early"] == "0001-01-01T16:00:00Z"
    assert row["after"]["bad"] is not None and len(row["warnings"]) == 1


def _row(rec: dict) -> dict:
    return DtsAvroDecoder().decode(RawMessage(value=maker.encode(rec))).rows[0]


def test_record_id_is_not_the_ordering_key() -> None:
    """subscribe_example ``boot/MysqlRecordPrinter.java`` (45bb6d6c) and the SDK's
    ``DefaultRecordPrintListener``: "record id can not be used as unique identifier"."""
    rec = maker.record("INSERT", "db.t", [("a", 8)], None, [maker.integer("1")], rid=1858644)
    assert _row(rec)["source_sequence"] is None


def test_negative_time_has_every_part_negated() -> None:
    """MysqlFieldConverter.TimeAdapter (subscribe_example 89997e3c) and SDK DateTime.toJdbcString:
    negative when any part is, each part printed as its magnitude."""
    fields = [("a", 19), ("b", 19), ("c", 11)]
    rec = maker.record("INSERT", "db.t", fields, None, [
        maker.dt(hour=0, minute=0, second=-1), maker.dt(hour=0, minute=0, second=0, millis=-500),
        maker.dt(hour=-100, minute=-1, second=0)])
    assert _row(rec)["after"] == {"a": "-00:00:01", "b": "-00:00:00.0005", "c": "-100:01:00"}


def test_physical_log_reader_position_means_nanosecond_fractions() -> None:
    """SDK LazyRecordDeserializer.deserializeHeader: MySQL/PostgreSQL with ``<->`` in
    sourcePosition is a PPAS/physical-log reader whose DateTime fraction is nanoseconds."""
    fields = [("at", 1114)]
    value = [maker.dt(year=2023, month=1, day=2, hour=3, minute=4, second=5, millis=120)]
    pg = maker.record("INSERT", "db.public.t", fields, None, value, source="PostgreSQL",
                      pos="0/16B3748<->0/16B3750")
    assert _row(pg)["after"] == {"at": "2023-01-02T03:04:05.00000012"}
    pg["sourcePosition"] = "0/16B3748"
    assert _row(pg)["after"] == {"at": "2023-01-02T03:04:05.00012"}


def test_postgresql_bool_false_and_zone_offset_with_seconds() -> None:
    """SDK TextObject for PostgreSQL bool (16): ``t``/``true`` is true, ``f`` false;
    DateTime.validateAndConvertTimeZone accepts offsets with seconds (``+08:20:30``)."""
    fields = [("flag", 16), ("at", 1184)]
    zoned = maker.v("TimestampWithTimeZone", {"value": {
        "year": 2023, "month": 1, "day": 1, "hour": 8, "minute": 20, "second": 30, "millis": None},
        "timezone": "+08:20:30"})
    rec = maker.record("INSERT", "db.public.t", fields, None,
                       [maker.v("TextObject", {"type": "BOOL", "value": "f"}), zoned],
                       source="PostgreSQL")
    assert _row(rec)["after"] == {"flag": "false", "at": "2023-01-01T00:00:00Z"}


def test_mongodb_images_are_value_and_id() -> None:
    """SDK LazyRecordDeserializer.deserializeFieldListAndIndex: a MongoDB INSERT/UPDATE/DELETE
    has the fields ``_value`` and ``_id`` whatever ``fields`` carries."""
    doc = maker.v("TextObject", {"type": "DOCUMENT", "value": '{"_id": 1, "n": "x"}'})
    rec = maker.record("INSERT", "app.users", None, None,
                       [doc, maker.v("TextObject", {"type": "OBJECTID", "value": "1"})],
                       source="MongoDB")
    row = _row(rec)
    assert (row["database"], row["table_name"]) == ("app", "users")
    assert row["after"] == {"_value": '{"_id": 1, "n": "x"}', "_id": "1"}


def test_mysql_only_charset_names_decode() -> None:
    """SDK common/JDKCharsetMapper.java (824abf9c): MySQL names such as ``macce``, ``koi8r``."""
    rec = maker.record("INSERT", "db.t", [("a", 253), ("b", 253)], None, [
        maker.chars("", "macce", raw="Łódź".encode("mac_latin2")),
        maker.chars("", "koi8r", raw="Привет".encode("koi8_r"))])
    assert _row(rec)["after"] == {"a": "Łódź", "b": "Привет"}
