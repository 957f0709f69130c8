"""dts_avro specifics beyond the fixtures: shipped schemas, legacy fallback, robustness."""

from __future__ import annotations

import hashlib
import io
import random
from importlib import resources

import fastavro
import pytest

from spark_jobs.formats import errors
from spark_jobs.formats.canonical import RawMessage
from spark_jobs.formats.dts_avro import DtsAvroDecoder, primary_key_from_tags, split_object_name
from spark_jobs.formats.errors import DecodeError
from tests.formats import dts_avro_fixture_maker as maker

SHIPPED = {
    "aliyun_dts_record.avsc": "ee55b97b39d7868dfad9a9845552190b0b1fa3a489dc7216f9b037b077acf5ea",
    "aliyun_dts_record_legacy_no_bornTimestamp.avsc":
        "048944388f58fa24e641617976772836b81b67568e562d1761bcfa1f4efd4fb1",
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_schema_is_the_vendor_file_byte_for_byte(name: str) -> None:
    data = resources.files("spark_jobs.formats").joinpath("avro", name).read_bytes()
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
    back = fastavro.schemaless_reader(io.BytesIO(data), maker.CURRENT)
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
