"""``drs_json``: Huawei Cloud DRS JSON for MySQL and GaussDB(for MySQL) sources (seeds 000/001).

Canal-shaped messages decoded by the shared Canal-family decoder with DRS's rules (string values,
full before image, DELETE row in ``old``, byte-list binary, epoch-second TIMESTAMP); the same decoder
serves ``drs_json_c``. In ``auto`` it has priority 44; the precedence and the DRS-only shapes are in
the vendor notes.

Vendor notes: docs/formats/drs_json.md
"""

from __future__ import annotations

from typing import Any

from cdclake.formats._canal_family import (
    BINARY_BYTE_LIST,
    CanalFamilyDecoder,
    drs_evidence,
    has_typed_values,
    is_canal_shaped,
)


def is_drs_shaped(doc: dict[str, Any]) -> bool:
    """Canal-shaped, string-valued and carrying DRS's ``id`` sequence."""
    return is_canal_shaped(doc) and "id" in doc and not has_typed_values(doc)


class DrsJsonDecoder(CanalFamilyDecoder):
    """DRS JSON (see its vendor notes for the precedence in ``auto``)."""

    format_id = "drs_json"
    description = "Huawei Cloud DRS JSON (MySQL, GaussDB(for MySQL) sources)"
    detect_priority = 44
    binary_encoding = BINARY_BYTE_LIST
    case_insensitive_names = True
    sequence_field = "id"

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        if not is_drs_shaped(doc):
            return False
        evidence = drs_evidence(doc)
        return evidence.drs and not evidence.json_c


DECODER = DrsJsonDecoder
