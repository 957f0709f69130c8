"""What Alibaba DataWorks JSON (seed 002) and OceanBase OMS's DataWorks 2.0 (seed 003) share.

Both put typed JSON rows in ``payload.before``/``payload.after``, name the operation in
``payload.op`` (case-sensitive vendor names, control kinds included) and the times in
``payload.timestamp`` (``eventTime``/``systemTime`` epoch milliseconds). The module classifies
ops, chooses the row identity and builds rows; each format states its field names and value
rules.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from cdclake.formats import errors
from cdclake.formats._sequence import epoch_micros
from cdclake.formats.base import PAIR_KEY, PAIR_ROLE, JsonDecoder, key_of
from cdclake.formats.canonical import RawMessage
from cdclake.formats.values import ConversionWarning

# Ops that are not row changes: heartbeat, transaction markers, GTID and XA events.
CONTROL_OPS = {
    "MHEARTBEAT": "HEARTBEAT",
    "HEARTBEAT": "HEARTBEAT",
    "TRANSACTION_BEGIN": "TRANSACTION_BEGIN",
    "TRANSACTION_END": "TRANSACTION_END",
    "GTID": "GTID",
    "XACOMMIT": "XACOMMIT",
    "XAROLLBACK": "XAROLLBACK",
}
DDL_OPS = frozenset({"CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX"})
# Vendor row ids, used as the identity of tables without a primary key. RDS's hidden column is
# "__#alibaba_rds_row_id#__" in the database; DataWorks writes it as "#alibaba_rds_row_id#".
RDS_ROW_ID = "__#alibaba_rds_row_id#__"
ROW_ID_COLUMNS = ("#alibaba_rds_row_id#", RDS_ROW_ID, "rowid", "ROWID")

Converter = Callable[[Any], str]


def control_kind(op: str) -> str | None:
    return CONTROL_OPS.get(op)


def check_op(decoder: JsonDecoder, op: str, known_ops: tuple[str, ...]) -> None:
    """``payload.op`` must be one of the format's op names (case-sensitive, as the vendor sends)."""
    if op not in known_ops:
        hint = " (op names are case-sensitive)" if op.upper() in known_ops else ""
        raise decoder.fail(errors.INVALID_OP,
                           f"'payload.op' must be one of {', '.join(known_ops)}, got {op!r}{hint}")


def declared_types(decoder: JsonDecoder, schema: dict[str, Any], field: str,
                   upper: bool = False) -> dict[str, str]:
    """Column name -> declared type name from ``schema.<field>`` (a list of {name, type})."""
    columns = schema.get(field)
    if columns is None:
        return {}
    if not isinstance(columns, list):
        raise decoder.fail(errors.INVALID_FIELD, f"'schema.{field}' must be an array of {{name, type}}")
    declared: dict[str, str] = {}
    for column in columns:
        if not isinstance(column, dict) or not isinstance(column.get("name"), str):
            raise decoder.fail(errors.INVALID_FIELD, f"'schema.{field}' entries need a string 'name'")
        type_name = str(column.get("type") or "")
        declared[column["name"]] = type_name.upper() if upper else type_name
    return declared


def key_columns(decoder: JsonDecoder, declared: Any, field_name: str, database: Any, table: Any,
                images: list[dict[str, Any] | None]) -> tuple[str, ...]:
    """Configured override, else the declared key, else a vendor row id present in the images."""
    override = decoder.key_override(database, table)
    if override:
        return override
    if isinstance(declared, str):
        declared = [declared]
    if declared:
        if not isinstance(declared, list) or not all(isinstance(n, str) for n in declared):
            raise decoder.fail(errors.INVALID_FIELD, f"'{field_name}' must be an array of column names")
        return tuple(declared)
    for row_id in ROW_ID_COLUMNS:
        if any(image and row_id in image for image in images):
            return (row_id,)
    return ()


def change_row(decoder: JsonDecoder, message: RawMessage, *, op: str, keys: tuple[str, ...],
               before: dict[str, str | None] | None, after: dict[str, str | None] | None,
               types: dict[str, str], warnings: list[str], pair_key: str | None = None,
               pair_role: str | None = None, **common: Any) -> dict[str, Any]:
    """One change row; a keyed table whose image lacks the key is rejected (MISSING_KEY)."""
    image = before if op == "DELETE" or after is None else after
    row_key = key_of(image, keys)
    if keys and row_key is None:
        side = "before" if image is before else "after"
        missing = [k for k in keys if not image or k not in image]
        raise decoder.fail(errors.MISSING_KEY,
                           f"key column(s) {missing} are not in the {side} image of a {op}")
    present = {c for img in (before, after) if img for c in img}
    row = decoder.row(message, op=op, primary_key_columns=list(keys), row_key=row_key,
                      before=before, after=after, after_is_full=after is not None,
                      column_types={c: t for c, t in types.items() if c in present},
                      warnings=warnings, **common)
    if pair_key is not None:
        row[PAIR_KEY] = pair_key
        row[PAIR_ROLE] = pair_role
    return row


def times(decoder: JsonDecoder, payload: dict[str, Any]) -> dict[str, int | None]:
    stamp = payload.get("timestamp")
    if stamp is None:
        return {"event_time": None, "produced_time": None}
    if not isinstance(stamp, dict):
        raise decoder.fail(errors.INVALID_FIELD, "'payload.timestamp' must be an object")
    return {"event_time": _set_time(stamp.get("eventTime")),
            "produced_time": _set_time(stamp.get("systemTime"))}


def _set_time(value: Any) -> int | None:
    """Epoch ms -> micros; ``-1`` (and any time before 1970) means unset: DataWorks sends
    ``eventTime``/``checkpointTime`` -1 on full-load rows, which have no source change time."""
    micros = epoch_micros(value, "ms")
    return None if micros is None or micros < 0 else micros


def ddl_text(payload: dict[str, Any]) -> str | None:
    ddl = payload.get("ddl")
    if isinstance(ddl, dict):
        text = ddl.get("text")
        return None if text is None else str(text)
    return ddl if isinstance(ddl, str) else None


def image_data(decoder: JsonDecoder, payload: dict[str, Any], side: str,
               inner: str) -> dict[str, Any] | None:
    """``payload.<side>.<inner>`` (the row object), None when the side is absent or null."""
    holder = payload.get(side)
    if holder is None:
        return None
    if not isinstance(holder, dict):
        raise decoder.fail(errors.INVALID_FIELD, f"'payload.{side}' must be an object")
    data = holder.get(inner)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise decoder.fail(errors.INVALID_FIELD, f"'payload.{side}.{inner}' must be an object")
    return data


def convert_image(decoder: JsonDecoder, data: dict[str, Any] | None,
                  converter_for: Callable[[str, Any], tuple[Converter, str | None]],
                  types: dict[str, str], warnings: list[str]) -> dict[str, str | None] | None:
    """Typed JSON row -> canonical text image; ``converter_for(column, value)`` picks the rule."""
    if data is None:
        return None
    image: dict[str, str | None] = {}
    for column, value in data.items():
        converter, logical = converter_for(column, value)
        image[column] = decoder.convert(value, converter, warnings, column)
        if logical is not None:
            types[column] = logical
    return image


def strict_base64(value: Any) -> str:
    """BYTES: base64 text, validated (a placeholder such as ``[base64 string]`` is not base64)."""
    text = str(value).strip()
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConversionWarning(f"not base64: {text[:40]!r}") from exc
    return base64.b64encode(data).decode("ascii")


def integer_logical_type(value: Any) -> str:
    """LONG, widened to DECIMAL(n,0) for a value beyond int64 (MySQL bigint unsigned), so the
    current-state column widens instead of overflowing."""
    text = str(value).strip().lstrip("+-")
    if text.isdigit() and (len(text.lstrip("0")) > 19 or not -(2**63) <= int(str(value).strip()) < 2**63):
        return f"DECIMAL({max(20, len(text.lstrip('0')))},0)"
    return "LONG"
