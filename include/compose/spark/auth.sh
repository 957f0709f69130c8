#!/bin/sh
# Spark's own authentication (spark.authenticate) for every Spark daemon of the cluster: writes the
# shared secret ($SPARK_AUTH_SECRET) and the settings that go with it into the properties file $1
# (0600), which the master, the workers and the Connect server read (--properties-file): a secret
# on a command line is readable by every local user. The workers hand it to their executors.
# Run by docker-compose.yml's Spark services and by `cdclake cluster` (include/cdclake/cluster).
set -eu
out=${1:?usage: auth.sh PROPERTIES_FILE}
: "${SPARK_AUTH_SECRET:?set SPARK_AUTH_SECRET}"
umask 077
{
  echo "spark.authenticate=true"
  echo "spark.authenticate.secret=$SPARK_AUTH_SECRET"
  # The master's REST submission server cannot authenticate: it stays off.
  echo "spark.master.rest.enabled=false"
} > "$out"
