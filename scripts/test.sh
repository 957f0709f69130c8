#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite: lint, type check, then pytest (unit + integration
# on the real Kafka broker, Spark, Iceberg catalog, GX and Airflow). Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
export GX_ANALYTICS_ENABLED=false
echo; echo "== ruff"
ruff check .
echo; echo "== mypy"
mypy
echo; echo "== pytest"
# Two workers, a test file (or the files tests/conftest.py groups) each at a time, in the order
# tests/conftest.py gives (the longest first): most tests wait on Spark, Kafka or Airflow, not
# on a core. The cluster tier runs only when asked: bash scripts/test.sh --cluster-tier
pytest -q -p no:cacheprovider --durations=25 -n "${CDCLAKE_TEST_WORKERS:-2}" --dist loadfile \
  --no-loadscope-reorder "$@"
