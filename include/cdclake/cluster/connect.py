"""The native cluster's Spark Connect server: the driver of one application on the standalone
master, as compose's spark-connect service is.

Its settings are the embedded server's (:func:`cdclake.spark_conf.session_conf`) with the
catalog on PostgreSQL and the warehouse on S3, compose's ``spark-defaults.conf`` (s3a), the
cluster's secret, and the product's venv as every Python it starts (the executors' included).
The project's jars (Iceberg, Kafka, Avro, the JVM fast path) go to the executors through
``--jars``; hadoop-aws, its SDK and the PostgreSQL driver are on the class path of driver and
executors, as in a cluster image.
"""

from __future__ import annotations

from pathlib import Path

from cdclake import masking
from cdclake.cluster import services
from cdclake.cluster.layout import Layout, catalog_uri, cluster_jars, compose_dir, s3_endpoint
from cdclake.config import load_config
from cdclake.paths import jars_dir, write_private
from cdclake.spark_conf import SparkSettings, java_options, session_conf, spark_jars
from cdclake.spark_server import LOG4J, SERVER_CLASS

# Compose's settings that name the container's paths: the native cluster has its own.
CONTAINER_SETTINGS = ("spark.pyspark.python", "spark.pyspark.driver.python")


def spark_defaults() -> dict[str, str]:
    """compose's spark-defaults.conf (include/compose/spark/conf), as Spark reads it."""
    conf = {}
    for line in (compose_dir() / "spark" / "conf" / "spark-defaults.conf").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            conf[key] = value.strip()
    return {k: v for k, v in conf.items() if k not in CONTAINER_SETTINGS}


def server_conf(layout: Layout) -> dict[str, str]:
    env_config = load_config(env=services_config_env(layout))
    settings = SparkSettings(catalog_name=env_config.catalog_name, catalog_uri=catalog_uri(layout),
                             warehouse=env_config.warehouse, jars=spark_jars(jars_dir()),
                             master=services.master_url(layout), local_dir=str(layout.connect_dir / "local"),
                             extra_conf=dict(env_config.spark_conf))
    python = str(layout.python)
    extras = f"{cluster_jars()}/*"
    log4j = layout.connect_dir / "log4j2.properties"
    return {
        **spark_defaults(),
        **session_conf(settings),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(layout.ports()["connect"]),
        "spark.hadoop.fs.s3a.endpoint": s3_endpoint(layout),
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": python,
        "spark.executorEnv.TZ": "UTC",
        "spark.executor.cores": str(services.WORKER_CORES),
        "spark.executor.memory": "1g",
        "spark.cores.max": str(services.WORKER_CORES * services.WORKERS),
        "spark.driver.extraClassPath": extras,
        "spark.executor.extraClassPath": extras,
        "spark.driver.extraJavaOptions": f"{java_options()} -Dlog4j2.configurationFile=file:{log4j}",
    }


def services_config_env(layout: Layout) -> dict[str, str]:
    from cdclake.cluster.layout import client_env

    return client_env(layout)


def command(layout: Layout) -> list[str]:
    """``spark-submit`` of the server; settings that hold secrets go through a 0600 properties file."""
    conf = server_conf(layout)
    secret = {k: v for k, v in conf.items() if masking.sensitive(k)}
    properties = layout.connect_dir / "secrets.properties"
    # spark.authenticate's settings (auth.sh's file) and the catalog's password
    auth = services.auth_properties(layout).read_text()
    write_private(properties, auth + "".join(f"{k}={v}\n" for k, v in secret.items()))
    jars = [j for j in spark_jars(jars_dir()) if not Path(j).name.startswith("sqlite-jdbc")]
    out = [str(services.SPARK_HOME / "bin" / "spark-submit"), "--master", services.master_url(layout),
           "--name", "cdclake-connect", "--driver-memory", "2g", "--jars", ",".join(jars),
           "--properties-file", str(properties), "--class", SERVER_CLASS]
    for key, value in conf.items():
        if key not in secret:
            out += ["--conf", f"{key}={value}"]
    return [*out, "spark-internal"]


# The embedded server's log settings, plus the scheduler's: which worker ran what.
_LOG4J = LOG4J + """logger.scheduler.name = org.apache.spark.scheduler
logger.scheduler.level = info
logger.cluster.name = org.apache.spark.scheduler.cluster
logger.cluster.level = info
"""


def start(layout: Layout) -> int:
    existing = services.running(layout, "connect", SERVER_CLASS)
    if existing is not None:
        return existing
    (layout.connect_dir / "local").mkdir(parents=True, exist_ok=True)
    (layout.connect_dir / "log4j2.properties").write_text(_LOG4J)
    env = {k: v for k, v in services.spark_env(layout).items() if not k.startswith("SPARK_DAEMON_")}
    pid = services.spawn(layout, "connect", command(layout), env, layout.connect_dir)
    services.wait_listening(layout, "connect", layout.ports()["connect"], pid, timeout_s=180)
    return pid


def stop(layout: Layout) -> int | None:
    return services.stop(layout, "connect", SERVER_CLASS)
