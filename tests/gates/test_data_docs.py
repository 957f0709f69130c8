"""The Data Docs site stays cheap to build as results pile up, hour after hour.

GX reads every validation result its index lists. The gates render a gate's pages once (not once
per batch) and make the index list only the newest results; every result stays in the GX store
(and in ``ops.gate_results``).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import yaml

from tests.gates.gx_runs import store_gate_runs


@pytest.mark.parametrize("local_rows_max", [100, 0], ids=["pandas", "spark"])
def test_docs_are_rendered_once_per_gate_and_the_index_lists_the_newest_results(spark, tmp_path,
                                                                                 local_rows_max) -> None:
    from spark_jobs.gates import GateRunner, SuiteBatch

    runner = GateRunner(spark, tmp_path, docs_index_limit=2, local_rows_max=local_rows_max)
    not_null = {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "id"},
                "meta": {"batch": "rows"}}
    suite = SuiteBatch("docs", "rows", "three ids, one null", ("id",), (not_null,))
    frame = spark.createDataFrame([(1,), (2,), (None,)], "id int")
    site = tmp_path / "gx" / "uncommitted" / "data_docs" / "local_site"

    for n in range(4):
        outcomes = runner.validate(suite, frame, {}, f"docs run {n}")
        assert [(o.expectation, o.column, o.success, o.observed, o.offending) for o in outcomes] == [
            ("expect_column_values_to_not_be_null", "id", False, "1 unexpected of 3 rows (sample [null])",
             ("null",))]
    assert not (site / "validations").exists()  # nothing rendered per batch
    runner.build_docs()

    index = (site / "index.html").read_text()
    assert sorted(set(re.findall(r"docs run \d", index))) == ["docs run 2", "docs run 3"]
    assert len(list((site / "validations").rglob("*.html"))) == 2
    stored = tmp_path / "gx" / "uncommitted" / "validations"
    assert len(list(stored.rglob("*.json"))) == 4
    settings = yaml.safe_load((tmp_path / "gx" / "great_expectations.yml").read_text())
    assert settings["data_docs_sites"]["local_site"]["site_index_builder"] == {
        "class_name": "DefaultSiteIndexBuilder", "validation_results_limit": 2}

    runner.build_docs()  # nothing new: nothing to render
    assert (site / "index.html").read_text() == index


def test_a_gate_that_breaks_renders_what_it_validated_and_raises_its_own_error(spark, config, tmp_path,
                                                                                caplog) -> None:
    from spark_jobs.gates import GateRunner, run_gate

    class BreaksOnSecondBatch(GateRunner):
        batches = 0

        def validate(self, *args, **kwargs):
            if self.batches:
                raise RuntimeError("the second batch broke")
            self.batches += 1
            return super().validate(*args, **kwargs)

    class DocsBreakToo(BreaksOnSecondBatch):
        def build_docs(self) -> None:
            raise OSError("no space left for Data Docs")

    hour = dt.datetime(2024, 3, 2, 5)
    runner = BreaksOnSecondBatch(spark, tmp_path)
    runner.batches = 0
    with pytest.raises(RuntimeError, match="the second batch broke"):
        run_gate(spark, config, "raw", hour, "broken", runner=runner)
    index = (tmp_path / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html").read_text()
    assert "raw 2024-03-02T05 broken" in index  # the batch validated before the error is rendered

    runner = DocsBreakToo(spark, tmp_path)
    runner.batches = 0
    with pytest.raises(RuntimeError, match="the second batch broke"):  # not the docs error
        run_gate(spark, config, "raw", hour, "broken again", runner=runner)
    assert [(r.levelname, r.getMessage(), str(r.exc_info[1])) for r in caplog.records
            if r.name == "spark_jobs.gates"] == [
        ("ERROR", "gate raw 2024-03-02T05 broken again: Data Docs not rendered "
                  "(the gate's own error follows)", "no space left for Data Docs")]


def test_results_and_pages_older_than_the_cutoff_are_deleted_and_the_index_rebuilt(spark, tmp_path) -> None:
    from spark_jobs.gate_history import expire_gate_results, run_time_folders

    store_gate_runs(spark, tmp_path, "history", [f"history run {n}" for n in range(3)])
    gx_root = tmp_path / "gx"
    stored = gx_root / "uncommitted" / "validations"
    site = gx_root / "uncommitted" / "data_docs" / "local_site"
    times = [t for t, _ in run_time_folders(stored)]
    assert len(times) == 3 and [t for t, _ in run_time_folders(site / "validations")] == times

    def runs_in(tree: Path, suffix: str) -> list[str]:
        return sorted(p.parts[-3] for p in tree.rglob(f"*{suffix}"))

    assert expire_gate_results(gx_root, times[1]) == {
        "expired_results": 1, "expired_pages": 1, "kept_results": 2}
    assert runs_in(stored, ".json") == runs_in(site / "validations", ".html") == [
        "history run 1", "history run 2"]
    run_folders = (stored / "history" / "rows").iterdir()  # the expired run's folder is gone too
    assert sorted(p.name for p in run_folders) == ["history run 1", "history run 2"]
    index = (site / "index.html").read_text()
    assert sorted(set(re.findall(r"history run \d", index))) == ["history run 1", "history run 2"]

    # Again: nothing older is left, nothing changes (the index is not rebuilt).
    assert expire_gate_results(gx_root, times[1]) == {
        "expired_results": 0, "expired_pages": 0, "kept_results": 2}
    assert (site / "index.html").read_text() == index

    # Everything: the index lists no result, and the gates go on storing and rendering.
    later = times[2] + dt.timedelta(seconds=1)
    assert expire_gate_results(gx_root, later) == {
        "expired_results": 2, "expired_pages": 2, "kept_results": 0}
    assert not (stored / "history").exists() and not (site / "validations" / "history").exists()
    assert "history run" not in (site / "index.html").read_text()
    store_gate_runs(spark, tmp_path, "history", ["history run 3"])
    assert re.findall(r"history run \d", (site / "index.html").read_text()) != []
    assert runs_in(stored, ".json") == ["history run 3"]
