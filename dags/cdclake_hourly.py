"""
### cdclake hourly: one Kafka hour -> raw -> changelog -> current-state tables

Each run handles its data interval `[data_interval_start, data_interval_end)`:

1. **plan** the hour's offset range per topic-partition (fails loudly on a retention gap, a
   missing topic, or an hour that is not over);
2. **land** exactly those offsets into `raw.kafka_messages` (Spark, replaces the hour), then the
   **validate_raw** gate;
3. **normalize** every vendor format into `cdc.changelog` + `cdc.quarantine` on the hour's audit
   branch, then **validate_changelog** (nulls, ops, timestamp sanity, quarantine rate,
   reconciliation);
4. **compact** the hour into `current.<db>__<table>` (audit branch), then **validate_current**;
5. **publish**: fast-forward `main` to the audit branches. Analysts only ever read `main`.

Gates never retry (the data they read has not changed); I/O tasks do. `max_active_runs=1`: hours
publish in order, so each audit branch fast-forwards onto the previous hour's `main`, and the
compaction of hour N sees hours < N. A backfill (UI with *Max Active Runs* 1, or
`cdclake airflow backfill`) of any range runs the hours one after another through this same path;
a backfill's max active runs is its own, not the DAG's. The first scheduled hour is
`schedule.start_date` of the pipeline configuration. Param `topics` restricts a run; a landed
hour keeps its raw copy on a re-run unless param `reland` is set.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pendulum
from airflow.sdk import Asset, Param, chain, dag, task
from airflow.timetables.interval import CronDataIntervalTimetable

from cdclake.config import load_config
from cdclake.dag_defaults import (
    DEFAULT_ARGS,
    LAKEHOUSE_WRITES_POOL,
    gate_args,
    io_args,
    lakehouse_write_args,
)
from cdclake_airflow.operators import AUDIT_BRANCH_TEMPLATE, CdclakeSparkJobOperator

RAW = Asset("iceberg://lakehouse/raw/kafka_messages")
CHANGELOG = Asset("iceberg://lakehouse/cdc/changelog")
QUARANTINE = Asset("iceberg://lakehouse/cdc/quarantine")
CURRENT = Asset("iceberg://lakehouse/current")
BRANCH_ARGS = ["--branch", AUDIT_BRANCH_TEMPLATE]
# An option that renders empty unless the run's params ask for it (run_job drops empty arguments).
RELAND_FLAG = "{{ '--reland' if params.reland else '' }}"
# Gates record their results in ops.gate_results: an Iceberg commit, so they share the write pool.
GATE_ARGS = gate_args(pool=LAKEHOUSE_WRITES_POOL)


@dag(
    dag_id="cdclake_hourly",
    schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
    start_date=pendulum.instance(load_config().start_date),
    catchup=True,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    doc_md=__doc__,
    tags=["cdclake", "cdc", "iceberg", "hourly"],
    # "null" in a type makes the field optional in the UI's trigger and backfill forms.
    params={"topics": Param([], type=["null", "array"], items={"type": "string"},
                            description="only these topics (empty: all configured)"),
            "reland": Param(False, type="boolean",
                            description="read a landed hour's recorded offsets from Kafka again instead "
                                        "of keeping its raw copy (refused if Kafka holds fewer messages)")},
)
def cdclake_hourly() -> None:
    @task(task_id="plan", **io_args())
    def plan(data_interval_start: dt.datetime | None = None, run_id: str | None = None,
             params: dict[str, Any] | None = None) -> str:
        from cdclake.hourly import plan_hour_to_file

        if data_interval_start is None or run_id is None:
            raise ValueError("plan needs a DAG run's data_interval_start and run_id (Airflow passes them)")
        return plan_hour_to_file(data_interval_start, run_id, list((params or {}).get("topics") or []))

    planned = plan()
    land = CdclakeSparkJobOperator(
        task_id="land", job="land", outlets=[RAW],
        extra_args=["--plan-file", "{{ ti.xcom_pull(task_ids='plan') }}", RELAND_FLAG],
        preload_gates=True, **lakehouse_write_args())
    validate_raw = CdclakeSparkJobOperator(
        task_id="validate_raw", job="validate", extra_args=["--stage", "raw"], **GATE_ARGS)
    normalize = CdclakeSparkJobOperator(
        task_id="normalize", job="normalize", extra_args=BRANCH_ARGS, **lakehouse_write_args())
    validate_changelog = CdclakeSparkJobOperator(
        task_id="validate_changelog", job="validate", extra_args=["--stage", "changelog", *BRANCH_ARGS],
        **GATE_ARGS)
    compact = CdclakeSparkJobOperator(
        task_id="compact", job="compact", extra_args=BRANCH_ARGS, **lakehouse_write_args())
    validate_current = CdclakeSparkJobOperator(
        task_id="validate_current", job="validate", extra_args=["--stage", "current", *BRANCH_ARGS],
        **GATE_ARGS)
    publish = CdclakeSparkJobOperator(
        task_id="publish", job="publish", extra_args=BRANCH_ARGS, outlets=[CHANGELOG, QUARANTINE, CURRENT],
        **lakehouse_write_args())

    chain(planned, land, validate_raw, normalize, validate_changelog, compact, validate_current, publish)


cdclake_hourly()
