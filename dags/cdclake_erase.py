"""
### cdclake_erase — erase one key of one source table from the lake (GDPR Art. 17)

Triggered by hand (*Trigger* in the UI, or `airflow dags trigger cdclake_erase --conf '{...}'`);
never scheduled. One task, `erase`, runs `spark_jobs/jobs/erase.py` on the Spark Connect
server: the same code and checks as `cdclake erase`.

Params:

* `table` — the source table (`db.table`, `db.schema.table`) or `current.<name>`;
* `key` — the key's columns and values, a JSON object such as `{"id": 42}` (values as the
  table shows them: a number or a string);
* `topic` — optional: only the changes that came from this topic;
* `reason` — why (recorded in `ops.erasures`);
* `dry_run` — **ticked by default**: the run only lists, in the task log, what would go;
* `confirm` — untick `dry_run` and tick this to erase. Time travel to before the erasure is lost
  for every table it touches (their earlier snapshots are expired). Unticking `dry_run` without
  ticking `confirm` fails the task: the job refuses an unconfirmed erasure.

What goes: the key's rows in `current`, its tombstones and `history`, its change rows in
`cdc.changelog` and `cdc.quarantine`, and the Kafka messages they came from in
`raw.kafka_messages`; the data files holding them are rewritten, earlier snapshots expired and
orphan files removed. `ops.erasures` records it (a salted hash of the key, never the key).

The job waits (the task fails and its retries try again) while an hour is in flight (an audit
branch, or a landed hour not yet published). It refuses (the task fails at once) an unconfirmed
erasure, an unknown table or key, and a tag or another branch on a touched table.
An erasure stopped midway completes when the same table and key are erased again. The task runs
in the one-slot pool `lakehouse_writes`, so it never commits while an hourly or maintenance task
does. Details: docs/operations.md, *Erasure*.
"""

from __future__ import annotations

from airflow.sdk import Param, dag

from cdclake.dag_defaults import DEFAULT_ARGS, lakehouse_write_args
from cdclake_airflow.operators import CdclakeSparkJobOperator

# One argument each, as `--option=value`: a value starting with "-" stays a value. No shell is
# involved (the operator calls the job's main with this list); run_job drops an empty argument.
# The key renders as JSON whether the run's conf gives it as an object or as a JSON string.
ERASE_ARGS = [
    "--table={{ params.table }}",
    "--key={{ params.key if params.key is string else params.key | tojson }}",
    "{{ '--topic=' ~ params.topic if params.topic else '' }}",
    "--reason={{ params.reason }}",
    "{{ '--dry-run' if params.dry_run else ('--yes' if params.confirm else '') }}",
]


@dag(
    dag_id="cdclake_erase",
    schedule=None,
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    doc_md=__doc__,
    tags=["cdclake", "erasure", "iceberg"],
    params={
        "table": Param(type="string", minLength=1,
                       description="the source table (db.table or db.schema.table) or current.<name>"),
        "key": Param(type=["object", "string"], minProperties=1, minLength=1,
                     description='the key\'s columns and values as JSON, e.g. {"id": 42}'),
        # "null" in a type makes the field optional in the UI's trigger form.
        "topic": Param(None, type=["null", "string"],
                       description="only the changes that came from this topic (empty: every topic)"),
        "reason": Param(type="string", minLength=1, description="why (recorded in ops.erasures)"),
        "dry_run": Param(True, type="boolean",
                         description="only list what would go (untick, and tick confirm, to erase)"),
        "confirm": Param(False, type="boolean",
                         description="erase: time travel to before the erasure is lost for the tables "
                                     "it touches (required unless dry_run)"),
    },
)
def cdclake_erase() -> None:
    CdclakeSparkJobOperator(task_id="erase", job="erase", hourly=False, extra_args=ERASE_ARGS,
                            **lakehouse_write_args())


cdclake_erase()
