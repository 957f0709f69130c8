"""Maxwell's daemon JSON (zendesk/maxwell; also Flink/Paimon ``maxwell-json``).

Decodes Maxwell row, bootstrap and DDL messages (also several documents back to back in one value,
as TiCDC batches them); an update's before image is ``data`` overlaid with ``old``. Key columns, the
Maxwell options that change the message and the cases quarantined are in the vendor notes.

Vendor notes: docs/formats/maxwell_json.md
"""

from __future__ import annotations

from typing import Any

from cdclake.formats import errors
from cdclake.formats._plain_json import (
    micros_from_epoch_guess,
    plain_text,
    untyped_image,
    untyped_text,
)
from cdclake.formats.base import JsonDecoder, key_of, row_key_text
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.errors import DecodeError
from cdclake.formats.exact_json import JsonNumber, concatenated_objects, loads_exact
from cdclake.formats.logical_types import logical_type_from_sql_name
from cdclake.formats.values import ConversionWarning, micros_from_epoch

ROW_TYPES = {"insert": "INSERT", "update": "UPDATE", "delete": "DELETE",
             "bootstrap-insert": "SNAPSHOT"}
DDL_TYPES = frozenset({"database-create", "database-alter", "database-drop", "table-create",
                       "table-alter", "table-drop"})
CONTROL_TYPES = {"bootstrap-start": "BOOTSTRAP_START", "bootstrap-complete": "BOOTSTRAP_COMPLETE",
                 "heartbeat": "HEARTBEAT"}
# Epoch milliseconds end (year 9999) near 2.5e14; a TiDB TSO of any date after February 1970 is
# beyond 1e15 (its physical part, milliseconds, is shifted left by 18 bits).
_TSO_FLOOR = 10**15
_TSO_LOGICAL_BITS = 18


class MaxwellJsonDecoder(JsonDecoder):
    format_id = "maxwell_json"
    description = "Maxwell's daemon JSON (database/table/type/ts/xid/data/old)"
    detect_priority = 65
    concatenated_documents = True  # TiCDC's Maxwell batches
    case_insensitive_names = True

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        kind = doc.get("type")
        if not isinstance(kind, str) or "mysqlType" in doc or "isDdl" in doc:
            return False
        if "database" not in doc:
            return False
        # SeaTunnel's maxwell_json writer spells the type upper-case ("INSERT"/"DELETE"), as
        # decoding does not mind: detection must not either.
        kind = kind.strip().lower()
        if not isinstance(doc.get("ts"), JsonNumber):
            # Maxwell always sends ts; messages re-serialised by consumers (sqlite-diff-rs's
            # parse doctest) may drop it. A row change still names its table and carries its
            # row as an object, which no other format tried after Maxwell's does.
            return (kind in ROW_TYPES and isinstance(doc.get("table"), str)
                    and isinstance(doc.get("data"), dict))
        if kind in ROW_TYPES:
            # --encrypt=data: the row is in "encrypted" (older Maxwells: "data" is the ciphertext,
            # beside "init_vector"); recognised so that it is rejected as such
            return (any(isinstance(doc.get(name), dict) for name in ("data", "old", "encrypted"))
                    or isinstance(doc.get("init_vector"), str))
        return kind in DDL_TYPES or kind in CONTROL_TYPES

    def decode(self, message: RawMessage) -> Decoded:
        try:
            return super().decode(message)
        except DecodeError as exc:
            documents = concatenated_objects(message.value) if exc.reason == errors.INVALID_JSON else None
            if documents is None:
                raise
        return self.decode_documents(documents, message)

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        if "type" not in doc and isinstance(doc.get("encrypted"), dict):
            raise self.fail(errors.INVALID_FIELD,
                            "message is encrypted (Maxwell --encrypt=all): cannot be decoded here")
        if "type" not in doc and isinstance(doc.get("reason"), str) and isinstance(doc.get("data"), dict):
            # RowIdentity.toFallbackValueWithReason: what dead_letter_topic receives when a row
            # could not be published; it holds the key columns only, not the change.
            raise self.fail(errors.MISSING_FIELD,
                            f"Maxwell dead_letter_topic skeleton row (key columns only; publishing "
                            f"failed: {doc['reason'][:200]!r}), not a change")
        kind_text = self.require(doc, "type", str)
        kind = kind_text.strip().lower()
        if kind in CONTROL_TYPES:
            return Decoded(control=CONTROL_TYPES[kind])
        database = plain_text(doc.get("database"))
        table = plain_text(doc.get("table"))
        common: dict[str, Any] = {
            "database": database, "table_name": table, "event_time": self._ts(doc, kind in DDL_TYPES),
            "source_position": plain_text(doc.get("position")),
            "transaction_id": plain_text(doc.get("xid")),
        }
        if kind in DDL_TYPES:
            return Decoded(rows=[self._ddl_row(doc, message, common)])
        op = ROW_TYPES.get(kind)
        if op is None:
            raise self.fail(errors.INVALID_OP,
                            f"'type' {kind_text!r} is not a Maxwell row, DDL or bootstrap type")
        data = doc.get("data")
        old = doc.get("old")
        if data is None and isinstance(doc.get("encrypted"), dict):
            raise self.fail(errors.INVALID_FIELD,
                            "'data' is encrypted (Maxwell --encrypt=data): cannot be decoded here")
        if isinstance(data, str) and isinstance(doc.get("init_vector"), str):
            raise self.fail(errors.INVALID_FIELD,
                            "'data' is encrypted (an older Maxwell's --encrypt=data: ciphertext "
                            "beside 'init_vector'): cannot be decoded here")
        for name, value in (("data", data), ("old", old)):
            if value is not None and not isinstance(value, dict):
                raise self.fail(errors.INVALID_FIELD, f"'{name}' must be an object")
        if (data if data is not None or op != "DELETE" else old) == {}:
            # No column at all: Maxwell's bootstrap of a table it has no columns for (issue #1354:
            # upper-case table names gave "primary_key":[],"data":{}). Written as a row, it would
            # add an empty row to the table; an all-NULL row under output_nulls=false looks the same.
            raise self.fail(errors.MISSING_FIELD,
                            f"'data' is empty for type {kind_text!r}: no column values, no row")
        if op == "DELETE":
            row = data if data is not None else old
            if row is None:
                raise self.fail(errors.MISSING_FIELD, "'data' is missing for a delete")
            before, after = untyped_image(row), None
        else:
            if data is None:
                raise self.fail(errors.MISSING_FIELD, f"'data' is missing for type {kind_text!r}")
            after = untyped_image(data) or {}
            before = None
            if op == "UPDATE":
                changed = untyped_image(old) or {}
                for name in changed:
                    after.setdefault(name, None)  # changed, and left out of data: now NULL
                before = {**after, **changed}

        image = before if op == "DELETE" else after
        keys = self._key_columns(doc, message, database, table, image or {})
        row_key = key_of(image, keys) if keys else None
        if row_key is None:
            row_key = self._key_values(doc, message)
        if row_key is None and keys and op in ("UPDATE", "DELETE"):
            raise self.fail(errors.MISSING_KEY,
                            f"key columns {keys} are not all in the {op.lower()} image")
        return Decoded(rows=[self.row(
            message, op=op, primary_key_columns=keys, row_key=row_key, before=before, after=after,
            after_is_full=op in ("INSERT", "SNAPSHOT"), **common)])

    # -- parts ---------------------------------------------------------------------------
    def _ts(self, doc: dict[str, Any], ddl: bool) -> int | None:
        value = doc.get("ts")
        if value is None:
            return None
        try:
            text = str(value).strip()
            if ddl and text.isascii() and text.isdigit() and len(text) <= 20 and int(text) >= _TSO_FLOOR:
                # TiCDC (ddlEventToMaxwellMsg: ``Ts: e.CommitTs``): the commit TSO.
                return micros_from_epoch(int(text) >> _TSO_LOGICAL_BITS, "ms")
            return micros_from_epoch_guess(value)
        except ConversionWarning:
            raise self.fail(errors.INVALID_FIELD, f"'ts' must be epoch seconds, got {value!r}") from None

    def _ddl_row(self, doc: dict[str, Any], message: RawMessage, common: dict[str, Any]) -> dict[str, Any]:
        definition = doc.get("def")
        types: dict[str, str] = {}
        keys: list[str] = []
        if isinstance(definition, dict):
            columns = definition.get("columns")
            for column in columns if isinstance(columns, list) else []:
                if isinstance(column, dict) and isinstance(column.get("name"), str):
                    sql_type = str(column.get("type") or "")
                    if column.get("precision") is not None:
                        sql_type += f"({column['precision']},{column.get('scale') or 0})"
                    if column.get("signed") is False:
                        sql_type += " unsigned"
                    types[column["name"]] = logical_type_from_sql_name(sql_type)
            primary = definition.get("primary-key")
            keys = [str(k) for k in primary] if isinstance(primary, list) else []
        sql = doc.get("sql")
        return self.row(message, op="DDL", ddl=sql if isinstance(sql, str) else None,
                        column_types=types, primary_key_columns=keys, **common)

    def _key_columns(self, doc: dict[str, Any], message: RawMessage, database: str | None,
                     table: str | None, image: dict[str, Any]) -> list[str]:
        override = self.key_override(database, table)
        if override:
            return list(override)
        names = _field(doc, "primary_key_columns")
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            if "primary_key_columns" not in doc:  # written with underscore_to_camelcase
                return [camel_case_name(name) for name in names]
            return _image_names(names, image)
        return _image_names([name for name, _ in _kafka_key_pairs(message)], image)

    def _key_values(self, doc: dict[str, Any], message: RawMessage) -> str | None:
        values = _field(doc, "primary_key")
        if isinstance(values, list) and values:
            return row_key_text([untyped_text(v) for v in values])
        pairs = _kafka_key_pairs(message)
        if pairs:
            return row_key_text([untyped_text(v) for _, v in pairs])
        return None


def camel_case_name(name: str) -> str:
    """Maxwell's ``underscore_to_camelcase`` rewrite (``FieldNameStrategy.underscore2Camel``): each
    ``_`` is dropped and a lower-case letter after it upper-cased; leading and trailing ``_`` go;
    a name of underscores only stays as it is."""
    out: list[str] = []
    index, end = 0, len(name)
    while index < end:
        char = name[index]
        if char == "_":
            if out and index + 1 < end:
                index += 1
                following = name[index]
                upper = following.upper()  # Java's toUpperCase(char): one char for one
                out.append(upper if following.islower() and len(upper) == 1 else following)
        else:
            out.append(char)
        index += 1
    return "".join(out) or name


def _field(doc: dict[str, Any], name: str) -> Any:
    """``doc[name]``, or its ``underscore_to_camelcase`` spelling (``primaryKeyColumns``)."""
    return doc[name] if name in doc else doc.get(camel_case_name(name))


def _image_names(keys: list[str], image: dict[str, Any]) -> list[str]:
    """Key column names as the image spells them: as written, else Maxwell's camel-case rewrite,
    else the one column equal ignoring case; a name found none of these ways stays as written."""
    resolved = []
    for key in keys:
        if key not in image:
            camel = camel_case_name(key)
            folded = [name for name in image if name.casefold() == key.casefold()]
            if camel in image:
                key = camel
            elif len(folded) == 1:
                key = folded[0]
        resolved.append(key)
    return resolved


def _kafka_key_pairs(message: RawMessage) -> list[tuple[str, Any]]:
    """Key columns and values from Maxwell's Kafka key (hash or array form); [] if none."""
    if not message.key:
        return []
    try:
        key = loads_exact(message.key.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return []
    if isinstance(key, dict):
        return [(name[3:], value) for name, value in key.items()
                if isinstance(name, str) and name.startswith("pk.")]
    if isinstance(key, list) and len(key) == 3 and isinstance(key[2], list):
        return [(str(name), value) for item in key[2] if isinstance(item, dict)
                for name, value in item.items()]
    return []


DECODER = MaxwellJsonDecoder
