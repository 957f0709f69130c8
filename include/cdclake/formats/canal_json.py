"""``canal_json``: Alibaba Canal's flat JSON message (also TiCDC and CloudCanal "Canal Json").

Decodes Canal flat messages (string rows in ``data``/``old``, Canal's ``type``) through the shared
Canal-family decoder; in ``auto`` it claims, last of the Canal family (priority 55), any Canal-shaped
message the more specific members did not. The TiCDC and cloud DTS variants, the quirks and the
detection precedence are in the vendor notes.

Vendor notes: docs/formats/canal_json.md
"""

from __future__ import annotations

from typing import Any

from cdclake.formats._canal_family import (
    BINARY_LATIN1,
    TIDB_WATERMARK,
    CanalFamilyDecoder,
    is_canal_shaped,
)


class CanalJsonDecoder(CanalFamilyDecoder):
    """Classic Canal flat messages (see its vendor notes for the precedence in ``auto``)."""

    format_id = "canal_json"
    description = "Alibaba Canal flat JSON (also TiCDC canal-json, CloudCanal Canal Json)"
    detect_priority = 55
    binary_encoding = BINARY_LATIN1
    case_insensitive_names = True
    canal_renderings = True

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        # Consumers' tests (TiCDC's own, orfeon/pipeline) write TiCDC's watermark without
        # database/table ({"isDdl":false,"type":"TIDB_WATERMARK","_tidb":{"watermarkTs":10}});
        # only TiCDC's canal-json sends that type, so the type alone names the format.
        return is_canal_shaped(doc) or doc.get("type") == TIDB_WATERMARK


DECODER = CanalJsonDecoder
