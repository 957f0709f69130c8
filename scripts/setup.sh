#!/usr/bin/env bash
# One-time (and safe to repeat) set-up of a fresh machine for cdclake:
#   - Debian packages: a JDK 17 and Maven (only if missing), python3-venv, chromium, postgresql
#   - the virtual environment .venv/ with the pinned Python packages and cdclake (editable)
#   - the jars from Maven Central into .jars/ (Spark extras, Kafka broker)
#   - the JVM fast path of decoding (jvm/) built with Maven into .jars/spark/cdclake-jvm.jar
# Usage: bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
log() { printf '\n== %s\n' "$*"; }

need_apt=()
# javac too: set-up compiles the JVM fast path (jvm/)
command -v javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# the browser test of the Airflow UI page (headless, driven by Playwright)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# the native cluster's catalog and Airflow database (cdclake cluster, the cluster tier)
[ -x /usr/lib/postgresql/15/bin/initdb ] || need_apt+=(postgresql)
if ((${#need_apt[@]})); then
  log "installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  log "creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.cdclake-installed
want=$(cat requirements.txt constraints.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing Python packages (pinned in constraints.txt)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.txt -c constraints.txt
  .venv/bin/python -m pip install -q --no-deps -e .
  echo "$want" > "$stamp"
else
  log "Python packages up to date"
fi

fetch_jars() {  # $1 = name, jars land in .jars/$1; $2 = its pom (default maven/$1/pom.xml)
  local name=$1 out=$ROOT/.jars/$1 pom=${2:-maven/$1/pom.xml}
  local want; want=$(sha256sum "$pom" | cut -d' ' -f1)
  if [ -f "$out/.pom-sha256" ] && [ "$(cat "$out/.pom-sha256")" = "$want" ]; then
    log "jars for $name up to date"
    return
  fi
  log "resolving jars for $name with Maven"
  rm -rf "$out"
  mvn -q -B -s maven/settings.xml -f "$pom" dependency:copy-dependencies \
    -DoutputDirectory="$out" -DincludeScope=runtime
  echo "$want" > "$out/.pom-sha256"
}
fetch_jars spark
fetch_jars kafka
# the native cluster (cdclake cluster) and compose's Spark image: hadoop-aws + its AWS SDK bundle
# (s3a), the PostgreSQL JDBC driver (Iceberg catalog)
fetch_jars cluster include/compose/spark/pom.xml

# the native cluster's S3 endpoint: moto's server, in a venv of its own (its Flask/boto stack
# stays out of the product's environment)
s3_stamp=.venv-s3/.cdclake-installed
s3_want=$(sha256sum include/compose/s3/requirements.txt | cut -d' ' -f1)
if [ ! -f "$s3_stamp" ] || [ "$(cat "$s3_stamp")" != "$s3_want" ]; then
  log "installing the native cluster's S3 server (moto) into .venv-s3"
  [ -x .venv-s3/bin/python ] || "$PY" -m venv .venv-s3
  .venv-s3/bin/python -m pip install -q -r include/compose/s3/requirements.txt
  echo "$s3_want" > "$s3_stamp"
else
  log "S3 server (moto) up to date"
fi

build_jvm() {  # jvm/ (the JVM fast path of decoding) -> .jars/spark/cdclake-jvm.jar
  local out=$ROOT/.jars/spark/cdclake-jvm.jar stamp=$ROOT/.jars/spark/.cdclake-jvm-sha256
  local want; want=$(find jvm/pom.xml jvm/src spark_jobs/fast_path.json -type f -print0 | sort -z | xargs -0 cat | sha256sum | cut -d' ' -f1)
  if [ -f "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    log "JVM fast path up to date"
    return
  fi
  log "building the JVM fast path with Maven"
  mvn -q -B -s maven/settings.xml -f jvm/pom.xml package
  cp jvm/target/cdclake-jvm.jar "$out"
  echo "$want" > "$stamp"
}
build_jvm


log "ready: $(.venv/bin/cdclake --help | head -1)"
