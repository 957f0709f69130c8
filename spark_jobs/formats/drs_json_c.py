"""``drs_json_c``: Huawei Cloud DRS JSON-C for MySQL and GaussDB(for MySQL) sources.

As ``drs_json``, except that DELETE puts the deleted row in ``data`` (``old`` is for UPDATE
only) and TIMESTAMP columns arrive as ``yyyy-mm-dd hh:mm:ss`` text in the source's time zone
(``options.source_timezone``, default UTC), converted here to a UTC instant. The decoder is the
one ``drs_json`` uses (rows from ``data`` else ``old``; epoch or text TIMESTAMP), so a topic
configured with either id decodes both variants correctly.

Auto-detection precedence (priority 45, right after ``drs_json`` 44): a Canal-shaped message
with ``id``, only string values, a shape only DRS emits and also a JSON-C shape (both listed in
``drs_json``). A JSON-C message with no DRS-only shape looks exactly like Canal and is reported as
``canal_json``, which decodes it to the same rows; configure the topic as ``drs_json_c`` to have
it reported as such.
"""

from __future__ import annotations

from typing import Any

from spark_jobs.formats._canal_family import drs_evidence
from spark_jobs.formats.drs_json import DrsJsonDecoder, is_drs_shaped


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
