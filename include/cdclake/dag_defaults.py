"""Defaults every cdclake DAG shares: retry policy per kind of task, and the lakehouse write pool.

Two kinds of task, told apart by their ``task_id`` (:func:`task_kind`):

* **gates** — ``validate_*`` tasks (Great Expectations suites). They never retry: the gate failed
  and the data it read has not changed, so a retry would only fail again later.
* **I/O** — everything else (Kafka reads, Spark jobs, Iceberg commits). Brokers restart, executors
  get lost, commits conflict: these retry (:data:`IO_RETRIES` times, :data:`IO_RETRY_DELAY` apart).
  Every cdclake job replaces what it writes, so a retry is safe.

Every task that commits to an Iceberg table (land, normalize, compact, publish, the maintenance
steps) runs in the Airflow pool :data:`LAKEHOUSE_WRITES_POOL` (one slot): at most one lakehouse
write runs at a time across all DAGs, so daily maintenance never rewrites files under an hourly
MERGE. Create the pool once per Airflow installation::

    airflow pools set lakehouse_writes 1 "one Iceberg commit at a time (cdclake)"

Usage in a DAG file::

    @dag(..., default_args=DEFAULT_ARGS)
    ...
    SparkSubmitOperator(task_id="compact", **lakehouse_write_args(), ...)
    @task(task_id="validate_current", **gate_args())

Nothing here touches the network, connections or Variables: DAG files import it at parse time.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

TaskKind = Literal["gate", "io"]

LAKEHOUSE_WRITES_POOL = "lakehouse_writes"
LAKEHOUSE_WRITES_POOL_SLOTS = 1
LAKEHOUSE_WRITES_POOL_DESCRIPTION = "one Iceberg commit at a time (cdclake hourly and maintenance DAGs)"

GATE_PREFIX = "validate_"

IO_RETRIES = 2
IO_RETRY_DELAY = dt.timedelta(minutes=5)
GATE_RETRIES = 0

OWNER = "cdclake"

# The retry policy of each kind of task; DAG-integrity tests check every task against it.
RETRY_POLICY: dict[TaskKind, dict[str, Any]] = {
    "io": {"retries": IO_RETRIES, "retry_delay": IO_RETRY_DELAY},
    "gate": {"retries": GATE_RETRIES},
}

# DAG-level defaults: the I/O policy (most tasks); gates override it with gate_args().
DEFAULT_ARGS: dict[str, Any] = {
    "owner": OWNER,
    "depends_on_past": False,
    **RETRY_POLICY["io"],
}


def task_kind(task_id: str) -> TaskKind:
    """``validate_*`` tasks (inside task groups too: ``group.validate_raw``) are gates; others I/O."""
    return "gate" if task_id.rsplit(".", 1)[-1].startswith(GATE_PREFIX) else "io"


def io_args(**overrides: Any) -> dict[str, Any]:
    """Operator kwargs of an I/O task that does not commit to Iceberg (e.g. planning Kafka offsets)."""
    return {**RETRY_POLICY["io"], **overrides}


def lakehouse_write_args(**overrides: Any) -> dict[str, Any]:
    """Operator kwargs of a task that commits to an Iceberg table: I/O retries + the write pool."""
    return {**RETRY_POLICY["io"], "pool": LAKEHOUSE_WRITES_POOL, **overrides}


def gate_args(**overrides: Any) -> dict[str, Any]:
    """Operator kwargs of a quality gate (``validate_*``): never retried."""
    return {**RETRY_POLICY["gate"], **overrides}
