"""ogg_json beyond the fixtures: names, op spellings, truncate and schema messages."""

from __future__ import annotations

import json

import pytest

from cdclake.formats import errors
from cdclake.formats.canonical import RawMessage
from cdclake.formats.errors import DecodeError
from cdclake.formats.ogg_json import OggJsonDecoder


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


def test_is_missing_markers_are_metadata_and_missing_columns_are_left_out() -> None:
    # includeIsMissingFields output, as in real GoldenGate for Big Data messages.
    base = {"table": "GG.T", "op_ts": "2013-06-02 22:14:41.000000", "pos": "1", "primary_keys": ["ID"]}
    delete = _rows(dict(base, op_type="D", before={"ID": "600", "ID_isMissing": False,
                                                   "PRICE": None, "PRICE_isMissing": True}))[0]
    assert delete["before"] == {"ID": "600"}
    insert = _rows(dict(base, op_type="I", after={"ID": 1, "ID_isMissing": False,
                                                  "QTY": None, "QTY_isMissing": True}))[0]
    assert insert["after"] == {"ID": "1"} and insert["after_is_full"] is False
    update = _rows(dict(base, op_type="U", after={"ID": 1, "ID_isMissing": False, "QTY": 3,
                                                  "QTY_isMissing": False}))[0]
    assert update["after"] == {"ID": "1", "QTY": "3"}


def test_columns_named_like_markers_are_kept_unless_they_mark_a_column() -> None:
    after = {"ID": 1, "X_isMissing": True, "ID_isMissing": "no"}
    row = _rows({"table": "S.T", "op_type": "I", "op_ts": "2020-05-13 15:40:06", "after": after})[0]
    assert row["after"] == {"ID": "1", "X_isMissing": "true", "ID_isMissing": "no"}
    assert row["after_is_full"] is True


def test_row_modeled_json_formatter_columns_beside_the_operation_fields() -> None:
    # format=json_row output, as printed from a GoldenGate for Big Data Kafka topic (2017).
    base = {"table": "TEST.WMS_TEST", "op_ts": "2017-12-12 09:47:44.349517",
            "current_ts": "2017-12-12T17:47:50.415000", "pos": "00000000000000003880",
            "primary_keys": ["id"], "tokens": {"txid": "1.2.3"}, "id": 16, "flag": 1}
    insert = _rows(dict(base, op_type="I"))[0]
    assert insert["after"] == {"id": "16", "flag": "1"} and insert["before"] is None
    assert insert["after_is_full"] is True and insert["row_key"] == '["16"]'
    assert insert["transaction_id"] == "1.2.3"
    update = _rows(dict(base, op_type="U"))[0]
    assert (update["before"], update["after"], update["after_is_full"]) == (
        None, {"id": "16", "flag": "1"}, False)
    delete = _rows(dict(base, op_type="D"))[0]
    assert (delete["before"], delete["after"], delete["row_key"]) == (
        {"id": "16", "flag": "1"}, None, '["16"]')
    missing = _rows(dict(base, op_type="I", flag=None, flag_isMissing=True, id_isMissing=False))[0]
    assert missing["after"] == {"id": "16"} and missing["after_is_full"] is False


def test_row_modeled_message_without_columns_is_still_missing_its_image() -> None:
    with pytest.raises(DecodeError) as raised:
        _rows({"table": "S.T", "op_type": "I", "op_ts": "2020-05-13 15:40:06", "pos": "1"})
    assert raised.value.reason == "MISSING_FIELD"


def test_update_with_empty_before_has_no_before_image() -> None:
    # "before":{} on an update (seen in production output; Flink's ogg-json skips its -U row).
    row = _rows({"table": "S.T", "op_type": "U", "op_ts": "2023-07-20 21:45:34.860817",
                 "pos": "2", "primary_keys": ["ID"], "before": {}, "after": {"ID": 1, "V": "x"}})[0]
    assert (row["before"], row["after"], row["row_key"]) == (None, {"ID": "1", "V": "x"}, '["1"]')


def test_keyless_update_without_before_image_is_quarantined() -> None:
    # Nothing says which row it replaces: as a keyless change it would leave the old row beside it.
    doc = {"table": "S.T", "op_type": "U", "op_ts": "2023-07-20 21:45:34.860817", "pos": "2",
           "before": {}, "after": {"ID": 1, "V": "x"}}
    with pytest.raises(DecodeError) as info:
        _rows(doc)
    assert info.value.reason == errors.MISSING_KEY and "primary_keys" in str(info.value)


def test_a_key_column_the_image_spells_otherwise_is_found_ignoring_case() -> None:
    # Paimon's ogg database/case-insensitive data: ``primary_keys`` ["id"], image column "ID"
    # (Oracle compares unquoted names ignoring case). Names stay as sent.
    [row] = _rows({"table": "S.T1", "op_type": "I", "op_ts": "2020-05-13 15:40:07.000000",
                   "pos": "144", "primary_keys": ["id"], "after": {"ID": 102, "name": "car battery"}})
    assert (row["primary_key_columns"], row["row_key"]) == (["id"], '["102"]')
    assert row["after"] == {"ID": "102", "name": "car battery"}


def test_insert_without_the_key_columns_it_names_is_quarantined() -> None:
    # Emitted as is, the row would carry key columns but no key, and compaction would refuse the
    # whole table; it goes to quarantine alone, as Canal's decoder does. So does a key column that
    # two image columns match ignoring case.
    for after in ({"name": "car battery"}, {"ID": 102, "Id": 103}):
        with pytest.raises(DecodeError) as info:
            _rows({"table": "S.T1", "op_type": "I", "op_ts": "2020-05-13 15:40:07.000000",
                   "pos": "144", "primary_keys": ["id"], "after": after})
        assert info.value.reason == errors.MISSING_KEY and "insert" in str(info.value)


def test_without_op_type_the_images_give_update_and_delete_only() -> None:
    # includeOpType=false: operation formatters write insert after-only, update before+after,
    # delete before-only; an after image alone cannot be told from an update without before image.
    base = {"table": "S.T", "op_ts": "2020-05-13 15:40:06.000000", "pos": "00000000000000001445",
            "primary_keys": ["ID"]}
    update = _rows(dict(base, before={"ID": 1, "V": "a"}, after={"ID": 1, "V": "b"}))[0]
    assert update["op"] == "UPDATE" and update["row_key"] == '["1"]'
    delete = _rows(dict(base, before={"ID": 1, "V": "b"}, after=None))[0]
    assert delete["op"] == "DELETE" and delete["before"] == {"ID": "1", "V": "b"}
    for ambiguous in (dict(base, before=None, after={"ID": 2}), dict(base, ID=2, V="c")):
        with pytest.raises(DecodeError) as info:
            _rows(ambiguous)
        assert info.value.reason == errors.MISSING_FIELD and "includeOpType" in info.value.detail


def test_detected_without_op_ts_or_op_type() -> None:
    from cdclake.formats.detect import detect
    from cdclake.formats.exact_json import loads_exact

    no_op_ts = {"table": "S.T", "op_type": "I", "current_ts": "2020-05-13T15:40:13.000000",
                "pos": "00000000000000001445", "after": {"ID": 1}}
    no_op_type = {"table": "S.T", "op_ts": "2020-05-13 15:40:06.000000", "pos": "1",
                  "before": {"ID": 1}, "after": {"ID": 1}}
    for doc in (no_op_ts, no_op_type):
        assert detect(loads_exact(json.dumps(doc))) is OggJsonDecoder
    [row] = _rows(no_op_ts)
    assert row["event_time"] is None and row["produced_time"] is not None


def test_custom_op_key_is_quarantined_naming_the_setting() -> None:
    with pytest.raises(DecodeError) as info:
        _rows({"table": "S.T", "op_type": "INS", "op_ts": "2020-05-13 15:40:06", "after": {"ID": 1}})
    assert info.value.reason == errors.INVALID_OP and "insertOpKey" in info.value.detail


def test_iso8601_format_false_current_ts_reads_the_same() -> None:
    base = {"table": "S.T", "op_type": "I", "op_ts": "2020-05-13 15:40:06.000000", "after": {"ID": 1}}
    iso = _rows(dict(base, current_ts="2020-05-13T15:40:13.123000"))[0]
    spaced = _rows(dict(base, current_ts="2020-05-13 15:40:13.123000"))[0]
    assert iso["produced_time"] == spaced["produced_time"] is not None


def test_image_under_another_spelling_is_quarantined_not_a_column() -> None:
    # A blog's hand-edited delete (tests/fixtures/ogg_json/blog_scott_scemp_verbatim) writes
    # "BEFORE": row-modeled reading would make it one column holding the whole row.
    doc = {"table": "SCOTT.SCEMP", "op_type": "D", "op_ts": "2019-09-16 10:17:08.006650",
           "pos": "00000000000000002199", "BEFORE": {"EMPNO": 1232, "ENAME": " FORD"}}
    with pytest.raises(DecodeError, match="image object 'BEFORE' is not 'before'/'after'") as info:
        _rows(doc)
    assert info.value.reason == errors.INVALID_FIELD
    # a row-modeled column that merely ends in the same letters stays a column
    row = _rows({"table": "S.T", "op_type": "I", "op_ts": "2019-09-16 10:17:08", "pos": "1",
                 "AFTER_DATE": "2019-09-16", "ID": 1})[0]
    assert row["after"] == {"AFTER_DATE": "2019-09-16", "ID": "1"}


# -- Kafka handler transaction mode (gg.handler.<name>.mode=tx) --------------------------------
# "the serialized data is concatenated for every operation in a transaction ... The key of the
# Kafka ProducerRecord object is null": one Kafka value, N JSON formatter documents back to back.
_TX_OPS = [
    {"table": "GG.TCUSTORD", "op_type": "I", "op_ts": "2015-11-05 18:45:36.000000",
     "current_ts": "2016-10-05T10:15:51.267000", "pos": "00000000000000002928",
     "primary_keys": ["ID"], "tokens": {"txid": "5.1.2.3"}, "after": {"ID": 144, "PRICE": 17520.00}},
    {"table": "GG.TCUSTMER", "op_type": "U", "op_ts": "2015-11-05 18:45:36.000000",
     "current_ts": "2016-10-05T10:15:51.310002", "pos": "00000000000000004300",
     "primary_keys": ["CUST_CODE"], "tokens": {"txid": "5.1.2.3"},
     "before": {"CUST_CODE": "BILL", "CITY": "DENVER"}, "after": {"CUST_CODE": "BILL", "CITY": "CARY"}},
    {"table": "GG.TCUSTORD", "op_type": "D", "op_ts": "2015-11-05 18:45:36.000000",
     "current_ts": "2016-10-05T10:15:51.312000", "pos": "00000000000000005272",
     "primary_keys": ["ID"], "tokens": {"txid": "5.1.2.3"}, "before": {"ID": 600, "PRICE": 135000.00}},
]


def _tx_message(texts: list[str], separator: str = "") -> RawMessage:
    return RawMessage(value=separator.join(texts).encode(), topic="ogg", partition=3, offset=41)


def test_transaction_mode_message_gives_one_row_per_operation_in_order() -> None:
    texts = [json.dumps(op, separators=(",", ":")) for op in _TX_OPS]
    for separator in ("", "\n", "\r\n  "):  # compact output, or pretty-printed / newline-separated
        rows = OggJsonDecoder().decode(_tx_message(texts, separator)).rows
        assert [r["record_index"] for r in rows] == [0, 1, 2]
        assert [(r["kafka_topic"], r["kafka_partition"], r["kafka_offset"]) for r in rows] == [
            ("ogg", 3, 41)] * 3
        assert [(r["op"], r["table_name"], r["row_key"]) for r in rows] == [
            ("INSERT", "TCUSTORD", '["144"]'), ("UPDATE", "TCUSTMER", '["BILL"]'),
            ("DELETE", "TCUSTORD", '["600"]')]
        assert [r["source_sequence"] for r in rows] == [
            "00000000000000002928", "00000000000000004300", "00000000000000005272"]
        assert rows[0]["after"] == {"ID": "144", "PRICE": "17520.0"}
        assert rows[1]["before"] == {"CUST_CODE": "BILL", "CITY": "DENVER"}
        assert rows[2]["before"] == {"ID": "600", "PRICE": "135000.0"}
        assert {r["transaction_id"] for r in rows} == {"5.1.2.3"}


def test_transaction_mode_keeps_exact_numbers() -> None:
    texts = ['{"table":"S.T","op_type":"I","op_ts":"2020-05-13 15:40:06","pos":"1","primary_keys":'
             '["ID"],"after":{"ID":12345678901234567890123,"AMOUNT":17520.00}}',
             '{"table":"S.T","op_type":"D","op_ts":"2020-05-13 15:40:06","pos":"2","primary_keys":'
             '["ID"],"before":{"ID":9007199254740993,"AMOUNT":0.10}}']
    rows = OggJsonDecoder().decode(_tx_message(texts)).rows
    assert rows[0]["after"] == {"ID": "12345678901234567890123", "AMOUNT": "17520.00"}
    assert rows[1]["before"] == {"ID": "9007199254740993", "AMOUNT": "0.10"} and rows[1]["record_index"] == 1


def test_transaction_mode_message_with_a_bad_operation_is_rejected_whole() -> None:
    bad = dict(_TX_OPS[1], after=None)  # an update without its after image
    texts = [json.dumps(op) for op in (_TX_OPS[0], bad, _TX_OPS[2])]
    with pytest.raises(DecodeError) as info:
        OggJsonDecoder().decode(_tx_message(texts))
    assert info.value.reason == errors.MISSING_FIELD
    assert info.value.detail == ("operation 1 of the 3 in this transaction-mode message: 'after' is "
                                 "missing for op_type 'U'")


def test_transaction_mode_operation_that_is_not_json_is_named() -> None:
    texts = [json.dumps(op) for op in _TX_OPS]
    broken = texts[:2] + [texts[2][:-1] + ",}"]  # Oracle's truncate sample ends so: not JSON
    with pytest.raises(DecodeError) as info:
        OggJsonDecoder().decode(_tx_message(broken))
    assert info.value.reason == errors.INVALID_JSON
    assert info.value.detail.startswith("operation 2 of this transaction-mode message (operations "
                                        "written back to back) is not a JSON object: Expecting")
    # anything but whitespace between the documents is no transaction-mode output
    with pytest.raises(DecodeError) as info:
        OggJsonDecoder().decode(_tx_message(texts, ","))
    assert info.value.reason == errors.INVALID_JSON and info.value.detail.startswith("operation 1 ")
    with pytest.raises(DecodeError) as info:
        OggJsonDecoder().decode(_tx_message([json.dumps(_TX_OPS[0]), "[1]"]))
    assert "operation 1 " in info.value.detail and "not a JSON object" in info.value.detail


def test_value_that_does_not_begin_with_a_document_keeps_the_plain_json_error() -> None:
    for value in (b'{"table": "S.T", "op_type": ', b"not json", b'[{"table":"S.T"}]{"a":1}'):
        with pytest.raises(DecodeError) as info:
            OggJsonDecoder().decode(RawMessage(value=value))
        assert info.value.reason == errors.INVALID_JSON
        assert info.value.detail.startswith("value is not JSON: ")


def test_auto_hands_a_transaction_mode_value_to_ogg_json_only() -> None:
    from cdclake.formats.detect import AutoDecoder

    op = {"table": "QASOURCE.T", "op_type": "I", "op_ts": "2015-11-05 18:45:36.000000",
          "current_ts": "2016-10-05T10:15:51.267000", "pos": "00000000000000002928",
          "after": {"ID": 1}}
    value = (json.dumps(op) + json.dumps(dict(op, op_type="D", before={"ID": 1}, after=None))).encode()
    rows = AutoDecoder().decode(RawMessage(value=value)).rows
    assert [(r["source_format"], r["op"], r["record_index"]) for r in rows] == [
        ("ogg_json", "INSERT", 0), ("ogg_json", "DELETE", 1)]
    # Formats that never write documents back to back keep the plain "not JSON" reason.
    canal = {"data": [{"id": "1"}], "database": "d", "table": "t", "type": "INSERT", "es": 1, "ts": 1,
             "isDdl": False, "pkNames": ["id"], "old": None, "sql": "", "id": 1}
    with pytest.raises(DecodeError) as caught:
        AutoDecoder().decode(RawMessage(value=(json.dumps(canal) * 2).encode()))
    assert (caught.value.reason, caught.value.format_id) == (errors.INVALID_JSON, "auto")


def test_current_ts_read_in_the_replicat_zone_when_set() -> None:
    from cdclake.formats.base import FormatOptions

    # goldengate.userexit.timestamp=utc: op_ts in UTC, current_ts on a Chicago host (UTC-6 in
    # November), written 2 seconds after the commit.
    doc = {"table": "S.T", "op_type": "I", "op_ts": "2023-11-20 15:40:06.000000",
           "current_ts": "2023-11-20T09:40:08.000000", "pos": "00000000000000001445",
           "after": {"ID": 1}}
    value = RawMessage(value=json.dumps(doc).encode())
    [row] = OggJsonDecoder(FormatOptions(produced_timezone="America/Chicago")).decode(value).rows
    assert row["produced_time"] - row["event_time"] == 2_000_000
    [row] = OggJsonDecoder().decode(value).rows  # one zone for both: produced 6 h before the commit
    assert row["produced_time"] - row["event_time"] == 2_000_000 - 6 * 3600 * 1_000_000


def test_auto_names_the_bad_operation_of_a_transaction_mode_value() -> None:
    from cdclake.formats.detect import AutoDecoder

    op = {"table": "QASOURCE.T", "op_type": "I", "op_ts": "2015-11-05 18:45:36.000000",
          "pos": "00000000000000002928", "after": {"ID": 1}}
    with pytest.raises(DecodeError) as caught:
        AutoDecoder().decode(RawMessage(value=(json.dumps(op) + json.dumps(op) + '{"table": ,}').encode()))
    assert (caught.value.reason, caught.value.format_id) == (errors.INVALID_JSON, "ogg_json")
    assert "operation 2 of this transaction-mode message" in caught.value.detail


def test_confluent_oracle_cdc_record_is_named_not_misread() -> None:
    # Confluent's documented record (SMT examples page), as the JSON converter writes it.
    doc = {"ID": 1, "FIRST_NAME": "Rica", "CREATE_TS": 1636048731469, "table": "ORCL.ADMIN.CUSTOMERS",
           "scn": "589654", "op_type": "R", "op_ts": None, "current_ts": "1636049137001",
           "row_id": None, "username": None}
    with pytest.raises(DecodeError) as caught:
        OggJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode()))
    assert caught.value.reason == errors.UNKNOWN_FORMAT
    assert "Confluent's Oracle CDC Source connector" in caught.value.detail
