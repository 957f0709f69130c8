"""Run by the cluster's client: which files the executors import the product from, and where they
run. Prints one JSON line: one object per executor process seen."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from cdclake.config import load_config
from spark_jobs.session import connect


def main() -> None:
    spark = connect(load_config(), "executor-probe")

    # A nested function: sent by value (a module-level one would be imported by name, from the tests).
    def where(batches: Iterable[Any]) -> Iterable[Any]:
        import os

        import pandas as pd

        import cdclake
        import spark_jobs

        cwd = os.getcwd()
        worker = next((p for p in cwd.split(os.sep) if p.startswith("worker")), "?")
        for _batch in batches:
            yield pd.DataFrame({"pid": [os.getpid()], "cdclake": [cdclake.__file__],
                                "spark_jobs": [spark_jobs.__file__], "cwd": [cwd], "worker": [worker],
                                "pythonpath": [os.environ.get("PYTHONPATH", "")]})

    rows = (spark.range(0, 16, 1, 16)
            .mapInPandas(where, "pid long, cdclake string, spark_jobs string, cwd string, worker string, "
                                "pythonpath string")
            .distinct().collect())
    spark.stop()
    print(json.dumps([row.asDict() for row in rows]))


if __name__ == "__main__":
    main()
