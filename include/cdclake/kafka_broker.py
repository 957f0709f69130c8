"""The embedded Apache Kafka broker: one KRaft node (broker + controller) on localhost.

Runs the real broker from the Maven jars in ``.jars/kafka`` with its data, configuration, log
and PID file under ``<state folder>/kafka/``. ``start`` formats the storage on first use, waits
until the broker answers a metadata request, and prints where it listens; ``stop`` ends exactly
the process it started (by its PID file).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from cdclake.exceptions import BrokerError, SetupError
from cdclake.paths import jars_dir, state_home, write_private
from cdclake.processes import recorded_pid, stop_process

START_TIMEOUT_S = 90
STOP_TIMEOUT_S = 30


@dataclass(frozen=True)
class BrokerPaths:
    root: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def properties(self) -> Path:
        return self.root / "server.properties"

    @property
    def log4j(self) -> Path:
        return self.root / "log4j2.yaml"

    @property
    def pid_file(self) -> Path:
        return self.root / "broker.pid"

    @property
    def port_file(self) -> Path:
        return self.root / "broker.port"

    @property
    def log(self) -> Path:
        return self.root / "broker.log"


def broker_paths(home: Path | None = None) -> BrokerPaths:
    root = (home or state_home()) / "kafka"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return BrokerPaths(root)


@dataclass(frozen=True)
class SaslListener:
    """A second listener, SASL/PLAIN on localhost, for trying authenticated clients (connection
    settings with ``sasl.username`` / ``sasl.password``) against the embedded broker."""

    port: int
    users: dict[str, str]


def _sasl_lines(sasl: SaslListener | None) -> list[str]:
    if sasl is None:
        return []
    logins = " ".join(f'user_{user}="{password}"' for user, password in sasl.users.items())
    return ["sasl.enabled.mechanisms=PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config="
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {logins};"]


def _server_properties(paths: BrokerPaths, port: int, controller_port: int,
                       sasl: SaslListener | None = None) -> str:
    extra = f",SASL_PLAINTEXT://localhost:{sasl.port}" if sasl else ""
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.bootstrap.servers=localhost:{controller_port}",
        f"listeners=PLAINTEXT://localhost:{port},CONTROLLER://localhost:{controller_port}{extra}",
        f"advertised.listeners=PLAINTEXT://localhost:{port}{extra}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        *_sasl_lines(sasl),
        f"log.dirs={paths.data}",
        "num.partitions=1",
        "offsets.topic.replication.factor=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        # Topics are created explicitly (cdclake produce, tests): a typo must not create one.
        "auto.create.topics.enable=false",
        # The embedded broker keeps everything: landing hours may be days old (backfills, demo).
        "log.retention.ms=-1",
        # CDC rows with LOBs can be large; accept them so normalize can judge (and quarantine).
        "message.max.bytes=16777216",
        "replica.fetch.max.bytes=16777216",
        "",
    ])


_LOG4J = """Configuration:
  name: cdclake-kafka
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        Pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
      - name: kafka.server.BrokerServer
        level: INFO
"""


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise SetupError("java not found on PATH; install a JDK 17 (scripts/setup.sh does)")
    return found


def _classpath() -> str:
    folder = jars_dir() / "kafka"
    if not any(folder.glob("kafka_2.13-*.jar")):
        raise SetupError(f"Kafka jars missing in {folder}; run scripts/setup.sh to fetch them with Maven")
    return str(folder / "*")


def running_pid(paths: BrokerPaths) -> int | None:
    """The PID of the broker this state folder started, if it still runs."""
    return recorded_pid(paths.pid_file, "kafka.Kafka", str(paths.properties))


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _metadata_ok(bootstrap: str) -> bool:
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=3)
        return True
    except Exception:  # the broker is still starting
        return False


def start(port: int, home: Path | None = None, sasl: SaslListener | None = None) -> str:
    """Start the broker (formatting storage on first use); returns the bootstrap address."""
    paths = broker_paths(home)
    pid = running_pid(paths)
    if pid is not None:
        raise BrokerError(f"already running (pid {pid}) on localhost:{_recorded_port(paths)}")
    if _port_open(port):
        raise BrokerError(f"port {port} is in use by another process; choose another with --port "
                          "or CDCLAKE_KAFKA_PORT")
    controller_port = free_port()
    # The properties may hold SASL logins: private to the owner.
    write_private(paths.properties, _server_properties(paths, port, controller_port, sasl))
    paths.log4j.write_text(_LOG4J)
    java = _java()
    jvm = [java, "-Xms256m", "-Xmx768m", f"-Dlog4j2.configurationFile={paths.log4j}",
           "-cp", _classpath()]
    if not (paths.data / "meta.properties").exists():
        cluster_id = _cluster_id()
        formatted = subprocess.run(
            [*jvm, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(paths.properties),
             "--standalone"], capture_output=True, text=True, check=False)
        if formatted.returncode != 0:
            raise BrokerError(f"formatting broker storage failed: {formatted.stderr.strip()[-800:]}")
    with paths.log.open("ab") as log:
        process = subprocess.Popen([*jvm, "kafka.Kafka", str(paths.properties)], stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    paths.pid_file.write_text(str(process.pid))
    paths.port_file.write_text(str(port))
    bootstrap = f"localhost:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BrokerError(f"broker exited with code {process.returncode}; see {paths.log}")
        if _port_open(port) and _metadata_ok(bootstrap):
            return bootstrap
        time.sleep(0.5)
    stop(home)
    raise BrokerError(f"broker did not accept connections within {START_TIMEOUT_S}s; see {paths.log}")


def stop(home: Path | None = None) -> int | None:
    """Stop the broker this state folder started; returns its PID, or None if none ran."""
    paths = broker_paths(home)
    pid = running_pid(paths)
    if pid is None:
        paths.pid_file.unlink(missing_ok=True)
        return None
    stop_process(pid, STOP_TIMEOUT_S)
    paths.pid_file.unlink(missing_ok=True)
    return pid


def status(home: Path | None = None) -> tuple[int, int] | None:
    """(pid, port) of the running broker, or None."""
    paths = broker_paths(home)
    pid = running_pid(paths)
    if pid is None:
        return None
    return pid, _recorded_port(paths)


def _recorded_port(paths: BrokerPaths) -> int:
    try:
        return int(paths.port_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return 0


def free_port() -> int:
    """A TCP port nobody listens on right now (for embedded services and tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cluster_id() -> str:
    """A random cluster id in Kafka's form (URL-safe base64 of 16 bytes), never starting with
    ``-``: the storage tool's argument parser would read such an id as an option (1 run in 64
    failed so); Kafka's own ``Uuid.randomUuid`` avoids that prefix the same way."""
    import base64

    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def command(action: str, port: int | None = None) -> int:
    """``cdclake kafka start|stop|status``."""
    from cdclake.config import load_config

    home = state_home()
    if action == "start":
        chosen = port or load_config().kafka_port
        try:
            bootstrap = start(chosen, home)
        except BrokerError as exc:
            if "already running" in str(exc):
                print(f"Kafka broker {exc}")
                return 0
            raise
        pid = status(home)
        print(f"Kafka broker running (pid {pid[0] if pid else '?'}), listening on {bootstrap}; "
              f"data in {broker_paths(home).data}")
        return 0
    if action == "stop":
        stopped = stop(home)
        print("Kafka broker is not running" if stopped is None else f"Kafka broker stopped (pid {stopped})")
        return 0
    current = status(home)
    if current is None:
        print("Kafka broker is not running")
        return 3
    print(f"Kafka broker running (pid {current[0]}), listening on localhost:{current[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(command(sys.argv[1]))
