"""The tables cdclake's stages record in (``ops.*``) as plain pyiceberg tables, for tests and
benchmarks of what reads them without Spark (``cdclake.hour_report``, the UI page): the columns of
``spark_jobs.tables``, partitioned by hour, and an hour's records as a clean run leaves them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace
from typing import Any

GATES = {"raw": 21, "changelog": 57, "current": 9}
METRICS = ("raw_messages", "decoded_messages", "change_rows", "control_messages", "quarantined_messages")


def schemas() -> dict[str, Any]:
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    return {
        "ops.offset_ledger": pa.schema([
            ("topic", pa.string()), ("partition", pa.int32()), ("landed_hour", ts),
            ("planned_start", pa.int64()), ("planned_end", pa.int64()), ("landed_count", pa.int64()),
            ("first_offset", pa.int64()), ("last_offset", pa.int64()), ("run_id", pa.string()),
            ("status", pa.string()), ("message", pa.string()), ("recorded_at", ts),
            ("late_messages", pa.int64()), ("max_lateness_ms", pa.int64()), ("erased_messages", pa.int64())]),
        "ops.run_stats": pa.schema([
            ("stage", pa.string()), ("landed_hour", ts), ("run_id", pa.string()), ("topic", pa.string()),
            ("metric", pa.string()), ("source_format", pa.string()), ("op", pa.string()),
            ("table_name", pa.string()), ("reason_code", pa.string()), ("control_kind", pa.string()),
            ("value", pa.int64())]),
        "ops.gate_results": pa.schema([
            ("stage", pa.string()), ("landed_hour", ts), ("run_id", pa.string()), ("suite", pa.string()),
            ("expectation", pa.string()), ("column_name", pa.string()), ("success", pa.bool_()),
            ("observed_value", pa.string()), ("details", pa.string()), ("validated_at", ts)]),
        "ops.hour_status": pa.schema([
            ("landed_hour", ts), ("stage", pa.string()), ("status", pa.string()), ("run_id", pa.string()),
            ("tables", pa.list_(pa.struct([("name", pa.string()), ("snapshot_id", pa.int64())]))),
            ("message", pa.string()), ("recorded_at", ts)]),
    }


def hour_rows(hour: dt.datetime, topics: int) -> dict[str, list[dict[str, Any]]]:
    at = hour.replace(tzinfo=dt.UTC)
    run = f"scheduled__{hour:%Y-%m-%dT%H}:00:00+00:00"
    names = [f"topic_{i:02d}" for i in range(topics)]
    ledger = [{"topic": t, "partition": 0, "landed_hour": at, "planned_start": 100, "planned_end": 200,
               "landed_count": 100, "first_offset": 100, "last_offset": 199, "run_id": run,
               "status": "landed", "message": None, "recorded_at": at, "late_messages": 0,
               "max_lateness_ms": None, "erased_messages": 0} for t in names]
    stats = [{"stage": "normalize", "landed_hour": at, "run_id": run, "topic": t, "metric": m,
              "source_format": "canal_json", "op": None, "table_name": None,
              "reason_code": "INVALID_JSON" if m == "quarantined_messages" else None, "control_kind": None,
              "value": 1 if m == "quarantined_messages" else 99} for t in names for m in METRICS]
    gates = [{"stage": stage, "landed_hour": at, "run_id": run, "suite": f"{stage}.rows",
              "expectation": f"expectation_{i}", "column_name": None, "success": True,
              "observed_value": "0", "details": None, "validated_at": at}
             for stage, count in GATES.items() for i in range(count)]
    status = [{"landed_hour": at, "stage": stage, "status": state, "run_id": run,
               "tables": [{"name": f"lakehouse.current.t{i}", "snapshot_id": i} for i in range(20)],
               "message": None, "recorded_at": at}
              for stage, state in (("compact", "OK"), ("publish", "PUBLISHED"))]
    return {"ops.offset_ledger": ledger, "ops.run_stats": stats, "ops.gate_results": gates,
            "ops.hour_status": status}


def ops_catalog(root: Path) -> tuple[SimpleNamespace, dict[str, Any]]:
    """A catalog under ``root`` with the ``ops`` tables, empty (and namespaces cdc, current): the
    config ``cdclake.catalog.open_catalog`` reads, and the tables by name."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import IdentityTransform

    config = SimpleNamespace(catalog_name="lakehouse", catalog_uri=f"sqlite:///{root}/catalog.db",
                             warehouse=f"file://{root}/warehouse", home=root, topics=[])
    catalog = SqlCatalog(config.catalog_name, uri=config.catalog_uri, warehouse=config.warehouse)
    for namespace in ("ops", "cdc", "current"):
        catalog.create_namespace(namespace)
    tables = {}
    for name, schema in schemas().items():
        table = catalog.create_table(name, schema=schema)
        with table.update_spec() as spec:
            spec.add_field("landed_hour", IdentityTransform(), "landed_hour")
        tables[name] = table
    tables[TOPIC_STARTS] = catalog.create_table(TOPIC_STARTS, schema=topic_starts_schema())
    return config, tables


TOPIC_STARTS = "ops.topic_starts"


def topic_starts_schema() -> Any:
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    return pa.schema([("topic", pa.string()), ("start_hour", ts), ("origin", pa.string()),
                      ("run_id", pa.string()), ("recorded_at", ts)])


def expired_hours_schema() -> Any:
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    return pa.schema([("layer", pa.string()), ("landed_hour", ts), ("row_count", pa.int64()),
                      ("run_id", pa.string()), ("expired_at", ts)])
