"""What the lakehouse recorded for each hour and each current table, as plain data for the Airflow
UI page (``plugins/cdclake_airflow/ui.py``).

Read through pyiceberg from the tables the stages record in (``ops.offset_ledger``,
``ops.run_stats``, ``ops.gate_results``, ``ops.hour_status``, ``cdc.held_tables``), with no JVM.
Data files are picked by their hour and kept once read (they never change), so a page view reads
only the files written since the last one.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cdclake import cli_args, table_names
from cdclake.cli_args import hour_text
from cdclake.exceptions import CdclakeError

LEDGER, RUN_STATS, GATE_RESULTS, HOUR_STATUS, HELD, STARTS, EXPIRED = (tuple(name.split(".")) for name in (
    table_names.OFFSET_LEDGER, table_names.RUN_STATS, table_names.GATE_RESULTS, table_names.HOUR_STATUS,
    table_names.HELD_TABLES, table_names.TOPIC_STARTS, table_names.EXPIRED_HOURS))
# Normalize's counters shown per hour (ops.run_stats metrics).
COUNTS = ("raw_messages", "change_rows", "control_messages", "quarantined_messages")
HELD_EXPECTATION = table_names.HELD_EXPECTATION
# Ledger statuses that mark a hole: offsets skipped on purpose, or lost to retention.
HOLE_STATUSES = ("skipped", "landed_with_gap")
DOCS_SITE = Path("gx") / "uncommitted" / "data_docs" / "local_site"
MAX_RANGE = dt.timedelta(days=92)


def parse_hour(text: str) -> dt.datetime:
    """An hour as the ``cdclake`` commands read it (:func:`cdclake.cli_args.parse_hour`)."""
    try:
        return cli_args.parse_hour(text)
    except argparse.ArgumentTypeError as exc:
        raise CdclakeError(str(exc)) from None


def _utc(moment: dt.datetime) -> dt.datetime:
    """A timestamp column's value (UTC, aware) as the naive UTC the rest of cdclake uses."""
    return moment.astimezone(dt.UTC).replace(tzinfo=None) if moment.tzinfo else moment


# Rows already read, by data file and what was read of it: a data file never changes, so a page
# view reads only the files written since the last one (about four an hour), not the whole range.
_FILE_ROWS: OrderedDict[tuple[str, tuple[str, ...], str], list[dict[str, Any]]] = OrderedDict()
FILE_CACHE_SIZE = 50_000
# Files are read a few at a time (pyiceberg's own pool serves each read: not that one, or a read
# would wait for a worker held by the reads waiting for it).
_READERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="cdclake-page-read")


def _scan(catalog: Any, table: tuple[str, ...], fields: Iterable[str], hours: tuple[dt.datetime, dt.datetime]
          | None = None, row_filter: str = "True") -> list[dict[str, Any]]:
    """The rows of ``table`` matching ``row_filter`` (and landed in ``hours``, ``[start, end)``).

    Each data file planned is read once, whole but for ``row_filter``, and kept: the hours are
    then picked here, so a file holding several hours (an unpartitioned table) serves any range.
    The rows are shared with later calls: read them, never change them."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    if not catalog.table_exists(table):
        return []
    loaded = catalog.load_table(table)
    columns = tuple(fields)
    # Planned without a filter: pyiceberg would work out a filter's residual for every file, which
    # costs more than the reads it saves. The hours pick files by partition here instead.
    scan = loaded.scan(selected_fields=columns)
    residual = AlwaysTrue() if row_filter == "True" else loaded.scan(row_filter=row_filter).row_filter
    reader = ArrowScan(loaded.metadata, loaded.io, scan.projection(), residual)
    tasks = [t for t in scan.plan_files() if not hours or _may_hold(loaded.spec(), t.file, hours)]
    # Files with delete files hold no fixed set of rows: read every time, never kept.
    unread = [t for t in tasks if t.delete_files or (t.file.file_path, columns, row_filter) not in _FILE_ROWS]
    read = dict(zip((t.file.file_path for t in unread),
                    _READERS.map(lambda t: _rows_of(reader, t), unread), strict=True))
    rows: list[dict[str, Any]] = []
    for task in tasks:
        key = (task.file.file_path, columns, row_filter)
        if task.delete_files:
            rows += read[task.file.file_path]
            continue
        if key not in _FILE_ROWS:
            _FILE_ROWS[key] = read[task.file.file_path]
            if len(_FILE_ROWS) > FILE_CACHE_SIZE:
                _FILE_ROWS.popitem(last=False)
        _FILE_ROWS.move_to_end(key)
        rows += _FILE_ROWS[key]
    if hours:
        rows = [row for row in rows if hours[0] <= row["landed_hour"] < hours[1]]
    return rows


def _may_hold(spec: Any, data_file: Any, hours: tuple[dt.datetime, dt.datetime]) -> bool:
    """Whether a data file may hold rows of ``hours``: False only when it is partitioned by the
    hour (identity ``landed_hour``, in the table's current spec) and its hour is outside."""
    from pyiceberg.transforms import IdentityTransform

    if data_file.spec_id != spec.spec_id:
        return True
    for position, field in enumerate(spec.fields):
        if field.name == "landed_hour" and isinstance(field.transform, IdentityTransform):
            micros = data_file.partition[position]
            if micros is None:
                return True
            hour = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
            return hours[0] <= hour < hours[1]
    return True


def _rows_of(reader: Any, task: Any) -> list[dict[str, Any]]:
    """One data file's rows, timestamps as naive UTC."""
    rows: list[dict[str, Any]] = reader.to_table([task]).to_pylist()
    for row in rows:
        for name in ("landed_hour", "since", "failed_hour", "start_hour"):
            if row.get(name) is not None:
                row[name] = _utc(row[name])
    return rows


def default_range(catalog: Any, now: dt.datetime | None = None) -> tuple[dt.datetime, dt.datetime]:
    """The 30 days ending with the newest hour the ledger recorded (or the current hour)."""
    newest = max((row["landed_hour"] for row in _scan(catalog, LEDGER, ("landed_hour",))), default=None)
    if newest is None:
        moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(tzinfo=None)
        newest = moment.replace(minute=0, second=0, microsecond=0)
    end = newest + dt.timedelta(hours=1)
    return end - dt.timedelta(days=30), end


def _gate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One stage's gate: PASSED, PASSED_HELD (only held tables failed) or FAILED, and what failed."""
    failed = [r for r in rows if not r["success"]]
    status = "PASSED" if not failed else (
        "PASSED_HELD" if all(r["expectation"] == HELD_EXPECTATION for r in failed) else "FAILED")
    return {"status": status, "run_id": rows[0]["run_id"], "expectations": len(rows),
            "failed": [{"suite": r["suite"], "expectation": r["expectation"], "column": r["column_name"],
                        "observed": r["observed_value"]}
                       for r in sorted(failed, key=lambda r: (r["suite"], r["expectation"]))]}


def hours(config: Any, start: dt.datetime, end: dt.datetime, ranges: bool = True) -> list[dict[str, Any]]:
    """Every hour in ``[start, end)`` that a stage recorded, newest first, with the hours missing
    between the first of them (or the earliest topic's start, ``ops.topic_starts``, when earlier)
    and the last of them (a hole) shown as not landed; with ``ranges``, each
    hour's landed offset range per topic and partition (``landed``)."""
    from cdclake.catalog import open_catalog

    if end <= start or end - start > MAX_RANGE:
        raise CdclakeError(f"a range of 1 hour to {MAX_RANGE.days} days, got {start} .. {end}")
    catalog = open_catalog(config)
    hours = (start, end)
    by_hour: dict[dt.datetime, dict[str, Any]] = defaultdict(lambda: {
        "landed": [], "counts": dict.fromkeys(COUNTS, 0), "quarantine": defaultdict(int),
        "gates": defaultdict(list), "compact": None, "publish": None, "published_tables": 0,
        "run_ids": set(), "expired": []})
    for row in _scan(catalog, LEDGER, ("topic", "partition", "landed_hour", "planned_start", "planned_end",
                                       "landed_count", "first_offset", "last_offset", "status", "message",
                                       "run_id", "late_messages", "max_lateness_ms"), hours):
        entry = by_hour[row["landed_hour"]]
        entry["run_ids"].add(row["run_id"])
        entry["landed"].append({k: v for k, v in row.items() if k != "landed_hour"})
    for row in _scan(catalog, RUN_STATS, ("landed_hour", "metric", "reason_code", "value"), hours,
                     "stage = 'normalize'"):
        entry = by_hour[row["landed_hour"]]
        if row["metric"] in COUNTS:
            entry["counts"][row["metric"]] += row["value"]
        if row["metric"] == "quarantined_messages":
            entry["quarantine"][row["reason_code"] or "UNKNOWN"] += row["value"]
    for row in _scan(catalog, GATE_RESULTS, ("landed_hour", "stage", "run_id", "suite", "expectation",
                                             "column_name", "success", "observed_value"), hours):
        by_hour[row["landed_hour"]]["gates"][row["stage"]].append(row)
    for row in _scan(catalog, HOUR_STATUS, ("landed_hour", "stage", "status", "run_id", "tables", "message"),
                     hours):
        entry = by_hour[row["landed_hour"]]
        entry[row["stage"]] = {"status": row["status"], "run_id": row["run_id"], "message": row["message"]}
        if row["stage"] == "publish" and row["status"] == "PUBLISHED":
            entry["published_tables"] = len(row["tables"] or [])
    for row in _scan(catalog, EXPIRED, ("landed_hour", "layer"), hours):
        if row["landed_hour"] in by_hour:
            by_hour[row["landed_hour"]]["expired"].append(row["layer"])
    if by_hour:
        begins = [row["start_hour"] for row in _scan(catalog, STARTS, ("start_hour",))]
        hour = min([*by_hour, *(max(b, start) for b in begins)])
        while hour < max(by_hour):  # touching each missing hour creates it, empty
            by_hour[hour]  # noqa: B018
            hour += dt.timedelta(hours=1)
    return [_hour_out(hour, by_hour[hour], ranges) for hour in sorted(by_hour, reverse=True)]


def _hour_out(hour: dt.datetime, entry: dict[str, Any], ranges: bool) -> dict[str, Any]:
    landed = sorted(entry["landed"], key=lambda r: (r["topic"], r["partition"]))
    gates = {stage: _gate(rows) for stage, rows in sorted(entry["gates"].items())}
    publish = entry["publish"]
    # The run that last worked on the hour: its publish, else the newest stage's.
    run_id = (publish or entry["compact"] or {}).get("run_id") or max(
        [g["run_id"] for g in gates.values()] + sorted(entry["run_ids"]), default=None)
    problems = []
    if not landed or any(r["status"] in HOLE_STATUSES for r in landed):
        problems.append("hole")
    if any(g["status"] == "FAILED" for g in gates.values()):
        problems.append("gate_failed")
    if entry["counts"]["quarantined_messages"]:
        problems.append("quarantine")
    if landed and (publish or {}).get("status") != "PUBLISHED":
        problems.append("unpublished")
    return {
        "hour": hour_text(hour),
        **({"landed": landed} if ranges else {}),
        "partitions": len(landed),
        "messages": sum(r["landed_count"] or 0 for r in landed),
        "late_messages": sum(r["late_messages"] or 0 for r in landed),
        "max_lateness_ms": max((r["max_lateness_ms"] or 0 for r in landed), default=0),
        "counts": entry["counts"],
        "quarantine": dict(sorted(entry["quarantine"].items())),
        "gates": gates,
        "compact": entry["compact"],
        "publish": publish,
        "published_tables": entry["published_tables"],
        "expired": sorted(entry["expired"]),
        "run_id": run_id,
        "problems": problems,
    }


def _schema_changes(table: Any) -> list[dict[str, Any]]:
    """Each schema after the first: the columns it added, dropped, renamed or retyped."""
    schemas = sorted(table.metadata.schemas, key=lambda s: s.schema_id)
    changes = []
    for before, after in zip(schemas, schemas[1:], strict=False):
        old = {f.field_id: f for f in before.fields}
        new = {f.field_id: f for f in after.fields}
        changed = [f"+{new[i].name} {new[i].field_type}" for i in new if i not in old]
        changed += [f"-{old[i].name}" for i in old if i not in new]
        changed += [f"{old[i].name} -> {new[i].name}" for i in new if i in old and old[i].name != new[i].name]
        changed += [f"{new[i].name}: {old[i].field_type} -> {new[i].field_type}"
                    for i in new if i in old and old[i].field_type != new[i].field_type]
        changes.append({"schema_id": after.schema_id, "changes": changed})
    return changes


def tables(config: Any) -> list[dict[str, Any]]:
    """Every current table: rows, last published hour, source, schema changes and holds."""
    from cdclake.catalog import open_catalog
    from cdclake.tables_cli import COLUMNS, PUBLISHED_ROWS, describe_table, newest_published

    catalog = open_catalog(config)
    if ("current",) not in catalog.list_namespaces():
        return []
    published = newest_published(_scan(catalog, HOUR_STATUS, ("landed_hour", "tables"),
                                       row_filter=PUBLISHED_ROWS))
    formats = {t.name: t.format for t in config.topics}
    held = {r["current_table"]: r for r in _scan(catalog, HELD, ("current_table", "since", "failed_hour",
                                                                 "message"))}
    out = []
    for identifier in sorted(catalog.list_tables("current")):
        if identifier[-1].endswith(table_names.TOMBSTONE_SUFFIX):
            continue
        name = ".".join(identifier[-2:])
        table = catalog.load_table(identifier)
        row = dict(zip(COLUMNS, describe_table(table, name, published, formats), strict=True))
        hold = held.get(name) or held.get(identifier[-1])
        row["schema_changes"] = _schema_changes(table)
        row["held"] = None if hold is None else {
            "since": hour_text(hold["since"]), "failed_hour": hour_text(hold["failed_hour"]),
            "message": hold["message"]}
        out.append(row)
    return out


def docs_root(config: Any) -> Path:
    return Path(config.home) / DOCS_SITE


def docs_pages(config: Any, stage: str, hour: dt.datetime, run_id: str) -> list[str]:
    """The Data Docs pages (paths under :func:`docs_root`, URL-quoted) of one gate run; the
    gate names each validation run ``<stage> <hour> <run id>[ <target>]``."""
    root = docs_root(config) / "validations"
    if not root.is_dir():
        return []
    prefix = f"{stage} {hour:%Y-%m-%dT%H} {run_id}"
    pages = [page for page in root.rglob("*.html")
             if any(p.name == prefix or p.name.startswith(prefix + " ") for p in page.parents)]
    return [quote(str(p.relative_to(docs_root(config)))) for p in sorted(pages)]


def docs_file(config: Any, relative: str) -> Path | None:
    """The Data Docs file at ``relative`` under the site, or None when it is not a file inside it."""
    root = docs_root(config).resolve()
    path = (root / relative).resolve()
    return path if path.is_relative_to(root) and path.is_file() else None
