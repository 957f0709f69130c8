"""OceanBase OMS "DefaultExtendColumnType" JSON serialisation (seed 003).

Default plus ``__light_type`` inside each image: ``{column: {"schemaType": TYPE}}``, which gives
``column_types`` and type-driven canonical text (OMS type-mapping tables for MySQL and Oracle
tenants). ``__light_type`` is metadata, never a column. A type map naming columns that are not in
its image (the manual's own examples) types only the columns both name; the image's other values
keep their text, with the warning TYPE_MAP_MISMATCH.
Detected before ``oms_default`` (priority 19 < 20) because it is the more specific shape.
"""

from __future__ import annotations

from typing import Any

from cdclake.formats._oms import LIGHT_TYPE, OmsDefaultDecoderBase


class OmsDefaultExtDecoder(OmsDefaultDecoderBase):
    format_id = "oms_default_ext"
    description = "OceanBase OMS DefaultExtendColumnType JSON (Default + __light_type column types)"
    detect_priority = 19

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        if not super().matches(doc):
            return False
        images = (doc.get("prevStruct"), doc.get("postStruct"))
        return any(isinstance(image, dict) and LIGHT_TYPE in image for image in images)


DECODER = OmsDefaultExtDecoder
