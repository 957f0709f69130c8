"""OMS Canal: typed JSON values keep their exact text."""

from __future__ import annotations

from cdclake.formats import get_decoder
from cdclake.formats.canonical import RawMessage


def test_typed_numbers_keep_every_digit_and_unsigned_bigint_widens() -> None:
    value = (b'{"database":"d","table":"t","type":"INSERT","isDdl":false,"es":1,"ts":2,'
             b'"pkNames":["k"],"mysqlType":{"k":"bigint","d":"decimal(40,30)","f":"float"},'
             b'"sqlType":{"k":-5,"d":3,"f":6},'
             b'"data":[{"k":18446744073709551615,"d":1.000000000000000000000000000001,"f":1e-7}]}')
    [row] = get_decoder("oms_canal").decode(RawMessage(value=value)).rows
    assert row["after"] == {"k": "18446744073709551615",
                            "d": "1.000000000000000000000000000001", "f": "0.0000001"}
    assert row["column_types"]["k"] == "DECIMAL(20,0)"
    assert row["row_key"] == '["18446744073709551615"]'
    assert row["source_sequence"] is None


def test_bit_columns_are_base64_bytes_not_numbers() -> None:
    import json

    from cdclake.formats.oms_canal import OmsCanalDecoder

    doc = {"database": "d", "sqlType": {"id": 4, "f": -7}, "data": [{"id": 1, "f": "Bw=="}],
           "pkNames": ["id"], "old": None, "mysqlType": {"id": "int", "f": "bit(8)"},
           "type": "INSERT", "table": "t", "es": 1609344671000, "isDdl": False, "ts": 1, "sql": ""}
    row = OmsCanalDecoder().decode(RawMessage(value=json.dumps(doc).encode())).rows[0]
    assert row["column_types"]["f"] == "BINARY" and row["after"]["f"] == "Bw=="
    assert row["warnings"] == []
