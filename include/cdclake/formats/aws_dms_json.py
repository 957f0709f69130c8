"""AWS DMS JSON on a Kafka (or Kinesis) target (also Paimon ``aws-dms-json``).

Decodes DMS ``data`` records (load, insert, update, delete) and ``control`` records (table and
column changes as DDL rows, truncate-table as TRUNCATE) of ``{"data", "metadata"}`` messages. Before
images, row identity from the partition key, values and times are in the vendor notes.

Vendor notes: docs/formats/aws_dms_json.md
"""

from __future__ import annotations

import re
from typing import Any

from cdclake.formats import errors
from cdclake.formats._plain_json import micros_from_iso, plain_text, untyped_text
from cdclake.formats.base import JsonDecoder, key_of, row_key_text
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.values import ConversionWarning

DATA_OPS = {"load": "SNAPSHOT", "insert": "INSERT", "update": "UPDATE", "delete": "DELETE"}
BEFORE_IMAGE_FIELDS = ("before-image", "before_image", "beforeImage")
BEFORE_PREFIX = "BI_"


class AwsDmsJsonDecoder(JsonDecoder):
    format_id = "aws_dms_json"
    description = "AWS DMS JSON for Kafka/Kinesis targets (data + metadata.record-type/operation)"
    detect_priority = 75

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        metadata = doc.get("metadata")
        return isinstance(metadata, dict) and "record-type" in metadata and "operation" in metadata

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        metadata = self.require(doc, "metadata", dict)
        record_type = str(self.require(metadata, "record-type", str, where="metadata")).strip().lower()
        operation_text = self.require(metadata, "operation", str, where="metadata")
        operation = _operation_name(operation_text)
        schema = plain_text(metadata.get("schema-name"))
        table = plain_text(metadata.get("table-name"))
        produced = self._time(metadata, "timestamp")
        commit = self._time(metadata, "commit-timestamp")
        common: dict[str, Any] = {
            "schema_name": schema, "table_name": table,
            "event_time": commit if commit is not None else produced, "produced_time": produced,
            "transaction_id": plain_text(metadata.get("transaction-id")),
            "source_position": plain_text(metadata.get("stream-position")),
        }
        if record_type == "control":
            if operation == "truncate-table":
                return Decoded(rows=[self.row(message, op="TRUNCATE", ddl=operation, **common)])
            if operation.endswith("-table") or {"column", "columns"} & set(operation.split("-")):
                return Decoded(rows=[self._ddl_row(doc, message, operation, common)])
            return Decoded(control="CONTROL")
        if record_type != "data":
            raise self.fail(errors.INVALID_OP,
                            f"'metadata.record-type' {record_type!r} is not data or control")
        op = DATA_OPS.get(operation)
        if op is None:
            raise self.fail(errors.INVALID_OP,
                            f"'metadata.operation' {operation_text!r} is not load, insert, update or "
                            "delete for a data record")
        data = dict(self.require(doc, "data", dict))
        before_raw = self._before_image(doc, data)
        image = {str(k): untyped_text(v) for k, v in data.items()}
        before: dict[str, str | None] | None
        after: dict[str, str | None] | None
        if op == "DELETE":
            before, after = image, None
        else:
            after = image
            before = ({str(k): untyped_text(v) for k, v in before_raw.items()}
                      if op == "UPDATE" and before_raw else None)

        override = self.key_override(schema, table)
        keys = list(override) if override else []
        row_key = key_of(after if op != "DELETE" else before, keys) if keys else None
        if row_key is None and keys and op == "UPDATE":
            row_key = key_of(before, keys)
        if row_key is None and not keys:
            row_key = self._partition_key(metadata, message)
        if row_key is None and keys and op in ("UPDATE", "DELETE"):
            raise self.fail(errors.MISSING_KEY,
                            f"configured key columns {keys} are not all in the {operation} image")
        if row_key is None and not keys and op == "UPDATE" and before is not None and any(
                column not in before for column in after or {}):
            # BeforeImageSettings ColumnFilter pk-only (the default) puts only the key columns in
            # the before image, and no filter puts LOB columns there: without key column names such
            # a before image matches no stored row, and the old row would stay beside the new one.
            raise self.fail(errors.MISSING_KEY,
                            f"update of {schema}.{table} with no key: its before image holds only "
                            f"{sorted(before)} (BeforeImageSettings ColumnFilter pk-only, or LOB "
                            "columns left out), and DMS names no key columns; configure the table's "
                            "key columns (topics[].primary_keys) or partition-key-type primary-key")
        if row_key is None and not keys and op == "UPDATE" and before is None:
            # Nothing identifies the row to replace: applied as it stands the update would add a
            # second row beside the old one.
            raise self.fail(errors.MISSING_KEY,
                            f"update of {schema}.{table} with no key: DMS sends no key column names "
                            "and this record has no before image; configure the table's key columns "
                            "(topics[].primary_keys), or partition-key-type primary-key, or "
                            "BeforeImageSettings")
        return Decoded(rows=[self.row(
            message, op=op, primary_key_columns=keys, row_key=row_key, before=before, after=after,
            after_is_full=op != "DELETE", **common)])

    # -- parts ---------------------------------------------------------------------------
    def _ddl_row(self, doc: dict[str, Any], message: RawMessage, operation: str,
                 common: dict[str, Any]) -> dict[str, Any]:
        """A table/column change; ``control.table-def`` (if any) gives key columns and types."""
        control = doc.get("control")
        definition = control.get("table-def") if isinstance(control, dict) else None
        keys: list[str] = []
        types: dict[str, str] = {}
        if isinstance(definition, dict):
            primary = definition.get("primary-key")
            if isinstance(primary, list) and all(isinstance(k, str) for k in primary):
                keys = list(primary)
            columns = definition.get("columns")
            for name, column in (columns.items() if isinstance(columns, dict) else ()):
                logical = _logical_type(column) if isinstance(column, dict) else None
                if logical is not None:
                    types[str(name)] = logical
        return self.row(message, op="DDL", ddl=operation, primary_key_columns=keys,
                        column_types=types, **common)

    def _before_image(self, doc: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        """The before image (and ``data`` stripped of it): named object or ``BI_`` columns."""
        before: dict[str, Any] = {}
        for name in BEFORE_IMAGE_FIELDS:
            for holder in (doc, data):
                value = holder.get(name)
                if isinstance(value, dict):
                    before.update(value)
                    if holder is data:
                        del data[name]
        for name in [n for n in data if isinstance(n, str) and n.startswith(BEFORE_PREFIX)]:
            column = name[len(BEFORE_PREFIX):]
            if column in data:
                before.setdefault(column, data.pop(name))
        return before

    def _partition_key(self, metadata: dict[str, Any], message: RawMessage) -> str | None:
        """The primary-key partition value (``partition-key-value`` with IncludePartitionValue,
        else the Kafka key) as the row identity, or None for other partition key types."""
        if str(metadata.get("partition-key-type", "")).lower() != "primary-key":
            return None
        value = metadata.get("partition-key-value")
        if isinstance(value, str) and value:
            return row_key_text([value])
        if not message.key:
            return None
        try:
            text = message.key.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return row_key_text([text]) if text else None

    def _time(self, metadata: dict[str, Any], name: str) -> int | None:
        value = metadata.get(name)
        if value is None or value == "":
            return None
        try:
            return micros_from_iso(value)
        except ConversionWarning:
            raise self.fail(errors.INVALID_FIELD,
                            f"'metadata.{name}' must be an ISO timestamp, got {value!r}") from None


def _operation_name(text: str) -> str:
    """``metadata.operation`` in DMS's current spelling: older DMS versions (and their docs) write
    control operations in CamelCase, ``TruncateTable`` for ``truncate-table``."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "-", text.strip()).lower()


# DMS data types (as named in table-def) whose canonical text is unambiguous. Date/time, binary and
# LOB types stay undeclared: how DMS renders them depends on the source endpoint.
_DMS_TYPES = {
    **dict.fromkeys(("INT1", "INT2", "INT4", "INT8", "INT16", "INT32", "INT64", "UINT1", "UINT2",
                     "UINT4", "UINT8", "UINT16", "UINT32"), "LONG"),
    **dict.fromkeys(("STRING", "WSTRING", "CLOB", "NCLOB"), "STRING"),
    "BOOLEAN": "BOOLEAN", "REAL4": "DOUBLE", "REAL8": "DOUBLE",
}


def _logical_type(column: dict[str, Any]) -> str | None:
    """Logical type of a table-def column, or None when not stated without doubt."""
    name = str(column.get("type") or "").strip().upper()
    if name in ("NUMERIC", "DECIMAL"):
        precision, scale = str(column.get("precision", "")), str(column.get("scale", 0))
        if not (precision.isdigit() and scale.isdigit()):
            return None
        return f"DECIMAL({int(precision)},{int(scale)})"
    if name == "UINT64":
        return "DECIMAL(20,0)"
    return _DMS_TYPES.get(name)


DECODER = AwsDmsJsonDecoder
