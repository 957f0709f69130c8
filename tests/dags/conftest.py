"""Airflow for DAG tests: a private AIRFLOW_HOME, no examples, the project's dags/ folder.

Set before Airflow is first imported (this conftest loads before the test modules of tests/dags);
parsing DAG files needs no metadata database.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags"

if "airflow" not in sys.modules:
    os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="cdclake-airflow-")
    atexit.register(shutil.rmtree, os.environ["AIRFLOW_HOME"], ignore_errors=True)
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(DAGS_FOLDER)
    os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"
