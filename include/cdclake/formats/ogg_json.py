"""Oracle GoldenGate JSON formatter (operation-modeled; also Flink/Paimon ``ogg-json``).

Decodes operation- and row-modeled JSON formatter documents (several back to back in one value in
transaction mode) and the Kafka Connect handler's schema-wrapped form; ``pos`` orders changes. The
formatter and handler settings that change the message are in the vendor notes.

Vendor notes: docs/formats/ogg_json.md
"""

from __future__ import annotations

from typing import Any

from cdclake.formats import errors
from cdclake.formats._plain_json import (
    plain_text,
    sortable_sequence,
    untyped_image,
    wall_clock_field,
)
from cdclake.formats.base import JsonDecoder, key_of, key_of_any_case
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.errors import DecodeError
from cdclake.formats.exact_json import ConcatenatedJsonError, split_concatenated_objects
from cdclake.formats.kafka_connect import (
    SCHEMA_READ_ERRORS,
    column_text,
    connect_logical_type,
    schema_failure,
    unwrap,
    value_specs,
)

OPS = {"I": "INSERT", "INSERT": "INSERT", "U": "UPDATE", "UPDATE": "UPDATE", "PK": "UPDATE",
       "D": "DELETE", "DELETE": "DELETE", "T": "TRUNCATE", "TRUNCATE": "TRUNCATE"}


class OggJsonDecoder(JsonDecoder):
    format_id = "ogg_json"
    description = "Oracle GoldenGate JSON formatter (table/op_type/op_ts/pos/before/after)"
    detect_priority = 70
    concatenated_documents = True  # transaction mode
    # GoldenGate's sources compare column names ignoring case: Oracle (unquoted names), MySQL.
    case_insensitive_names = True

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        payload, _ = unwrap(doc)
        if not isinstance(payload, dict) or not isinstance(payload.get("table"), str):
            return False
        # op_ts, current_ts and op_type can each be turned off (includeOpTimestamp,
        # includeCurrentTimestamp, includeOpType); pos and the images stay.
        stamped = any(name in payload for name in ("op_ts", "current_ts", "pos"))
        if isinstance(payload.get("op_type"), str):
            return stamped
        return stamped and "pos" in payload and any(
            isinstance(payload.get(name), dict) for name in ("before", "after"))

    def decode(self, message: RawMessage) -> Decoded:
        try:
            return super().decode(message)
        except DecodeError as exc:
            if exc.reason != errors.INVALID_JSON:
                raise
            operations = self._transaction_operations(message, exc)
        # The transaction is one Kafka message: it is quarantined whole, never in part.
        return self.decode_documents(operations, message, lambda index, error: self.fail(
            error.reason, f"operation {index} of the {len(operations)} in this transaction-mode "
                          f"message: {error.detail}"))

    def _transaction_operations(self, message: RawMessage, error: DecodeError) -> list[dict[str, Any]]:
        """The operations of a transaction-mode message, or ``error`` (the value is no JSON
        document) when it does not even begin with one."""
        try:
            operations = split_concatenated_objects((message.value or b"").decode("utf-8"))
        except ConcatenatedJsonError as exc:
            if exc.index == 0:
                raise error from None
            raise self.fail(errors.INVALID_JSON,
                            f"operation {exc.index} of this transaction-mode message (operations "
                            f"written back to back) is not a JSON object: {exc.detail}") from None
        if len(operations) < 2:
            raise error
        return operations

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        try:
            return self._decode_operation(doc, message)
        except SCHEMA_READ_ERRORS as exc:  # the Kafka Connect handler's schema, if any, says why
            raise schema_failure(self, doc, message, exc) from None

    def _decode_operation(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        doc, connect_schema = unwrap(doc)
        if not isinstance(doc, dict):
            raise self.fail(errors.INVALID_FIELD, "'payload' must be an object")
        if "$schema" in doc and "op_type" not in doc:
            return Decoded(control="SCHEMA")
        qualified = self.require(doc, "table", str)
        if {"scn", "row_id", "username"} <= doc.keys() and "pos" not in doc:
            # Row-modeled like GoldenGate's, but epoch-millisecond op_ts/current_ts and op_type R.
            raise self.fail(errors.UNKNOWN_FORMAT,
                            "the message carries 'scn', 'row_id' and 'username' and no 'pos': it is "
                            "Confluent's Oracle CDC Source connector output, not GoldenGate's JSON "
                            "formatter, and no cdclake format reads it")
        if doc.get("op_type") is None:
            op_text = self._op_from_images(doc)
        else:
            op_text = self.require(doc, "op_type", str)
        op = OPS.get(op_text.strip().upper())
        if op is None:
            raise self.fail(errors.INVALID_OP,
                            f"'op_type' {op_text!r} is not I, U, D or T (nor INSERT, UPDATE, DELETE, "
                            "TRUNCATE): other insertOpKey/updateOpKey/deleteOpKey/truncateOpKey "
                            "values cannot be read from the message")
        parts = qualified.split(".")
        database = ".".join(parts[:-2]) if len(parts) > 2 else None
        schema = parts[-2] if len(parts) > 1 else None
        table = parts[-1]
        images: dict[str, dict[str, Any] | None] = {}
        for name in ("before", "after"):
            value = doc.get(name)
            if value is not None and not isinstance(value, dict):
                raise self.fail(errors.INVALID_FIELD, f"'{name}' must be an object")
            images[name] = value
        row_modeled = "before" not in doc and "after" not in doc
        misnamed = [name for name, value in doc.items() if name.lower() in ("before", "after")
                    and name not in ("before", "after") and isinstance(value, dict)]
        if row_modeled and misnamed:
            # Not a row-modeled column: an image under another spelling would become one column
            # holding the whole row (a DELETE of a phantom row). GoldenGate writes lower case.
            raise self.fail(errors.INVALID_FIELD,
                            f"image object {misnamed[0]!r} is not 'before'/'after' (GoldenGate "
                            "writes them in lower case): cannot tell its row apart")
        if row_modeled and op != "TRUNCATE":
            images["before" if op == "DELETE" else "after"] = _row_modeled_image(doc)
        if op == "UPDATE" and images["before"] == {}:
            images["before"] = None  # "before":{} = no before image captured (Flink reads it so)
        common = {
            "database": database, "schema_name": schema, "table_name": table,
            "event_time": wall_clock_field(self, doc, "op_ts", "op_ts", TIME_EXAMPLE),
            "produced_time": wall_clock_field(self, doc, "current_ts", "current_ts", TIME_EXAMPLE,
                                              self.options.produced_timezone),
            "source_sequence": sortable_sequence(doc.get("pos")),
            "source_position": plain_text(doc.get("pos")),
            "transaction_id": plain_text(tokens.get("txid")) if isinstance(tokens := doc.get("tokens"), dict)
            else None,
        }
        if op == "TRUNCATE":
            return Decoded(rows=[self.row(message, op=op, **common)])
        if op in ("INSERT", "UPDATE") and images["after"] is None:
            raise self.fail(errors.MISSING_FIELD, f"'after' is missing for op_type {op_text!r}")
        if op == "DELETE" and images["before"] is None:
            raise self.fail(errors.MISSING_FIELD, "'before' is missing for op_type 'D'")
        specs = value_specs(connect_schema)
        warnings: list[str] = []
        before = self._image(images["before"], specs, warnings) if op != "INSERT" else None
        after = self._image(images["after"], specs, warnings) if op != "DELETE" else None
        types = {column: logical for column, spec in specs.items()
                 if (logical := connect_logical_type(spec))
                 and not (row_modeled and column in OPERATION_FIELDS)}

        keys = self._key_columns(doc, schema, table)
        row_key = key_of(after if op != "DELETE" else before, keys)
        if row_key is None and op == "UPDATE":
            row_key = key_of(before, keys)
        if row_key is None and keys:  # a key column the image spells otherwise (``id``, ``ID``)
            row_key = key_of_any_case(after if op != "DELETE" else before, keys) or (
                key_of_any_case(before, keys) if op == "UPDATE" else None)
        if row_key is None and keys:
            # An insert without its key values could not be applied either: compaction would
            # refuse the whole table ("key columns but no key values"); quarantine it alone.
            raise self.fail(errors.MISSING_KEY,
                            f"key columns {keys} are not all in the {op.lower()} image")
        if not keys and op == "UPDATE" and before is None:
            # Nothing says which row the update replaces: as a keyless change it would leave the
            # old row beside the new one.
            raise self.fail(errors.MISSING_KEY,
                            f"update of {qualified} with no before image and no key columns "
                            "('primary_keys', or the table's key in topics[].primary_keys)")
        return Decoded(rows=[self.row(
            message, op=op, primary_key_columns=keys, row_key=row_key, before=before, after=after,
            after_is_full=op == "INSERT" and not _marks_missing(images["after"]), column_types=types,
            warnings=warnings, **common)])

    def _op_from_images(self, doc: dict[str, Any]) -> str:
        """The operation of a message written with ``includeOpType=false``, from its images as the
        operation-modeled formatters write them: insert after only, update before and after,
        delete before only. An after image alone may be an insert or an update whose before image
        was not captured, and a row-modeled message has a single image: neither can be placed."""
        before, after = doc.get("before"), doc.get("after")
        if isinstance(before, dict) and before and isinstance(after, dict) and after:
            return "U"
        if isinstance(before, dict) and before and after is None:
            return "D"
        raise self.fail(errors.MISSING_FIELD,
                        "'op_type' is missing (includeOpType=false) and the images do not tell the "
                        "operation: only a before and an after image (update) or only a before "
                        "image (delete) do; an after image alone may be an insert or an update")

    def _image(self, image: dict[str, Any] | None, specs: dict[str, dict[str, Any]],
               warnings: list[str]) -> dict[str, str | None] | None:
        """Plain JSON values as text; with a Connect schema, each value through its field schema."""
        present = _present_columns(image)
        if not specs or present is None:
            return untyped_image(present)
        text_image: dict[str, str | None] = {}
        for column, value in present.items():
            text_image[column] = column_text(self, value, specs.get(column), warnings, column)
        return text_image

    def _key_columns(self, doc: dict[str, Any], schema: str | None, table: str) -> list[str]:
        override = self.key_override(schema, table)
        if override:
            return list(override)
        for name in ("primary_keys", "priamry_keys"):
            keys = doc.get(name)
            if isinstance(keys, list) and all(isinstance(k, str) for k in keys):
                return list(keys)
        return []


# The operation fields of the JSON formatter; in the row-modeled output (``format=json_row``)
# every other top-level field is a column.
OPERATION_FIELDS = frozenset({"table", "op_type", "op_ts", "current_ts", "pos", "primary_keys",
                              "priamry_keys", "tokens"})
MISSING_SUFFIX = "_isMissing"
TIME_EXAMPLE = "2020-05-13 15:40:06.000000"  # op_ts, current_ts: source time zone


def _row_modeled_image(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The row of a row-modeled message (its columns beside the operation fields), or None."""
    row = {name: value for name, value in doc.items() if name not in OPERATION_FIELDS}
    return row or None


def _missing_markers(image: dict[str, Any]) -> dict[str, str]:
    """``{"C_isMissing": "C"}`` for every boolean marker that sits next to its column ``C``; any
    other key (even one ending in ``_isMissing``) is a real column."""
    return {name: name[:-len(MISSING_SUFFIX)] for name, value in image.items()
            if name.endswith(MISSING_SUFFIX) and isinstance(value, bool)
            and name[:-len(MISSING_SUFFIX)] in image}


def _present_columns(image: dict[str, Any] | None) -> dict[str, Any] | None:
    """``image`` without ``C_isMissing`` markers and without the columns they mark missing."""
    if image is None:
        return None
    markers = _missing_markers(image)
    missing = {column for name, column in markers.items() if image[name] is True}
    return {name: value for name, value in image.items()
            if name not in markers and name not in missing}


def _marks_missing(image: dict[str, Any] | None) -> bool:
    """True when ``image`` marks some column missing (it is then not the whole row)."""
    return image is not None and any(image[name] is True for name in _missing_markers(image))


DECODER = OggJsonDecoder
