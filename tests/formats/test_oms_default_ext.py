"""oms_default_ext beyond the fixtures: the OMS type-mapping table."""

from __future__ import annotations

import pytest

from cdclake.formats._oms import light_type, zoned_text
from cdclake.formats.values import ConversionWarning


@pytest.mark.parametrize(("schema_type", "db_type", "value", "logical", "text"), [
    ("TINYINT", "OB_MYSQL", "3", "LONG", "3"),
    ("BIGINT", "OB_MYSQL", "10223372036854775806", "DECIMAL(20,0)", "10223372036854775806"),
    ("BOOL", "OB_MYSQL", "1", "BOOLEAN", "true"),
    ("DECIMAL", "OB_MYSQL", "9.50E-3", "DECIMAL", "0.00950"),
    ("FLOAT", "OB_MYSQL", "1.2222", "DOUBLE", "1.2222"),
    ("FLOAT", "OB_ORACLE", "1.2222", "DECIMAL", "1.2222"),
    ("BLOB", "OB_MYSQL", "aGVsbG8gd29ybGQ=", "BINARY", "aGVsbG8gd29ybGQ="),
    ("DATE", "OB_MYSQL", "2020-11-25", "DATE", "2020-11-25"),
    ("DATE", "OB_ORACLE", "2020-11-25 00:01:02", "TIMESTAMP_NTZ", "2020-11-25T00:01:02"),
    ("TIME", "OB_MYSQL", "00:01:02.5", "TIME", "00:01:02.5"),
    ("DATETIME", "OB_MYSQL", "2020-11-25 00:01:02.000000001", "TIMESTAMP_NTZ",
     "2020-11-25T00:01:02.000000001"),
    ("TIMESTAMP", "OB_MYSQL", "1606233662.012345", "TIMESTAMP", "2020-11-24T16:01:02.012345Z"),
    ("TIMESTAMP", "OB_ORACLE", "2020-11-25 00:01:02", "TIMESTAMP_NTZ", "2020-11-25T00:01:02"),
    ("VARCHAR(20)", "OB_MYSQL", "x", "STRING", "x"),
    ("INTERVAL_YEAR_TO_MONTH", "OB_ORACLE", "INTERVAL '4' YEAR", "STRING", "INTERVAL '4' YEAR"),
])
def test_type_mapping(schema_type: str, db_type: str, value: str, logical: str, text: str) -> None:
    got_logical, converter = light_type(schema_type, db_type)
    assert (got_logical, converter(value)) == (logical, text)


@pytest.mark.parametrize(("schema_type", "value"), [
    ("DATE", "0000-00-00"), ("TIMESTAMP", "0000-00-00 00:00:00"), ("TIME", "25h"),
    ("DATETIME", "2020-11-25 00:01:02 Asia/Shanghai"), ("DECIMAL", "1E+999999"),
])
def test_invalid_values_are_conversion_warnings(schema_type: str, value: str) -> None:
    with pytest.raises(ConversionWarning):
        light_type(schema_type, "OB_MYSQL")[1](value)


def test_zoned_datetime_to_utc_keeps_nanoseconds() -> None:
    assert zoned_text("2020-11-25 00:01:02.123456789 Asia/Shanghai") == "2020-11-24T16:01:02.123456789Z"
    assert zoned_text("2020-11-25 00:01:02 +08:00") == "2020-11-24T16:01:02Z"
    assert zoned_text("2020-11-25 00:01:02", "Asia/Shanghai") == "2020-11-24T16:01:02Z"


def test_early_years_are_zero_padded_and_overflow_is_a_warning() -> None:
    assert zoned_text("0900-01-01 08:00:00 +08:00") == "0900-01-01T00:00:00Z"
    with pytest.raises(ConversionWarning):
        zoned_text("0001-01-01 00:00:00 +08:00")  # before year 1 in UTC


def test_bit_with_width_is_padded_to_its_bytes() -> None:
    from cdclake.formats._oms import bit_text, bit_width, light_type

    assert bit_width("BIT(16)") == 16 and bit_width("BIT") is None
    assert bit_text("Bw==", 16) == bit_text("AAc=", 16) == "AAc="
    logical, convert = light_type("BIT(16)", "OB_MYSQL")
    assert (logical, convert("Bw==")) == ("BINARY", "AAc=")
