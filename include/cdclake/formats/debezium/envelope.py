"""The ``debezium_json`` decoder: recognises a Debezium message (envelope, flattened row,
CloudEvent, schema change, transaction marker, heartbeat) and builds its rows with the row kinds
of the sibling modules."""

from __future__ import annotations

from typing import Any

from cdclake.formats import errors
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.debezium.cells import (
    _CASSANDRA_RANGE_FIELDS,
    _SCYLLA,
    _cell_spec,
    _has_cells,
    _scylla_key_columns,
)
from cdclake.formats.debezium.cloudevents import CloudEventEnvelope
from cdclake.formats.debezium.ddl import SchemaChangeRows, _is_history_record, _is_schema_change
from cdclake.formats.debezium.flattened import FlattenedRows, _has_no_envelope, _is_flattened
from cdclake.formats.debezium.mongodb import MongoRows, _is_mongo
from cdclake.formats.debezium.source import (
    MESSAGE_OP,
    OMS_HEARTBEAT_OP,
    OPS,
    _connector,
    _is_oms,
    _is_ticdc_checkpoint,
    _op_code,
    _row_op,
    _schema_connector,
    _shape_connector,
)
from cdclake.formats.kafka_connect import (
    SCHEMA_READ_ERRORS,
    is_cloudevent,
    schema_failure,
    unwrap,
    value_specs,
)


class DebeziumJsonDecoder(FlattenedRows, MongoRows, SchemaChangeRows, CloudEventEnvelope):
    format_id = "debezium_json"
    description = "Debezium envelope JSON (with or without schema), incl. CloudCanal's variant"
    detect_priority = 60

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        if is_cloudevent(doc):
            return True
        if doc == {"schema": None, "payload": None}:  # a tombstone as older consoles print it
            return True
        payload, schema = unwrap(doc)
        if not isinstance(payload, dict):
            return False
        if _is_flattened(payload):
            return True
        op = _op_code(payload)
        if op in OPS or op == MESSAGE_OP:
            return isinstance(payload.get("source"), dict) or "before" in payload or "after" in payload
        if op == OMS_HEARTBEAT_OP:
            return _is_oms(payload.get("source"))
        if _is_schema_change(payload) or _is_history_record(payload):
            return isinstance(payload.get("source"), dict)
        if payload.get("status") in ("BEGIN", "END") and "event_count" in payload:
            return True
        if _is_ticdc_checkpoint(payload):
            return True
        return bool(schema and str(schema.get("name", "")).endswith(".Heartbeat"))

    def decode(self, message: RawMessage) -> Decoded:
        # A null value is Kafka's tombstone (log compaction marker after a delete): a control
        # message, or on a flattened topic the delete of its key.
        if message.value is None or message.value.strip() == b"null":
            return self._tombstone(message)
        return super().decode(message)

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        try:
            return self._decode_envelope(doc, message)
        except SCHEMA_READ_ERRORS as exc:
            raise schema_failure(self, doc, message, exc) from None

    def _decode_envelope(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        payload, schema = self._cloudevent_envelope(doc) if is_cloudevent(doc) else unwrap(doc)
        if payload is None:
            return self._tombstone(message)
        if not isinstance(payload, dict):
            raise self.fail(errors.INVALID_FIELD, "'payload' must be an object")
        if _is_flattened(payload) or (self.options.flattened and _has_no_envelope(payload)):
            return Decoded(rows=[self._flattened_row(payload, schema, message)])
        op = _op_code(payload)
        if op is not None:
            if op == MESSAGE_OP:
                return Decoded(control="MESSAGE")
            if op == OMS_HEARTBEAT_OP and _is_oms(payload.get("source")):
                if payload.get("before") or payload.get("after"):
                    raise self.fail(errors.INVALID_FIELD, "an OMS 'op' HEARTBEAT carries row images: "
                                                          "a heartbeat is no change of any row")
                return Decoded(control="HEARTBEAT")
            if op not in OPS:
                raise self.fail(errors.INVALID_OP, f"'op' {payload['op']!r} is not a Debezium operation "
                                                   f"(c, u, d, r, t, m; CloudCanal i, a)")
            if OPS[op] == "DDL":
                return Decoded(rows=self._ddl_rows(payload, message))
            raw_source = payload.get("source")
            source: dict[str, Any] = raw_source if isinstance(raw_source, dict) else {}
            if op == "r" and _connector(source) == "cassandra":
                raise self.fail(errors.INVALID_OP, "Cassandra 'op' r is a range tombstone: it deletes a "
                                                   "range of clustering rows that no key names; not applied")
            row_op = _row_op(op, source.get("snapshot"), source.get("connector"))
            return Decoded(rows=[self._change_row(row_op, payload, schema, message)])
        if "ddl" in payload:
            return Decoded(rows=self._ddl_rows(payload, message))
        if _is_history_record(payload):
            return Decoded(rows=self._ddl_rows(self._history_change(payload), message))
        if payload.get("status") in ("BEGIN", "END"):
            return Decoded(control="TRANSACTION_BEGIN" if payload["status"] == "BEGIN" else "TRANSACTION_END")
        if set(payload) <= {"ts_ms", "ts_us", "ts_ns"} and payload:
            return Decoded(control="HEARTBEAT")
        if _is_ticdc_checkpoint(payload):
            return Decoded(control="HEARTBEAT")
        if "op" in payload:
            raise self.fail(errors.MISSING_FIELD, "'op' is null")
        inner = payload.get("payload")
        if isinstance(inner, dict) and "op" in inner:
            others = sorted(set(payload) - {"schema", "payload"})
            raise self.fail(errors.INVALID_FIELD,
                            f"'payload' holds the change, but the message has fields besides 'schema' "
                            f"and 'payload' ({others[:5]}), so it is no Kafka Connect envelope")
        raise self.fail(errors.MISSING_FIELD, "'op' is missing (and the message is no schema-change, "
                                              "transaction or heartbeat event)")

    def _change_row(self, op: str, payload: dict[str, Any], schema: dict[str, Any] | None,
                    message: RawMessage) -> dict[str, Any]:
        source = self._source(payload)
        if not source.get("connector") and (named := _schema_connector(schema) or _shape_connector(source)):
            # Debezium before 0.10 wrote no source.connector; its source schema, else the
            # source's own fields, name it.
            source = {**source, "connector": named}
        if _is_mongo(payload, source):
            return self._mongo_row(op, payload, source, message)
        if _connector(source) == _SCYLLA and not source.get("table"):
            source = {**source, "table": source.get("table_name")}  # and keyspace_name: _database
        if not source.get("table"):
            # A change whose source names no table cannot be applied anywhere (and would fail
            # the changelog gate for its whole hour): the topic's configured table, else quarantine.
            source = {**source, **self._configured_source()}
        specs = value_specs(schema)
        cells = _has_cells(payload, specs, _connector(source))
        if cells:
            specs = {column: _cell_spec(spec) or spec for column, spec in specs.items()
                     if column not in _CASSANDRA_RANGE_FIELDS}
        warnings: list[str] = []
        hex_bytes = _is_oms(source)
        before, _ = self._image(payload.get("before"), "before", specs, warnings, cells, hex_bytes)
        after, after_partial = self._image(payload.get("after"), "after", specs, warnings, cells,
                                           hex_bytes)
        if op == "DELETE" and before is None and after and _connector(source) == "cassandra":
            # Cassandra has no before image: a delete names the deleted row's key in 'after'.
            before, after = after, None
        if op in ("INSERT", "SNAPSHOT") and not before:
            before = None  # CloudCanal sends "before": {} on inserts
        if op == "DELETE" and not after:
            after = None
        if op in ("INSERT", "SNAPSHOT", "UPDATE") and after is None:
            raise self.fail(errors.MISSING_FIELD, f"'after' must be an object when op is {payload['op']!r}")
        if op in ("INSERT", "SNAPSHOT", "UPDATE") and not after and not after_partial:
            # A full row image without a single column would replace the row with nothing.
            raise self.fail(errors.MISSING_FIELD, f"'after' is empty (a row image with no columns) when "
                                                  f"op is {payload['op']!r}")
        bare_keys = _scylla_key_columns(payload) if cells and _connector(source) == _SCYLLA else None
        row = self._keyed_row(message, op, before, after, after is not None and not after_partial,
                              specs, payload, source, warnings, bare_keys=bare_keys)
        if op == "UPDATE" and not before and row["row_key"] is None:
            # PostgreSQL's default replica identity sends no old row: on a keyless table the row
            # to replace cannot be found (Flink fails the same way). An empty {} is no better.
            raise self.fail(errors.MISSING_FIELD, "'before' is null or empty on an update and no key "
                                                  "identifies the row (PostgreSQL: REPLICA IDENTITY FULL, or "
                                                  "configure the table's key columns)")
        return row
