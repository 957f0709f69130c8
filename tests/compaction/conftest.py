"""Compaction tests share one catalog: a table a test leaves held back (``cdc.held_tables``)
would be retried by every later hour of every later test, so each test releases what it held."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _release_held_tables(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "spark" in request.fixturenames:
        from spark_jobs import held_tables
        from spark_jobs.tables import ensure_tables

        spark = request.getfixturevalue("spark")
        ensure_tables(spark)  # a module run alone may not have made them
        if held_tables.read(spark):
            held_tables.write(spark, [])
