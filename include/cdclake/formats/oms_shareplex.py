"""SharePlex JSON: OceanBase OMS's "SharePlex" serialisation (seed 003) and Alibaba Cloud DTS's
"Shareplex Json" (its Kafka data-format page).

Decodes ``data``/``meta``/``key`` messages (``ins``/``upd``/``del``, ``ddl``, ``heartbeat``); no
key column names are sent, so the row identity comes from ``meta.rowid`` unless configuration names
key columns. The OMS and DTS differences are in the vendor notes.

Vendor notes: docs/formats/oms_shareplex.md
"""

from __future__ import annotations

import re
from typing import Any

from cdclake.formats import errors
from cdclake.formats._oms import split_key_text
from cdclake.formats._plain_json import (
    plain_text,
    sortable_sequence,
    untyped_image,
    wall_clock_field,
)
from cdclake.formats.base import JsonDecoder, key_of, row_key_text
from cdclake.formats.canonical import Decoded, RawMessage

OPS = {"ins": "INSERT", "upd": "UPDATE", "del": "DELETE",
       # Alibaba Cloud DTS's documented op names
       "insert": "INSERT", "update": "UPDATE", "delete": "DELETE", "truncate": "TRUNCATE"}
# Oracle ROWID: extended (18 characters of Oracle's base64 alphabet) or restricted
# (block.row.file in hex).
_ORACLE_ROWID = re.compile(r"^(?:[A-Za-z0-9+/]{18}|[0-9A-Fa-f]{8}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4})$")
DDL_OP = "ddl"  # OMS: the statement is in sql.ddl
HEARTBEAT_OP = "heartbeat"  # OMS: the periodic heartbeat, no table and no row
TIME_EXAMPLE = "2020-11-25T00:01:02"  # meta.time, meta.posttime: source time zone


class OmsSharePlexDecoder(JsonDecoder):
    format_id = "oms_shareplex"
    description = "OceanBase OMS SharePlex JSON (data/meta/key; row identity from meta.rowid)"
    detect_priority = 25

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        meta = doc.get("meta")
        if not isinstance(meta, dict):
            return False
        op = str(meta.get("op", "")).lower()
        if op == DDL_OP:
            return isinstance(doc.get("sql"), dict) and "table" in meta
        if op == HEARTBEAT_OP:
            return isinstance(doc.get("data"), dict) and "posttime" in meta and "scn" in meta
        return (op in OPS
                and (isinstance(doc.get("data"), dict) or op == "truncate")
                and ("rowid" in meta or "table" in meta))

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        meta = self.require(doc, "meta", dict)
        op_text = self.require(meta, "op", str, where="meta")
        if op_text.strip().lower() == DDL_OP:
            return Decoded(rows=[self._ddl_row(doc, meta, message)])
        if op_text.strip().lower() == HEARTBEAT_OP:
            return Decoded(control="HEARTBEAT")
        op = OPS.get(op_text.strip().lower())
        if op is None:
            raise self.fail(errors.INVALID_OP, f"'meta.op' {op_text!r} is not ins, upd, del, ddl, "
                                               "heartbeat (INSERT, UPDATE, DELETE) or TRUNCATE")
        if op == "TRUNCATE":
            return Decoded(rows=[self._truncate_row(meta, message)])
        data = self.require(doc, "data", dict)
        key = doc.get("key")
        if key is not None and not isinstance(key, dict):
            raise self.fail(errors.INVALID_FIELD, "'key' must be an object")
        qualified = self.require(meta, "table", str, where="meta")
        database, dot, table = qualified.partition(".")
        if not dot:
            database, table = "", qualified

        image = untyped_image(data)
        if op == "INSERT":
            before, after = None, image
        elif op == "UPDATE":
            before, after = untyped_image(key), image
        else:
            before, after = image, None

        override = self.key_override(database or None, table)
        keys = list(override) if override else []
        row_key = key_of(after if op != "DELETE" else before, keys) if keys else None
        if row_key is None and keys and op == "UPDATE":
            row_key = key_of(before, keys)  # a partial after image may lack the key columns
        if row_key is None:
            row_key = self._rowid_key(meta, qualified)
        if row_key is None:
            raise self.fail(errors.MISSING_KEY,
                            f"'meta.rowid' is missing for a {op_text!r} and no key columns are "
                            "configured: nothing identifies the row")
        return Decoded(rows=[self.row(
            message, op=op, database=database or None, table_name=table,
            primary_key_columns=keys, row_key=row_key, before=before, after=after,
            after_is_full=op == "INSERT",
            event_time=wall_clock_field(self, meta, "time", "meta.time", TIME_EXAMPLE),
            produced_time=wall_clock_field(self, meta, "posttime", "meta.posttime", TIME_EXAMPLE),
            source_sequence=sortable_sequence(meta.get("scn")),
            transaction_id=plain_text(meta.get("trans")),
        )])

    def _ddl_row(self, doc: dict[str, Any], meta: dict[str, Any],
                 message: RawMessage) -> dict[str, Any]:
        """``op`` ddl: the statement in ``sql.ddl``, the table in ``meta.table``."""
        sql = self.require(doc, "sql", dict)
        statement = self.require(sql, "ddl", str, where="sql")
        qualified = self.require(meta, "table", str, where="meta")
        database, dot, table = qualified.partition(".")
        if not dot:
            database, table = "", qualified
        return self.row(
            message, op="DDL", database=database or None, table_name=table or None,
            ddl=statement,
            event_time=wall_clock_field(self, meta, "time", "meta.time", TIME_EXAMPLE),
            produced_time=wall_clock_field(self, meta, "posttime", "meta.posttime", TIME_EXAMPLE),
            source_sequence=sortable_sequence(meta.get("scn")),
            transaction_id=plain_text(meta.get("trans")),
        )

    def _truncate_row(self, meta: dict[str, Any], message: RawMessage) -> dict[str, Any]:
        qualified = self.require(meta, "table", str, where="meta")
        database, dot, table = qualified.partition(".")
        if not dot:
            database, table = "", qualified
        return self.row(
            message, op="TRUNCATE", database=database or None, table_name=table,
            event_time=wall_clock_field(self, meta, "time", "meta.time", TIME_EXAMPLE),
            produced_time=wall_clock_field(self, meta, "posttime", "meta.posttime", TIME_EXAMPLE),
            source_sequence=sortable_sequence(meta.get("scn")),
            transaction_id=plain_text(meta.get("trans")),
        )

    def _rowid_key(self, meta: dict[str, Any], qualified: str) -> str | None:
        rowid = meta.get("rowid")
        if rowid is None or rowid == "":
            return None
        if not isinstance(rowid, str):
            raise self.fail(errors.INVALID_FIELD, "'meta.rowid' must be a string")
        prefix = f"{qualified}-"
        if not rowid.startswith(prefix):
            if _ORACLE_ROWID.match(rowid):  # Alibaba Cloud DTS: the source row's ROWID
                return row_key_text([rowid])
            raise self.fail(errors.INVALID_FIELD,
                            f"'meta.rowid' must start with '{prefix}' (meta.table followed by '-', "
                            f"OMS) or be an Oracle ROWID (Alibaba Cloud DTS), got {rowid[:60]!r}")
        return row_key_text(list(split_key_text(rowid[len(prefix):])))


DECODER = OmsSharePlexDecoder
