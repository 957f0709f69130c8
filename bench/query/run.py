"""Benchmark: ``cdclake query`` on a 10M-row current table: a key lookup and a full scan.

    .venv/bin/python bench/query/run.py [--rows 10000000] [--files 20] [--keep]

A private pyiceberg catalog (no Spark) holds one table of ``--rows`` rows (id, name, amount,
changed_at), written in ``--files`` appends of consecutive ids, as compaction's sorted writes
leave a current table. Each query runs as its own ``cdclake query`` process, three times (the
first cold, the others warm); printed: each run's wall time and peak RSS, beside the table's size
on disk. Not a test: figures go in bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOOKUP = "SELECT * FROM current.bench__orders WHERE id = {key}"
QUERIES = {
    "key lookup": LOOKUP,
    "key lookup, two columns": "SELECT name, amount FROM current.bench__orders WHERE id = {key}",
    "full scan: count, sum": "SELECT count(*), sum(amount) FROM current.bench__orders",
    "full scan: group by": "SELECT length(name), count(*) FROM current.bench__orders GROUP BY 1 ORDER BY 1",
}


def _write_table(root: Path, rows: int, files: int) -> int:
    """The table, written; returns its data files' total size in bytes."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("lakehouse", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
    catalog.create_namespace("current")
    per_file = rows // files
    table = None
    for start in range(0, per_file * files, per_file):
        ids = pa.array(range(start, start + per_file), pa.int64())
        batch = pa.table({
            "id": ids,
            "name": pc.binary_join_element_wise(pa.scalar("customer-"), pc.cast(ids, pa.string()), ""),
            "amount": pc.cast(pc.divide(pc.cast(ids, pa.float64()), 7.0), pa.decimal128(20, 2)),
            "changed_at": pc.cast(pc.add(pc.multiply(ids, 1_000_000), 1_700_000_000_000_000),
                                  pa.timestamp("us")),
        })
        if table is None:
            table = catalog.create_table(("current", "bench__orders"), schema=batch.schema)
        table.append(batch)
    return sum(p.stat().st_size for p in (root / "warehouse").rglob("*.parquet"))


def _run(root: Path, sql: str) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one ``cdclake query`` process."""
    env = {**os.environ, "CDCLAKE_HOME": str(root / "home"), "CDCLAKE_CONFIG": str(root / "pipeline.yml")}
    began = time.monotonic()
    child = subprocess.Popen([str(Path(sys.executable).parent / "cdclake"), "query", "--format", "csv", sql],
                             env=env, stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest so far
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"cdclake query failed ({child.returncode}): {sql}")
    return time.monotonic() - began, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cdclake-bench-query-"))
    try:
        began = time.monotonic()
        size = _write_table(root, args.rows, args.files)
        catalog = f"catalog:\n  uri: sqlite:///{root}/catalog.db\n  warehouse: file://{root}/warehouse\n"
        (root / "pipeline.yml").write_text(catalog + "topics: []\n")
        print(f"{args.rows:,} rows in {args.files} files, {size / 1e6:.0f} MB on disk "
              f"(written in {time.monotonic() - began:.0f} s)")
        key = args.rows * 3 // 4 + 17
        for label, sql in QUERIES.items():
            runs = [_run(root, sql.format(key=key)) for _ in range(3)]
            shown = ", ".join(f"{s:.2f} s" for s, _ in runs)
            print(f"  {label}: {shown} (cold, warm, warm); peak RSS {max(m for _, m in runs):.0f} MB")
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
