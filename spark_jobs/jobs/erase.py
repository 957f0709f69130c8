"""Erase one key of one source table from the lake (see ``spark_jobs.erasure``).

    python -m spark_jobs.jobs.erase --table shop.customers --key '{"id": 42}' \\
        --reason "GDPR request 1234" --run-id manual__1 [--topic T] [--dry-run | --yes]

``cdclake erase`` and the ``cdclake_erase`` DAG run this with the same arguments. Prints what goes
(and, unless ``--dry-run``, what went). A refusal (unconfirmed, unknown table or key, a tag) raises
:class:`ErasureError`, which fails the DAG's task at once; an hour in flight exits 1, so the task's
retry waits for it.
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import SparkSession

from cdclake.config import PipelineConfig
from cdclake.exceptions import ErasureDeferred, ErasureError
from spark_jobs.commands.erase import add_arguments
from spark_jobs.erasure import WARNING, ErasurePlan, ErasureRequest, erase
from spark_jobs.session import job_session


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Erase one key of one source table from every layer of "
                                                 "the lake, physically.")
    add_arguments(parser)
    parser.add_argument("--run-id", required=True, help="the Airflow run id (lineage)")
    parser.add_argument("--config", help="pipeline configuration file (default include/config/pipeline.yml)")
    return parser


def run(spark: SparkSession, config: PipelineConfig, args: argparse.Namespace, run_id: str) -> int:
    if not args.dry_run and not (args.reason or "").strip():
        raise ErasureError("--reason is required: it is recorded in ops.erasures")
    request = ErasureRequest(args.table, args.key, (args.reason or "").strip(), args.topic)
    if args.yes:
        print(WARNING)
    outcome = erase(spark, config, request, run_id, dry_run=args.dry_run, confirmed=args.yes)
    if isinstance(outcome, ErasurePlan):
        print("dry run: nothing erased" if args.dry_run else "nothing holds the key (erased already?): "
              "nothing erased")
        print("\n".join(outcome.lines()))
        print(WARNING)
        return 0
    print("\n".join(outcome.plan.lines()))
    print(f"erased: ops.erasures {outcome.erasure_id}; {outcome.snapshots_expired} snapshot(s) expired, "
          f"{outcome.files_removed} file(s) removed from the warehouse")
    return 0


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    args = build_parser().parse_args(argv)
    with job_session(args.config, "cdclake-erase", spark) as (config, session):
        try:
            return run(session, config, args, args.run_id)
        except ErasureDeferred as exc:  # waits for the hour in flight: the task's retry tries again
            print(f"cdclake erase: {exc}", file=sys.stderr)
            return 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ErasureError as exc:  # refused: running it again changes nothing
        print(f"cdclake erase: {exc}", file=sys.stderr)
        sys.exit(2)
