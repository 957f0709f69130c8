#!/usr/bin/env bash
# Runs once, when the Postgres volume is first initialised (docker-entrypoint-initdb.d):
# one database + owner for Airflow's metadata, one for the Iceberg JDBC catalog.
# Passwords come from the environment (.env), never from the repository.
set -euo pipefail

create_database() {  # $1 = database and role name, $2 = password
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
       -v name="$1" -v password="$2" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', :'name', :'password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'name') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'name', :'name')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'name') \gexec
SQL
}

create_database airflow "${AIRFLOW_DB_PASSWORD:?set AIRFLOW_DB_PASSWORD in .env}"
create_database iceberg "${ICEBERG_DB_PASSWORD:?set ICEBERG_DB_PASSWORD in .env}"
