"""The Spark Connect server: one long-lived Spark driver that runs every cdclake job.

``cdclake spark start`` launches Spark's own ``SparkConnectServer`` (shipped in pyspark's jars)
with the project's jars, the Iceberg catalog, the session defaults and the JVM fast path's
function catalog, listening on 127.0.0.1 (``--host`` opens it wider). DAG tasks, the CLI and the
tests connect to it (``sc://127.0.0.1:<port>``) instead of starting a JVM each; every task gets a
Connect session of its own, so its settings (the audit branch, ``spark.conf``) never reach
another. PID, port and log live under ``<state folder>/spark/``; ``stop`` ends exactly the
process group it started.

The server outlives any one command, so what it needs must not live in a folder that can vanish
under it: its scratch space (``spark.local.dir``, shuffle and spill files) is a private folder of
its own under the system temp dir, ``cdclake-spark-<port>-*``, removed when it stops. It records
in its own Spark conf the state folder that started it and that scratch folder
(:data:`HOME_CONF`, :data:`SCRATCH_CONF`), so a client learns whose it is with one call
(:func:`probe`), and its PID in the scratch folder, so it can be found and stopped after its
state folder was deleted. Before a client uses the state folder's own address
(``sc://127.0.0.1:<port>``) it checks (:func:`check_server`) that the server answers, still has
its scratch space and was started for this state folder or one that holds it; a server given on
purpose (``CDCLAKE_SPARK_REMOTE``, a cluster's, shared by design) is only checked for answering.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
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
# What a server records of itself in its static Spark conf, readable by any Connect client.
HOME_CONF = "spark.cdclake.home"
SCRATCH_CONF = "spark.cdclake.scratch"
# The server's scratch folder under the system temp dir: cdclake-spark-<port>-<random>.
SCRATCH_PREFIX = "cdclake-spark-"
# How long a listening server may take to answer one Config call before it counts as dead: a
# busy driver answers within milliseconds, a full GC pause within seconds.
PROBE_TIMEOUT_S = 20.0
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
_NO_ANSWER = "does not answer a Spark Connect call"


class SparkServerError(CdclakeError):
    """The Spark Connect server could not be started, stopped or reached."""


class ServerNotUsable(SparkServerError):
    """A server listens at the address but must not be used: it does not answer, lost its scratch
    space, or was started for another state folder. ``restartable``: it is this state folder's
    own, and ``cdclake run`` may restart it. ``lasting``: it stays so until someone acts (not a
    server that does not answer: it may be restarting)."""

    def __init__(self, message: str, restartable: bool = False, info: ServerInfo | None = None,
                 lasting: bool = True) -> None:
        super().__init__(message)
        self.restartable = restartable
        self.info = info  # what is known of it (cdclake spark status shows it)
        self.lasting = lasting


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
    (:func:`spark_jobs.session.connect`), so one server can serve several state folders' catalogs."""
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


def settings_from_config(config: PipelineConfig, scratch: Path | None = None) -> SparkSettings:
    """``scratch``: the server's own scratch folder (:func:`start` makes it), its ``spark.local.dir``
    unless the configuration's ``spark.conf`` names another."""
    return SparkSettings(
        catalog_name=config.catalog_name,
        catalog_uri=config.catalog_uri,
        warehouse=config.warehouse,
        jars=spark_jars(jars_dir()),
        master=config.spark_master,
        driver_memory=config.spark_driver_memory,
        local_dir=str(scratch) if scratch else None,
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

    @property
    def scratch_file(self) -> Path:
        """Where the running server's scratch folder is (outside the state folder)."""
        return self.root / "server.scratch"


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


def _recorded_scratch(paths: ServerPaths) -> Path | None:
    try:
        text = paths.scratch_file.read_text().strip()
    except FileNotFoundError:
        return None
    return Path(text) if text else None


def scratch_pid(scratch: Path) -> int | None:
    """The PID of the server whose scratch folder ``scratch`` is, if it still runs (its command
    line names that folder: a reused PID is someone else's)."""
    return recorded_pid(scratch / "server.pid", SERVER_CLASS, f"{SCRATCH_CONF}={scratch}")


def _remove_scratch(scratch: Path | None) -> None:
    """Remove a server's scratch folder once no server uses it; only a folder named like ours."""
    if scratch is None or not scratch.name.startswith(SCRATCH_PREFIX) or scratch_pid(scratch) is not None:
        return
    shutil.rmtree(scratch, ignore_errors=True)


# A scratch folder this old without a running server is a killed one's (a start writes the PID
# file within moments of making the folder).
STALE_SCRATCH_S = 600


def _sweep_scratch() -> None:
    """Remove this user's scratch folders that no server uses any more: those of servers killed
    after their state folder was deleted (nothing else would)."""
    for scratch in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        try:
            info = scratch.stat()
        except OSError:
            continue
        if info.st_uid == os.getuid() and time.time() - info.st_mtime > STALE_SCRATCH_S:
            _remove_scratch(scratch)


def _command_line_conf(pid: int) -> dict[str, str]:
    """The ``--conf key=value`` settings on ``pid``'s command line."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return {}
    conf = {}
    for flag, value in zip(args, args[1:], strict=False):
        if flag == "--conf" and "=" in value:
            key, _, setting = value.partition("=")
            conf[key] = setting
    return conf


@dataclass(frozen=True)
class LocalServer:
    """A cdclake server process on this machine, found by its scratch folder."""

    pid: int
    home: Path | None
    scratch: Path


def local_server(port: int) -> LocalServer | None:
    """The cdclake server running on this machine for ``port``, found through the PID file in its
    scratch folder (this user's temp dir): no call to it, so it works when it does not answer,
    and after its state folder (and the PID file there) was deleted."""
    for pid_file in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}{port}-*/server.pid"):
        scratch = pid_file.parent
        try:
            if scratch.stat().st_uid != os.getuid():  # another user's folder in a shared temp dir
                continue
        except OSError:
            continue
        pid = scratch_pid(scratch)
        if pid is None:
            continue
        conf = _command_line_conf(pid)
        if conf.get("spark.connect.grpc.binding.port") == str(port):
            home = conf.get(HOME_CONF)
            return LocalServer(pid, Path(home) if home else None, scratch)
    return None


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


def local_remote(port: int) -> str:
    """A state folder's own server address, the one :func:`start` listens on."""
    return f"sc://127.0.0.1:{port}"


def check_reachable(remote: str) -> None:
    """Fail at once, naming the URL and the command that starts the server, when nothing
    listens there (a Connect client would otherwise retry for minutes)."""
    host, port = remote_address(remote)
    if not port_open(host, port, timeout=2.0):
        shown = remote.split(";", 1)[0]  # parameters may carry a token
        raise SparkServerError(f"the Spark Connect server at {shown} cannot be reached; start it with "
                               "`cdclake spark start` (same CDCLAKE_HOME), or point CDCLAKE_SPARK_REMOTE "
                               "at a running one")


def server_command(config: PipelineConfig, port: int, host: str, paths: ServerPaths,
                   scratch: Path | None = None) -> list[str]:
    """The ``spark-submit`` command of the server; ``scratch``: its scratch folder, recorded with
    the state folder in its conf (:func:`probe` reads them back)."""
    settings = settings_from_config(config, scratch)
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
    if scratch is not None:
        conf.update({HOME_CONF: str(config.home), SCRATCH_CONF: str(scratch)})
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
    # Spark prefers this variable to spark.local.dir: the server's scratch space is the folder it
    # records (spark.conf can still move it).
    env.pop("SPARK_LOCAL_DIRS", None)
    return env


def start(config: PipelineConfig, port: int | None = None, host: str = "127.0.0.1") -> str:
    """Start the server for ``config``'s state folder; returns its ``sc://`` URL once it listens."""
    paths = server_paths(config.home)
    port = port or config.spark_port
    pid = running_pid(paths)
    if pid is not None:
        raise SparkServerError(f"already running (pid {pid}) on 127.0.0.1:{_recorded_port(paths)}")
    if port_open("127.0.0.1", port):
        raise SparkServerError(f"port {port} is in use by {_listener(port)}; choose another with --port "
                               "or CDCLAKE_SPARK_PORT")
    _remove_scratch(_recorded_scratch(paths))  # a server's that was killed, not stopped
    _sweep_scratch()
    paths.log4j.write_text(_LOG4J)
    # Private (0700) from the moment it exists; named for the server.
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{port}-"))
    paths.scratch_file.write_text(str(scratch))
    try:
        command = server_command(config, port, host, paths, scratch)
        with paths.log.open("ab") as log:
            # The scratch folder as working directory too: the state folder may vanish first.
            process = subprocess.Popen(command, env=server_env(config), stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True, cwd=str(scratch))
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    (scratch / "server.pid").write_text(str(process.pid))
    paths.pid_file.write_text(str(process.pid))
    paths.port_file.write_text(str(port))
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            paths.pid_file.unlink(missing_ok=True)
            _remove_scratch(scratch)
            raise SparkServerError(f"Spark Connect server exited with code {process.returncode}; "
                                   f"see {paths.log}")
        if port_open("127.0.0.1", port):
            return local_remote(port)
        time.sleep(0.25)
    stop(config.home)
    raise SparkServerError(f"Spark Connect server did not listen within {START_TIMEOUT_S}s; see {paths.log}")


def stop(home: Path | None = None) -> int | None:
    """Stop the server this state folder started (its process group: the driver and its Python
    workers) and remove its scratch folder; returns its PID, or None if none ran."""
    paths = server_paths(home)
    pid = running_pid(paths)
    if pid is not None:
        stop_process(pid, STOP_TIMEOUT_S, group=True)  # started in a session of its own
        _wait_closed(_recorded_port(paths))
    paths.pid_file.unlink(missing_ok=True)
    _remove_scratch(_recorded_scratch(paths))
    paths.scratch_file.unlink(missing_ok=True)
    return pid


def stop_orphan(port: int) -> LocalServer | None:
    """Stop the cdclake server on ``port`` whose state folder no longer exists (no one else can:
    its PID file went with the folder), found through its scratch folder; returns it, or None."""
    found = local_server(port)
    if found is None or found.home is None or found.home.exists():
        return None
    stop_process(found.pid, STOP_TIMEOUT_S, group=True)
    _wait_closed(port)
    _remove_scratch(found.scratch)
    return found


def _wait_closed(port: int, timeout_s: float = 10.0) -> None:
    """Wait until nothing listens on ``port``: the JVM's main thread ends (the PID looks gone)
    a moment before its listening socket closes, and a start right after a stop needs the port."""
    deadline = time.monotonic() + timeout_s
    while port and port_open("127.0.0.1", port, timeout=0.2) and time.monotonic() < deadline:
        time.sleep(0.1)


def status(home: Path | None = None) -> tuple[int, int] | None:
    """(pid, port) of the running server, or None."""
    paths = server_paths(home)
    pid = running_pid(paths)
    return None if pid is None else (pid, _recorded_port(paths))


@dataclass(frozen=True)
class ServerInfo:
    """What a listening server says of itself (its Spark conf), and its PID when found here."""

    remote: str
    home: Path | None  # the state folder that started it; None: not started by cdclake spark start
    scratch: Path | None
    local_dirs: tuple[Path, ...]
    pid: int | None

    @property
    def shown(self) -> str:
        return _shown(self.remote)


def _shown(remote: str) -> str:
    return remote.split(";", 1)[0].rstrip("/")  # parameters may carry a token


def probe(remote: str, timeout: float | None = None) -> ServerInfo:
    """Ask the server at ``remote`` what it is: one Config call (and the release of its session),
    bounded by ``timeout`` (:data:`PROBE_TIMEOUT_S`) where a Connect client would retry for
    minutes. Raises :class:`ServerNotUsable` when it does not answer."""
    import uuid

    import grpc  # type: ignore[import-untyped]
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

    timeout = PROBE_TIMEOUT_S if timeout is None else timeout
    builder = DefaultChannelBuilder(remote)
    session_id = str(uuid.uuid4())
    request = base_pb2.ConfigRequest(session_id=session_id, client_type="cdclake-probe")
    if builder.userId:
        request.user_context.user_id = builder.userId
    request.operation.get_option.keys.extend([HOME_CONF, SCRATCH_CONF, "spark.local.dir"])
    channel = builder.toChannel()
    try:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        response = stub.Config(request, metadata=builder.metadata(), timeout=timeout)
        release = base_pb2.ReleaseSessionRequest(session_id=session_id, client_type="cdclake-probe")
        release.user_context.CopyFrom(request.user_context)
        try:
            stub.ReleaseSession(release, metadata=builder.metadata(), timeout=timeout)
        except grpc.RpcError:
            pass  # the server releases it after its idle timeout anyway
    except grpc.RpcError as exc:
        code = exc.code() if isinstance(exc, grpc.Call) else None
        why = "" if code in (None, grpc.StatusCode.DEADLINE_EXCEEDED) else f" ({code.name})"
        raise ServerNotUsable(f"the Spark Connect server at {_shown(remote)} {_NO_ANSWER} within "
                              f"{timeout:.0f} s{why}", lasting=False) from None
    finally:
        channel.close()
    values = {pair.key: pair.value for pair in response.pairs if pair.HasField("value")}
    scratch = Path(values[SCRATCH_CONF]) if values.get(SCRATCH_CONF) else None
    return ServerInfo(
        remote=remote,
        home=Path(values[HOME_CONF]) if values.get(HOME_CONF) else None,
        scratch=scratch,
        local_dirs=tuple(Path(d) for d in values.get("spark.local.dir", "").split(",") if d.strip()),
        pid=scratch_pid(scratch) if scratch else None,
    )


def is_own_address(config: PipelineConfig, remote: str) -> bool:
    """True when ``remote`` is the state folder's own server (``sc://127.0.0.1:<spark port>``),
    which must have been started for it; False for a server given on purpose
    (``CDCLAKE_SPARK_REMOTE`` or ``spark.remote``: shared by design, checked for health only)."""
    if os.environ.get("CDCLAKE_SPARK_REMOTE") or config.spark_remote != local_remote(config.spark_port):
        return False
    host, port = remote_address(remote)
    return host in LOOPBACK_HOSTS and port == config.spark_port


def _serves(owner: Path, home: Path) -> bool:
    """A server serves the state folder that started it and the ones inside it (they cannot
    outlive it: the test suite's pipelines, each in a folder of the test run's)."""
    return owner == home or owner in home.parents


def _scratch_lost(info: ServerInfo) -> Path | None:
    """The first of the server's scratch folders that is gone, or lost Spark's block manager
    folder (what every shuffle writes into); None when all are there."""
    for folder in info.local_dirs:
        try:
            if not any(entry.name.startswith("blockmgr-") for entry in folder.iterdir()):
                return folder
        except OSError:
            return folder
    return None


def check_server(config: PipelineConfig | None, remote: str | None = None,
                 timeout: float | None = None) -> ServerInfo:
    """Before a client uses the server at ``remote`` (default: ``config``'s): it listens
    (:func:`check_reachable`) and answers (:func:`probe`); at the state folder's own address it
    also still has its scratch space and was started for this state folder or one that holds it.
    Fails at once with :class:`ServerNotUsable`, naming its PID, the state folder that started it
    and what to do. One Config call: it runs once per task, command and session."""
    if remote is None:
        if config is None:
            raise ValueError("check_server needs a configuration or a remote")
        remote = config.spark_remote
    check_reachable(remote)
    own = config is not None and is_own_address(config, remote)
    timeout = PROBE_TIMEOUT_S if timeout is None else timeout
    try:
        info = probe(remote, timeout)
    except ServerNotUsable:
        if config is None or not own:
            raise
        # It cannot say whose it is: its scratch folder's PID file (or ours) may.
        found = local_server(remote_address(remote)[1])
        silent = ServerInfo(remote, found.home if found else None, found.scratch if found else None, (),
                            found.pid if found else None)
        raise _not_usable(config, silent, f"{_NO_ANSWER} within {timeout:.0f} s", lasting=False) from None
    if config is not None and own:
        check_owned(config, info)
    return info


def check_owned(config: PipelineConfig, info: ServerInfo) -> None:
    """The checks of a server at the state folder's own address, on what it said (:func:`probe`):
    started for this state folder or one that holds it, its scratch space still there."""
    home = Path(config.home)
    mine = _owned_by_pid_file(config, info.remote)
    if info.home is None and mine is None:
        raise _not_usable(config, info, "was not started by `cdclake spark start` (it names no state folder)")
    if info.home is not None and not _serves(info.home, home):
        gone = "" if info.home.exists() else ", which no longer exists"
        raise _not_usable(config, info, f"was started for another state folder, {info.home}{gone}, "
                                        f"not for this one ({home})")
    lost = _scratch_lost(info)
    if lost is not None:
        raise _not_usable(config, info, f"lost its scratch space {lost} (deleted), where its jobs write")


def _owned_by_pid_file(config: PipelineConfig, remote: str) -> int | None:
    """This state folder's running server's PID, when it listens on ``remote``'s port."""
    paths = server_paths(config.home)
    pid = running_pid(paths)
    return pid if pid is not None and _recorded_port(paths) == remote_address(remote)[1] else None


def _not_usable(config: PipelineConfig, info: ServerInfo, problem: str,
                lasting: bool = True) -> ServerNotUsable:
    """The error for a server at the state folder's own address that must not be used: what it
    is (PID, the state folder that started it), what is wrong, and what to do."""
    home = Path(config.home)
    mine = _owned_by_pid_file(config, info.remote)
    pid = info.pid or mine
    if pid is None and info.home is not None:
        pid = running_pid(ServerPaths(info.home / "spark"))  # not server_paths: it would create it
    owner = info.home if info.home is not None else (home if mine is not None else None)
    what = f"the Spark Connect server at {info.shown}" + (f" (pid {pid})" if pid else "")
    elsewhere = ("or start this state folder's own on another port (`cdclake spark start --port P`, "
                 "or CDCLAKE_SPARK_PORT=P)")
    restartable = owner == home and mine is not None
    if restartable:
        todo = ("restart it: `cdclake spark stop`, then `cdclake spark start` "
                "(`cdclake run` restarts it itself)")
    elif owner is not None and owner.exists():
        todo = (f"stop it from its state folder (`CDCLAKE_HOME={shlex.quote(str(owner))} "
                f"cdclake spark stop`) {elsewhere}")
        if owner != home and not _serves(owner, home):
            todo += f"; to share it on purpose, set CDCLAKE_SPARK_REMOTE={info.shown}"
    elif owner is not None:
        todo = ("`cdclake spark stop` here stops it (its state folder is gone); then `cdclake spark start` "
                "(or `cdclake run`) starts this state folder's own")
    else:
        todo = (f"stop it{f' (kill {pid})' if pid else ''} {elsewhere}; to use it on purpose, set "
                f"CDCLAKE_SPARK_REMOTE={info.shown}")
    return ServerNotUsable(f"{what} {problem}: {todo}", restartable=restartable, info=replace(info, pid=pid),
                           lasting=lasting)


def _listener(port: int) -> str:
    """Who listens on ``port``, for a message: a cdclake server found here, or another process."""
    found = local_server(port)
    if found is None:
        return "another process"
    gone = "" if found.home is None or found.home.exists() else \
        ", which no longer exists (`cdclake spark stop` here stops it)"
    return f"the Spark Connect server (pid {found.pid}) started for state folder {found.home}{gone}"


def ensure_running(config: PipelineConfig) -> str:
    """The configured server's URL, after starting one for ``config``'s state folder when nothing
    listens there (``cdclake run``, ``demo``, ``airflow start``), or restarting this state folder's
    own when it is dead (:func:`check_server`). A remote set elsewhere (``CDCLAKE_SPARK_REMOTE``)
    is only checked. A server serves its own state folder and the ones inside it; each session
    brings its catalog."""
    host, port = remote_address(config.spark_remote)
    if not port_open(host, port):
        if not is_own_address(config, config.spark_remote):
            check_reachable(config.spark_remote)
        return start(config)
    try:
        check_server(config)
    except ServerNotUsable as exc:
        if not exc.restartable:
            raise
        stop(config.home)
        return start(config, port)
    return config.spark_remote


def _describe(info: ServerInfo, home: Path | None = None) -> str:
    """Who started the server and its scratch space; ``home``: the state folder asking."""
    where = (f"started from state folder {info.home}" if info.home
             else "started by an older cdclake or not by `cdclake spark start` (it names no state folder)")
    if info.home is not None and not info.home.exists():
        where += " (which no longer exists)"
    elif info.home is not None and home is not None and info.home != home and _serves(info.home, home):
        where += f", which holds this one ({home})"
    scratch = f"; scratch space {info.scratch}" if info.scratch else ""
    return f"{where}{scratch}"


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
              f"log {server_paths(config.home).log}; scratch space "
              f"{_recorded_scratch(server_paths(config.home))}; connect with `pyspark --remote {url}`")
        return 0
    if action == "stop":
        stopped = stop(config.home)
        if stopped is not None:
            print(f"Spark Connect server stopped (pid {stopped})")
            return 0
        own = is_own_address(config, config.spark_remote)
        orphan = stop_orphan(port or config.spark_port) if own else None
        if orphan is not None:
            print(f"Spark Connect server stopped (pid {orphan.pid}), left running on port "
                  f"{port or config.spark_port} by the deleted state folder {orphan.home}")
            return 0
        other = local_server(port or config.spark_port) if own else None
        if other is not None and other.home is not None:
            print(f"Spark Connect server is not running for this state folder; the one on port "
                  f"{port or config.spark_port} (pid {other.pid}) was started for state folder {other.home}: "
                  f"stop it there (`CDCLAKE_HOME={shlex.quote(str(other.home))} cdclake spark stop`)")
            return 0
        print("Spark Connect server is not running")
        return 0
    return _status(config)


def _status(config: PipelineConfig) -> int:
    """``cdclake spark status``: which server listens at the configured address, the state folder
    that started it and its scratch space. 0 when this state folder can use it, 3 when none runs
    for it (also when the one on its port was started for another state folder), 1 when one
    listens but cannot be used (it does not answer, or lost its scratch space)."""
    current = status(config.home)
    remote = local_remote(current[1]) if current else config.spark_remote
    host, port = remote_address(remote)
    if not port_open(host, port):
        print("Spark Connect server is not running" if is_own_address(config, remote) else
              f"the Spark Connect server at {_shown(remote)} (CDCLAKE_SPARK_REMOTE) cannot be reached")
        return 3
    if not is_own_address(config, remote) and current is None:
        try:
            info = probe(remote)
        except ServerNotUsable as exc:
            print(exc)
            return 1
        print(f"Spark Connect server at {info.shown} answers; given on purpose (CDCLAKE_SPARK_REMOTE: "
              f"shared, checked for health only); {_describe(info)}")
        return 0
    try:
        info = check_server(config, remote)
    except ServerNotUsable as exc:
        if exc.info is None:
            print(exc)
            return 1
        print(f"Spark Connect server running{_pid(exc.info.pid)}, listening on {exc.info.shown}; "
              f"{_describe(exc.info)}")
        theirs = exc.info.home is not None and not _serves(exc.info.home, Path(config.home))
        print(f"{'not for this state folder' if theirs else 'this state folder cannot use it'}: {exc}")
        return 3 if theirs else 1
    print(f"Spark Connect server running{_pid(info.pid or (current[0] if current else None))}, listening on "
          f"{info.shown}; {_describe(info, Path(config.home))}")
    return 0


def _pid(pid: int | None) -> str:
    return f" (pid {pid})" if pid else ""
