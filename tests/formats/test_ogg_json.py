"""ogg_json beyond the fixtures: names, op spellings, truncate and schema messages."""

from __future__ import annotations

import json

from spark_jobs.formats.canonical import RawMessage
from spark_jobs.formats.ogg_json import OggJsonDecoder


def _rows(doc: dict) -> list[dict]:
    return OggJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode())).rows


def test_truncate_has_no_images_and_no_key() -> None:
    row = _rows({"table": "S.T", "op_type": "t", "op_ts": "2020-05-13 15:40:06.000000", "pos": "7"})[0]
    assert (row["op"], row["row_key"], row["before"], row["after"]) == ("TRUNCATE", None, None, None)
    assert row["source_sequence"] == "00000000000000000007"


def test_long_op_names_and_catalog_names() -> None:
    row = _rows({"table": "CDB.S.T", "op_type": "DELETE", "op_ts": "2020-05-13 15:40:06",
                 "primary_keys": ["ID"], "before": {"ID": 1}})[0]
    names = (row["database"], row["schema_name"], row["table_name"])
    assert names == ("CDB", "S", "T") and row["row_key"] == '["1"]'


def test_schema_message_is_control() -> None:
    decoded = OggJsonDecoder().decode(RawMessage(value=b'{"$schema":"x","title":"S.T"}'))
    assert decoded.control == "SCHEMA" and decoded.rows == []
