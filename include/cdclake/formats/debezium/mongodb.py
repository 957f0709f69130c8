"""MongoDB connector events: documents as extended-JSON text keyed by ``_id``;
``updateDescription`` and ``patch`` are partial images."""

from __future__ import annotations

from typing import Any

from cdclake.formats import errors
from cdclake.formats._mongo_shell import (
    DocumentFieldError,
    MongoShellSyntaxError,
    field_text,
    parse_document,
    parse_document_field,
)
from cdclake.formats.canonical import RawMessage
from cdclake.formats.debezium.base import DebeziumDecoderBase
from cdclake.formats.debezium.source import _text
from cdclake.formats.exact_json import JsonNumber, loads_exact
from cdclake.formats.kafka_connect import unwrap
from cdclake.formats.values import dumps_compact

_MONGO_KEY = ("_id",)


def _is_mongo(payload: dict[str, Any], source: dict[str, Any]) -> bool:
    """The MongoDB connector's envelope: documents as JSON text, or its own update fields.

    The shape decides whatever ``source.connector`` says: no relational connector sends a row
    image as text (Apache Iceberg's ``MongoDebeziumTransform`` tests name the connector "mongo")."""
    if str(source.get("connector") or "").lower() == "mongodb":
        return True
    return (any(isinstance(payload.get(side), str) for side in ("before", "after", "patch"))
            or isinstance(payload.get("updateDescription"), dict))


class MongoRows(DebeziumDecoderBase):
    """Rows of the MongoDB connector."""

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
