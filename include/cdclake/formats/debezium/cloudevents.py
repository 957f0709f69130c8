"""Debezium CloudEvents (``CloudEventsConverter``, JSON ``data``): the change envelope rebuilt
from the event's attributes."""

from __future__ import annotations

from typing import Any

from cdclake.formats import errors
from cdclake.formats.debezium.base import DebeziumDecoderBase
from cdclake.formats.kafka_connect import CE_PREFIX, unwrap

_CE_OP = CE_PREFIX + "op"
_CE_TRANSACTION = {"iodebeziumtxid": "id", "iodebeziumtxtotalorder": "total_order",
                   "iodebeziumtxdatacollectionorder": "data_collection_order"}
_CE_SOURCE_FIELDS = {name.replace("_", ""): name for name in (
    "ts_ms", "ts_us", "ts_ns", "server_id", "change_lsn", "commit_lsn", "begin_lsn", "commit_scn",
    "event_serial_no", "commit_ts", "server_transaction_id", "rs_id", "redo_thread", "user_name",
    "row_id")}
# Data fields that hold a change's row images (relational and MongoDB connectors).
_CE_IMAGE_FIELDS = ("before", "after", "patch", "updateDescription")


class CloudEventEnvelope(DebeziumDecoderBase):
    """Reads a CloudEvent's attributes and data into an envelope."""

    def _cloudevent_envelope(self, doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(payload, schema) of the Debezium envelope a CloudEvent was made from.

        CloudEventsConverter.convertToCloudEventsFormat: ``iodebeziumop`` is ``op``, each source
        field an ``iodebezium*`` attribute, each transaction field an ``iodebeziumtx*`` one (set
        only when the event has a transaction block), ``data`` the data fields. The envelope's own
        ``ts_ms`` (processing time) is not carried, so ``produced_time`` stays empty."""
        if doc.get(_CE_OP) is None:
            raise self.fail(errors.MISSING_FIELD, "CloudEvent has no 'iodebeziumop': the converter ran with "
                                                  "extension.attributes.enable=false, so neither the "
                                                  "operation nor the source table is in the event")
        data = doc.get("data")
        if not isinstance(data, dict):
            content_type = doc.get("datacontenttype")
            if content_type == "application/avro" or isinstance(data, str):
                raise self.fail(errors.INVALID_FIELD,
                                f"CloudEvent 'data' is Avro (datacontenttype {content_type!r}, schema "
                                f"{doc.get('dataschema')!r}): written with data.serializer.type=avro; "
                                "only JSON data (data.serializer.type=json) is decoded")
            raise self.fail(errors.INVALID_FIELD, "CloudEvent 'data' must be an object")
        payload, schema = unwrap(data)
        if not isinstance(payload, dict) or not any(name in payload for name in _CE_IMAGE_FIELDS):
            raise self.fail(errors.MISSING_FIELD,
                            "CloudEvent 'data' holds no row images (before/after): not a table change "
                            "(metadata.source=header after an SMT such as the outbox event router?)")
        source: dict[str, Any] = {}
        transaction: dict[str, Any] = {}
        for name, value in doc.items():
            if name in _CE_TRANSACTION:
                if value is not None:
                    transaction[_CE_TRANSACTION[name]] = value
            elif name.startswith(CE_PREFIX) and name != _CE_OP:
                field = name[len(CE_PREFIX):]
                source[_CE_SOURCE_FIELDS.get(field, field)] = value
        envelope = {**payload, "op": doc[_CE_OP], "source": source}
        if transaction:
            envelope["transaction"] = transaction
        fields = (schema.get("fields") or []) if schema else []
        if schema and not any(isinstance(f, dict) and f.get("field") == "op" for f in fields):
            # The data schema (io.debezium.connector.<connector>.Data) describes the data fields
            # only; the envelope's describes op too, which value_specs reads as "Debezium's".
            schema = {**schema, "fields": [*fields, {"type": "string", "optional": False, "field": "op"}]}
        return envelope, schema
