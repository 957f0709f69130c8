"""Real GX validation results and Data Docs pages for tests of the GX folder's upkeep."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession


def store_gate_runs(spark: SparkSession, project_root: Path, suite_name: str, run_names: list[str]) -> None:
    """Validate one non-null ``id`` row with a one-expectation suite once per name in ``run_names``
    (each a GX run of its own), rendering the Data Docs after each: under ``<project_root>/gx``,
    one result JSON and one page per run, in run-time folders oldest first."""
    from spark_jobs.gates import GateRunner, SuiteBatch

    runner = GateRunner(spark, project_root)
    not_null = {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "id"},
                "meta": {"batch": "rows"}}
    suite = SuiteBatch(suite_name, "rows", "ids", ("id",), (not_null,))
    frame = spark.createDataFrame([(1,)], "id int")
    for name in run_names:
        runner.validate(suite, frame, {}, name)
        runner.build_docs()
