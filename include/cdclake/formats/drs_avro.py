"""Huawei Cloud DRS Avro: decoded with the vendor schema the user configures (``schema_file``).

No schema ships with the package: the topic's ``schema_file`` must point at the vendor's
``record.avsc``; single-object encoded and bare datums are read, key columns come from
``primary_key_overrides``. What is known of the schema, and from where, is in the vendor notes.

Vendor notes: docs/formats/drs_avro.md
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cdclake.formats import errors
from cdclake.formats._avro import (
    SINGLE_OBJECT_MAGIC,
    AvroReadError,
    load_schema_file,
    read_datum,
    schema_fingerprint,
)
from cdclake.formats.base import Decoder, key_of
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.values import text_of

OPS = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "INIT": "SNAPSHOT", "DDL": "DDL"}
CONTROL_OPS = {"BEGIN": "TRANSACTION_BEGIN", "COMMIT": "TRANSACTION_END", "HEARTBEAT": "HEARTBEAT"}
HOW_TO_CONFIGURE = (
    "put the vendor's record.avsc (extracted from Huawei's record.rar, linked on the DRS "
    "'Kafka message format' page) in the project, e.g. include/config/schemas/drs_record.avsc, and "
    "set `schema_file` for this topic in include/config/pipeline.yml (cdclake decode: --schema-file)"
)


class DrsAvroDecoder(Decoder):
    format_id = "drs_avro"
    description = "Huawei Cloud DRS Avro (needs the vendor's record.avsc as schema_file)"

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._schema: Any = None
        self._fingerprint = b""

    def _load_schema(self) -> Any:
        if self._schema is not None:
            return self._schema
        path = self.options.schema_file
        if not path:
            raise self.fail(errors.MISSING_SCHEMA, f"no Avro schema is configured: {HOW_TO_CONFIGURE}")
        try:
            schema = load_schema_file(Path(path))  # relative paths: against the working directory
        except OSError as exc:
            raise self.fail(errors.MISSING_SCHEMA, f"schema_file {path!r} cannot be read "
                                                   f"({exc.strerror or exc}): {HOW_TO_CONFIGURE}") from None
        except Exception as exc:  # JSON or Avro schema errors
            raise self.fail(errors.MISSING_SCHEMA,
                            f"schema_file {path!r} is not an Avro schema ({exc}): "
                            f"{HOW_TO_CONFIGURE}") from None
        self._schema, self._fingerprint = schema, schema_fingerprint(schema)
        return schema

    def decode(self, message: RawMessage) -> Decoded:
        value = message.value
        if not value:
            raise self.fail(errors.EMPTY_VALUE, "value is null or empty; a DRS Avro record was expected")
        if len(value) > self.options.max_value_bytes:
            raise self.fail(errors.TOO_LARGE, f"value is {len(value)} bytes, over the limit of "
                                              f"{self.options.max_value_bytes}")
        schema = self._load_schema()
        body = value
        if value.startswith(SINGLE_OBJECT_MAGIC) and len(value) >= 10:
            fingerprint = value[2:10]
            if fingerprint != self._fingerprint:
                raise self.fail(errors.INVALID_AVRO, (
                    f"single-object header fingerprint {fingerprint.hex()} does not match the "
                    f"configured schema_file {self.options.schema_file!r} ({self._fingerprint.hex()}): "
                    "the record was written with another schema version; configure that one"))
            body = value[10:]
        try:
            record = read_datum(body, schema)
        except AvroReadError as exc:
            raise self.fail(errors.INVALID_AVRO,
                            f"value is not a record of the configured schema: {exc}") from None
        return self._decode_record(record, message)

    def _decode_record(self, record: dict[str, Any], message: RawMessage) -> Decoded:
        operation = str(_plain(record.get("operation")) or "").strip().upper()
        if operation in CONTROL_OPS:
            return Decoded(control=CONTROL_OPS[operation])
        if operation not in OPS:
            raise self.fail(errors.INVALID_OP, f"'operation' {record.get('operation')!r} is not one of "
                                               f"{', '.join([*OPS, *CONTROL_OPS])}")
        op = OPS[operation]
        table_name = record.get("tableName")
        if not isinstance(table_name, str) or not table_name.replace('"', ""):
            raise self.fail(errors.MISSING_FIELD, "'tableName' must be a non-empty string")
        parts = table_name.replace('"', "").split(".")
        database = parts[0] if len(parts) > 1 else None
        schema_name = parts[1] if len(parts) > 2 else None
        table = parts[-1]
        common: dict[str, Any] = {
            "database": database, "schema_name": schema_name, "table_name": table,
            "event_time": _epoch_micros(record.get("updateTimestamp")),
            "source_sequence": _sequence(record.get("seqno")),
            "source_position": _text(record.get("eventid")),
        }
        if op == "DDL":
            ddl = next((record[n] for n in ("ddl", "sql") if isinstance(record.get(n), str)), None)
            warnings = [] if ddl else ["DDL text not found in the record (no 'ddl' or 'sql' field)"]
            return Decoded(rows=[self.row(message, op="DDL", ddl=ddl, warnings=warnings, **common)])
        names = self._column_names(record)
        before = self._image(record, "beforeImages", names)
        after = self._image(record, "afterImages", names)
        if op in ("INSERT", "SNAPSHOT", "UPDATE") and after is None:
            raise self.fail(errors.MISSING_FIELD, f"'afterImages' is null on an {operation} record")
        if op == "DELETE" and before is None:
            raise self.fail(errors.MISSING_FIELD, "'beforeImages' is null on a DELETE record")
        override = self.key_override(database, table)
        keys = list(override) if override is not None else []
        row_key = key_of(before if op == "DELETE" else after, keys)
        if keys and row_key is None and op in ("UPDATE", "DELETE"):
            raise self.fail(errors.MISSING_KEY, f"configured key columns {keys} are not in the image")
        return Decoded(rows=[self.row(
            message, op=op, primary_key_columns=keys, row_key=row_key, before=before, after=after,
            after_is_full=after is not None, **common)])

    def _column_names(self, record: dict[str, Any]) -> list[str]:
        fields = record.get("fields")
        if not isinstance(fields, list):
            raise self.fail(errors.MISSING_FIELD, "'fields' must be an array of column descriptions")
        names = []
        for index, field in enumerate(fields):
            field = _plain(field)
            name = field.get("name") if isinstance(field, dict) else field
            if not isinstance(name, str):
                raise self.fail(errors.INVALID_FIELD, f"'fields[{index}].name' must be a string")
            names.append(name)
        count = record.get("columnCount")
        if isinstance(count, int) and count != len(names):
            raise self.fail(errors.INVALID_FIELD,
                            f"'columnCount' is {count} but 'fields' names {len(names)} columns")
        return names

    def _image(self, record: dict[str, Any], side: str, names: list[str]) -> dict[str, str | None] | None:
        values = record.get(side)
        if values is None:
            return None
        if not isinstance(values, list):
            raise self.fail(errors.INVALID_FIELD, f"'{side}' must be an array or null")
        if len(values) != len(names):
            raise self.fail(errors.INVALID_FIELD,
                            f"'{side}' has {len(values)} values but 'fields' names {len(names)} columns")
        image: dict[str, str | None] = {}
        for name, item in zip(names, values, strict=True):
            item = _plain(item)
            if item is None:
                image[name] = None
            elif isinstance(item, dict):
                image[name] = text_of(_plain(item.get("value")))
            else:
                image[name] = text_of(item)
        return image


def _plain(value: Any) -> Any:
    """Drop the (type name, value) tag fastavro puts on union record branches."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return value[1]
    return value


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _sequence(value: Any) -> str | None:
    """Zero-padded so text order is numeric order."""
    if value is None:
        return None
    text = str(value)
    return f"{int(text):020d}" if re.fullmatch(r"\d+", text) else text


def _epoch_micros(value: Any) -> int | None:
    """updateTimestamp: the unit is undocumented; public code reads it as epoch ms. Decided by
    magnitude (seconds < 1e11 <= milliseconds < 1e14 <= microseconds) so any of them lands right."""
    if value is None:
        return None
    try:
        number = int(str(value))
    except ValueError:
        return None
    if abs(number) < 10**11:
        return number * 1_000_000
    if abs(number) < 10**14:
        return number * 1000
    return number


DECODER = DrsAvroDecoder
