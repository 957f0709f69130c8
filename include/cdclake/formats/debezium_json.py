"""Debezium JSON envelope (Kafka Connect JsonConverter), with or without the embedded schema.

Decodes Debezium change events (enveloped, flattened by ``ExtractNewRecordState`` or wrapped as
CloudEvents) into change, DDL and control rows, values by their Connect/Debezium logical type when a
schema is present. Key-column precedence, the connector variants (MongoDB, Vitess, Spanner,
YugabyteDB, Cassandra, ScyllaDB, OceanBase OMS, CloudCanal) and the CloudEvents rules are in the
vendor notes.

Vendor notes: docs/formats/debezium_json.md
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any
from uuid import UUID

from cdclake.formats import errors
from cdclake.formats._mongo_shell import (
    DocumentFieldError,
    MongoShellSyntaxError,
    field_text,
    parse_document,
    parse_document_field,
)
from cdclake.formats.base import (
    Decoder,
    FormatOptions,
    JsonDecoder,
    key_of,
    kind_of,
    row_key_text,
    source_table_parts,
)
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.errors import FieldError
from cdclake.formats.values import (
    JAVA_SQL_TYPES,
    ConversionWarning,
    JsonNumber,
    base64_from_hex,
    base64_normalised,
    base64_of_bytes,
    boolean_text,
    bounded_integer,
    date_text,
    decimal_column_text,
    decimal_text,
    dumps_compact,
    integer_digits,
    integer_text,
    iso_seconds_text,
    iso_utc_from_zoned_text,
    json_value_text,
    loads_exact,
    logical_type_from_sql_name,
    micros_from_epoch,
    text_of,
    wall_clock_text,
)

OPS = {"c": "INSERT", "i": "INSERT", "u": "UPDATE", "d": "DELETE", "r": "SNAPSHOT",
       "t": "TRUNCATE", "a": "DDL"}
MESSAGE_OP = "m"
# OceanBase OMS's heartbeat op (see _is_oms).
OMS_HEARTBEAT_OP = "heartbeat"
# Postgres TOAST / Oracle LOB columns whose value Debezium did not capture: the connector's
# ``unavailable.value.placeholder`` (a topic's ``unavailable_value_placeholder`` when set).
UNAVAILABLE = "__debezium_unavailable_value"
UNAVAILABLE_B64 = base64.b64encode(UNAVAILABLE.encode()).decode()


@dataclass(frozen=True)
class Placeholder:
    """Every rendering of one unavailable-value placeholder. The PostgreSQL connector renders it
    in the column's type (UnchangedToastedPlaceholder): text as itself, bytea as its bytes
    (base64, or hex under binary.handling.mode=hex), text and binary arrays as a one-element
    list, uuid[] as the name-based UUID of its bytes (UUID.nameUUIDFromBytes), integer[] and
    bigint[] as the list of its bytes, an hstore as the map {placeholder: placeholder} (its JSON
    text in hstore.handling.mode=json)."""

    texts: frozenset[str]     # a whole column value
    elements: frozenset[str]  # the one element of an array value
    byte_list: tuple[str, ...]
    mapping: dict[str, str]

    @staticmethod
    @lru_cache(maxsize=16)
    def of(setting: str | None) -> Placeholder:
        """Debezium's setting: text, or ``hex:`` and the placeholder's bytes in hex."""
        if setting is None:
            setting = UNAVAILABLE
        if setting.startswith("hex:"):
            try:
                raw = bytes.fromhex(setting[4:])
            except ValueError:
                raise ValueError(f"unavailable_value_placeholder {setting!r}: 'hex:' must be "
                                 "followed by hexadecimal bytes") from None
        else:
            raw = setting.encode()
        if not raw:
            raise ValueError("unavailable_value_placeholder must not be empty")
        text = raw.decode("utf-8", errors="replace")
        forms = {text, base64.b64encode(raw).decode(), raw.hex(), raw.hex().upper()}
        uuid = str(UUID(bytes=hashlib.md5(raw).digest(), version=3))
        mapping = {text: text}
        return Placeholder(
            texts=frozenset(forms | {dumps_compact(mapping)}), elements=frozenset(forms | {uuid}),
            byte_list=tuple(str(b) for b in raw), mapping=mapping)

    def matches(self, value: Any) -> bool:
        """Whether a column value is this placeholder, in any of the renderings above."""
        if isinstance(value, JsonNumber):
            return False
        if isinstance(value, str):
            return value in self.texts
        if isinstance(value, list):
            if len(value) == 1:
                element = value[0]
                return (isinstance(element, str) and not isinstance(element, JsonNumber)
                        and element in self.elements)
            return (len(value) == len(self.byte_list)
                    and all(isinstance(v, JsonNumber) for v in value)
                    and tuple(str(v) for v in value) == self.byte_list)
        if isinstance(value, dict):
            return value == self.mapping
        return False


_PLACEHOLDER_KINDS = frozenset({str, list, dict})  # a placeholder's JSON kinds (numbers never are)

_CONNECT = "org.apache.kafka.connect.data."
_DBZ_TIME = "io.debezium.time."
# Logical-type name -> (kind, unit) for the numeric time encodings.
_TIME_OF_DAY = {_CONNECT + "Time": "ms", _DBZ_TIME + "Time": "ms", _DBZ_TIME + "MicroTime": "us",
                _DBZ_TIME + "NanoTime": "ns"}
_WALL_CLOCK = {_CONNECT + "Timestamp": "ms", _DBZ_TIME + "Timestamp": "ms",
               _DBZ_TIME + "MicroTimestamp": "us", _DBZ_TIME + "NanoTimestamp": "ns"}
_PER_SECOND = {"ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_STRING_TYPES = {"io.debezium.data.Enum", "io.debezium.data.EnumSet", "io.debezium.data.Uuid",
                 "io.debezium.data.Xml", "io.debezium.data.Ltree", _DBZ_TIME + "Interval"}
_PRIMITIVE_TYPES = {"int8": "LONG", "int16": "LONG", "int32": "LONG", "int64": "LONG",
                    "float": "DOUBLE", "float32": "DOUBLE", "float64": "DOUBLE", "double": "DOUBLE",
                    "boolean": "BOOLEAN", "string": "STRING", "bytes": "BINARY", "struct": "JSON",
                    "map": "JSON", "array": "JSON"}
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
# Envelope schema name of the source struct, and package names that differ from source.connector.
_SOURCE_SCHEMA = re.compile(r"io\.debezium\.connector\.([a-z0-9]+)\.Source")
_SCHEMA_CONNECTORS = {"mongo": "mongodb"}
# ExtractNewRecordState ``add.fields``: envelope or source fields, written ``__<name>`` (source
# fields also ``__source_<name>``). They are metadata, not columns of the row.
_FLAT_PREFIX = "__"
_FLAT_OPS = ("c", "u", "d", "r")
_FLAT_ENVELOPE = {"op", "ts_ms", "ts_us", "ts_ns", "deleted"}
# Time fields, finest first; ts_usec and ts_sec are Debezium 0.x source fields.
# Cassandra connector 1.x names its source time ts_micro.
_TIME_FIELDS = (("ts_ns", "ns"), ("ts_us", "us"), ("ts_usec", "us"), ("ts_micro", "us"), ("ts_ms", "ms"),
                ("ts_sec", "s"))
# source.snapshot values of a snapshot read (see _row_op).
_SNAPSHOT_FLAGS = frozenset({"true", "first", "first_in_data_collection", "last",
                             "last_in_data_collection"})
# Largest epoch microseconds of year 9999: a ts_usec beyond it is nanoseconds (DBZ-1174).
_MAX_EPOCH_MICROS = 253_402_300_799_999_999
# Column cells: YugabyteDB {value, set}, Cassandra {value, deletion_ts, set} (see _cell_value).
_CELL_FIELDS = (frozenset({"value", "set"}), frozenset({"value", "deletion_ts", "set"}))
_CELL_CONNECTORS = frozenset({"yugabytedb", "cassandra"})
# ScyllaDB's CDC source connector (legacy output, its default): every non-key column is a cell
# {value} whose schema is named "<prefix>.<keyspace>.<table>.<column>.Cell"; key columns are bare.
_SCYLLA = "scylla"
_SCYLLA_CELL = frozenset({"value"})
# Cassandra's after struct also has these range-tombstone bounds: not columns.
_CASSANDRA_RANGE_FIELDS = frozenset({".range_start", ".range_end"})
_FLAT_SOURCE = {"version", "connector", "name", "snapshot", "db", "schema", "table", "collection",
                "sequence", "server_id", "gtid", "file", "pos", "row", "thread", "query", "txId",
                "lsn", "xmin", "scn", "commit_scn", "change_lsn", "commit_lsn", "event_serial_no",
                "keyspace", "shard", "vgtid"}

# CloudEvents (see _cloudevent_envelope): attribute prefix, the transaction block's attributes, and
# the source fields whose attribute names lost a non-alphanumeric character (CloudEventsConverter
# .adjustExtensionName keeps [A-Za-z0-9] only); any other attribute is the field of its own name.
_CE_PREFIX = "iodebezium"
_CE_OP = _CE_PREFIX + "op"
_CE_TRANSACTION = {"iodebeziumtxid": "id", "iodebeziumtxtotalorder": "total_order",
                   "iodebeziumtxdatacollectionorder": "data_collection_order"}
_CE_SOURCE_FIELDS = {name.replace("_", ""): name for name in (
    "ts_ms", "ts_us", "ts_ns", "server_id", "change_lsn", "commit_lsn", "begin_lsn", "commit_scn",
    "event_serial_no", "commit_ts", "server_transaction_id", "rs_id", "redo_thread", "user_name",
    "row_id")}
# Data fields that hold a change's row images (relational and MongoDB connectors).
_CE_IMAGE_FIELDS = ("before", "after", "patch", "updateDescription")


# Branch names of Avro's JSON encoding of a union ({"long": 1}): a record printed that way is no
# Debezium JSON (kafka-avro-console-consumer output pasted as a message).
_AVRO_BRANCHES = frozenset({"long", "int", "string", "boolean", "double", "float", "bytes"})


def unwrap(doc: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """(payload, schema): the envelope's parts, or the document itself when it has no envelope."""
    if "payload" in doc and set(doc) <= {"schema", "payload"}:
        schema = doc.get("schema")
        return doc["payload"], schema if isinstance(schema, dict) else None
    return doc, None


def _op_code(payload: dict[str, Any]) -> str | None:
    op = payload.get("op")
    return op.lower() if isinstance(op, str) else None


class DebeziumJsonDecoder(JsonDecoder):
    format_id = "debezium_json"
    description = "Debezium envelope JSON (with or without schema), incl. CloudCanal's variant"
    detect_priority = 60

    def __init__(self, options: FormatOptions | None = None) -> None:
        super().__init__(options)
        # Built once (a bad setting fails here, not on every message).
        self._placeholder = Placeholder.of(self.options.unavailable_value_placeholder)

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        if _is_cloudevent(doc):
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
        payload, schema = self._cloudevent_envelope(doc) if _is_cloudevent(doc) else unwrap(doc)
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

    def _cloudevent_envelope(self, doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(payload, schema) of the Debezium envelope a CloudEvent was made from.

        CloudEventsConverter.convertToCloudEventsFormat: ``iodebeziumop`` is ``op``, each source
        field an ``iodebezium*`` attribute, each transaction field an ``iodebeziumtx*`` one (set
        only when the event has a transaction block), ``data`` the data fields. The envelope's own
        ``ts_ms`` (processing time) is not carried, so ``produced_time`` stays empty."""
        if doc.get(_CE_OP) is None:
            raise self.fail(errors.MISSING_FIELD, "CloudEvent has no 'iodebeziumop': the converter ran with "
                                                  "extension.attributes.enable=false, so neither the "
                                                  "operation nor the source table is in the event")
        data = doc.get("data")
        if not isinstance(data, dict):
            content_type = doc.get("datacontenttype")
            if content_type == "application/avro" or isinstance(data, str):
                raise self.fail(errors.INVALID_FIELD,
                                f"CloudEvent 'data' is Avro (datacontenttype {content_type!r}, schema "
                                f"{doc.get('dataschema')!r}): written with data.serializer.type=avro; "
                                "only JSON data (data.serializer.type=json) is decoded")
            raise self.fail(errors.INVALID_FIELD, "CloudEvent 'data' must be an object")
        payload, schema = unwrap(data)
        if not isinstance(payload, dict) or not any(name in payload for name in _CE_IMAGE_FIELDS):
            raise self.fail(errors.MISSING_FIELD,
                            "CloudEvent 'data' holds no row images (before/after): not a table change "
                            "(metadata.source=header after an SMT such as the outbox event router?)")
        source: dict[str, Any] = {}
        transaction: dict[str, Any] = {}
        for name, value in doc.items():
            if name in _CE_TRANSACTION:
                if value is not None:
                    transaction[_CE_TRANSACTION[name]] = value
            elif name.startswith(_CE_PREFIX) and name != _CE_OP:
                field = name[len(_CE_PREFIX):]
                source[_CE_SOURCE_FIELDS.get(field, field)] = value
        envelope = {**payload, "op": doc[_CE_OP], "source": source}
        if transaction:
            envelope["transaction"] = transaction
        fields = (schema.get("fields") or []) if schema else []
        if schema and not any(isinstance(f, dict) and f.get("field") == "op" for f in fields):
            # The data schema (io.debezium.connector.<connector>.Data) describes the data fields
            # only; the envelope's describes op too, which value_specs reads as "Debezium's".
            schema = {**schema, "fields": [*fields, {"type": "string", "optional": False, "field": "op"}]}
        return envelope, schema

    # -- metadata --------------------------------------------------------------------------
    def _source(self, payload: dict[str, Any]) -> dict[str, Any]:
        source = payload.get("source")
        if source is None:
            return {}
        if not isinstance(source, dict):
            raise self.fail(errors.INVALID_FIELD, "'source' must be an object")
        return source

    def _metadata(self, payload: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
        return {
            "db_type": _text(source.get("connector")),
            "event_time": self._time(source, "source.", _connector(source) == "cassandra"),
            "produced_time": self._time(payload, ""),
            "source_position": _position(source),
            "source_sequence": _ticdc_sequence(source),
            "transaction_id": _transaction_id(payload, source),
        }

    def _time(self, doc: dict[str, Any], prefix: str, cassandra: bool = False) -> int | None:
        """Epoch micros from the finest of ts_ns / ts_us / ts_ms (Debezium 0.x sources: ts_usec
        on PostgreSQL, ts_sec on MySQL); 0 (snapshot, unknown) -> None.

        Debezium's PostgreSQL connector with the wal2json plugin (before 0.9.3, DBZ-1174) wrote
        the commit time into ``ts_usec`` in nanoseconds: a ts_usec beyond year 9999 read as
        microseconds is read as nanoseconds.

        The Cassandra connector's manual documents its source time as "the maximum timestamp of
        the partition update in microseconds" under ``ts_ms`` (its schema: timestamp-micros), with
        ``ts_us``/``ts_ns`` 1000 and 10^6 times that: on a Cassandra source a time beyond year
        9999 in its unit is passed over, and a ``ts_ms`` beyond it is read as microseconds."""
        for name, unit in _TIME_FIELDS:
            value = doc.get(name)
            if value is None:
                continue
            try:
                micros = micros_from_epoch(value, unit)
                if name == "ts_usec" and micros > _MAX_EPOCH_MICROS:
                    micros = micros_from_epoch(value, "ns")
                if cassandra and micros > _MAX_EPOCH_MICROS:
                    if name != "ts_ms":
                        continue
                    micros = micros_from_epoch(value, "us")
                if name == "ts_ns" and micros % 1000 == 0 and doc.get("ts_us") is not None:
                    # ScyllaDB's source ts_ns is its ts_ms padded with zeros: a ts_us of the
                    # same millisecond is the finer time.
                    finer = micros_from_epoch(doc["ts_us"], "us")
                    if finer // 1000 == micros // 1000:
                        micros = finer
            except ConversionWarning:
                hint = (" (this is Avro's JSON encoding of the record, with union branches such "
                        "as {\"long\": ...}, not Debezium JSON)"
                        if isinstance(value, dict) and len(value) == 1 and set(value) <= _AVRO_BRANCHES
                        else "")
                raise self.fail(errors.INVALID_FIELD,
                                f"'{prefix}{name}' must be epoch {unit}, got {value!r}{hint}") from None
            return micros or None
        return None

    # -- change rows -----------------------------------------------------------------------
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

    def _tombstone(self, message: RawMessage) -> Decoded:
        if not self.options.flattened or not message.key:
            return Decoded(control="TOMBSTONE")
        warnings: list[str] = []
        source = self._configured_source()
        keys, key_values = self._keys(message, {}, source.get("db"), source.get("table"), [])
        if not keys or not all(k in key_values for k in keys):
            raise self.fail(errors.MISSING_KEY, "a tombstone on a flattened topic is a delete and "
                                                "needs the key columns' values in its Kafka key")
        row = self._keyed_row(message, "DELETE", None, None, False, {}, {}, source, warnings)
        return Decoded(rows=[_kafka_time_if_none(row, message)])

    def _configured_source(self) -> dict[str, Any]:
        """``source_table`` as source fields: database.table or database.schema.table."""
        if not self.options.source_table:
            raise self.fail(errors.MISSING_FIELD, "the message names no table ('source.table') and the "
                                                  "topic sets no 'source_table' "
                                                  "(`--source-table` in cdclake decode)")
        try:
            database, schema, table = source_table_parts(self.options.source_table)
        except ValueError as exc:
            raise self.fail(errors.INVALID_FIELD, str(exc)) from None
        return {"db": database, "table": table} if schema is None else {
            "db": database, "schema": schema, "table": table}

    def _flattened_row(self, payload: dict[str, Any], schema: dict[str, Any] | None,
                       message: RawMessage) -> dict[str, Any]:
        """One ``ExtractNewRecordState`` row: its columns, with the ``__`` fields as metadata."""
        meta = {name[len(_FLAT_PREFIX):]: value for name, value in payload.items() if _is_flat_meta(name)}
        columns = {name: value for name, value in payload.items() if not _is_flat_meta(name)}
        warnings: list[str] = []
        op = self._flattened_op(meta, warnings)
        specs = {name: spec for name, spec in value_specs(schema).items() if not _is_flat_meta(name)}
        image, partial = self._image(columns, "row", specs, warnings)
        before, after = (image, None) if op == "DELETE" else (None, image)
        envelope: dict[str, Any] = {name: meta[name] for name in ("ts_ms", "ts_us", "ts_ns") if name in meta}
        source = {name: value for name, value in meta.items() if name in _FLAT_SOURCE}
        source.update({name[len("source_"):]: value for name, value in meta.items()
                       if name.startswith("source_")})
        if self.options.source_table:
            named = source.get("table") or source.get("collection")
            configured = self._configured_source()
            if not named:
                source.update(configured)
            elif named == configured["table"]:
                # add.fields=table without db: the configured source table names its database
                source.update({k: v for k, v in configured.items() if not source.get(k)})
        row = self._keyed_row(message, op, before, after, after is not None and not partial,
                              specs, envelope, source, warnings, key_into_image=True)
        return _kafka_time_if_none(row, message)

    def _flattened_op(self, meta: dict[str, Any], warnings: list[str]) -> str:
        code = meta.get("op")
        if code is not None and (not isinstance(code, str) or code.lower() not in _FLAT_OPS):
            raise self.fail(errors.INVALID_OP, f"'__op' {code!r} is not a Debezium row operation "
                                               f"(c, u, d, r)")
        if _deleted_flag(meta.get("deleted")) or (code and code.lower() == "d"):
            return "DELETE"
        if code:
            return _row_op(code.lower(), meta.get("snapshot", meta.get("source_snapshot")),
                           meta.get("connector", meta.get("source_connector")))
        warnings.append("no '__op' field: insert or update is unknown; applied as an update (upsert) "
                        "of the whole row")
        return "UPDATE"

    def _keyed_row(self, message: RawMessage, op: str, before: dict[str, str | None] | None,
                   after: dict[str, str | None] | None, after_is_full: bool,
                   specs: dict[str, dict[str, Any]], envelope: dict[str, Any],
                   source: dict[str, Any], warnings: list[str],
                   key_into_image: bool = False, bare_keys: list[str] | None = None) -> dict[str, Any]:
        """The change row of one decoded change: keys from the message, times from the envelope.
        ``key_into_image`` (flattened rows): key columns the row leaves out and the Kafka key
        carries are put into it (upsert topics whose values exclude the key: Flink upsert-kafka's
        ``EXCEPT_KEY``, Materialize's ``ENVELOPE UPSERT`` sources), so they are table columns.
        ``bare_keys``: the key columns the images show when nothing else names them (ScyllaDB)."""
        database, schema_name = _database(source), _text(source.get("schema"))
        table = _text(source.get("table") or source.get("collection"))
        types = {column: logical for column, spec in specs.items() if (logical := connect_logical_type(spec))}
        keys, key_values = self._keys(message, envelope, database, table, warnings,
                                      _connector(source), bare_keys)
        image = before if op == "DELETE" else after
        if key_into_image and image is not None:
            image.update({k: key_values[k] for k in keys if k not in image and k in key_values})
        row_key = None if op == "TRUNCATE" else self._row_key(op, before, after, keys, key_values)
        if op == "DELETE" and not before and row_key is None:
            raise self.fail(errors.MISSING_FIELD,
                            "'before' is null or empty on a delete and no key identifies the row")
        return self.row(
            message, op=op, database=database, schema_name=schema_name, table_name=table,
            primary_key_columns=keys if op != "TRUNCATE" else [], row_key=row_key,
            before=before, after=after, after_is_full=after_is_full, column_types=types,
            warnings=warnings, **self._metadata(envelope, source),
        )

    def _row_key(self, op: str, before: dict[str, str | None] | None,
                 after: dict[str, str | None] | None, keys: list[str],
                 key_values: dict[str, str | None]) -> str | None:
        row_key = key_of(before if op == "DELETE" else after, keys)
        if row_key is None and keys and key_values and all(k in key_values for k in keys):
            row_key = row_key_text([key_values[k] for k in keys])
        if keys and row_key is None and op in ("UPDATE", "DELETE"):
            raise self.fail(errors.MISSING_KEY, f"key columns {keys} are in neither the "
                                                f"{'before' if op == 'DELETE' else 'after'} image "
                                                f"nor the message key")
        return row_key

    def _image(self, raw: Any, side: str, specs: dict[str, dict[str, Any]],
               warnings: list[str], cells: bool = False,
               hex_bytes: bool = False) -> tuple[dict[str, str | None] | None, bool]:
        """(image, partial): columns Debezium could not capture are left out (unknown), and so
        are, when ``cells``, the columns whose cell is null or not set (see ``_cell_value``).
        ``hex_bytes``: ``bytes`` columns are base16 text (OMS), not base64."""
        if raw is None:
            return None, False
        if isinstance(raw, str):  # MongoDB connector: the document as extended-JSON text
            try:
                raw = loads_exact(raw)
            except ValueError:
                raise self.fail(errors.INVALID_FIELD,
                                f"'{side}' is a string but not a JSON document") from None
        if not isinstance(raw, dict):
            raise self.fail(errors.INVALID_FIELD, f"'{side}' must be an object or null")
        image: dict[str, str | None] = {}
        partial = False
        placeholder = self._placeholder
        for column, value in raw.items():
            if cells:
                if column in _CASSANDRA_RANGE_FIELDS:
                    continue
                carried, value = _cell_value(value)
                if not carried:
                    partial = True
                    continue
            if type(value) in _PLACEHOLDER_KINDS and placeholder.matches(value):
                warnings.append(f"column {column!r} in '{side}': value not captured (Debezium "
                                f"unavailable-value placeholder), left out of the image")
                partial = True
                continue
            image[column] = column_text(self, value, specs.get(column), warnings, column, hex_bytes)
        return image, partial

    def _keys(self, message: RawMessage, payload: dict[str, Any], database: str | None,
              table: str | None, warnings: list[str], connector: str | None = None,
              bare_keys: list[str] | None = None) -> tuple[list[str], dict[str, str | None]]:
        """(key columns, key values from the Kafka key); see the vendor notes for precedence."""
        key_values: dict[str, str | None] = {}
        key_columns: list[str] | None = None
        if message.key:
            try:
                key_doc = loads_exact(message.key.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                key_doc = None
                warnings.append("message key is not JSON; key columns taken from elsewhere")
            key_payload, key_schema = unwrap(key_doc) if isinstance(key_doc, dict) else (key_doc, None)
            if key_payload is not None and not isinstance(key_payload, dict):
                # A bare value ("27") names no column: the key columns must come from elsewhere.
                warnings.append("message key is not a struct of key columns; key columns taken "
                                "from elsewhere")
            elif isinstance(key_payload, dict):
                if _flink_cdc_table_id(key_payload, table):
                    key_payload = dict(list(key_payload.items())[1:])
                specs = {f.get("field"): f for f in (key_schema or {}).get("fields") or []
                         if isinstance(f, dict)}
                # YugabyteDB wraps key columns in cells too: {"id": {"value": 1, "set": true}}.
                cells = _has_cells({"after": key_payload}, specs, connector)
                key_columns = list(key_payload) or None
                for column, value in key_payload.items():
                    spec = specs.get(column)
                    if cells:
                        value, spec = _cell_value(value)[1], _cell_spec(spec) or spec
                    key_values[column] = column_text(self, value, spec, warnings, column)
        scylla_key = payload.get("key") if connector == _SCYLLA else None
        if not key_values and isinstance(scylla_key, dict) and scylla_key:
            # ScyllaDB's advanced output may place the key in the value too ("payload-key"): a
            # partition delete has neither image.
            key_columns = list(scylla_key)
            key_values = {column: column_text(self, value, None, warnings, column)
                          for column, value in scylla_key.items()}
        override = self.key_override(database, table)
        if override is not None:
            return list(override), key_values
        if key_columns:
            return key_columns, key_values
        changes = _table_changes(payload.get("tableChanges"))
        for change in changes:
            names = (change.get("table") or {}).get("primaryKeyColumnNames")
            if isinstance(names, list) and names:
                return [str(n) for n in names], key_values
        return bare_keys or [], key_values

    # -- MongoDB ---------------------------------------------------------------------------
    def _mongo_row(self, op: str, payload: dict[str, Any], source: dict[str, Any],
                   message: RawMessage) -> dict[str, Any]:
        """A MongoDB connector event: documents are (extended) JSON *text*, the key is ``_id``.

        ``after`` (and ``before`` with pre-images) is the whole document. An update without
        ``after`` describes the change: ``updateDescription`` (change streams, Debezium 1.8+:
        ``updatedFields`` as JSON text, ``removedFields``) or ``patch`` (oplog connector, Debezium
        < 1.8: an update-operator document, or a whole replacement document) with ``filter``
        holding ``_id``. Values are read as :mod:`_mongo_shell` documents them (NumberLong ->
        digits, ObjectId -> hex, nested documents -> relaxed Extended JSON text)."""
        warnings: list[str] = []
        types: dict[str, str] = {}
        before = self._mongo_image(self._mongo_doc(payload.get("before"), "before"), types, warnings)
        after = self._mongo_image(self._mongo_doc(payload.get("after"), "after"), types, warnings)
        after_is_full = after is not None
        if op == "UPDATE" and after is None:
            after, after_is_full = self._mongo_update(payload, types, warnings)
        if op == "DELETE" and not after:
            after = None
        if op in ("INSERT", "SNAPSHOT") and after is None:
            raise self.fail(errors.MISSING_FIELD,
                            f"'after' must be the document when op is {payload['op']!r}")
        if not (source.get("collection") or source.get("table")):
            source = {**source, **self._configured_source()}  # as a relational change, see _change_row
        database, collection = _text(source.get("db")), _text(source.get("collection") or source.get("table"))
        override = self.key_override(database, collection)
        keys = list(override) if override is not None else list(_MONGO_KEY)
        key_values = self._mongo_key_values(message, payload, warnings)
        document = before if op == "DELETE" else after
        if ("_id" in key_values and document and "_id" in document
                and document["_id"] != key_values["_id"]):
            warnings.append(f"message key _id {key_values['_id']!r} differs from the document's "
                            f"{document['_id']!r}; the document's is used")
        row_key = None if op == "TRUNCATE" else self._row_key(op, before, after, keys, key_values)
        if op == "DELETE" and before is None and row_key is None:
            raise self.fail(errors.MISSING_KEY, "a MongoDB delete carries no document: the message key "
                                                "(or 'filter') must give '_id'")
        return self.row(
            message, op=op, database=database, schema_name=None, table_name=collection,
            primary_key_columns=keys if op != "TRUNCATE" else [], row_key=row_key,
            before=before, after=after, after_is_full=after_is_full, column_types=types,
            warnings=warnings, **self._metadata(payload, source),
        )

    def _mongo_doc(self, raw: Any, name: str) -> dict[str, Any] | None:
        """A document field: JSON text (the connector's form) or, tolerated, an object."""
        if raw is None:
            return None
        if isinstance(raw, dict):
            raw = dumps_compact(raw)
        if not isinstance(raw, str):
            raise self.fail(errors.INVALID_FIELD, f"'{name}' must be the document as JSON text or null")
        try:
            return parse_document_field(raw, name, "an (extended) JSON document")
        except DocumentFieldError as exc:
            raise self.fail(errors.INVALID_FIELD, str(exc)) from None

    @staticmethod
    def _mongo_image(doc: dict[str, Any] | None, types: dict[str, str],
                     warnings: list[str]) -> dict[str, str | None] | None:
        if doc is None:
            return None
        image: dict[str, str | None] = {}
        for name, value in doc.items():
            text, logical = field_text(value)
            image[name] = text
            if logical is not None:
                types.setdefault(name, logical)
            if "." in name:
                warnings.append(f"field {name!r}: a nested path was updated; kept as its own column, "
                                "the enclosing document is not rebuilt")
        return image

    def _mongo_update(self, payload: dict[str, Any], types: dict[str, str],
                      warnings: list[str]) -> tuple[dict[str, str | None], bool]:
        """(after image, is full) of an update event that carries no ``after`` document."""
        description = payload.get("updateDescription")
        if isinstance(description, dict):
            updated = self._mongo_doc(description.get("updatedFields"), "updateDescription.updatedFields")
            image = self._mongo_image(updated, types, warnings) or {}
            removed = description.get("removedFields") or []
            if not isinstance(removed, list):
                raise self.fail(errors.INVALID_FIELD, "'updateDescription.removedFields' must be a list")
            for name in removed:
                image[str(name)] = None
            truncated = description.get("truncatedArrays") or []
            if not isinstance(truncated, list):
                raise self.invalid("updateDescription.truncatedArrays", "an array", truncated)
            for item in truncated:
                field = item.get("field") if isinstance(item, dict) else item
                warnings.append(f"field {field!r}: array truncated in the source; its new value is not "
                                "in the message, left out of the image")
                image.pop(str(field), None)
            return image, False
        patch = self._mongo_doc(payload.get("patch"), "patch")
        if patch is None:
            raise self.fail(errors.MISSING_FIELD, "a MongoDB update needs 'after', 'updateDescription' "
                                                  "or 'patch'")
        if not (patch and all(k.startswith("$") for k in patch)):
            return self._mongo_image(patch, types, warnings) or {}, True  # replacement document
        changes: dict[str, Any] = {}
        removed_names: list[str] = []
        for operator, fields in patch.items():
            if operator == "$v":
                continue
            if operator in ("$set", "$unset") and not isinstance(fields, dict):
                raise self.fail(errors.INVALID_FIELD, f"'patch.{operator}' must be a document")
            if operator == "$set":
                changes.update(fields)
            elif operator == "$unset":
                removed_names.extend(fields)
            else:
                raise self.fail(errors.INVALID_FIELD, f"'patch' uses update operator {operator!r}, whose "
                                                      "result is not in the message; only $set and $unset "
                                                      "can be applied")
        image = self._mongo_image(changes, types, warnings) or {}
        for name in removed_names:
            image[name] = None
        return image, False

    def _mongo_key_values(self, message: RawMessage, payload: dict[str, Any],
                          warnings: list[str]) -> dict[str, str | None]:
        """``_id`` from the Kafka key (``{"id": "<_id as JSON text>"}``) or the oplog ``filter``."""
        values: dict[str, str | None] = {}
        key_doc: Any = None
        if message.key:
            try:
                key_doc = loads_exact(message.key.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                warnings.append("message key is not JSON; '_id' taken from the document")
        if isinstance(key_doc, dict):
            key_payload, _ = unwrap(key_doc)
            if isinstance(key_payload, dict):
                for name in ("id", "_id"):
                    value = key_payload.get(name)
                    if value is None:
                        continue
                    if isinstance(value, str) and not isinstance(value, JsonNumber) and not value.strip():
                        # No _id serialises to empty text (a string _id is '"..."' with quotes).
                        warnings.append(f"message key {name!r} is empty; '_id' taken from the "
                                        "document (or 'filter')")
                    else:
                        values["_id"] = self._mongo_id_text(value)
                    break
        filter_doc = self._mongo_doc(payload.get("filter"), "filter")
        if "_id" not in values and filter_doc and "_id" in filter_doc:
            values["_id"] = field_text(filter_doc["_id"])[0]
        return values

    @staticmethod
    def _mongo_id_text(value: Any) -> str | None:
        """The key's ``id`` is the ``_id`` value serialised as JSON text (``"1001"``,
        ``"{\"$oid\": \"596e...\"}"``); read it back so it matches the document's ``_id``."""
        if isinstance(value, str) and not isinstance(value, JsonNumber):
            try:
                return field_text(parse_document(value))[0]
            except (MongoShellSyntaxError, RecursionError):
                return value
        return field_text(value)[0]

    # -- DDL -------------------------------------------------------------------------------
    def _history_change(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Flink CDC's MySQL source sends a schema change as the outer ``source`` plus
        ``historyRecord``: Debezium's schema-history record (``databaseName``, ``ddl``,
        ``tableChanges``) as JSON text. Read as the schema-change event it stands for."""
        try:
            record = loads_exact(payload["historyRecord"])
        except ValueError as exc:
            raise self.fail(errors.INVALID_FIELD, f"'historyRecord' is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise self.fail(errors.INVALID_FIELD, "'historyRecord' must be a JSON object (Debezium's "
                                                  "schema-history record)")
        change = {name: record[name] for name in ("databaseName", "schemaName", "ddl", "tableChanges")
                  if name in record}
        return {"source": payload["source"], **change}

    def _ddl_rows(self, payload: dict[str, Any], message: RawMessage) -> list[dict[str, Any]]:
        source = self._source(payload)
        ddl = payload.get("ddl")
        if not isinstance(ddl, str) and not (ddl is None and _table_changes(payload.get("tableChanges"))):
            # SQL Server and Db2 send "ddl": null (their DDL is not available to the connector):
            # the change is then only in tableChanges.
            raise self.fail(errors.MISSING_FIELD, "'ddl' must be the statement text on a schema change "
                                                  "(or null with 'tableChanges')")
        database = _text(payload.get("databaseName")) or _database(source)
        schema_name = _text(payload.get("schemaName")) or _text(source.get("schema"))
        changes = _table_changes(payload.get("tableChanges")) or [{}]
        rows = []
        for index, change in enumerate(changes):
            table = _text(source.get("table"))
            change_schema = schema_name
            parts = _id_parts(change.get("id"))
            if parts:
                table = parts[-1]
                if len(parts) == 3:
                    change_schema = parts[1]
            raw_spec = change.get("table")
            spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
            names = spec.get("primaryKeyColumnNames")
            if names is not None and not isinstance(names, list):
                raise self.invalid(f"tableChanges[{index}].table.primaryKeyColumnNames", "an array",
                                   names)
            keys = [str(n) for n in names or []]
            override = self.key_override(database, table)
            rows.append(self.row(
                message, index, op="DDL", database=database, schema_name=change_schema or None,
                table_name=table, primary_key_columns=list(override) if override is not None else keys,
                column_types=_ddl_column_types(spec.get("columns"), f"tableChanges[{index}].table.columns"),
                ddl=ddl,
                **self._metadata(payload, source),
            ))
        return rows


# ---------------------------------------------------------------- values

def column_text(decoder: Decoder, value: Any, spec: dict[str, Any] | None, warnings: list[str],
                column: str, hex_bytes: bool = False) -> str | None:
    """One column's :func:`value_text`: a value that cannot be converted is kept with a warning
    (``Decoder.convert``); one its schema rules out (:class:`IntegerRangeError`, ...) is a
    :class:`FieldError` naming the column, which quarantines the message."""
    try:
        return decoder.convert(value, lambda v: value_text(v, spec, hex_bytes), warnings, column)
    except FieldError as exc:
        raise FieldError(f"column {column!r}: {exc}") from None


def value_text(value: Any, spec: dict[str, Any] | None, hex_bytes: bool = False) -> str | None:
    """Canonical text of one column value, decoded by its Connect schema when there is one;
    ``hex_bytes``: a ``bytes`` value is base16 text (OceanBase OMS), not Connect's base64."""
    if value is None:
        return None
    if not spec:
        if _is_variable_scale_struct(value):
            # Without a schema the struct still says what it is (Oracle NUMBER, PostgreSQL
            # unconstrained NUMERIC under decimal.handling.mode=precise): decode it exactly.
            return _decimal_from_bytes(value["value"], int(value["scale"]))
        return text_of(value)
    name = spec.get("name") or ""
    kind = spec.get("type")
    params = spec.get("parameters") or {}
    if name == _CONNECT + "Decimal":
        if isinstance(value, str) and not isinstance(value, JsonNumber):
            return _decimal_from_bytes(value, int(params.get("scale", 0)))
        return decimal_column_text(str(value))
    if name == "io.debezium.data.VariableScaleDecimal":
        if isinstance(value, dict):
            return _decimal_from_bytes(str(value.get("value")), _struct_scale(value))
        return text_of(value)
    if name in (_CONNECT + "Date", _DBZ_TIME + "Date"):
        return date_text(value) if _is_time_text(value) else _date(_epoch_count(value, "days"))
    if name in _TIME_OF_DAY:
        if _is_time_text(value):
            return _time_text(value)
        return _time_of_day(_epoch_count(value, _TIME_OF_DAY[name]), _TIME_OF_DAY[name])
    if name in _WALL_CLOCK:
        if _is_time_text(value):
            return wall_clock_text(value)
        return _wall_clock(_epoch_count(value, _WALL_CLOCK[name]), _WALL_CLOCK[name])
    if name == _DBZ_TIME + "ZonedTimestamp":
        return iso_utc_from_zoned_text(str(value))
    if name == _DBZ_TIME + "IsoTimestamp":
        text = str(value)
        zoned = re.search(r"(Z|[+-]\d\d:?\d\d)$", text)
        return iso_utc_from_zoned_text(text) if zoned else wall_clock_text(text)
    if name == _DBZ_TIME + "IsoDate":
        return str(value).rstrip("Z")
    if name == "io.debezium.data.Json":
        return json_value_text(str(value))
    if name == "io.debezium.data.Bits":
        return _bits_text(value)
    if kind == "array" and isinstance(value, list) and _has_logical_items(spec):
        return dumps_compact([_array_element(v, spec["items"]) for v in value])
    if kind == "bytes":
        if isinstance(value, str):
            return base64_from_hex(value) if hex_bytes else base64_normalised(value)
        return text_of(value)
    if kind == "boolean":
        return boolean_text(value)
    if kind in _INTEGER_BITS:
        return _declared_integer_text(value, kind)
    return text_of(value)


class IntegerRangeError(FieldError):
    """A value beyond its Connect integer type: the message contradicts its own schema. No
    connector writes this (Debezium and TiCDC widen unsigned columns to the next type and wrap a
    BIGINT UNSIGNED); Kafka Connect's JsonConverter would wrap it silently, RisingWave rejects it."""


_INTEGER_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
# Digits below which every value fits the type (int8: 99, ..., int64: 18 digits).
_SAFE_DIGITS = {"int8": 2, "int16": 4, "int32": 9, "int64": 18}


def _declared_integer_text(value: Any, kind: str) -> str:
    """An intN value's exact text; :class:`IntegerRangeError` when it does not fit intN."""
    text = integer_text(value)
    digits = len(text) - text.startswith("-")
    if digits <= _SAFE_DIGITS[kind]:
        return text
    half = 1 << (_INTEGER_BITS[kind] - 1)
    if digits <= 19 and -half <= int(text) < half:  # 19: int64's digits
        return text
    shown = text if len(text) <= 40 else f"{text[:20]}...({digits} digits)"
    raise IntegerRangeError(f"{shown} does not fit {kind}, its schema type")


def _has_logical_items(spec: dict[str, Any]) -> bool:
    """An array whose elements have a logical type (PostgreSQL ``date[]``, ``numeric(5,2)[]``,
    ``timestamptz[]``, ``json[]``, ...): Debezium encodes each element as it encodes a column of
    that type (days, unscaled bytes, ...), so each is decoded by the ``items`` schema."""
    items = spec.get("items")
    return isinstance(items, dict) and bool(items.get("name"))


_NUMBER_TYPES = ("LONG", "DOUBLE", "DECIMAL")


def _array_element(value: Any, items: dict[str, Any]) -> Any:
    """One decoded array element as a JSON value: numbers (decimals exact) stay numbers, JSON
    documents stay documents, everything else (dates, times, timestamps, UUIDs) is its canonical
    text. A value that is no number where one is expected (``NaN``) stays text."""
    text = value_text(value, items)
    if text is None:
        return None
    logical = connect_logical_type(items) or ""
    if logical.startswith(_NUMBER_TYPES) and re.fullmatch(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text):
        return JsonNumber(text)
    if logical == "BOOLEAN" and text in ("true", "false"):
        return text == "true"
    if logical == "JSON":
        return loads_exact(text)
    return text


def _is_time_text(value: Any) -> bool:
    """A date/time value written as text where its schema says epoch units: Flink CDC's Kafka sink
    labels DATE, TIME and TIMESTAMP columns io.debezium.time.* but writes Flink SQL text
    (``1970-04-11``, ``00:00:00``, ``2023-01-01 00:00:00``)."""
    return (isinstance(value, str) and not isinstance(value, JsonNumber)
            and re.fullmatch(r"\s*-?\d+\s*", value) is None)


def _time_text(value: str) -> str:
    match = re.fullmatch(r"\s*(\d{2}:\d{2}:\d{2})(?:\.(\d+))?\s*", value)
    if not match:
        raise ConversionWarning(f"not a time: {value[:40]!r}")
    fraction = (match[2] or "").rstrip("0")
    return f"{match[1]}.{fraction}" if fraction else match[1]


def _is_variable_scale_struct(value: Any) -> bool:
    """io.debezium.data.VariableScaleDecimal as schemaless JSON: ``{"scale": 0, "value": "AQ=="}``."""
    if not isinstance(value, dict) or set(value) != {"scale", "value"}:
        return False
    scale, unscaled = value["scale"], value["value"]
    return (isinstance(scale, (int, JsonNumber)) and not isinstance(scale, bool)
            and re.fullmatch(r"-?\d+", str(scale)) is not None
            and isinstance(unscaled, str) and not isinstance(unscaled, JsonNumber))


def _bits_text(value: Any) -> str | None:
    """io.debezium.data.Bits: the bit string's bytes little-endian (Debezium's documented form);
    canonical binary is the database's own order, most significant byte first (``b'111'`` of a
    BIT(16) is ``AAc=``), as the other formats give BIT values."""
    if not isinstance(value, str):
        return text_of(value)
    return base64_of_bytes(base64.b64decode(base64_normalised(value))[::-1])


def _struct_scale(value: dict[str, Any]) -> int:
    """The ``scale`` of a VariableScaleDecimal struct (``{"scale": 2, "value": "AQ=="}``)."""
    scale = value.get("scale")
    if scale is None:
        return 0
    if not _is_integer_text(scale):
        raise ConversionWarning(f"variable-scale decimal 'scale' is no integer: {_value_words(scale)}")
    return int(scale)


def _decimal_from_bytes(encoded: str, scale: int) -> str:
    """Connect Decimal: base64 of the big-endian two's-complement unscaled integer."""
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ConversionWarning(f"not base64 decimal bytes: {encoded[:40]!r}") from None
    if not raw:  # Kafka Connect refuses it too ("Zero length BigInteger"); it is not 0
        raise FieldError("empty bytes are no Connect Decimal (an unscaled value has at least one byte)")
    if len(raw) > 1500:  # over 3600 digits: more than int() may print (and than databases hold)
        raise ConversionWarning(f"decimal of {len(raw)} bytes: too long to be a column value")
    unscaled = int.from_bytes(raw, "big", signed=True)
    try:
        return decimal_text(Decimal(f"{unscaled}E{-scale}"))  # exact: no context rounding
    except InvalidOperation:  # an exponent beyond what Decimal holds
        raise ConversionWarning(f"decimal scale out of range: {scale}") from None


def _epoch_count(value: Any, unit: str) -> int:
    """A Date/Time/Timestamp value's count of ``unit`` (days, ms, us, ns) since the epoch (or
    midnight): 30 digits and more are beyond year 9999 in any unit."""
    return bounded_integer(value, 30, f"{unit} since the epoch")


def _fraction(value: int, unit: str) -> str:
    digits = {"ms": 3, "us": 6, "ns": 9}[unit]
    text = f"{value:0{digits}d}".rstrip("0")
    return "." + text if text else ""


def _time_of_day(value: int, unit: str) -> str:
    """Time since midnight; MySQL TIME can be negative or beyond 24 hours (Debezium keeps that)."""
    sign = "-" if value < 0 else ""
    seconds, fraction = divmod(abs(value), _PER_SECOND[unit])
    hours, rest = divmod(seconds, 3600)
    return f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}{_fraction(fraction, unit)}"


def _wall_clock(value: int, unit: str) -> str:
    """Debezium DATETIME semantics: epoch units of the wall clock read as if it were UTC.

    Beyond years 1-9999 (PostgreSQL's +/-infinity arrive as 9223372036825200000 and
    -9223372036832400000) the value keeps its text, with a warning."""
    seconds, fraction = divmod(value, _PER_SECOND[unit])
    try:
        moment = datetime(1970, 1, 1) + timedelta(seconds=seconds)
    except OverflowError:
        raise ConversionWarning(f"outside years 1-9999: {value} {unit} since the epoch") from None
    return iso_seconds_text(moment) + _fraction(fraction, unit)


def _date(days: int) -> str:
    """Days since the epoch; beyond years 1-9999 the value keeps its text, with a warning."""
    try:
        return (date(1970, 1, 1) + timedelta(days=days)).isoformat()
    except OverflowError:
        raise ConversionWarning(f"outside years 1-9999: {days} days since the epoch") from None


def connect_logical_type(spec: dict[str, Any]) -> str | None:
    name = spec.get("name") or ""
    if name == _CONNECT + "Decimal":
        params = spec.get("parameters") or {}
        precision = params.get("connect.decimal.precision")
        if not precision:
            return "DECIMAL"
        scale = int(params.get("scale", 0))
        if scale < 0:
            # Oracle NUMBER(p,s<0) rounds to 10^-s: integers of up to p-s digits.
            return f"DECIMAL({int(precision) - scale},0)"
        return f"DECIMAL({precision},{scale})"
    if name == "io.debezium.data.VariableScaleDecimal":
        return "DECIMAL"
    if name in (_CONNECT + "Date", _DBZ_TIME + "Date", _DBZ_TIME + "IsoDate"):
        return "DATE"
    if name in _TIME_OF_DAY or name in (_DBZ_TIME + "ZonedTime", _DBZ_TIME + "IsoTime"):
        return "TIME"
    if name in _WALL_CLOCK or name == _DBZ_TIME + "IsoTimestamp":
        return "TIMESTAMP_NTZ"
    if name == _DBZ_TIME + "ZonedTimestamp":
        return "TIMESTAMP"
    if name == "io.debezium.data.Json":
        return "JSON"
    if name == "io.debezium.data.Bits":
        return "BINARY"
    if name.startswith("io.debezium.data.geometry."):
        return "JSON"
    if name in _STRING_TYPES:
        return "STRING"
    return _PRIMITIVE_TYPES.get(str(spec.get("type")))


# What a Kafka Connect schema's keys must hold where the decoders read them (see schema_problem).
_SCHEMA_TEXT_KEYS = ("field", "name", "type")
_SCHEMA_NESTED_KEYS = ("items", "keySchema", "valueSchema")
_SCHEMA_INTEGER_PARAMETERS = ("scale", "connect.decimal.precision")
_INTEGER_TEXT = re.compile(r"\s*-?\d{1,19}\s*")  # int64 at most


def _is_integer_text(value: Any) -> bool:
    """An int64 as the exact-number JSON reader gives it (``JsonNumber`` text), or as a string."""
    return isinstance(value, str) and _INTEGER_TEXT.fullmatch(value) is not None


# What reading a Connect schema key of the wrong JSON kind raises (``True`` iterated, a list as
# a dict key, ``int('x')`` of a scale, ...). Schemas are not walked up front (that would cost
# every message a walk of its schema): a decoder that fails so asks :func:`schema_failure` why.
SCHEMA_READ_ERRORS = (ValueError, TypeError, AttributeError, LookupError, ArithmeticError)


def schema_failure(decoder: JsonDecoder, doc: dict[str, Any], message: RawMessage,
                   exc: Exception) -> Exception:
    """What to raise when decoding ``doc`` failed with ``exc``: a :class:`FieldError` (a helper's
    named fault) as ``INVALID_FIELD``; else an ``INVALID_FIELD`` error naming the fault of the
    message's Connect schema (the envelope's, a CloudEvent's ``data.schema`` or the Kafka key's)
    when one has a fault; else ``exc`` itself (no schema explains it)."""
    if isinstance(exc, FieldError):
        return decoder.fail(errors.INVALID_FIELD, str(exc))
    data = doc.get("data") if _is_cloudevent(doc) else None
    candidates = [(data.get("schema"), "data.schema")] if isinstance(data, dict) else []
    if "payload" in doc:
        candidates.append((doc.get("schema"), "schema"))
    for schema, path in candidates:
        if isinstance(schema, dict) and (problem := schema_problem(schema, path)):
            return decoder.fail(errors.INVALID_FIELD, problem)
    key = _json_key(message)
    if isinstance(key, dict) and isinstance(key.get("schema"), dict):
        if problem := schema_problem(key["schema"], "schema"):
            return decoder.fail(errors.INVALID_FIELD, f"message key: {problem}")
    return exc


def _json_key(message: RawMessage) -> Any:
    """The Kafka key as JSON, or None."""
    try:
        return loads_exact(message.key.decode("utf-8")) if message.key else None
    except (ValueError, UnicodeDecodeError):
        return None


class SchemaError(FieldError):
    """A Kafka Connect schema that cannot be read; the text names the field path and the fault."""


def schema_error(schema: Any, path: str = "schema") -> SchemaError:
    """The :class:`SchemaError` of a schema a reader could not use (see :func:`schema_problem`)."""
    if not isinstance(schema, dict):
        return SchemaError(f"'{path}' must be an object, got {kind_of(schema)}")
    return SchemaError(schema_problem(schema, path) or f"'{path}' is not a Kafka Connect schema "
                                                       "(a struct of 'fields' with 'before'/'after')")


def check_schema(schema: dict[str, Any], path: str = "schema") -> None:
    """:class:`SchemaError` when :func:`schema_problem` finds a fault."""
    problem = schema_problem(schema, path)
    if problem:
        raise SchemaError(problem)


def schema_problem(schema: dict[str, Any], path: str = "schema") -> str | None:
    """Why a Kafka Connect schema (the envelope's ``schema``, a field's, a key's) cannot be read,
    naming the field path (``'schema.fields[1].fields[0].name' must be a string, got a number``),
    or None. Checks only the keys the decoders read: ``field``/``name``/``type`` text,
    ``parameters`` an object (``scale`` and the precision integers), ``fields`` an array of
    schemas, ``items``/``keySchema``/``valueSchema`` schemas."""
    for key in _SCHEMA_TEXT_KEYS:
        value = schema.get(key)
        if value is not None and type(value) is not str:
            return f"'{path}.{key}' must be a string, got {kind_of(value)}"
    params = schema.get("parameters")
    if params is not None:
        if type(params) is not dict:
            return f"'{path}.parameters' must be an object, got {kind_of(params)}"
        for key in _SCHEMA_INTEGER_PARAMETERS:
            value = params.get(key, "0")
            if not _is_integer_text(value):
                return f"'{path}.parameters.{key}' must be an integer, got {_value_words(value)}"
    fields = schema.get("fields")
    if fields is not None:
        if type(fields) is not list:
            return f"'{path}.fields' must be an array, got {kind_of(fields)}"
        for index, field in enumerate(fields):
            if type(field) is not dict:
                return f"'{path}.fields[{index}]' must be an object, got {kind_of(field)}"
            problem = schema_problem(field, f"{path}.fields[{index}]")
            if problem:
                return problem
    for key in _SCHEMA_NESTED_KEYS:
        nested = schema.get(key)
        if nested is not None:
            if type(nested) is not dict:
                return f"'{path}.{key}' must be an object, got {kind_of(nested)}"
            problem = schema_problem(nested, f"{path}.{key}")
            if problem:
                return problem
    return None


def _value_words(value: Any) -> str:
    """``a string 'x'``, ``a number 1.5``, ``an array``: a bad value for a message."""
    if isinstance(value, str):
        text = value if isinstance(value, JsonNumber) else repr(value)
        return f"{kind_of(value)} {text[:40]}"
    return kind_of(value)


def value_specs(schema: dict[str, Any] | None, path: str = "schema") -> dict[str, dict[str, Any]]:
    """Column -> Connect field schema, from the envelope's ``after`` (or ``before``) struct;
    :class:`SchemaError` (naming ``path`` and the field) when the schema is no Connect schema."""
    if not schema:
        return {}
    fields = schema.get("fields")
    if fields is not None and type(fields) is not list:
        raise schema_error(schema, path)
    structs = {f.get("field"): f for f in fields or () if isinstance(f, dict)}
    if fields and len(structs) != len(fields):  # a field that is no object (or a name twice)
        check_schema(schema, path)
    for side in ("after", "before"):
        struct = structs.get(side)
        columns = struct.get("fields") if struct is not None else None
        if columns is not None and type(columns) is not list:
            raise schema_error(schema, path)
        if columns is not None:
            specs = {f["field"]: f for f in columns if isinstance(f, dict) and "field" in f}
            if len(specs) != len(columns):
                check_schema(schema, path)
            if "op" not in structs:
                # Debezium's envelope schema always describes ``op``; Flink CDC's Kafka sink
                # (debezium-json.include-schema.enabled) describes only before/after, names every
                # BINARY/VARBINARY column io.debezium.data.Bits and writes its bytes as they are
                # (base64), not as Debezium's little-endian bit string.
                specs = {column: {k: v for k, v in spec.items() if k != "name"}
                         if spec.get("name") == "io.debezium.data.Bits" else spec
                         for column, spec in specs.items()}
            return specs
    if "before" in structs or "after" in structs:
        return {}
    # ExtractNewRecordState: the value schema is the row's own struct.
    return {name: f for name, f in structs.items() if isinstance(name, str)}


def _ddl_column_types(columns: Any, path: str) -> dict[str, str]:
    """Column -> logical type of a ``tableChanges`` table's ``columns`` (at ``path``)."""
    types: dict[str, str] = {}
    for index, column in enumerate(columns if isinstance(columns, list) else []):
        if not isinstance(column, dict) or not column.get("name"):
            continue
        for name in ("length", "scale"):
            value = column.get(name)
            if value is not None and not _is_integer_text(value):
                raise FieldError(f"'{path}[{index}].{name}' must be an integer, got "
                                 f"{_value_words(value)}")
        type_name = column.get("typeExpression") or column.get("typeName")
        logical = logical_type_from_sql_name(str(type_name)) if type_name else None
        if logical in (None, "STRING"):
            # No name, or one not known as a type (SQL Server / Db2 "int identity"): the JDBC
            # type code says what the column holds.
            jdbc_type: Any = column.get("jdbcType")  # int() of None raises TypeError: no type code
            try:
                logical = JAVA_SQL_TYPES.get(int(jdbc_type), "STRING")
            except (TypeError, ValueError):
                if logical is None:
                    continue
        if logical == "DECIMAL" and column.get("length") is not None:
            logical = _decimal_type(column)
        types[str(column["name"])] = _as_change_events_carry(logical, column)
    return types


def _decimal_type(column: dict[str, Any]) -> str:
    """DECIMAL(p,s) of a column's length and scale; a negative scale (Oracle NUMBER(20,-2)) holds
    integers of p - s digits, as the change events' Decimal(scale -2) values are read."""
    precision, scale = int(column["length"]), int(column.get("scale") or 0)
    return f"DECIMAL({precision - scale},0)" if scale < 0 else f"DECIMAL({precision},{scale})"


def _as_change_events_carry(logical: str, column: dict[str, Any]) -> str:
    """The type the connector's change events give the column, where its SQL name says otherwise
    (the DDL row's types and the data rows' must agree, or compaction cannot type the column):
    Oracle's DATE holds a time of day (JDBC type 93, sent as io.debezium.time.Timestamp), Oracle's
    NUMBER(p, s <= 0) of fewer than 19 digits is an integer, and MySQL's BIT(n > 1) is sent as
    io.debezium.data.Bits bytes."""
    if logical == "DATE" and str(column.get("jdbcType")) == "93":
        return "TIMESTAMP_NTZ"
    if logical.startswith("DECIMAL(") and logical.endswith(",0)") and _is_oracle_number(column):
        # Oracle NUMBER(p, s <= 0) with p - s < 19 digits travels as int8/16/32/64.
        if int(logical[len("DECIMAL("):-len(",0)")]) < 19:
            return "LONG"
    if logical == "BOOLEAN" and str(column.get("length")).isdigit() and int(str(column["length"])) > 1:
        return "BINARY"
    return logical


def _is_oracle_number(column: dict[str, Any]) -> bool:
    return str(column.get("typeName") or "").upper() == "NUMBER" and column.get("length") is not None


# ---------------------------------------------------------------- metadata helpers

def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _database(source: dict[str, Any]) -> str | None:
    """``source.db``; the Vitess connector sends ``"db": ""`` and names the database (the
    keyspace) in ``source.keyspace``; the Cassandra connector's database is the keyspace (its
    source sends ``"db": "NULL"``: "Cassandra doesn't have the conception of database")."""
    if ((source.get("db") in (None, "") or _connector(source) == "cassandra")
            and source.get("keyspace") not in (None, "")):
        return _text(source["keyspace"])
    if source.get("db") in (None, "") and _connector(source) == _SCYLLA:
        return _text(source.get("keyspace_name"))
    return _text(source.get("db"))


def _row_op(code: str, snapshot: Any, connector: Any) -> str:
    """The canonical op of a change's ``op`` code. The MySQL connector (0.x sources name no
    connector) sent its snapshot rows as creates until 1.4 (and later with
    snapshot.events.as.inserts, DBZ-2775); Debezium calls that a wrong op flag (DBZ-2788). Such a
    create, flagged by ``source.snapshot`` (true/first/last), is a SNAPSHOT (full-load) row. The
    Cassandra connector sends its snapshot rows as inserts (``i``) with ``source.snapshot`` true."""
    cassandra = str(connector).lower() == "cassandra"
    if (((code == "c" and connector in (None, "mysql")) or (code in ("c", "i") and cassandra))
            and (snapshot is True
                 or (isinstance(snapshot, str) and snapshot.lower() in _SNAPSHOT_FLAGS))):
        return "SNAPSHOT"
    return OPS[code]


def _schema_connector(schema: dict[str, Any] | None) -> str | None:
    """The connector named by the envelope schema's ``source`` struct
    (``io.debezium.connector.<connector>.Source``; MongoDB's package is ``mongo``), or None."""
    for field in (schema or {}).get("fields") or []:
        if isinstance(field, dict) and field.get("field") == "source":
            match = _SOURCE_SCHEMA.fullmatch(str(field.get("name") or ""))
            if match:
                return _SCHEMA_CONNECTORS.get(match.group(1), match.group(1))
    return None


def _shape_connector(source: dict[str, Any]) -> str | None:
    """The connector of a pre-0.10 ``source`` without a schema, by the fields only it has: MySQL's
    binlog coordinates (``server_id``, ``file``, ``pos``), PostgreSQL's ``lsn`` and ``txId``."""
    if {"server_id", "file", "pos"} <= source.keys():
        return "mysql"
    if {"lsn", "txId"} <= source.keys():
        return "postgresql"
    return None


def _connector(source: dict[str, Any]) -> str:
    """``source.connector`` in lower case (YugabyteDB's manuals print both ``yugabytedb`` and
    ``YugabyteDB``), or ""."""
    return str(source.get("connector") or "").lower()


def _is_cell(value: Any, lenient: bool) -> bool:
    """A column cell object: exactly ``{value, set}`` (YugabyteDB) or ``{value, deletion_ts, set}``
    (Cassandra); ``lenient`` (the connector is known to send cells) also takes a cell that lacks
    ``set`` or ``deletion_ts``, as the YugabyteDB gRPC connector's manual prints ``{"value": 1}``."""
    if not isinstance(value, dict) or "value" not in value:
        return False
    if lenient:
        return set(value) <= _CELL_FIELDS[1]
    return frozenset(value) in _CELL_FIELDS


def _cell_spec(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The column's own schema inside a cell struct schema (its ``value`` field), or None when
    ``spec`` is no cell struct. YugabyteDB's YBExtractNewRecordState takes a struct of exactly the
    fields ``value`` and ``set`` for a cell; Cassandra's CellData adds an optional ``deletion_ts``."""
    if not spec or spec.get("type") != "struct":
        return None
    fields = [f for f in spec.get("fields") or [] if isinstance(f, dict)]
    by_name = {f.get("field"): f for f in fields}
    if len(fields) != len(by_name):
        return None
    if frozenset(by_name) == _SCYLLA_CELL and str(spec.get("name") or "").endswith(".Cell"):
        return by_name["value"]
    if frozenset(by_name) not in _CELL_FIELDS:
        return None
    if str((by_name.get("set") or {}).get("type")) != "boolean":
        return None
    return by_name["value"]


def _has_cells(payload: dict[str, Any], specs: dict[Any, dict[str, Any]], connector: str | None) -> bool:
    """Whether the event's images hold column cells: the schema says so, or (no cell schema) every
    non-null column of ``before`` and ``after`` is a cell object. A user's JSON column that merely
    has a ``value`` key is no cell: cells are all-or-nothing and of these exact shapes."""
    if any(_cell_spec(spec) for spec in specs.values()):
        return True
    values = [value for side in ("before", "after") if isinstance(payload.get(side), dict)
              for column, value in payload[side].items()
              if value is not None and column not in _CASSANDRA_RANGE_FIELDS]
    if connector == _SCYLLA:  # key columns are bare: one {value} cell shows the legacy output
        return any(isinstance(value, dict) and frozenset(value) == _SCYLLA_CELL for value in values)
    lenient = connector in _CELL_CONNECTORS
    return bool(values) and all(_is_cell(value, lenient) for value in values)


def _scylla_key_columns(payload: dict[str, Any]) -> list[str]:
    """ScyllaDB legacy output wraps every non-key column in a cell and no key column: the bare
    non-null columns of the image (``after``, else ``before``) are the primary key, in order."""
    image = payload.get("after") if isinstance(payload.get("after"), dict) else payload.get("before")
    if not isinstance(image, dict):
        return []
    return [column for column, value in image.items()
            if value is not None and not (isinstance(value, dict) and frozenset(value) == _SCYLLA_CELL)]


def _cell_value(cell: Any) -> tuple[bool, Any]:
    """(carried, value) of one column cell. A null cell is a column the change did not carry:
    YugabyteDB "sends the value as null for columns that are missing in the payload" (replica
    identity CHANGE, before images of modified columns only) and YBExtractNewRecordState drops
    them; Cassandra's commit log records only the modified cells. ``set: false`` says the same.
    A carried cell's ``value`` may be null: the column was set to NULL (Cassandra: the cell was
    deleted, with ``deletion_ts``). A non-cell value is taken as it is."""
    if cell is None:
        return False, None
    if not isinstance(cell, dict) or "value" not in cell:
        return True, cell
    if cell.get("set") is False:
        return False, None
    return True, cell["value"]


def _flink_cdc_table_id(key: dict[str, Any], table: str | None) -> bool:
    """Flink CDC's Kafka sink writes every key (``key.format`` json, its default) as
    ``{"TableId": "<namespace>.<schema>.<table>", <primary-key columns>...}``: that first field
    names the table, it is no column (a keyless table's key is the ``TableId`` alone)."""
    first = next(iter(key), None)
    value = key.get("TableId") if first == "TableId" else None
    return (isinstance(value, str) and bool(table)
            and (value == table or value.endswith("." + str(table))))


_MONGO_KEY = ("_id",)


def _is_mongo(payload: dict[str, Any], source: dict[str, Any]) -> bool:
    """The MongoDB connector's envelope: documents as JSON text, or its own update fields.

    The shape decides whatever ``source.connector`` says: no relational connector sends a row
    image as text (Apache Iceberg's ``MongoDebeziumTransform`` tests name the connector "mongo")."""
    if str(source.get("connector") or "").lower() == "mongodb":
        return True
    return (any(isinstance(payload.get(side), str) for side in ("before", "after", "patch"))
            or isinstance(payload.get("updateDescription"), dict))


def _kafka_time_if_none(row: dict[str, Any], message: RawMessage) -> dict[str, Any]:
    """A flattened row or tombstone delete without a source time is ordered by its Kafka time."""
    if row["event_time"] is None and message.timestamp_ms is not None:
        row["event_time"] = message.timestamp_ms * 1000
    return row


def _is_flattened(payload: dict[str, Any]) -> bool:
    """An ``ExtractNewRecordState`` row: no envelope, and a ``__deleted`` flag or an ``__op`` code."""
    if "before" in payload or "after" in payload or isinstance(payload.get("source"), dict):
        return False
    op = payload.get(_FLAT_PREFIX + "op")
    return (_deleted_flag(payload.get(_FLAT_PREFIX + "deleted")) is not None
            or (isinstance(op, str) and op.lower() in _FLAT_OPS))


def _has_no_envelope(payload: dict[str, Any]) -> bool:
    """No envelope, schema-change, transaction or heartbeat field: a bare row."""
    envelope = ("before", "after", "source", "op", "ddl", "databaseName", "status", "tableChanges")
    return bool(payload) and not any(name in payload for name in envelope)


def _is_flat_meta(name: str) -> bool:
    if not name.startswith(_FLAT_PREFIX):
        return False
    field = name[len(_FLAT_PREFIX):]
    return field in _FLAT_ENVELOPE or field in _FLAT_SOURCE or field.startswith("source_")


def _deleted_flag(value: Any) -> bool | None:
    """``__deleted``: a string ``"true"``/``"false"`` (older SMT) or a boolean; None if neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _is_cloudevent(doc: dict[str, Any]) -> bool:
    """A CloudEvent of Debezium's CloudEventsConverter (see the vendor notes)."""
    if "specversion" not in doc:
        return False
    kind = doc.get("type")
    debezium_type = (isinstance(kind, str) and kind.lower().startswith("io.debezium.")
                     and kind.lower().endswith(".datachangeevent"))
    return debezium_type or any(name.startswith(_CE_PREFIX) for name in doc)


def _is_schema_change(payload: dict[str, Any]) -> bool:
    """A schema-change topic event: the DDL text, or (SQL Server, Db2) ``"ddl": null`` with the
    change described in ``tableChanges`` only."""
    ddl = payload.get("ddl")
    if isinstance(ddl, str):
        return "databaseName" in payload or "tableChanges" in payload
    return ddl is None and "ddl" in payload and bool(_table_changes(payload.get("tableChanges")))


def _is_history_record(payload: dict[str, Any]) -> bool:
    """Flink CDC's MySQL schema change: ``source`` plus the history record as JSON text."""
    return isinstance(payload.get("historyRecord"), str) and isinstance(payload.get("source"), dict)


def _table_changes(value: Any) -> list[dict[str, Any]]:
    """Debezium sends a list; CloudCanal's manual shows a single object."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [c for c in value if isinstance(c, dict)]
    return []


def _id_parts(table_id: Any) -> list[str]:
    """``"inventory"."customers"`` (or ``"db"."schema"."table"``) -> its name parts."""
    if not isinstance(table_id, str) or not table_id:
        return []
    quoted = _QUOTED.findall(table_id)
    if quoted:
        return [q.replace('""', '"') for q in quoted]
    return table_id.split(".")


def _position(source: dict[str, Any]) -> str | None:
    """Binlog file:pos (MySQL), LSN (PostgreSQL, SQL Server, Db2, Informix), SCN (Oracle),
    TiCDC's ``commit_ts`` (the TiDB commit TSO, which TiCDC adds to the MySQL source block) or
    Vitess's ``vgtid`` (JSON text: the GTID position of every shard of the keyspace).

    Flink CDC's MySQL snapshot rows carry ``"file": ""`` and ``"pos": 0``: no position at all."""
    if source.get("file") not in (None, "") and source.get("pos") is not None:
        return f"{source['file']}:{source['pos']}"
    if source.get("ord") is not None and source.get("ts_ms") is not None:
        # MongoDB: the oplog / cluster time, seconds (ts_ms is whole seconds) and increment.
        try:
            return f"{int(str(source['ts_ms'])) // 1000}:{int(str(source['ord']))}"
        except ValueError:
            pass
    for name in ("lsn", "change_lsn", "scn", "commit_lsn", "commit_scn", "commit_ts", "vgtid"):
        if source.get(name) is not None:
            return str(source[name])
    if _is_oms(source) and source.get("pos") is not None:
        return str(source["pos"])  # OMS: "<binlog file>@<offset>" in one field
    return None


def _is_oms(source: Any) -> bool:
    """A ``source`` block of OceanBase OMS's Debezium serialisations: ``name`` "OMS" ("the fixed
    value OMS") and ``connector`` the OceanBase mode (``OB_MYSQL``). Debezium's own connectors
    name themselves in lower case (mysql, postgresql, ...), so none is taken for OMS."""
    return (isinstance(source, dict) and source.get("name") == "OMS"
            and str(source.get("connector") or "").startswith("OB_"))


def _is_ticdc_checkpoint(payload: dict[str, Any]) -> bool:
    """TiCDC's checkpoint (watermark) event before it wrote ``"op": "m"`` (tiflow's
    ``EncodeCheckpointEvent``): ``source`` (connector TiCDC, empty db and table, the checkpoint
    TSO as ``commit_ts``), ``ts_ms`` and ``transaction`` only. Replication progress, not a change."""
    source = payload.get("source")
    return (isinstance(source, dict) and str(source.get("connector")) == "TiCDC"
            and "commit_ts" in source and not source.get("table")
            and set(payload) <= {"source", "ts_ms", "transaction"})


def _ticdc_sequence(source: dict[str, Any]) -> str | None:
    """TiCDC's ``commit_ts`` (a TiDB TSO: commits of one row have increasing TSOs) as the ordering
    sequence, 20 digits as the Canal family gives TiCDC's ``_tidb.commitTs``."""
    value = source.get("commit_ts")
    if str(source.get("connector")) != "TiCDC" or value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return integer_digits(text).zfill(20) if text.isascii() and text.isdigit() else None


def _transaction_id(payload: dict[str, Any], source: dict[str, Any]) -> str | None:
    transaction = payload.get("transaction")
    if isinstance(transaction, dict) and transaction.get("id") is not None:
        return str(transaction["id"])
    # SQL Server and Db2: every change of a transaction carries its commit LSN. Spanner names
    # the transaction in ``server_transaction_id``.
    for name in ("txId", "gtid", "xid", "server_transaction_id", "commit_ts", "commit_lsn"):
        # The YugabyteDB gRPC connector sends "txId": "" for a change outside a transaction.
        if source.get(name) not in (None, ""):
            return str(source[name])
    return None


DECODER = DebeziumJsonDecoder
