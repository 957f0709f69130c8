"""Decode a batch of raw messages with one format: rows, rejections and control messages.

The CLI and the Spark path both call :func:`decode_one` per message, so both give the same rows.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdclake.formats import errors
from cdclake.formats.base import Decoder, _type_word, key_of, pair_update_halves, source_table_parts
from cdclake.formats.canonical import CHANGE_ROW_COLUMNS, TIME_FIELDS, RawMessage
from cdclake.formats.errors import DecodeError

# Times every consumer (Spark, Arrow, Python datetime) can hold: 0001-01-01 .. 9999-12-31.
MIN_MICROS = -62_135_596_800_000_000
MAX_MICROS = 253_402_300_799_999_999
# Text fields of a change row: a vendor value of another JSON type (a table name that is an
# array, say) is a bad message, not a row (Spark could not even store it).
TEXT_FIELDS = tuple(name for name, sql_type in CHANGE_ROW_COLUMNS if sql_type == "string")
_TEXT_OR_NULL = (str, type(None))
_ROW_OPS = frozenset({"INSERT", "SNAPSHOT", "UPDATE", "DELETE"})
# Changes that must name the table they apply to (a DDL may name only its database).
_TABLE_OPS = _ROW_OPS | {"TRUNCATE"}


@dataclass(frozen=True)
class Rejected:
    message: RawMessage
    format_id: str
    reason: str
    detail: str


@dataclass
class Outcome:
    """What one message became: change rows, a control kind, or a rejection."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    control: str | None = None
    rejected: Rejected | None = None


@dataclass
class BatchResult:
    rows: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    controls: list[tuple[RawMessage, str]] = field(default_factory=list)


_FORMATS_DIR = Path(__file__).resolve().parent


def crash_site(exc: BaseException) -> str:
    """Where a decoder raised: the innermost frame in the decoders' package (else the innermost)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if Path(f.filename).resolve().is_relative_to(_FORMATS_DIR)]
    frame = (ours or frames)[-1] if frames else None
    if frame is None:
        return "decoder error"
    where = Path(frame.filename).resolve()
    shown = where.relative_to(_FORMATS_DIR.parents[1]) if where.is_relative_to(_FORMATS_DIR.parents[1]) \
        else where.name
    return f"decoder error at {shown}:{frame.lineno}"


def decode_one(decoder: Decoder, message: RawMessage) -> Outcome:
    """Decode one message; bad input becomes a :class:`Rejected`, never an exception."""
    try:
        decoded = decoder.decode(message)
    except DecodeError as exc:
        return Outcome(rejected=Rejected(message, exc.format_id, exc.reason, str(exc)))
    except Exception as exc:  # a decoder bug must not lose the message: quarantine it, loudly
        detail = f"{decoder.format_id}: unexpected {type(exc).__name__}: {exc} ({crash_site(exc)})"
        return Outcome(rejected=Rejected(message, decoder.format_id, errors.DECODER_ERROR, detail))
    if decoded.control is not None and not decoded.rows:
        return Outcome(control=decoded.control)
    if not decoded.rows:
        detail = f"{decoder.format_id}: message produced no change rows and is not a control message"
        return Outcome(rejected=Rejected(message, decoder.format_id, errors.MISSING_FIELD, detail))
    for row in decoded.rows:
        problem = _row_problem(decoder, row)
        if problem is not None:
            # Under ``auto`` the row names the format detected: that is the format tried.
            detected = row.get("source_format")
            format_id = detected if isinstance(detected, str) and detected else decoder.format_id
            reason, text = problem
            return Outcome(rejected=Rejected(message, format_id, reason, f"{format_id}: {text}"))
    if decoder.options.string_columns:
        for row in decoded.rows:
            _type_as_strings(decoder, row)
    return Outcome(rows=decoded.rows)


def _type_as_strings(decoder: Decoder, row: dict[str, Any]) -> None:
    """Type the topic's ``string_columns`` of the row's table STRING (a new mapping: decoders
    share one ``column_types`` between the rows of a type declaration)."""
    names = decoder.string_columns(row.get("database"), row.get("table_name"))
    carried = set(row.get("column_types") or ()).union(row.get("before") or (), row.get("after") or ())
    retyped = {name: "STRING" for name in names if name in carried}
    if retyped:
        row["column_types"] = {**(row.get("column_types") or {}), **retyped}


def _row_problem(decoder: Decoder, row: dict[str, Any]) -> tuple[str, str] | None:
    """Why a decoded row cannot be stored or placed, as (reason code, text); None if it can.
    Fills the row's event time and, for a change naming no table, the topic's source table."""
    not_text = [name for name in TEXT_FIELDS if not isinstance(row.get(name), _TEXT_OR_NULL)]
    if not_text:
        name = not_text[0]
        return errors.INVALID_FIELD, f"'{name}' must be text, got {_type_word(type(row[name]))}"
    _fill_event_time(row)
    for name in TIME_FIELDS:
        value = row.get(name)
        if value is not None and not MIN_MICROS <= value <= MAX_MICROS:
            return errors.INVALID_FIELD, (f"'{name}' is out of range (years 0001-9999): {value} "
                                          "microseconds since the epoch")
    if not row.get("table_name") and row.get("op") in _TABLE_OPS:
        if not decoder.options.source_table:
            return errors.MISSING_FIELD, (f"the {str(row['op']).lower()} names no table and the topic "
                                          "sets no 'source_table' (database.table; `--source-table` in "
                                          "cdclake decode) to apply it to")
        try:
            _place_in_configured_table(decoder, row, decoder.options.source_table)
        except ValueError as exc:
            return errors.INVALID_FIELD, str(exc)
    unplaced = _unplaced_key(row)
    if unplaced is not None:
        return errors.MISSING_KEY, unplaced
    return None


def _place_in_configured_table(decoder: Decoder, row: dict[str, Any], source_table: str) -> None:
    """A change that names no table (Flink SQL's canal-json sink writes none) goes to the topic's
    ``source_table`` (``database.table`` or ``database.schema.table``), keyed by the key columns
    configured for that table when the message names none."""
    row["database"], row["schema_name"], row["table_name"] = source_table_parts(source_table)
    keys = decoder.key_override(row["database"], row["table_name"])
    if keys and not row.get("primary_key_columns"):
        row["primary_key_columns"] = list(keys)
        row["row_key"] = key_of(row.get("before") if row["op"] == "DELETE" else row.get("after"), keys)


def _unplaced_key(row: dict[str, Any]) -> str | None:
    """Why a keyed row change has no key value at all, or None. Compaction places a change by its
    row key, else by its key columns' values in either image; a change with neither would fail
    its whole table there, so it is quarantined here, with the columns named."""
    columns = row.get("primary_key_columns") or []
    if not columns or row.get("row_key") is not None or row.get("op") not in _ROW_OPS:
        return None
    if key_of(row.get("after"), columns) is not None or key_of(row.get("before"), columns) is not None:
        return None
    return (f"key column(s) {list(columns)} have no values in the {str(row['op']).lower()}'s images: "
            "the change cannot be placed in its table")


def _fill_event_time(row: dict[str, Any]) -> None:
    """A change with no source commit time (e.g. a Debezium snapshot row with ``ts_ms`` 0) takes
    the time the vendor produced it, else the Kafka timestamp, and says so in ``warnings``."""
    if row.get("event_time") is not None:
        return
    for name in ("produced_time", "kafka_timestamp"):
        if row.get(name) is not None:
            row["event_time"] = row[name]
            row["warnings"] = [*(row.get("warnings") or []),
                               f"event_time: the message carries no source commit time; {name} used"]
            return


def decode_batch(decoder: Decoder, messages: Iterable[RawMessage]) -> BatchResult:
    """Decode messages in order and pair two-message updates within the batch."""
    result = BatchResult()
    for message in messages:
        outcome = decode_one(decoder, message)
        if outcome.rejected is not None:
            result.rejected.append(outcome.rejected)
        elif outcome.control is not None:
            result.controls.append((message, outcome.control))
        else:
            result.rows.extend(outcome.rows)
    result.rows = pair_update_halves(result.rows)
    return result
