"""The ``source`` block and the envelope's metadata: ops, database, connector, positions, TiCDC
sequences, transaction ids, and the table ids of schema changes."""

from __future__ import annotations

import re
from typing import Any

from cdclake.formats.canonical import RawMessage
from cdclake.formats.debezium.cells import _SCYLLA
from cdclake.formats.values import integer_digits

OPS = {"c": "INSERT", "i": "INSERT", "u": "UPDATE", "d": "DELETE", "r": "SNAPSHOT",
       "t": "TRUNCATE", "a": "DDL"}
MESSAGE_OP = "m"
# OceanBase OMS's heartbeat op (see _is_oms).
OMS_HEARTBEAT_OP = "heartbeat"
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
# Envelope schema name of the source struct, and package names that differ from source.connector.
_SOURCE_SCHEMA = re.compile(r"io\.debezium\.connector\.([a-z0-9]+)\.Source")
_SCHEMA_CONNECTORS = {"mongo": "mongodb"}
# Time fields, finest first; ts_usec and ts_sec are Debezium 0.x source fields.
# Cassandra connector 1.x names its source time ts_micro.
_TIME_FIELDS = (("ts_ns", "ns"), ("ts_us", "us"), ("ts_usec", "us"), ("ts_micro", "us"), ("ts_ms", "ms"),
                ("ts_sec", "s"))
# source.snapshot values of a snapshot read (see _row_op).
_SNAPSHOT_FLAGS = frozenset({"true", "first", "first_in_data_collection", "last",
                             "last_in_data_collection"})
# Largest epoch microseconds of year 9999: a ts_usec beyond it is nanoseconds (DBZ-1174).
_MAX_EPOCH_MICROS = 253_402_300_799_999_999


def _op_code(payload: dict[str, Any]) -> str | None:
    op = payload.get("op")
    return op.lower() if isinstance(op, str) else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _database(source: dict[str, Any]) -> str | None:
    """``source.db``; the Vitess connector sends ``"db": ""`` and names the database (the
    keyspace) in ``source.keyspace``; the Cassandra connector's database is the keyspace (its
    source sends ``"db": "NULL"``: "Cassandra doesn't have the conception of database")."""
    if ((source.get("db") in (None, "") or _connector(source) == "cassandra")
            and source.get("keyspace") not in (None, "")):
        return _text(source["keyspace"])
    if source.get("db") in (None, "") and _connector(source) == _SCYLLA:
        return _text(source.get("keyspace_name"))
    return _text(source.get("db"))


def _row_op(code: str, snapshot: Any, connector: Any) -> str:
    """The canonical op of a change's ``op`` code. The MySQL connector (0.x sources name no
    connector) sent its snapshot rows as creates until 1.4 (and later with
    snapshot.events.as.inserts, DBZ-2775); Debezium calls that a wrong op flag (DBZ-2788). Such a
    create, flagged by ``source.snapshot`` (true/first/last), is a SNAPSHOT (full-load) row. The
    Cassandra connector sends its snapshot rows as inserts (``i``) with ``source.snapshot`` true."""
    cassandra = str(connector).lower() == "cassandra"
    if (((code == "c" and connector in (None, "mysql")) or (code in ("c", "i") and cassandra))
            and (snapshot is True
                 or (isinstance(snapshot, str) and snapshot.lower() in _SNAPSHOT_FLAGS))):
        return "SNAPSHOT"
    return OPS[code]


def _schema_connector(schema: dict[str, Any] | None) -> str | None:
    """The connector named by the envelope schema's ``source`` struct
    (``io.debezium.connector.<connector>.Source``; MongoDB's package is ``mongo``), or None."""
    for field in (schema or {}).get("fields") or []:
        if isinstance(field, dict) and field.get("field") == "source":
            match = _SOURCE_SCHEMA.fullmatch(str(field.get("name") or ""))
            if match:
                return _SCHEMA_CONNECTORS.get(match.group(1), match.group(1))
    return None


def _shape_connector(source: dict[str, Any]) -> str | None:
    """The connector of a pre-0.10 ``source`` without a schema, by the fields only it has: MySQL's
    binlog coordinates (``server_id``, ``file``, ``pos``), PostgreSQL's ``lsn`` and ``txId``."""
    if {"server_id", "file", "pos"} <= source.keys():
        return "mysql"
    if {"lsn", "txId"} <= source.keys():
        return "postgresql"
    return None


def _connector(source: dict[str, Any]) -> str:
    """``source.connector`` in lower case (YugabyteDB's manuals print both ``yugabytedb`` and
    ``YugabyteDB``), or ""."""
    return str(source.get("connector") or "").lower()


def _flink_cdc_table_id(key: dict[str, Any], table: str | None) -> bool:
    """Flink CDC's Kafka sink writes every key (``key.format`` json, its default) as
    ``{"TableId": "<namespace>.<schema>.<table>", <primary-key columns>...}``: that first field
    names the table, it is no column (a keyless table's key is the ``TableId`` alone)."""
    first = next(iter(key), None)
    value = key.get("TableId") if first == "TableId" else None
    return (isinstance(value, str) and bool(table)
            and (value == table or value.endswith("." + str(table))))


def _kafka_time_if_none(row: dict[str, Any], message: RawMessage) -> dict[str, Any]:
    """A flattened row or tombstone delete without a source time is ordered by its Kafka time."""
    if row["event_time"] is None and message.timestamp_ms is not None:
        row["event_time"] = message.timestamp_ms * 1000
    return row


def _table_changes(value: Any) -> list[dict[str, Any]]:
    """Debezium sends a list; CloudCanal's manual shows a single object."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [c for c in value if isinstance(c, dict)]
    return []


def _id_parts(table_id: Any) -> list[str]:
    """``"inventory"."customers"`` (or ``"db"."schema"."table"``) -> its name parts."""
    if not isinstance(table_id, str) or not table_id:
        return []
    quoted = _QUOTED.findall(table_id)
    if quoted:
        return [q.replace('""', '"') for q in quoted]
    return table_id.split(".")


def _position(source: dict[str, Any]) -> str | None:
    """Binlog file:pos (MySQL), LSN (PostgreSQL, SQL Server, Db2, Informix), SCN (Oracle),
    TiCDC's ``commit_ts`` (the TiDB commit TSO, which TiCDC adds to the MySQL source block) or
    Vitess's ``vgtid`` (JSON text: the GTID position of every shard of the keyspace).

    Flink CDC's MySQL snapshot rows carry ``"file": ""`` and ``"pos": 0``: no position at all."""
    if source.get("file") not in (None, "") and source.get("pos") is not None:
        return f"{source['file']}:{source['pos']}"
    if source.get("ord") is not None and source.get("ts_ms") is not None:
        # MongoDB: the oplog / cluster time, seconds (ts_ms is whole seconds) and increment.
        try:
            return f"{int(str(source['ts_ms'])) // 1000}:{int(str(source['ord']))}"
        except ValueError:
            pass
    for name in ("lsn", "change_lsn", "scn", "commit_lsn", "commit_scn", "commit_ts", "vgtid"):
        if source.get(name) is not None:
            return str(source[name])
    if _is_oms(source) and source.get("pos") is not None:
        return str(source["pos"])  # OMS: "<binlog file>@<offset>" in one field
    return None


def _is_oms(source: Any) -> bool:
    """A ``source`` block of OceanBase OMS's Debezium serialisations: ``name`` "OMS" ("the fixed
    value OMS") and ``connector`` the OceanBase mode (``OB_MYSQL``). Debezium's own connectors
    name themselves in lower case (mysql, postgresql, ...), so none is taken for OMS."""
    return (isinstance(source, dict) and source.get("name") == "OMS"
            and str(source.get("connector") or "").startswith("OB_"))


def _is_ticdc_checkpoint(payload: dict[str, Any]) -> bool:
    """TiCDC's checkpoint (watermark) event before it wrote ``"op": "m"`` (tiflow's
    ``EncodeCheckpointEvent``): ``source`` (connector TiCDC, empty db and table, the checkpoint
    TSO as ``commit_ts``), ``ts_ms`` and ``transaction`` only. Replication progress, not a change."""
    source = payload.get("source")
    return (isinstance(source, dict) and str(source.get("connector")) == "TiCDC"
            and "commit_ts" in source and not source.get("table")
            and set(payload) <= {"source", "ts_ms", "transaction"})


def _ticdc_sequence(source: dict[str, Any]) -> str | None:
    """TiCDC's ``commit_ts`` (a TiDB TSO: commits of one row have increasing TSOs) as the ordering
    sequence, 20 digits as the Canal family gives TiCDC's ``_tidb.commitTs``."""
    value = source.get("commit_ts")
    if str(source.get("connector")) != "TiCDC" or value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return integer_digits(text).zfill(20) if text.isascii() and text.isdigit() else None


def _transaction_id(payload: dict[str, Any], source: dict[str, Any]) -> str | None:
    transaction = payload.get("transaction")
    if isinstance(transaction, dict) and transaction.get("id") is not None:
        return str(transaction["id"])
    # SQL Server and Db2: every change of a transaction carries its commit LSN. Spanner names
    # the transaction in ``server_transaction_id``.
    for name in ("txId", "gtid", "xid", "server_transaction_id", "commit_ts", "commit_lsn"):
        # The YugabyteDB gRPC connector sends "txId": "" for a change outside a transaction.
        if source.get(name) not in (None, ""):
            return str(source[name])
    return None
