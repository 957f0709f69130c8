"""``oms_canal``: OceanBase OMS "Canal" serialisation (seed 003).

Canal's field names with OMS's typed values, decoded by the shared Canal-family decoder (base64
binary, epoch-second TIMESTAMP, no ``id`` and so no source sequence). In ``auto`` it has priority 50;
the precedence and the value rules are in the vendor notes.

Vendor notes: docs/formats/oms_canal.md
"""

from __future__ import annotations

import re
from typing import Any

from cdclake.formats._canal_family import (
    BINARY_BASE64,
    CanalFamilyDecoder,
    CanalFields,
    has_typed_values,
    is_canal_shaped,
    is_ticdc,
)


class OmsCanalDecoder(CanalFamilyDecoder):
    """OMS Canal (see its vendor notes for the precedence in ``auto``)."""

    format_id = "oms_canal"
    description = "OceanBase OMS Canal serialisation (typed JSON values)"
    detect_priority = 50
    binary_encoding = BINARY_BASE64

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        if "destination" in doc or "groupId" in doc:
            return False  # Canal's client adapter (its Dml: no id), which OMS never writes
        if is_ticdc(doc):
            return False  # TiCDC's canal-json extension (enable-tidb-extension), not OMS
        return is_canal_shaped(doc) and ("id" not in doc or has_typed_values(doc))

    def _column_types(self, f: CanalFields) -> dict[str, str]:
        """Canal's rule (``bit(n)`` is a number) does not hold for OMS: its type table renders
        MySQL BIT as Bytes, base64 like BLOB, so a ``bit``/``bit(n)`` column is BINARY here.
        ``bit(1)`` keeps the family's BOOLEAN (a JSON true/false is what a flag arrives as)."""
        types = super()._column_types(f)
        for column, name in f.type_names.items():
            if isinstance(name, str) and re.match(r"\s*bit\b(?!\s*\(\s*1\s*\))", name,
                                                  re.IGNORECASE):
                types[str(column)] = "BINARY"
        return types


DECODER = OmsCanalDecoder
