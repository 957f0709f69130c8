"""drs_avro specifics: schema configuration, single-object framing, the stand-in schema's label."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastavro.schema import fingerprint, to_parsing_canonical_form

from cdclake.formats import errors
from cdclake.formats._avro import crc64_avro, load_schema_file, schema_fingerprint
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import RawMessage
from cdclake.formats.drs_avro import DrsAvroDecoder
from cdclake.formats.errors import DecodeError
from tests.formats import drs_avro_fixture_maker as maker

TEST_SCHEMA = Path(__file__).with_name("drs_avro_test_schema.avsc")


def test_crc64_avro_matches_the_spec_vector_and_fastavro() -> None:
    assert crc64_avro(b'"int"').to_bytes(8, "little").hex() == "8f5c393f1ad57572"
    schema = load_schema_file(TEST_SCHEMA)
    expected = fingerprint(to_parsing_canonical_form(schema), "CRC-64-AVRO")
    assert schema_fingerprint(schema).hex() == expected


def test_stand_in_schema_says_it_is_not_the_vendors() -> None:
    doc = json.loads(TEST_SCHEMA.read_text())["doc"]
    assert "NOT Huawei's DRS schema" in doc


def test_without_schema_file_the_error_says_how_to_configure_it() -> None:
    with pytest.raises(DecodeError) as info:
        DrsAvroDecoder().decode(RawMessage(value=b"\x00"))
    assert info.value.reason == errors.MISSING_SCHEMA
    assert "record.avsc" in info.value.detail and "schema_file" in info.value.detail
    assert "pipeline.yml" in info.value.detail


def test_unreadable_schema_file_is_missing_schema(tmp_path: Path) -> None:
    for path, content in ((tmp_path / "absent.avsc", None), (tmp_path / "bad.avsc", "{not json")):
        if content is not None:
            path.write_text(content)
        decoder = DrsAvroDecoder(FormatOptions(schema_file=str(path)))
        with pytest.raises(DecodeError) as info:
            decoder.decode(RawMessage(value=b"\x00"))
        assert info.value.reason == errors.MISSING_SCHEMA
        assert str(path) in info.value.detail


def test_bare_and_single_object_forms_decode_alike() -> None:
    decoder = DrsAvroDecoder(FormatOptions(schema_file=str(TEST_SCHEMA)))
    datum = maker.record("INSERT", 1, None, maker.image("9", "n", None))
    bare = decoder.decode(RawMessage(value=maker.bare(datum))).rows
    framed = decoder.decode(RawMessage(value=maker.single_object(datum))).rows
    assert bare == framed
    assert bare[0]["table_name"] == "orders" and bare[0]["database"] == "shop"


@pytest.mark.parametrize(("value", "unit_micros"), [(1696984408, 1_000_000), (1696984408123, 1000),
                                                    (1696984408123456, 1)])
def test_update_timestamp_unit_is_read_by_magnitude(value: int, unit_micros: int) -> None:
    decoder = DrsAvroDecoder(FormatOptions(schema_file=str(TEST_SCHEMA)))
    datum = maker.record("INSERT", 1, None, maker.image("9", "n", None), ts=value)
    row = decoder.decode(RawMessage(value=maker.bare(datum))).rows[0]
    assert row["event_time"] == value * unit_micros
