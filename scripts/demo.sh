#!/usr/bin/env bash
# Set up (if needed) and run the demo: a real Kafka broker, three hours of mixed-format CDC
# traffic through the hourly DAG, then the current-state tables. Usage: bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH" GX_ANALYTICS_ENABLED=false
cdclake demo "$@"
