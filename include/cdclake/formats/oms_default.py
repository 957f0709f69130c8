"""OceanBase OMS "Default" JSON serialisation (seed 003).

``{"prevStruct", "postStruct", "allMetaData", "recordType"}``; recordType INSERT, UPDATE, DELETE,
ROW (full load -> SNAPSHOT), DDL (statement under the image key ``ddl``) and HEARTBEAT (control).
Values are typed JSON without column types, so canonical text follows the JSON kind. Should a
message carry DefaultExtendColumnType's ``__light_type`` anyway, it is honoured (see ``_oms``).
"""

from __future__ import annotations

from cdclake.formats._oms import OmsDefaultDecoderBase


class OmsDefaultDecoder(OmsDefaultDecoderBase):
    format_id = "oms_default"
    description = "OceanBase OMS Default JSON (prevStruct/postStruct/allMetaData/recordType)"
    detect_priority = 20


DECODER = OmsDefaultDecoder
