"""The Spark Connect server process: one long-lived Spark driver that runs every cdclake job.

``cdclake spark start`` launches Spark's own ``SparkConnectServer`` (shipped in pyspark's jars)
with the configuration of :mod:`cdclake.spark_conf` (the project's jars, the Iceberg catalog, the
session defaults and the JVM fast path's function catalog), listening on 127.0.0.1 (``--host``
opens it wider). DAG tasks, the CLI and the tests connect to it (``sc://127.0.0.1:<port>``)
instead of starting a JVM each; every task gets a Connect session of its own, so its settings (the
audit branch, ``spark.conf``) never reach another. PID, port and log live under
``<state folder>/spark/``; ``stop`` ends exactly the process group it started.

The server outlives any one command, so what it needs must not live in a folder that can vanish
under it: its scratch space (``spark.local.dir``, shuffle and spill files) is a private folder of
its own under the system temp dir, ``cdclake-spark-<port>-*``, removed when it stops. It records
in its own Spark conf the state folder that started it and that scratch folder
(:data:`HOME_CONF`, :data:`SCRATCH_CONF`), so a client learns whose it is with one call
(:func:`cdclake.spark_check.probe`), and its PID in the scratch folder, so it can be found
(:func:`local_server`) and stopped (:func:`stop_orphan`) after its state folder was deleted.
The checks before a client uses it are :mod:`cdclake.spark_check`; the ``cdclake spark``
command is :mod:`cdclake.spark_cli`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from cdclake import masking
from cdclake.exceptions import SetupError, SparkServerError
from cdclake.paths import import_paths, state_home, write_private
from cdclake.processes import recorded_pid, stop_process
from cdclake.spark_conf import java_options, session_conf, settings_from_config

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 30
# What a server records of itself in its static Spark conf, readable by any Connect client.
HOME_CONF = "spark.cdclake.home"
SCRATCH_CONF = "spark.cdclake.scratch"
# The server's scratch folder under the system temp dir: cdclake-spark-<port>-<random>.
SCRATCH_PREFIX = "cdclake-spark-"


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
LOG4J = """rootLogger.level = warn
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


def recorded_scratch(paths: ServerPaths) -> Path | None:
    """The scratch folder of the server this state folder started last, if one is recorded."""
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


def recorded_port(paths: ServerPaths) -> int:
    """The port of the server this state folder started last; 0 when none is recorded."""
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
    the state folder in its conf (:func:`cdclake.spark_check.probe` reads them back)."""
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
        "PYTHONPATH": os.pathsep.join([*import_paths(), env.get("PYTHONPATH", "")]).strip(os.pathsep),
    })
    # Spark prefers this variable to spark.local.dir: the server's scratch space is the folder it
    # records (spark.conf can still move it).
    env.pop("SPARK_LOCAL_DIRS", None)
    return env


def _listener(port: int) -> str:
    """Who listens on ``port``, for a message: a cdclake server found here, or another process."""
    found = local_server(port)
    if found is None:
        return "another process"
    gone = "" if found.home is None or found.home.exists() else \
        ", which no longer exists (`cdclake spark stop` here stops it)"
    return f"the Spark Connect server (pid {found.pid}) started for state folder {found.home}{gone}"


def start(config: PipelineConfig, port: int | None = None, host: str = "127.0.0.1") -> str:
    """Start the server for ``config``'s state folder; returns its ``sc://`` URL once it listens."""
    paths = server_paths(config.home)
    port = port or config.spark_port
    pid = running_pid(paths)
    if pid is not None:
        raise SparkServerError(f"already running (pid {pid}) on 127.0.0.1:{recorded_port(paths)}")
    if port_open("127.0.0.1", port):
        raise SparkServerError(f"port {port} is in use by {_listener(port)}; choose another with --port "
                               "or CDCLAKE_SPARK_PORT")
    _remove_scratch(recorded_scratch(paths))  # a server's that was killed, not stopped
    _sweep_scratch()
    paths.log4j.write_text(LOG4J)
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
        _wait_closed(recorded_port(paths))
    paths.pid_file.unlink(missing_ok=True)
    _remove_scratch(recorded_scratch(paths))
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
    return None if pid is None else (pid, recorded_port(paths))
