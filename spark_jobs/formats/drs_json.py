"""``drs_json``: Huawei Cloud DRS JSON for MySQL and GaussDB(for MySQL) sources (seeds 000/001).

Canal-shaped, with DRS's own rules: every value is a string; UPDATE ``old`` is the full before
image; DELETE puts the deleted row in ``old``; ``type`` adds INIT (full-load row, SNAPSHOT) and
INIT_DDL (DDL); binary columns are decimal byte lists ``"[106, 103]"`` (``"[]"`` = empty); a
MySQL TIMESTAMP is epoch seconds ``"1624614713.201"`` (an instant); datetime is wall clock;
doubles such as ``"1.2510357E7"`` keep every digit. ``id`` is DRS's monotonically increasing
sequence (the ordering key). Names are kept exact (the manual's table is ``"test "``). Gson's
HTML-safe escapes (``\\u003c`` ...) are ordinary JSON escapes.

The decoder is shared with ``drs_json_c``: DELETE rows come from ``data`` when present, else
``old``, and TIMESTAMP accepts epoch seconds or zone-less text in ``options.source_timezone``,
so either id decodes either DRS variant to the same rows.

Auto-detection precedence (priority 44, before ``drs_json_c`` 45, ``oms_canal`` 50 and
``canal_json`` 55; after ``drs_json_generic`` 35, whose ``opType``/``columnType`` messages are
never Canal-shaped here): a Canal-shaped message with ``id``, only string values, at least one
shape only DRS emits and no JSON-C shape. DRS-only shapes: type INIT, INIT_DDL or DDL (Canal
names DDL by kind: CREATE, ALTER, ...), a byte-list value in a binary column, an epoch-second
value in a ``timestamp`` column, a DELETE with rows in ``old`` and none in ``data``. JSON-C
shapes: a text value in a ``timestamp`` column, a DELETE with rows in ``data``. A binary value
that is no byte list rules DRS out (Alibaba Cloud DTS Canal Json also sends INIT and DDL types,
with Canal's ISO-8859-1 binary text).
"""

from __future__ import annotations

from typing import Any

from spark_jobs.formats._canal_family import (
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
    """DRS JSON (see the module docstring for the precedence in ``auto``)."""

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
