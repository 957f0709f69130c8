"""maxwell_json beyond the fixtures: detection against look-alikes, ts units, Kafka keys."""

from __future__ import annotations

import json

import pytest

from cdclake.formats.canonical import RawMessage
from cdclake.formats.detect import detect
from cdclake.formats.errors import DecodeError
from cdclake.formats.exact_json import loads_exact
from cdclake.formats.maxwell_json import MaxwellJsonDecoder, _kafka_key_pairs, camel_case_name

INSERT = {"database": "d", "table": "t", "type": "insert", "ts": 1477053217, "xid": 1, "data": {"id": 1}}


def test_detected_but_not_for_canal_shapes() -> None:
    assert detect(loads_exact(json.dumps(INSERT))) is MaxwellJsonDecoder
    canal = {"database": "d", "table": "t", "type": "INSERT", "ts": 1, "data": [{"id": "1"}],
             "mysqlType": {"id": "int"}, "isDdl": False}
    assert detect(loads_exact(json.dumps(canal))) is not MaxwellJsonDecoder

    # Maxwell always sends ts, but a row change without it (sqlite-diff-rs's parse doctest) is
    # still Maxwell's shape, and decodes with no event time.
    bare = {"database": "test", "table": "users", "type": "insert", "data": {"id": 1}}
    assert detect(loads_exact(json.dumps(bare))) is MaxwellJsonDecoder
    [row] = MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(bare).encode())).rows
    assert (row["op"], row["table_name"], row["after"], row["event_time"]) == (
        "INSERT", "users", {"id": "1"}, None)
    assert detect(loads_exact(json.dumps(dict(bare, data=[{"id": 1}])))) is not MaxwellJsonDecoder
    assert detect(loads_exact(json.dumps({"database": "test", "type": "table-drop"}))) is None


def test_ddl_ts_in_milliseconds_and_row_ts_in_seconds_give_the_same_instant() -> None:
    decoder = MaxwellJsonDecoder()
    row = decoder.decode(RawMessage(value=json.dumps(INSERT).encode())).rows[0]
    ddl = dict(INSERT, type="table-drop", ts=1477053217000, sql="drop table t")
    ddl.pop("data")
    ddl_row = decoder.decode(RawMessage(value=json.dumps(ddl).encode())).rows[0]
    assert row["event_time"] == ddl_row["event_time"] == 1477053217 * 1_000_000
    assert ddl_row["op"] == "DDL" and ddl_row["ddl"] == "drop table t"


def test_bootstrap_markers_are_control_messages() -> None:
    doc = dict(INSERT, type="bootstrap-complete", data={})
    decoded = MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode()))
    assert decoded.control == "BOOTSTRAP_COMPLETE"


def test_kafka_key_forms() -> None:
    hash_key = b'{"database":"d","table":"t","pk.id":7}'
    assert _kafka_key_pairs(RawMessage(value=b"", key=hash_key)) == [("id", "7")]
    assert _kafka_key_pairs(RawMessage(value=b"", key=b'["d","t",[{"id":7}]]')) == [("id", "7")]
    assert _kafka_key_pairs(RawMessage(value=b"", key=b"\xff")) == []


def test_binlog_position_is_kept_but_does_not_order() -> None:
    # A bootstrap row has no position; ordering both by ts and Kafka coordinates keeps them comparable.
    binlog = dict(INSERT, position="master.000006:800911")
    [row] = MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(binlog).encode())).rows
    assert row["source_position"] == "master.000006:800911"
    assert row["source_sequence"] is None


def _rows(*docs: dict) -> list[dict]:
    decoder = MaxwellJsonDecoder()
    return [row for doc in docs
            for row in decoder.decode(RawMessage(value=json.dumps(doc).encode())).rows]


def test_minimal_row_image_update_is_partial_and_keeps_the_other_columns() -> None:
    # zendesk/maxwell src/test/resources/sql/json/test_minimal (binlog_row_image=minimal):
    # "update test_table set a='avalue3' where id = 2" -> data {"id": 2, "a": "avalue3"}, no "b".
    from spark_jobs.compaction.events import events_of_change
    from spark_jobs.compaction.fold import fold_key

    head = {"database": "test", "table": "test_table", "ts": 1700000000, "primary_key_columns": ["id"]}
    insert, update = _rows(
        dict(head, type="insert", data={"id": 2, "a": "avalue2", "b": "bvalue2"}),
        dict(head, type="update", data={"id": 2, "a": "avalue3"}))
    assert insert["after_is_full"] is True
    assert update["after"] == {"id": "2", "a": "avalue3"} and update["after_is_full"] is False

    events = []
    for offset, row in enumerate((insert, update)):
        change = dict(row, kafka_offset=offset, pk_json=json.dumps(row["primary_key_columns"]),
                      before_json=json.dumps(row["before"]), after_json=json.dumps(row["after"]),
                      event_us=1, source_schema=None)
        events += [dict(e, record_index=0) for e in events_of_change(change)]
    state = fold_key(events, "ABSENT")
    assert json.loads(state["vals"]) == {"id": "2", "a": "avalue3", "b": "bvalue2"}


def test_column_in_old_but_left_out_of_data_became_null() -> None:
    # --output_nulls=false leaves NULL columns out of "data" (and, since RowMap writes "old" with
    # includesNulls too, out of "old"); a column changed to NULL keeps its old value in "old".
    [row] = _rows({"database": "d", "table": "t", "type": "update", "ts": 1700000000,
                   "data": {"id": 1, "a": "x"}, "old": {"b": "was"}})
    assert row["after"] == {"id": "1", "a": "x", "b": None}
    assert row["before"] == {"id": "1", "a": "x", "b": "was"}
    assert row["after_is_full"] is False


def test_keyed_change_with_no_key_value_is_quarantined_not_left_to_fail_compaction() -> None:
    # The configured key column is in neither image: compaction could not place the change (and
    # would fail the whole table), so decoding quarantines it, naming the columns.
    from cdclake.formats import errors, get_decoder
    from cdclake.formats.base import FormatOptions
    from cdclake.formats.decoding import decode_one

    decoder = get_decoder("maxwell_json", FormatOptions(primary_key_overrides={"d.t": ("id",)}))
    doc = {"database": "d", "table": "t", "type": "insert", "ts": 1700000000, "data": {"v": 1}}
    outcome = decode_one(decoder, RawMessage(value=json.dumps(doc).encode()))
    assert outcome.rejected is not None and outcome.rejected.reason == errors.MISSING_KEY
    assert "['id']" in outcome.rejected.detail
    doc["data"] = {"id": 7, "v": 1}
    [row] = decode_one(decoder, RawMessage(value=json.dumps(doc).encode())).rows
    assert row["row_key"] == '["7"]'


def test_ticdc_ddl_ts_is_the_commit_tso() -> None:
    # TiCDC's ddlEventToMaxwellMsg writes Ts: e.CommitTs (a TSO) on DDL messages.
    ddl = {"type": "table-create", "database": "test", "table": "t", "ts": 429918007904436226,
           "sql": "create table t (id int)", "def": {"database": "test", "table": "t",
                                                     "columns": [{"type": "int", "name": "id"}]}}
    [row] = MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(ddl).encode())).rows
    assert row["event_time"] == (429918007904436226 >> 18) * 1000  # 2021-12-20T13:30:49.196Z


def test_ticdc_batch_of_documents_back_to_back_gives_one_row_each() -> None:
    # TiCDC's Maxwell BatchEncoder appends each row's JSON to one value with no separator.
    docs = [dict(INSERT, data={"id": n}) for n in (1, 2, 3)]
    value = "".join(json.dumps(d) for d in docs).encode()
    rows = MaxwellJsonDecoder().decode(RawMessage(value=value)).rows
    assert [(r["record_index"], r["after"]) for r in rows] == [(i, {"id": str(i + 1)}) for i in range(3)]
    with pytest.raises(DecodeError):
        MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(INSERT).encode() + b"[1]"))


def test_camel_case_name_follows_maxwells_field_name_strategy() -> None:
    # zendesk/maxwell RowMapTest.testNamingStrategy: data keys before and after the rewrite.
    cases = {"first_name": "firstName", "_age_": "age", "_parent_id": "parentId",
             "__grand_parent_id": "grandParentId", "_invalid_!chars": "invalid!chars",
             "_____": "_____", "__123": "123", "favorite_interests": "favoriteInterests",
             "odd_\u04abot_lowercase": "odd\u04aaotLowercase", "id": "id"}
    assert {name: camel_case_name(name) for name in cases} == cases


def test_kafka_key_names_are_lower_cased_by_maxwell_and_matched_to_the_image() -> None:
    # RowIdentity.toKeyJson writes "pk." + name.toLowerCase(): an update of column "ID" keys on it.
    doc = {"database": "d", "table": "t", "type": "update", "ts": 1700000000,
           "data": {"ID": 5, "Name": "b"}, "old": {"Name": "a"}}
    for key in (b'{"database":"d","table":"t","pk.id":5}', b'["d","t",[{"id":5}]]'):
        [row] = MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode(), key=key)).rows
        assert row["primary_key_columns"] == ["ID"] and row["row_key"] == '["5"]'


def test_camel_cased_message_keys_on_the_camel_cased_column() -> None:
    doc = {"database": "d", "table": "user_accounts", "type": "delete", "ts": 1700000000,
           "primaryKeyColumns": ["user_id"], "data": {"userId": 5, "displayName": "b"}}
    [row] = _rows(doc)
    assert row["primary_key_columns"] == ["userId"] and row["row_key"] == '["5"]'


def test_encrypted_messages_are_quarantined_with_that_reason() -> None:
    encrypted = {"iv": "AAAA", "bytes": "BBBB"}
    for doc in (dict(INSERT, data=None, encrypted=encrypted), {"encrypted": encrypted}):
        doc = {k: v for k, v in doc.items() if v is not None}
        with pytest.raises(DecodeError, match="encrypt"):
            MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode()))


def test_encrypt_data_message_is_detected_as_maxwell() -> None:
    # Maxwell's docs/docs/encryption.md, `encrypt=data`: auto must attribute it to maxwell_json so
    # the quarantine says "encrypted", not "no format matches".
    doc = {"database": "shard_1", "table": "minimal", "type": "insert", "ts": 1504585129, "xid": 161,
           "commit": True, "encrypted": {"iv": "lqiXoTdz6jed3XgJPpa7EQ==", "bytes": "1soc"}}
    assert detect(loads_exact(json.dumps(doc))) is MaxwellJsonDecoder
    with pytest.raises(DecodeError, match=r"'data' is encrypted \(Maxwell --encrypt=data\)"):
        MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode()))


def test_dead_letter_skeleton_row_is_quarantined_as_such() -> None:
    # RowIdentity.toFallbackValueWithReason: {"database","table","reason","data": {pk}}.
    doc = {"database": "d", "table": "t", "reason": "RecordTooLargeException", "data": {"id": 1}}
    with pytest.raises(DecodeError, match="dead_letter_topic"):
        MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode()))


def test_upper_case_types_of_seatunnels_writer_are_detected_and_decoded() -> None:
    # apache/seatunnel issue #9773: MaxWellJsonSerializationSchema writes "INSERT"/"DELETE".
    doc = {"data": {"id": 7, "c1": "test"}, "type": "INSERT", "database": "wubx", "table": "t01",
           "ts": 1756197561415}
    assert detect(loads_exact(json.dumps(doc))) is MaxwellJsonDecoder
    row = MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(doc).encode())).rows[0]
    assert (row["op"], row["after"], row["after_is_full"]) == ("INSERT", {"id": "7", "c1": "test"}, True)
    assert row["event_time"] == 1756197561415000  # ts in milliseconds here (micros)
    deleted = MaxwellJsonDecoder().decode(
        RawMessage(value=json.dumps(dict(doc, type="DELETE")).encode())).rows[0]
    assert (deleted["op"], deleted["before"], deleted["after"]) == ("DELETE", {"id": "7", "c1": "test"}, None)


def test_row_with_empty_data_is_quarantined_not_written_as_an_empty_row() -> None:
    # zendesk/maxwell #1354: bootstrap of a table with an upper-case name printed no columns.
    doc = {"database": "polarisglobal", "table": "kitchendatasetpackages", "type": "bootstrap-insert",
           "ts": 1570630877, "primary_key": [], "data": {}}
    for kind in ("bootstrap-insert", "insert", "update", "delete"):
        with pytest.raises(DecodeError) as caught:
            MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(dict(doc, type=kind)).encode()))
        assert caught.value.reason == "MISSING_FIELD" and "'data' is empty" in str(caught.value)
    # control messages keep their empty data
    start = dict(doc, type="bootstrap-start")
    decoded = MaxwellJsonDecoder().decode(RawMessage(value=json.dumps(start).encode()))
    assert decoded.control == "BOOTSTRAP_START"
