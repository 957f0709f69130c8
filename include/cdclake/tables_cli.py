"""``cdclake tables``: every table of the lakehouse, read from the catalog through pyiceberg (no
JVM): its rows and data size (from the current snapshot's manifests; a table with delete files is
counted by a one-column scan), the last hour published into it (``ops.hour_status``), its current
snapshot, and where its rows come from (the topic and source table compaction records on a
current table, and the topic's format)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Iterable
from typing import Any

from cdclake.config import load_config

COLUMNS = ("table", "rows", "data_bytes", "last_published_hour", "snapshot_id", "snapshot_time",
           "topic", "format", "source_table")
# Table properties compaction sets on a current table (spark_jobs.compact; not imported: this
# module stays free of Spark).
_TOPIC_PROPERTY = "cdc.topic"
_SOURCE_PROPERTY = "cdc.source"
HOUR_STATUS = ("ops", "hour_status")


def short_name(name: str) -> str:
    """``namespace.table`` of a name with or without its catalog."""
    return ".".join(name.split(".")[-2:])


def last_published(catalog: Any) -> dict[str, dt.datetime]:
    """Per table (``namespace.table``), the newest hour whose publish reached it."""
    if not catalog.table_exists(HOUR_STATUS):
        return {}
    return newest_published(catalog.load_table(HOUR_STATUS).scan(
        row_filter=PUBLISHED_ROWS, selected_fields=("landed_hour", "tables")).to_arrow().to_pylist())


# The ops.hour_status rows of published hours.
PUBLISHED_ROWS = "stage = 'publish' AND status = 'PUBLISHED'"


def newest_published(rows: Iterable[dict[str, Any]]) -> dict[str, dt.datetime]:
    """Per table (``namespace.table``), the newest ``landed_hour`` of the published ``rows``."""
    newest: dict[str, dt.datetime] = {}
    for row in rows:
        for table in row["tables"] or []:
            name = short_name(table["name"])
            newest[name] = max(newest.get(name, row["landed_hour"]), row["landed_hour"])
    return newest


def _rows_and_bytes(table: Any) -> tuple[int, int]:
    """The table's live rows and its data files' bytes, from the current snapshot's manifests
    (its summary's totals are not kept exact across branch commits); a table with delete files is
    counted by a scan of one column."""
    tasks = list(table.scan().plan_files())
    size = sum(int(task.file.file_size_in_bytes) for task in tasks)
    if any(task.delete_files for task in tasks):
        first = table.schema().fields[0].name
        return int(table.scan(selected_fields=(first,)).to_arrow().num_rows), size
    return sum(int(task.file.record_count) for task in tasks), size


def describe_table(table: Any, name: str, published: dict[str, dt.datetime],
               formats: dict[str, str]) -> tuple[Any, ...]:
    """One table's row of :data:`COLUMNS`."""
    snapshot = table.current_snapshot()
    topic = table.properties.get(_TOPIC_PROPERTY)
    source = (topic, formats.get(topic) if topic else None, table.properties.get(_SOURCE_PROPERTY))
    hour = published.get(name)
    hour_shown = hour.strftime("%Y-%m-%dT%H:00:00Z") if hour is not None else None
    if snapshot is None:  # created, never written
        return (name, 0, 0, hour_shown, None, None, *source)
    when = dt.datetime.fromtimestamp(snapshot.timestamp_ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return (name, *_rows_and_bytes(table), hour_shown, snapshot.snapshot_id, when, *source)


def table_rows(config: Any) -> list[tuple[Any, ...]]:
    """One row per table of the catalog (:data:`COLUMNS`), by name."""
    from cdclake.catalog import open_catalog

    catalog = open_catalog(config)
    published = last_published(catalog)
    formats = {t.name: t.format for t in config.topics}
    return [describe_table(catalog.load_table(identifier), short_name(".".join(identifier)), published,
                           formats)
            for namespace in sorted(catalog.list_namespaces())
            for identifier in sorted(catalog.list_tables(namespace))]


def _command(args: argparse.Namespace) -> int:
    from cdclake.query import write_result

    write_result(list(COLUMNS), table_rows(load_config()), args.format, sys.stdout)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("tables", help="every lakehouse table: rows, size, last published hour, "
                                           "snapshot and source")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(handler=_command)
