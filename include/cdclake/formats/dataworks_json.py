"""Alibaba Cloud DataWorks real-time sync to Kafka (seed 002).

Decodes DataWorks' ``schema``/``payload`` messages by the six DataWorks column types, merging the
UPDATE_BEFOR/UPDATE_AFTER halves of an update into one UPDATE. The message layout, the op rules and
row identity are in the vendor notes.

Vendor notes: docs/formats/dataworks_json.md
"""

from __future__ import annotations

from typing import Any

from cdclake.formats import _dataworks as dw
from cdclake.formats import errors
from cdclake.formats._sequence import sortable_sequence
from cdclake.formats.base import JsonDecoder
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.values import boolean_text, integer_text, iso_utc_from_epoch_text, text_of

DML_OPS = ("INSERT", "UPDATE_BEFOR", "UPDATE_AFTER", "DELETE")
KNOWN_OPS = (*DML_OPS, "TRUNCATE", *sorted(dw.DDL_OPS), *dw.CONTROL_OPS)


def _number_text(value: Any) -> str:
    return text_of(value) or ""


def _date_text(value: Any) -> str:
    return iso_utc_from_epoch_text(str(value), "ms")


# DataWorks type -> (converter, logical type)
TYPE_RULES: dict[str, tuple[dw.Converter, str]] = {
    "LONG": (integer_text, "LONG"),
    "DOUBLE": (_number_text, "DOUBLE"),
    "BOOLEAN": (boolean_text, "BOOLEAN"),
    "DATE": (_date_text, "TIMESTAMP"),
    "BYTES": (dw.strict_base64, "BINARY"),
    "STRING": (_number_text, "STRING"),
}


class DataWorksJsonDecoder(JsonDecoder):
    format_id = "dataworks_json"
    description = "Alibaba DataWorks real-time sync to Kafka (dataColumn, UPDATE_BEFOR/UPDATE_AFTER)"
    detect_priority = 10

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        payload, schema = doc.get("payload"), doc.get("schema")
        if not isinstance(payload, dict) or "op" not in payload:
            return False
        return (isinstance(schema, dict) and "dataColumn" in schema) or "sequenceId" in payload

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        payload = self.require(doc, "payload", dict)
        op = self.require(payload, "op", str, where="payload")
        control = dw.control_kind(op)
        if control is not None:
            return Decoded(control=control)
        if op == "UPDATE_BEFORE":  # tolerate the corrected spelling
            op = "UPDATE_BEFOR"
        dw.check_op(self, op, KNOWN_OPS)
        schema = self.require(doc, "schema", dict)
        source = self.require(schema, "source", dict, where="schema")
        table = self.require(source, "tableName", str, where="schema.source")
        sequence_id = payload.get("sequenceId")
        scn = payload.get("scn")
        common: dict[str, Any] = dict(
            db_type=source.get("dbType"), database=source.get("dbName"),
            schema_name=source.get("schemaName"), table_name=table,
            source_sequence=sortable_sequence(sequence_id),
            source_position=None if scn is None or str(scn).lower() == "null" else str(scn),
            **dw.times(self, payload),
        )
        if op in dw.DDL_OPS or op == "TRUNCATE":
            row = self.row(message, op="TRUNCATE" if op == "TRUNCATE" else "DDL",
                           ddl=dw.ddl_text(payload), **common)
            return Decoded(rows=[row])

        declared = dw.declared_types(self, schema, "dataColumn", upper=True)
        warnings: list[str] = []
        types: dict[str, str] = {}

        def rule(column: str, value: Any) -> tuple[dw.Converter, str | None]:
            type_name = declared.get(column)
            if type_name == "LONG" and value is not None:
                return integer_text, dw.integer_logical_type(value)
            if type_name in TYPE_RULES:
                return TYPE_RULES[type_name]
            return _number_text, None  # undeclared column or unknown type: value as written

        raw_before = dw.image_data(self, payload, "before", "dataColumn")
        raw_after = dw.image_data(self, payload, "after", "dataColumn")
        before = dw.convert_image(self, raw_before, rule, types, warnings)
        after = dw.convert_image(self, raw_after, rule, types, warnings)
        keys = dw.key_columns(self, schema.get("primaryKey"), "schema.primaryKey",
                              source.get("dbName"), table, [raw_after, raw_before])
        pair_key = pair_role = None
        if op == "INSERT":
            self._need(after, "after", op)
            before, row_op = None, "INSERT"
        elif op == "DELETE":
            self._need(before, "before", op)
            after, row_op = None, "DELETE"
        else:
            row_op = "UPDATE"
            if op == "UPDATE_BEFOR":
                self._need(before, "before", op)
            else:
                self._need(after, "after", op)
            if before is None or after is None:  # one half of a two-message update
                pair_role = "BEFORE" if after is None else "AFTER"
                if sequence_id is not None:
                    pair_key = f"dataworks:{source.get('dbName')}.{table}:{sequence_id}"
        row = dw.change_row(self, message, op=row_op, keys=keys, before=before, after=after,
                            types=types, warnings=warnings, pair_key=pair_key,
                            pair_role=pair_role if pair_key else None, **common)
        return Decoded(rows=[row])

    def _need(self, image: dict[str, Any] | None, side: str, op: str) -> None:
        if image is None:
            raise self.fail(errors.MISSING_FIELD, f"'payload.{side}.dataColumn' is missing or null on {op}")


DECODER = DataWorksJsonDecoder
