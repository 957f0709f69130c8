"""``oms_canal``: OceanBase OMS "Canal" serialisation (seed 003).

Canal's field names, with OMS's values: typed JSON (numbers and booleans, whose exact text is
kept: ``10223372036854775806`` and 700-digit decimals survive digit for digit), binary as base64,
TIMESTAMP as epoch seconds ``"1606233662.012345"``, datetime as wall clock. ``data`` holds one
row; ``old`` only the changed columns of an UPDATE; ``database`` has no tenant prefix. There is no
``id``, so no source sequence: order comes from ``es`` and Kafka coordinates. OMS type names
outside MySQL's (``int64``) fall back to ``sqlType``; a ``bigint`` value beyond int64 widens the
column type to DECIMAL(20,0) rather than lose digits. ``bit`` is BINARY (OMS renders BIT as
base64 bytes), not Canal's number.

Auto-detection precedence (priority 50: after ``drs_json``/``drs_json_c`` 44/45, which require
``id`` and string values, and before ``canal_json`` 55): a Canal-shaped message whose rows hold a
typed (non-string) value, or that has no ``id`` (Canal, DRS and TiCDC always send one), unless it
carries ``destination``/``groupId``: Canal's client adapter logs its ``Dml`` so, without ``id``.
"""

from __future__ import annotations

import re
from typing import Any

from spark_jobs.formats._canal_family import (
    BINARY_BASE64,
    CanalFamilyDecoder,
    CanalFields,
    has_typed_values,
    is_canal_shaped,
    is_ticdc,
)


class OmsCanalDecoder(CanalFamilyDecoder):
    """OMS Canal (see the module docstring for the precedence in ``auto``)."""

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
