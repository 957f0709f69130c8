"""Debezium JSON envelope (Kafka Connect JsonConverter), with or without the embedded schema.

Decodes Debezium change events (enveloped, flattened by ``ExtractNewRecordState`` or wrapped as
CloudEvents) into change, DDL and control rows, values by their Connect/Debezium logical type when a
schema is present. Key-column precedence, the connector variants (MongoDB, Vitess, Spanner,
YugabyteDB, Cassandra, ScyllaDB, OceanBase OMS, CloudCanal) and the CloudEvents rules are in the
vendor notes. The decoder is :mod:`.envelope`; each other module holds one kind of message or one
part of the envelope. Values are converted by :mod:`cdclake.formats.kafka_connect`.

Vendor notes: docs/formats/debezium_json.md
"""

from cdclake.formats.debezium.envelope import DebeziumJsonDecoder

DECODER = DebeziumJsonDecoder
