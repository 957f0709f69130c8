"""``canal_json``: Alibaba Canal's flat JSON message (also TiCDC and CloudCanal "Canal Json").

``{"data": [...], "old": [...], "database", "table", "type", "isDdl", "sql", "mysqlType",
"sqlType", "pkNames", "es", "ts", "id"}``. Values are strings; ``data`` holds the rows (after image
for INSERT/UPDATE, the deleted rows for DELETE); ``old`` only the changed columns of an UPDATE,
where an explicit null means "was NULL". ``type`` is Canal's EventType: INSERT, UPDATE, DELETE,
TRUNCATE, the DDL kinds (CREATE, ALTER, ERASE, QUERY, RENAME, CINDEX, DINDEX) and control kinds
(GTID, XACOMMIT, XAROLLBACK, MHEARTBEAT; TiCDC's TIDB_WATERMARK). A QUERY with ``isDdl`` false
(rows-query, user-var, intvar and rand events: a DML statement's text) is a control message, unless
its text is DDL: Canal up to 1.1.4 set ``isDdl`` only on the DDL kinds its parser named, so CREATE
DATABASE and the like came as QUERY with ``isDdl`` false (the database name as written, quotes and
all: ``"`test`"``). Binary columns arrive as one ISO-8859-1 character per byte (Canal and TiCDC
both do this). ``es`` is the source commit time, ``ts`` when the message was built. ``id`` is
Canal's batch id, which is not an ordering key: every message of a batch shares it, it restarts
from 1 when the Canal server restarts, and TiCDC always sends 0. So Canal changes have no source
sequence and are ordered by ``es`` and Kafka coordinates; only TiCDC's ``_tidb.commitTs`` (a TSO,
monotonic) is taken as the sequence. ``gtid`` (Canal 1.1.5+) or ``_tidb.commitTs`` become the
source position. An ``es``/``ts`` of 0 is "not set" (TiCDC before v6.1 wrote ``"ts": 0``), not
1970.

TiCDC differences (real captures in ``tests/fixtures/canal_json``): ``old`` holds the full before
image by default (the overlay handles both); ``mysqlType`` has no parameters (``decimal``,
``bit``, ``enum``); a bare ``bit`` value is the unsigned integer (``"65"``), so it is a LONG; a
``enum``/``set`` value is the index/bitmask (Canal does the same, with sqlType 4 / -7): mapped to
its label(s) when ``mysqlType`` declares them (``enum('a','b')``), else kept as the vendor's text.
Canal sends GEOMETRY as WKB bytes (ISO-8859-1, sqlType 2004): BINARY. Canal adds an ``old``
row only when some column changed, so a shorter ``old`` belongs to the last rows of ``data``. A
database-level DDL (Canal and TiCDC send ``"table": ""``) names no table. A row too large for TiCDC's
``max-message-bytes`` may arrive with only its handle-key columns (``_tidb.onlyHandleKey`` or
``_tidb.claimCheckLocation``): its images are partial (``after_is_full`` false, with a warning).
Under MySQL ``binlog_row_image=MINIMAL``, or a ``canal.instance.filter.field`` that leaves the key
out, Canal's ``data`` holds only some columns and ``pkNames`` is null (Canal issues #1834, #2460,
#4042): an UPDATE row with no key columns and no ``old`` row is kept as sent with a warning saying
so; with the table's key configured it is quarantined ``MISSING_KEY`` (the key is not in ``data``).

Cloud DTS "Canal JSON" (fixtures ``aliyun_dts_*``, ``tencent_dts_*``): Alibaba Cloud DTS sends
``"type": "DDL"`` and ``INIT`` (full load), and instances created before 2022-03-20 put a DELETE's
row in ``old`` (read here) and swap ``data``/``old`` on UPDATE (not detectable: such a topic
sets ``FormatOptions.update_images_swapped``). Tencent Cloud DTS's not-fully-compatible mode sends binary and
geometry as HexString (``FormatOptions.binary_encoding = "hex"``: hex is also valid ISO-8859-1
text), TIMESTAMP as UTC text with an offset (``"2021-05-17 07:22:42 +00:00"``: that instant,
whatever ``source_timezone``), ``sqlType`` empty (null, ``{}`` or ``""``), ``es`` in whole seconds.
BytePlus/Volcengine DTS documents Canal's fields with ``id`` 0 and ms ``es``/``ts``.

Auto-detection precedence (priority 55, the last of the Canal family): any Canal-shaped message
(see ``_canal_family.is_canal_shaped``) that the more specific members did not claim first:
``cloudcanal_json`` (40, has ``action``), ``drs_json`` (44) / ``drs_json_c`` (45) (shapes only
DRS emits: INIT types, byte-list binary, epoch-second TIMESTAMP, DELETE row in ``old``),
``oms_canal`` (50, typed values or no ``id``). A DRS message without any DRS-only shape decodes
to the same rows here, because the shared decoder overlays ``old`` on ``data`` and takes DELETE
rows from ``data`` else ``old``.
"""

from __future__ import annotations

from typing import Any

from spark_jobs.formats._canal_family import (
    BINARY_LATIN1,
    TIDB_WATERMARK,
    CanalFamilyDecoder,
    is_canal_shaped,
)


class CanalJsonDecoder(CanalFamilyDecoder):
    """Classic Canal flat messages (see the module docstring for the precedence in ``auto``)."""

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
