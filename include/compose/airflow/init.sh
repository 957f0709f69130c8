#!/usr/bin/env bash
# One-shot initialisation of the docker-compose Airflow (the airflow-init service); safe to repeat.
set -euo pipefail

airflow db migrate

# The UI's admin password: generated here once, kept 0600 in the state volume (the file
# AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE names), so the API server never generates one
# and prints it to its log.
passwords="${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE:?}"
mkdir -p -m 0700 "$(dirname "$passwords")"
if [ ! -s "$passwords" ]; then
  (umask 077 && python -c 'import json, secrets; print(json.dumps({"admin": secrets.token_urlsafe(18)}))' \
    > "$passwords")
fi
chmod 0600 "$passwords"

# Connections: (re)created so a changed .env takes effect on the next `docker compose up`.
# The Spark Connect server every task runs on: the spark-connect service (the address
# CDCLAKE_SPARK_REMOTE names in docker-compose.yml; another server: change both).
airflow connections delete spark_connect_default >/dev/null 2>&1 || true
airflow connections add spark_connect_default --conn-type spark_connect --conn-host sc://spark-connect \
  --conn-port 15002
airflow connections delete kafka_default >/dev/null 2>&1 || true
airflow connections add kafka_default --conn-type kafka \
  --conn-extra "{\"bootstrap.servers\": \"${CDCLAKE_KAFKA_BOOTSTRAP:?}\"}"

# Every Iceberg write of every cdclake DAG runs in this pool: one commit at a time
# (include/cdclake/dag_defaults.py).
airflow pools set lakehouse_writes 1 "one Iceberg commit at a time (cdclake hourly and maintenance DAGs)"

echo "cdclake: Airflow initialised (connections spark_connect_default, kafka_default; pool lakehouse_writes;"\
  "the admin password is in $passwords)"
