"""The shared base of every format decoder: field checks, keys, update pairing, options.

A format module subclasses :class:`JsonDecoder` (or :class:`Decoder` for binary formats), states
its ``format_id``, ``description`` and structural signature (:meth:`JsonDecoder.matches`), and
turns one parsed message into :class:`~cdclake.formats.canonical.Decoded` rows. Everything a
format does not state (JSON parsing with exact numbers, error wording, key text) lives here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cdclake.formats import errors
from cdclake.formats.canonical import Decoded, RawMessage, new_change_row
from cdclake.formats.errors import DecodeError
from cdclake.formats.exact_json import loads_exact
from cdclake.formats.values import ConversionWarning, dumps_compact

MAX_VALUE_BYTES_DEFAULT = 16 * 1024 * 1024


@dataclass(frozen=True)
class FormatOptions:
    """Per-topic decoding options (from the pipeline configuration)."""

    source_timezone: str = "UTC"
    # "db.table" or "table" -> key column names; wins over what the message says.
    primary_key_overrides: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # "db.table" or "table" -> columns typed STRING whatever the message declares (values as
    # the decoder gives them): the way out when a source sends values its declared type cannot
    # hold, which would otherwise fail the table at compaction.
    string_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Path of a vendor Avro schema file (drs_avro needs one).
    schema_file: str | None = None
    max_value_bytes: int = MAX_VALUE_BYTES_DEFAULT
    # debezium_json: the topic carries ExtractNewRecordState output (rows without the envelope;
    # a delete is a tombstone, read as the delete of its key) rather than envelopes, whose
    # tombstones only follow a delete event and are control messages.
    flattened: bool = False
    # "database.table" or "database.schema.table": the table of messages that name none
    # (tombstones; flattened rows without __db/__table), as the topic's other rows name it.
    source_table: str | None = None
    # Canal family (canal_json, drs_json, ...): how binary columns travel when the topic differs
    # from the format's own encoding, which the message cannot show: "hex" for Tencent Cloud
    # DTS Canal JSON in its "not fully compatible" mode (HexString); also "latin1", "base64",
    # "byte_list". None = the format's documented encoding.
    binary_encoding: str | None = None
    # Canal family: UPDATE ``data`` is the before image and ``old`` the after image (Alibaba Cloud
    # DTS Canal Json from instances created before 2022-03-20; the message cannot show it).
    update_images_swapped: bool = False
    # ogg_json: the zone of ``current_ts`` (the replicat host's clock) when it is not
    # ``source_timezone`` (``goldengate.userexit.timestamp=utc`` makes ``op_ts`` UTC only).
    produced_timezone: str | None = None
    # debezium_json: the connector's ``unavailable.value.placeholder`` when it is not Debezium's
    # default ``__debezium_unavailable_value`` (``hex:`` and hex digits for bytes, as Debezium
    # reads it). Columns holding it were not captured: they are left out of the image.
    unavailable_value_placeholder: str | None = None


def _table_option(option: dict[str, tuple[str, ...]], database: str | None,
                  table: str | None) -> tuple[str, ...] | None:
    """A per-table option's columns, keyed ``db.table`` or, for any database, ``table``."""
    for name in (f"{database}.{table}", f"{table}"):
        if name in option:
            return tuple(option[name])
    return None


def source_table_parts(text: str) -> tuple[str, str | None, str]:
    """A topic's ``source_table`` -> (database, schema or None, table); ValueError unless it is
    ``database.table`` or ``database.schema.table``."""
    parts = text.split(".")
    if len(parts) not in (2, 3) or not all(part.strip() for part in parts):
        raise ValueError(f"the topic's 'source_table' must be database.table or database.schema.table, "
                         f"got {text!r}")
    return parts[0], parts[1] if len(parts) == 3 else None, parts[-1]


class Decoder:
    """One vendor format. Subclasses set the class attributes and implement :meth:`decode`."""

    format_id: ClassVar[str] = ""
    description: ClassVar[str] = ""
    # Lower runs first in ``auto`` detection; None = never auto-detected (binary formats).
    detect_priority: ClassVar[int | None] = None
    # The format's sources compare column names ignoring case (MySQL and its kin, Oracle), so
    # ``Name`` and ``name`` are one column (see ``identifiers.case_insensitive_source``).
    case_insensitive_names: ClassVar[bool] = False

    def __init__(self, options: FormatOptions | None = None) -> None:
        self.options = options or FormatOptions()

    # -- to implement --------------------------------------------------------------------
    def decode(self, message: RawMessage) -> Decoded:
        raise NotImplementedError

    # -- helpers for subclasses ---------------------------------------------------------
    def fail(self, reason: str, detail: str) -> DecodeError:
        """An error to ``raise``: ``self.fail(errors.MISSING_FIELD, "'data' is missing")``."""
        return DecodeError(self.format_id, reason, detail)

    def row(self, message: RawMessage, record_index: int = 0, **values: Any) -> dict[str, Any]:
        return new_change_row(self.format_id, message, record_index, **values)

    def require(self, doc: dict[str, Any], name: str, *types: type, where: str = "",
                nullable: bool = False) -> Any:
        """``doc[name]``, checked present (and non-null unless ``nullable``) and of ``types``."""
        label = f"'{where}.{name}'" if where else f"'{name}'"
        if name not in doc:
            raise self.fail(errors.MISSING_FIELD, f"{label} is missing")
        value = doc[name]
        if value is None:
            if nullable:
                return None
            raise self.fail(errors.MISSING_FIELD, f"{label} is null")
        if types and not isinstance(value, types):
            wanted = " or ".join(_type_word(t) for t in types)
            raise self.fail(errors.INVALID_FIELD,
                            f"{label} must be {wanted}, got {_type_word(type(value))}")
        return value

    def invalid(self, label: str, wanted: str, value: Any) -> DecodeError:
        """An ``INVALID_FIELD`` error to ``raise``: ``'label' must be <wanted>, got <kind>``."""
        return self.fail(errors.INVALID_FIELD, f"'{label}' must be {wanted}, got {kind_of(value)}")

    def key_override(self, database: str | None, table: str | None) -> tuple[str, ...] | None:
        return _table_option(self.options.primary_key_overrides, database, table)

    def string_columns(self, database: str | None, table: str | None) -> tuple[str, ...]:
        """The columns of ``database.table`` the topic types STRING (option ``string_columns``)."""
        return _table_option(self.options.string_columns, database, table) or ()

    @staticmethod
    def convert(value: Any, converter: Any, warnings: list[str], column: str) -> str | None:
        """Apply ``converter``; on :class:`ConversionWarning` keep the original text and warn."""
        if value is None:
            return None
        try:
            return converter(value)
        except ConversionWarning as exc:
            warnings.append(f"column {column!r}: {exc}; original text kept")
            return value if isinstance(value, str) else dumps_compact(value)


class JsonDecoder(Decoder):
    """A format whose Kafka value is one JSON document (UTF-8)."""

    # True for formats whose Kafka value may hold several documents written back to back (TiCDC's
    # Maxwell batches, GoldenGate's transaction mode); ``auto`` hands such a value whole to the
    # format its first document matches.
    concatenated_documents: ClassVar[bool] = False

    def decode(self, message: RawMessage) -> Decoded:
        doc = parse_json_value(self.format_id, message, self.options.max_value_bytes)
        if not isinstance(doc, dict):
            raise self.fail(errors.INVALID_FIELD, "message must be a JSON object")
        return self.decode_document(doc, message)

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        """True when ``doc`` has this format's structural signature (for ``auto``)."""
        return False

    @classmethod
    def detected(cls, options: FormatOptions) -> JsonDecoder:
        """The decoder ``auto`` uses once :meth:`matches` chose this format."""
        return cls(options)

    def decode_document(self, doc: dict[str, Any], message: RawMessage) -> Decoded:
        raise NotImplementedError

    def decode_documents(self, documents: list[dict[str, Any]], message: RawMessage,
                         name_error: Callable[[int, DecodeError], DecodeError] | None = None) -> Decoded:
        """The rows of several documents written back to back in one value, ``record_index`` each
        row's document; one bad document fails the whole message (``name_error`` may say which)."""
        rows: list[dict[str, Any]] = []
        control = None
        for index, document in enumerate(documents):
            try:
                decoded = self.decode_document(document, message)
            except DecodeError as exc:
                if name_error is None:
                    raise
                raise name_error(index, exc) from None
            control = control or decoded.control
            for row in decoded.rows:
                row["record_index"] = index
                rows.append(row)
        return Decoded(rows=rows) if rows else Decoded(control=control)


def parse_json_value(format_id: str, message: RawMessage, max_bytes: int) -> Any:
    """The message value as JSON with exact numbers, or a :class:`DecodeError` saying why not."""
    value = message.value
    if value is None:
        raise DecodeError(format_id, errors.EMPTY_VALUE, "value is null (tombstone)")
    if len(value) == 0:
        raise DecodeError(format_id, errors.EMPTY_VALUE, "value is empty")
    if len(value) > max_bytes:
        raise DecodeError(format_id, errors.TOO_LARGE,
                          f"value is {len(value)} bytes, over the limit of {max_bytes}")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(format_id, errors.INVALID_ENCODING,
                          f"value is not UTF-8 text (byte {exc.start})") from None
    try:
        return loads_exact(text)
    except ValueError as exc:
        raise DecodeError(format_id, errors.INVALID_JSON, f"value is not JSON: {exc}") from None


def row_key_text(values: list[str | None]) -> str:
    """Canonical text of key values: a compact JSON array of their canonical texts."""
    return dumps_compact(list(values))


def key_of(image: dict[str, str | None] | None, columns: list[str] | tuple[str, ...]) -> str | None:
    """``row_key`` from an image and key columns; None if the image lacks any key column."""
    if not image or not columns or any(c not in image for c in columns):
        return None
    return row_key_text([image[c] for c in columns])


def key_of_any_case(image: dict[str, str | None] | None,
                    columns: list[str] | tuple[str, ...]) -> str | None:
    """:func:`key_of` for sources that compare column names ignoring case (MySQL, Oracle): a
    key column the image spells otherwise (key ``k1``, column ``K1``) is the one column that
    matches it ignoring case; None if none or several do."""
    if not image or not columns:
        return None
    spelled = []
    for column in columns:
        if column not in image:
            matches = [name for name in image if name.lower() == column.lower()]
            if len(matches) != 1:
                return None
            column = matches[0]
        spelled.append(column)
    return key_of(image, spelled)


PAIR_KEY = "_pair_key"    # rows that are halves of one update carry the same pair key
PAIR_ROLE = "_pair_role"  # "BEFORE" or "AFTER"


def pair_update_halves(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge two-message updates (e.g. DataWorks UPDATE_BEFOR + UPDATE_AFTER) into one UPDATE.

    Halves share ``_pair_key``. A complete pair becomes one row: the AFTER half's lineage with the
    BEFORE half's ``before`` image. A lone half stays an UPDATE with the image it has, so a pair
    split across hours still yields a correct current state. Output keeps input order.
    """
    halves: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        if row.get(PAIR_KEY) is not None:
            halves.setdefault(row[PAIR_KEY], {})[row[PAIR_ROLE]] = row
    out: list[dict[str, Any]] = []
    emitted: set[str] = set()
    for row in rows:
        pair_key = row.get(PAIR_KEY)
        if pair_key is None:
            out.append(row)
            continue
        if pair_key in emitted:
            continue
        emitted.add(pair_key)
        pair = halves[pair_key]
        merged = merge_pair(pair.get("BEFORE"), pair.get("AFTER"))
        out.append(merged)
    return out


def merge_pair(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    """One UPDATE row from the halves of a two-message update (either may be missing)."""
    base = dict(after if after is not None else before)  # type: ignore[arg-type]
    if before is not None and after is not None:
        base["before"] = before.get("before")
        types = dict(before.get("column_types") or {})
        types.update(after.get("column_types") or {})
        base["column_types"] = types
        base["warnings"] = list(before.get("warnings") or []) + list(after.get("warnings") or [])
        if base.get("row_key") is None:
            base["row_key"] = before.get("row_key")
    base.pop(PAIR_KEY, None)
    base.pop(PAIR_ROLE, None)
    return base


def kind_of(value: Any) -> str:
    """The JSON kind of a parsed value, for messages: ``a string``, ``a number``, ``an array``..."""
    return _type_word(type(value))


def _type_word(t: type) -> str:
    from cdclake.formats.exact_json import JsonNumber

    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            JsonNumber: "a number", int: "a number", type(None): "null"}.get(t, t.__name__)
