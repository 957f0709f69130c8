"""Avro plumbing shared by the binary vendor formats (``dts_avro``, ``drs_avro``).

Why a private module: both formats read one bare Avro datum per Kafka value with fastavro, both
must tell "truncated or not of this schema" apart from a good datum (a short read must never
yield a half-decoded row), and DRS may carry the Avro single-object header whose fingerprint has
to match the configured schema.
"""

from __future__ import annotations

import io
import json
from importlib import resources
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import to_parsing_canonical_form

SINGLE_OBJECT_MAGIC = b"\xc3\x01"
_CRC64_EMPTY = 0xC15D213AA4D7A795


def _crc64_table() -> list[int]:
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (_CRC64_EMPTY & -(fp & 1))
        table.append(fp)
    return table


_CRC64_TABLE = _crc64_table()


class AvroReadError(Exception):
    """The bytes are not one complete datum of the schema (truncated, garbage, trailing bytes)."""


def crc64_avro(data: bytes) -> int:
    """CRC-64-AVRO (Rabin) fingerprint, as the Avro spec defines it for single-object encoding."""
    fp = _CRC64_EMPTY
    for byte in data:
        fp = (fp >> 8) ^ _CRC64_TABLE[(fp ^ byte) & 0xFF]
    return fp


def schema_fingerprint(parsed_schema: Any) -> bytes:
    """The 8 bytes a single-object header carries for ``parsed_schema`` (little-endian)."""
    canonical = to_parsing_canonical_form(parsed_schema).encode("utf-8")
    return crc64_avro(canonical).to_bytes(8, "little")


def parse_schema_document(document: Any) -> Any:
    """A parsed writer schema from an ``.avsc`` document.

    A JSON array of named types (the DTS layout) is read type by type into one namespace and the
    LAST type is the writer schema: reading the array as a union would be off by one byte.
    """
    if isinstance(document, list):
        if not document:
            raise ValueError("the schema file holds an empty array")
        named: dict[str, Any] = {}
        parsed = None
        for part in document:
            parsed = fastavro.parse_schema(part, named_schemas=named)
        return parsed
    return fastavro.parse_schema(document)


def load_schema_file(path: str | Path) -> Any:
    """Parse an ``.avsc`` file (relative paths resolve against the current directory)."""
    with open(Path(path), encoding="utf-8") as handle:
        return parse_schema_document(json.load(handle))


def load_packaged_schema(file_name: str) -> Any:
    """Parse an ``.avsc`` shipped in ``include/cdclake/formats/avro/`` (package data, no ../shared)."""
    text = resources.files("cdclake.formats").joinpath("avro", file_name).read_text("utf-8")
    return parse_schema_document(json.loads(text))


def read_datum(data: bytes, schema: Any) -> dict[str, Any]:
    """Exactly one datum of ``schema`` from ``data``; union record branches come back as
    ``(type name, value)`` so same-shaped branches (DTS Float vs Decimal) stay distinguishable."""
    stream = io.BytesIO(data)
    try:
        datum = fastavro.schemaless_reader(stream, schema, return_record_name=True)
    except EOFError as exc:
        raise AvroReadError(f"datum ends early after {len(data)} bytes") from exc
    except Exception as exc:  # fastavro signals garbage with many exception types
        raise AvroReadError(f"not a datum of the schema ({type(exc).__name__}: {exc})") from exc
    left = len(data) - stream.tell()
    if left:
        raise AvroReadError(f"{left} bytes left over after one datum")
    if not isinstance(datum, dict):
        raise AvroReadError("datum is not a record")
    return datum


def is_end_of_data(error: AvroReadError) -> bool:
    return isinstance(error.__cause__, EOFError)
