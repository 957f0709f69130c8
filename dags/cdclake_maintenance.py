"""
### cdclake_maintenance — daily Iceberg table maintenance

Keeps every lakehouse table (`raw.*`, `ops.*`, `cdc.*`, `current.*`, listed from the catalog)
and the gates' GX folder fast to read and bounded in size. One step per task, each a job on the
Spark Connect server, in this order:

0. `expire_hours` — whole published hours of `raw.kafka_messages`, `cdc.changelog` (folded into
   `cdc.changelog_base` first) and `cdc.quarantine` older than `retention.raw_days` /
   `changelog_days` / `quarantine_days` (unset: every hour is kept)
1. `purge_tombstones` — drop delete-markers older than `compaction.tombstone_retention_days`
2. `rewrite_data_files` — bin-pack small files, apply merge-on-read delete files
3. `rewrite_position_delete_files` — compact the remaining delete files
4. `expire_snapshots` — older than `maintenance.snapshot_retention_days`, keeping
   `maintenance.retain_last` per table and every snapshot a branch or tag references
5. `remove_orphan_files` — unreferenced files older than `maintenance.orphan_file_age_days`
6. `expire_gate_results` — GX validation results and Data Docs pages of gates older than
   `maintenance.gate_results_retention_days` (`ops.gate_results` keeps every outcome)

**Never concurrent with the hourly writers:** every task here and every writing task of
`cdclake_hourly` runs in the one-slot pool `lakehouse_writes` (create it once:
`airflow pools set lakehouse_writes 1 "one Iceberg commit at a time"`); Iceberg's optimistic
commit retries are the backstop. Details: `spark_jobs/maintenance.py`.

Retention cut-offs are computed from the run's `data_interval_end`, so a re-run is identical.
Every step is idempotent and retried (I/O policy of `cdclake.dag_defaults`).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import chain, dag

from cdclake.dag_defaults import DEFAULT_ARGS, lakehouse_write_args
from cdclake_airflow.operators import CdclakeSparkJobOperator
from spark_jobs.maintenance import STEPS

AS_OF = "{{ (data_interval_end or dag_run.run_after).isoformat() }}"


@dag(
    dag_id="cdclake_maintenance",
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    doc_md=__doc__,
    tags=["cdclake", "maintenance", "iceberg"],
)
def cdclake_maintenance() -> None:
    steps = [
        CdclakeSparkJobOperator(
            task_id=step, job="maintenance", hourly=False,
            extra_args=["--as-of", AS_OF, "--step", step], **lakehouse_write_args())
        for step in STEPS
    ]
    chain(*steps)


cdclake_maintenance()
