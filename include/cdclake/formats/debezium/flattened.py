"""Rows of ``ExtractNewRecordState`` (the flattening SMT): ``__op``/``__deleted`` and the other
``__`` metadata fields, and Kafka tombstones (on a flattened topic, the delete of their key)."""

from __future__ import annotations

from typing import Any

from cdclake.formats import errors
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.debezium.base import DebeziumDecoderBase
from cdclake.formats.debezium.source import _kafka_time_if_none, _row_op
from cdclake.formats.kafka_connect import value_specs

# ExtractNewRecordState ``add.fields``: envelope or source fields, written ``__<name>`` (source
# fields also ``__source_<name>``). They are metadata, not columns of the row.
_FLAT_PREFIX = "__"
_FLAT_OPS = ("c", "u", "d", "r")
_FLAT_ENVELOPE = {"op", "ts_ms", "ts_us", "ts_ns", "deleted"}
_FLAT_SOURCE = {"version", "connector", "name", "snapshot", "db", "schema", "table", "collection",
                "sequence", "server_id", "gtid", "file", "pos", "row", "thread", "query", "txId",
                "lsn", "xmin", "scn", "commit_scn", "change_lsn", "commit_lsn", "event_serial_no",
                "keyspace", "shard", "vgtid"}


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


class FlattenedRows(DebeziumDecoderBase):
    """Rows of flattened topics, and tombstones."""

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
