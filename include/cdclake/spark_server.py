"""The Spark Connect server: one long-lived Spark driver that runs every cdclake job.

``cdclake spark start`` launches Spark's own ``SparkConnectServer`` (shipped in pyspark's jars)
with the project's jars, the Iceberg catalog, the session defaults and the JVM fast path's
function catalog, listening on 127.0.0.1 (``--host`` opens it wider). DAG tasks, the CLI and the
tests connect to it (``sc://127.0.0.1:<port>``) instead of starting a JVM each; every task gets a
Connect session of its own, so its settings (the audit branch, ``spark.conf``) never reach
another. PID, port and log live under ``<state folder>/spark/``; ``stop`` ends exactly the
process group it started.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from cdclake import masking
from cdclake.exceptions import CdclakeError, SetupError
from cdclake.paths import PROJECT_ROOT, jars_dir, state_home, write_private
from cdclake.processes import recorded_pid, stop_process

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 30
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
# The JVM fast path's jar (spark_jobs.jvm_decode): its function catalog (fast_decode) and its
# session extensions (the cdclake_key_counts aggregate), in every session of the server.
FUNCTIONS_CATALOG = "cdclake_jvm"
FUNCTIONS_CLASS = "cdclake.jvm.Functions"
JAR_EXTENSIONS = "cdclake.jvm.Extensions"
# Every Spark JVM: UTC, and the parallel collector (batch jobs: throughput over pause times).
JAVA_OPTIONS = "-Duser.timezone=UTC -XX:+UseParallelGC"
# Extra options for the server's JVMs, appended to JAVA_OPTIONS (launch-time settings).
EXTRA_JAVA_OPTIONS_ENV = "CDCLAKE_JAVA_OPTIONS"


class SparkServerError(CdclakeError):
    """The Spark Connect server could not be started, stopped or reached."""


@dataclass(frozen=True)
class SparkSettings:
    """Everything the server's Spark needs; built from the pipeline configuration."""

    catalog_name: str
    catalog_uri: str
    warehouse: str
    jars: tuple[str, ...]
    master: str = "local[2]"
    driver_memory: str = "4g"
    local_dir: str | None = None
    extra_conf: dict[str, str] = field(default_factory=dict)


def jdbc_url(catalog_uri: str) -> str:
    """``sqlite:///path`` (pyiceberg's form) -> ``jdbc:sqlite:/path`` (Iceberg JdbcCatalog's);
    ``postgresql://user:pw@host/db`` -> ``jdbc:postgresql://host/db`` (credentials: jdbc_credentials)."""
    if catalog_uri.startswith("jdbc:"):
        return catalog_uri
    if catalog_uri.startswith("sqlite:///"):
        return "jdbc:sqlite:" + catalog_uri[len("sqlite:///"):]
    if catalog_uri.startswith(("postgresql://", "postgresql+psycopg2://", "postgresql+psycopg://")):
        parts = urlsplit(catalog_uri)
        return "jdbc:postgresql://" + parts.netloc.rsplit("@", 1)[-1] + parts.path
    scheme = catalog_uri.split(":", 1)[0]  # never the rest: it may hold a password
    raise ValueError(f"unsupported catalog uri scheme {scheme!r} (sqlite:///..., postgresql://..., jdbc:...)")


def jdbc_credentials(catalog_uri: str) -> dict[str, str]:
    """User and password embedded in a SQLAlchemy-style catalog URI, if any."""
    parts = urlsplit(catalog_uri)
    out = {}
    if parts.username:
        out["user"] = unquote(parts.username)
    if parts.password:
        out["password"] = unquote(parts.password)
    return out


def spark_jars(jars_folder: Path) -> tuple[str, ...]:
    jars = tuple(sorted(str(p) for p in (jars_folder / "spark").glob("*.jar")))
    if not jars:
        raise SetupError(f"no Spark jars in {jars_folder / 'spark'}; run scripts/setup.sh")
    return jars


def java_options() -> str:
    """The JVM options of the server's driver and executors: :data:`JAVA_OPTIONS` and
    ``$CDCLAKE_JAVA_OPTIONS``."""
    return " ".join(filter(None, [JAVA_OPTIONS, os.environ.get(EXTRA_JAVA_OPTIONS_ENV, "").strip()]))


def catalog_conf(catalog_name: str, catalog_uri: str, warehouse: str) -> dict[str, str]:
    """The Iceberg catalog's settings. Runtime settings: every Connect session sets its own
    (:func:`spark_jobs.session.connect`), so one server serves any state folder's catalog."""
    cat = f"spark.sql.catalog.{catalog_name}"
    return {
        cat: "org.apache.iceberg.spark.SparkCatalog",
        f"{cat}.type": "jdbc",
        f"{cat}.uri": jdbc_url(catalog_uri),
        f"{cat}.warehouse": warehouse,
        f"{cat}.jdbc.schema-version": "V1",
        # Many sessions share the server (every task, the CLI, analysts): each must read the
        # tables as committed, not as its catalog first cached them.
        f"{cat}.cache-enabled": "false",
        # Every table may be written through a write-audit-publish branch (spark.wap.branch).
        f"{cat}.table-default.write.wap.enabled": "true",
        **{f"{cat}.jdbc.{k}": v for k, v in jdbc_credentials(catalog_uri).items()},
        "spark.sql.defaultCatalog": catalog_name,
    }


def session_conf(settings: SparkSettings) -> dict[str, str]:
    """The server's Spark configuration: extensions, session defaults, the catalog."""
    conf = {
        "spark.sql.extensions": f"{ICEBERG_EXTENSIONS},{JAR_EXTENSIONS}",
        **catalog_conf(settings.catalog_name, settings.catalog_uri, settings.warehouse),
        f"spark.sql.catalog.{FUNCTIONS_CATALOG}": FUNCTIONS_CLASS,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.executor.extraJavaOptions": java_options(),
        "spark.sql.iceberg.check-ordering": "false",
        # A job's cached frames (normalize's decoded hour, compaction's changes) live for that
        # job: skip the columnar cache's encoders; memory is bounded anyway, they spill to disk.
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # Sessions a client left open (a killed task) are released after this idle time, with
        # their cached frames and views: the server lives for weeks.
        "spark.connect.session.manager.defaultSessionTimeout": "30min",
        # The driver keeps the plans and metrics of recent queries, jobs and stages for its status
        # store (1,000 of each by default, even without the UI): a few suffice, the heap stays flat.
        "spark.sql.ui.retainedExecutions": "50",
        "spark.ui.retainedJobs": "100",
        "spark.ui.retainedStages": "100",
        # Options and settings that name secrets are shown redacted in plans, errors and logs;
        # Spark's defaults miss a Kafka JAAS login.
        "spark.redaction.regex": "(?i)secret|password|token|access[.]key|jaas",
        "spark.sql.redaction.options.regex": "(?i)url|jaas",
    }
    if settings.local_dir:
        conf["spark.local.dir"] = settings.local_dir
    conf.update(settings.extra_conf)
    return conf


def settings_from_config(config: PipelineConfig) -> SparkSettings:
    home = Path(config.home)
    return SparkSettings(
        catalog_name=config.catalog_name,
        catalog_uri=config.catalog_uri,
        warehouse=config.warehouse,
        jars=spark_jars(jars_dir()),
        master=config.spark_master,
        driver_memory=config.spark_driver_memory,
        local_dir=str(home / "spark-tmp"),
        extra_conf=dict(config.spark_conf),
    )


@dataclass(frozen=True)
class ServerPaths:
    root: Path

    @property
    def pid_file(self) -> Path:
        return self.root / "server.pid"

    @property
    def port_file(self) -> Path:
        return self.root / "server.port"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    @property
    def log4j(self) -> Path:
        return self.root / "log4j2.properties"

    @property
    def secrets(self) -> Path:
        return self.root / "secrets.properties"


def server_paths(home: Path | None = None) -> ServerPaths:
    root = (home or state_home()) / "spark"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return ServerPaths(root)


# Warnings and errors only, plus the server's own start line: the log of a server that runs for
# weeks stays small.
_LOG4J = """rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.connect.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.connect.level = info
"""


def _spark_submit() -> str:
    found = Path(sys.executable).parent / "spark-submit"
    if not found.exists():
        raise SetupError(f"{found} not found; run scripts/setup.sh (pyspark installs it)")
    return str(found)


def running_pid(paths: ServerPaths) -> int | None:
    """The PID of the server this state folder started, if it still runs."""
    return recorded_pid(paths.pid_file, SERVER_CLASS, str(paths.log4j))


def _recorded_port(paths: ServerPaths) -> int:
    try:
        return int(paths.port_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return 0


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def remote_address(remote: str) -> tuple[str, int]:
    """``sc://host:port/;params`` -> (host, port); Spark Connect's default port is 15002."""
    parts = urlsplit(remote)
    if parts.scheme != "sc" or not parts.hostname:
        raise SparkServerError(f"{remote!r} is not a Spark Connect URL (sc://host:port)")
    return parts.hostname, parts.port or 15002


def check_reachable(remote: str) -> None:
    """Fail at once, naming the URL and the command that starts the server, when nothing
    listens there (a Connect client would otherwise retry for minutes)."""
    host, port = remote_address(remote)
    if not port_open(host, port, timeout=2.0):
        shown = remote.split(";", 1)[0]  # parameters may carry a token
        raise SparkServerError(f"the Spark Connect server at {shown} cannot be reached; start it with "
                               "`cdclake spark start` (same CDCLAKE_HOME), or point CDCLAKE_SPARK_REMOTE "
                               "at a running one")


def server_command(config: PipelineConfig, port: int, host: str, paths: ServerPaths) -> list[str]:
    settings = settings_from_config(config)
    # A local-mode driver's own RPC and block manager ports bind to the machine's address by
    # default: on one machine nothing needs them beyond the loopback.
    loopback = ({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
                if settings.master.startswith("local") else {})
    conf = {
        **session_conf(settings),
        **loopback,
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.extraJavaOptions": f"{java_options()} -Dlog4j2.configurationFile=file:{paths.log4j}",
    }
    command = [_spark_submit(), "--master", settings.master, "--driver-memory", settings.driver_memory,
               "--jars", ",".join(settings.jars), "--name", "cdclake-connect", "--class", SERVER_CLASS]
    # Secret settings (the catalog's JDBC password, s3a keys) go through a 0600 properties file:
    # a command line is readable by every local user (ps, /proc/<pid>/cmdline).
    secret = {k: v for k, v in conf.items() if masking.sensitive(k)}
    write_private(paths.secrets, "".join(f"{k}={_escape_property(v)}\n" for k, v in secret.items()))
    command += ["--properties-file", str(paths.secrets)]
    for key, value in conf.items():
        if key not in secret:
            command += ["--conf", f"{key}={value}"]
    return command


def _escape_property(value: str) -> str:
    """A value as a Java properties file reads it back."""
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def server_env(config: PipelineConfig) -> dict[str, str]:
    """The server's environment: its Python workers run this venv's interpreter, in UTC, with the
    project importable (``mapInArrow`` decoders, compaction's fold)."""
    env = dict(os.environ)
    env.update({
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "TZ": "UTC",
        "CDCLAKE_HOME": str(config.home),
        "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), str(PROJECT_ROOT / "include"),
                                       env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    })
    return env


def start(config: PipelineConfig, port: int | None = None, host: str = "127.0.0.1") -> str:
    """Start the server for ``config``'s state folder; returns its ``sc://`` URL once it listens."""
    paths = server_paths(config.home)
    port = port or config.spark_port
    pid = running_pid(paths)
    if pid is not None:
        raise SparkServerError(f"already running (pid {pid}) on 127.0.0.1:{_recorded_port(paths)}")
    if port_open("127.0.0.1", port):
        raise SparkServerError(f"port {port} is in use by another process; choose another with --port "
                               "or CDCLAKE_SPARK_PORT")
    paths.log4j.write_text(_LOG4J)
    (Path(config.home) / "spark-tmp").mkdir(parents=True, exist_ok=True)
    with paths.log.open("ab") as log:
        process = subprocess.Popen(server_command(config, port, host, paths), env=server_env(config),
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, cwd=str(config.home))
    paths.pid_file.write_text(str(process.pid))
    paths.port_file.write_text(str(port))
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            paths.pid_file.unlink(missing_ok=True)
            raise SparkServerError(f"Spark Connect server exited with code {process.returncode}; "
                                   f"see {paths.log}")
        if port_open("127.0.0.1", port):
            return f"sc://127.0.0.1:{port}"
        time.sleep(0.25)
    stop(config.home)
    raise SparkServerError(f"Spark Connect server did not listen within {START_TIMEOUT_S}s; see {paths.log}")


def stop(home: Path | None = None) -> int | None:
    """Stop the server this state folder started (its process group: the driver and its Python
    workers); returns its PID, or None if none ran."""
    paths = server_paths(home)
    pid = running_pid(paths)
    if pid is None:
        paths.pid_file.unlink(missing_ok=True)
        return None
    stop_process(pid, STOP_TIMEOUT_S, group=True)  # started in a session of its own
    paths.pid_file.unlink(missing_ok=True)
    return pid


def status(home: Path | None = None) -> tuple[int, int] | None:
    """(pid, port) of the running server, or None."""
    paths = server_paths(home)
    pid = running_pid(paths)
    return None if pid is None else (pid, _recorded_port(paths))


def ensure_running(config: PipelineConfig) -> str:
    """The configured server's URL, after starting one for ``config``'s state folder when nothing
    listens there (``cdclake run``, ``demo``, ``airflow start``). A remote set elsewhere
    (``CDCLAKE_SPARK_REMOTE``) is only checked. Any server serves any state folder: each
    session brings its catalog."""
    host, port = remote_address(config.spark_remote)
    if port_open(host, port):
        return config.spark_remote
    if config.spark_remote != f"sc://127.0.0.1:{config.spark_port}":
        check_reachable(config.spark_remote)
    return start(config)


def command(action: str, port: int | None = None, host: str = "127.0.0.1") -> int:
    """``cdclake spark start|stop|status``."""
    from cdclake.config import load_config

    config = load_config()
    if action == "start":
        try:
            url = start(config, port, host)
        except SparkServerError as exc:
            if "already running" in str(exc):
                print(f"Spark Connect server {exc}")
                return 0
            raise
        running = status(config.home)
        print(f"Spark Connect server running (pid {running[0] if running else '?'}), listening on "
              f"{url if host == '127.0.0.1' else f'{host}:{port or config.spark_port}'}; "
              f"log {server_paths(config.home).log}; connect with `pyspark --remote {url}`")
        return 0
    if action == "stop":
        stopped = stop(config.home)
        print("Spark Connect server is not running" if stopped is None
              else f"Spark Connect server stopped (pid {stopped})")
        return 0
    current = status(config.home)
    if current is None:
        print("Spark Connect server is not running")
        return 3
    print(f"Spark Connect server running (pid {current[0]}), listening on sc://127.0.0.1:{current[1]}")
    return 0
