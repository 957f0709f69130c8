"""Huawei Cloud DRS JSON for DDS (MongoDB) sources (seed 001, Table 3).

One message is one oplog change whose document (``value``/``where``) is MongoDB shell syntax, parsed
by :mod:`cdclake.formats._mongo_shell`; rows are keyed by ``_id``. The rules per ``recordType``
and the ordering are in the vendor notes.

Vendor notes: docs/formats/drs_mongo.md
"""

from __future__ import annotations

import re
from typing import Any, Literal, overload

from cdclake.formats import errors
from cdclake.formats._mongo_shell import (
    DocumentFieldError,
    MongoDate,
    field_text,
    from_json_value,
    parse_document_field,
)
from cdclake.formats._sequence import SEQUENCE_WIDTH, epoch_micros, sortable_sequence
from cdclake.formats.base import JsonDecoder, key_of
from cdclake.formats.canonical import Decoded, RawMessage

KEY_COLUMNS = ["_id"]
_OPS = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "DDL": "DDL"}
_IGNORED_OPERATOR_KEYS = ("$v",)  # the oplog format version marker


class DrsMongoDecoder(JsonDecoder):
    format_id = "drs_mongo"
    description = "Huawei DRS JSON for DDS/MongoDB sources (shell-syntax value/where documents)"
    detect_priority = 30

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        if str(doc.get("dbType", "")).lower() == "mongodb":
            return True
        return "coll" in doc and "op" in doc and ("value" in doc or "where" in doc)

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        op_text = self.require(doc, "op", str)
        op = _OPS.get(op_text.strip().upper())
        if op is None:
            raise self.fail(errors.INVALID_OP,
                            f"'op' must be one of INSERT, UPDATE, DELETE, DDL, got {op_text!r}")
        record_type = str(doc.get("recordType") or doc.get("extra") or "").strip().lower()
        warnings: list[str] = []
        common: dict[str, Any] = {
            "db_type": doc.get("dbType") if doc.get("dbType") is not None else "MongoDB",
            "database": doc.get("db"),
            "table_name": doc.get("coll"),
            "event_time": epoch_micros(doc.get("es"), "ms"),
            "produced_time": epoch_micros(doc.get("ts"), "ms"),
            "source_sequence": self._sequence(doc),
            "source_position": _text_or_none(doc.get("clusterTime")),
            "warnings": warnings,
        }
        if op == "DDL":
            statement = doc.get("value") if doc.get("value") is not None else doc.get("where")
            return Decoded(rows=[self.row(message, op="DDL", ddl=_text_or_none(statement), **common)])

        value = self._document(doc, "value", required=True)
        where = self._document(doc, "where", required=False)
        types: dict[str, str] = {}
        before: dict[str, str | None] | None = None
        after: dict[str, str | None] | None = None
        after_is_full = False
        if op == "INSERT":
            after, after_is_full = self._image(value, types, warnings), True
            row_key = key_of(after, KEY_COLUMNS)
            if row_key is None:
                raise self.fail(errors.MISSING_KEY, "'value' has no '_id' on an INSERT")
        elif op == "DELETE":
            source = where if where else value
            before = self._image(source, types, warnings)
            row_key = self._key(before, "'value' (or 'where') has no '_id' on a DELETE")
        elif record_type == "update" and _is_operator_document(value):
            after = self._apply_operators(value, types, warnings)
            key_image = self._image(where, types, warnings) if where else {}
            row_key = self._key(key_image, "'where' has no '_id' on an update")
            after = {"_id": key_image["_id"], **after}
        else:  # replace (or an update whose value is a whole document)
            after, after_is_full = self._image(value, types, warnings), True
            key_image = self._image(where, types, warnings) if where else after
            row_key = self._key(key_image, "'where' has no '_id' on a replace")
            if "_id" not in after:
                after = {"_id": key_image["_id"], **after}
        return Decoded(rows=[self.row(
            message, op=op, primary_key_columns=list(KEY_COLUMNS), row_key=row_key,
            before=before, after=after, after_is_full=after_is_full, column_types=types, **common,
        )])

    # -- parts ---------------------------------------------------------------------------
    @overload
    def _document(self, doc: dict[str, Any], name: str, required: Literal[True]) -> dict[str, Any]: ...

    @overload
    def _document(self, doc: dict[str, Any], name: str, required: bool) -> dict[str, Any] | None: ...

    def _document(self, doc: dict[str, Any], name: str, required: bool) -> dict[str, Any] | None:
        raw = doc.get(name)
        if raw is None:
            if required:
                raise self.fail(errors.MISSING_FIELD, f"'{name}' is missing or null")
            return None
        if isinstance(raw, dict):  # already JSON (extended-JSON wrappers allowed inside)
            document = from_json_value(raw)
            if not isinstance(document, dict):  # the field itself is a wrapper ({"$oid": ...})
                raise self.fail(errors.INVALID_FIELD, f"'{name}' must be a document, got an "
                                f"extended-JSON {type(document).__name__} ({next(iter(raw))})")
            return document
        if not isinstance(raw, str):
            raise self.fail(errors.INVALID_FIELD, f"'{name}' must be a shell-syntax document string")
        if not raw.strip():
            if required:
                raise self.fail(errors.MISSING_FIELD, f"'{name}' is empty")
            return None
        try:
            return parse_document_field(raw, name, "MongoDB shell syntax")
        except DocumentFieldError as exc:
            raise self.fail(errors.INVALID_FIELD, str(exc)) from None

    @staticmethod
    def _image(document: dict[str, Any] | None, types: dict[str, str],
               warnings: list[str]) -> dict[str, str | None]:
        image: dict[str, str | None] = {}
        for name, value in (document or {}).items():
            text, logical = field_text(value)
            image[name] = text
            if isinstance(value, MongoDate) and value.iso is None:
                warnings.append(f"field {name!r}: {text} is outside years 1-9999; original text kept")
            if logical is not None:
                types[name] = logical
        return image

    def _key(self, image: dict[str, str | None], detail: str) -> str:
        row_key = key_of(image, KEY_COLUMNS)
        if row_key is None:
            raise self.fail(errors.MISSING_KEY, detail)
        return row_key

    def _apply_operators(self, update: dict[str, Any], types: dict[str, str],
                         warnings: list[str]) -> dict[str, str | None]:
        """The partial after image an update-operator document describes."""
        changes: dict[str, Any] = {}
        removed: list[str] = []
        for operator, fields in update.items():
            if operator in _IGNORED_OPERATOR_KEYS:
                continue
            if operator in ("$set", "$unset") or operator == "diff":
                if not isinstance(fields, dict):
                    raise self.fail(errors.INVALID_FIELD, f"'value.{operator}' must be a document")
            if operator == "$set":
                changes.update(fields)
            elif operator == "$unset":
                removed.extend(fields)
            elif operator == "diff":
                for section, body in fields.items():
                    if section in ("u", "i") and isinstance(body, dict):
                        changes.update(body)
                    elif section == "d" and isinstance(body, dict):
                        removed.extend(body)
                    else:
                        raise self.fail(errors.INVALID_FIELD,
                                        f"'value.diff.{section}' (a nested or array diff) cannot be "
                                        "applied without the current document")
            else:
                raise self.fail(errors.INVALID_FIELD,
                                f"'value' uses update operator {operator!r}, whose result is not in "
                                "the message; only $set and $unset can be applied")
        image = self._image(changes, types, warnings)
        for name in removed:
            image[name] = None
        for name in image:
            if "." in name:
                warnings.append(f"field {name!r}: a nested path was updated; kept as its own column, "
                                "the enclosing document is not rebuilt")
        return image

    @staticmethod
    def _sequence(doc: dict[str, Any]) -> str | None:
        cluster_time = _text_or_none(doc.get("clusterTime"))
        if cluster_time:
            match = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", cluster_time)
            if match:
                return f"{int(match[1]):0{SEQUENCE_WIDTH}d}:{int(match[2]):0{SEQUENCE_WIDTH}d}"
        return sortable_sequence(doc.get("id"))


def _is_operator_document(document: dict[str, Any]) -> bool:
    return bool(document) and all(k.startswith("$") or k == "diff" for k in document)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


DECODER = DrsMongoDecoder
