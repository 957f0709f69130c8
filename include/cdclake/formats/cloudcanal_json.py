"""``cloudcanal_json``: CloudCanal's default Kafka message (seed 004, "CloudCanal Json").

Decodes CloudCanal's batched ``action``/``before``/``data`` messages (one change row per ``data``
element) through the shared Canal-family decoder, ``entryType`` control messages first. In ``auto``
it is the first of the Canal family (priority 40); the precedence and the quirks are in the vendor
notes.

Vendor notes: docs/formats/cloudcanal_json.md
"""

from __future__ import annotations

from typing import Any

from cdclake.formats import errors
from cdclake.formats._canal_family import (
    BINARY_LATIN1,
    CanalFamilyDecoder,
    CanalFields,
    table_change_primary_keys,
)
from cdclake.formats.canonical import Decoded, RawMessage

ENTRY_CONTROLS = {
    "TRANSACTIONEND": "TRANSACTION_END",
    "TRANSACTION_END": "TRANSACTION_END",
    "TRANSACTIONBEGIN": "TRANSACTION_BEGIN",
    "TRANSACTION_BEGIN": "TRANSACTION_BEGIN",
    "HEARTBEAT": "HEARTBEAT",
}


class CloudCanalJsonDecoder(CanalFamilyDecoder):
    """CloudCanal Json (see its vendor notes for the precedence in ``auto``)."""

    format_id = "cloudcanal_json"
    description = "CloudCanal default JSON (batched rows, action/before/data)"
    detect_priority = 40
    binary_encoding = BINARY_LATIN1

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        if not isinstance(doc.get("action"), str):
            return False
        return "entryType" in doc or "dbValType" in doc or ("execTs" in doc and "db" in doc)

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        entry = doc.get("entryType")
        if entry is not None:
            if not isinstance(entry, str):
                raise self.fail(errors.INVALID_FIELD, "'entryType' must be a string")
            kind = entry.strip().upper()
            if kind in ENTRY_CONTROLS:
                return Decoded(control=ENTRY_CONTROLS[kind])
            is_ddl = doc.get("isDdl", doc.get("ddl")) is True
            if kind not in ("ROWDATA", "ROW_DATA") and not (kind == "DDL" and is_ddl):
                raise self.fail(errors.INVALID_OP,
                                f"'entryType' must be ROWDATA or TRANSACTIONEND, got {entry!r}")
        return super().decode_document(doc, message)

    def fields(self, doc: dict[str, Any]) -> CanalFields:
        action = self.require(doc, "action", str)
        is_ddl = doc.get("isDdl", doc.get("ddl"))
        return CanalFields(
            kind=action, kind_field="action",
            data=self._array(doc, "data"), old=self._array(doc, "before"), old_field="before",
            type_names=self._object(doc, "dbValType"), sql_types=self._object(doc, "jdbcType"),
            pk_names=self._names(doc, "pks"), table_change_pks=table_change_primary_keys(doc),
            database=self._text(doc, "db"), schema_name=self._text(doc, "schema"),
            table=self._text(doc, "table"),
            event_ms=doc.get("execTs"), event_field="execTs",
            produced_ms=doc.get("sendTs"), produced_field="sendTs",
            sequence=None, position=None,
            is_ddl=is_ddl if isinstance(is_ddl, bool) else None,
            sql=doc.get("sql") if isinstance(doc.get("sql"), str) else None,
        )


DECODER = CloudCanalJsonDecoder
