"""``drs_json_c``: Huawei Cloud DRS JSON-C for MySQL and GaussDB(for MySQL) sources.

As ``drs_json`` (the same decoder), except that the DELETE row comes in ``data`` and TIMESTAMP as
zone-less text in the source's time zone. In ``auto`` it has priority 45, right after ``drs_json``;
the precedence is in the vendor notes.

Vendor notes: docs/formats/drs_json_c.md
"""

from __future__ import annotations

from typing import Any

from cdclake.formats._canal_family import drs_evidence
from cdclake.formats.drs_json import DrsJsonDecoder, is_drs_shaped


class DrsJsonCDecoder(DrsJsonDecoder):
    """DRS JSON-C: ``drs_json``'s decoder under its own id and detection rule."""

    format_id = "drs_json_c"
    description = "Huawei Cloud DRS JSON-C (MySQL, GaussDB(for MySQL) sources)"
    detect_priority = 45

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        if not is_drs_shaped(doc):
            return False
        evidence = drs_evidence(doc)
        return evidence.drs and evidence.json_c


DECODER = DrsJsonCDecoder
