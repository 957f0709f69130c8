"""What every kind of Debezium row is built from: the source block's metadata and times, row
images, keys (from the Kafka key, the schema or the configured source) and the keyed row."""

from __future__ import annotations

from typing import Any

from cdclake.formats import errors
from cdclake.formats.base import (
    FormatOptions,
    JsonDecoder,
    key_of,
    row_key_text,
    source_table_parts,
)
from cdclake.formats.canonical import RawMessage
from cdclake.formats.debezium.cells import (
    _CASSANDRA_RANGE_FIELDS,
    _SCYLLA,
    _cell_spec,
    _cell_value,
    _has_cells,
)
from cdclake.formats.debezium.placeholder import _PLACEHOLDER_KINDS, Placeholder
from cdclake.formats.debezium.source import (
    _MAX_EPOCH_MICROS,
    _TIME_FIELDS,
    _connector,
    _database,
    _flink_cdc_table_id,
    _position,
    _table_changes,
    _text,
    _ticdc_sequence,
    _transaction_id,
)
from cdclake.formats.exact_json import loads_exact
from cdclake.formats.kafka_connect import column_text, connect_logical_type, unwrap
from cdclake.formats.values import ConversionWarning, micros_from_epoch

# Branch names of Avro's JSON encoding of a union ({"long": 1}): a record printed that way is no
# Debezium JSON (kafka-avro-console-consumer output pasted as a message).
_AVRO_BRANCHES = frozenset({"long", "int", "string", "boolean", "double", "float", "bytes"})


class DebeziumDecoderBase(JsonDecoder):
    """The state and helpers every Debezium row kind shares (the row-kind classes build on it)."""

    def __init__(self, options: FormatOptions | None = None) -> None:
        super().__init__(options)
        # Built once (a bad setting fails here, not on every message).
        self._placeholder = Placeholder.of(self.options.unavailable_value_placeholder)

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
