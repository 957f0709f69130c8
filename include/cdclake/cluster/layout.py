"""Where a native cluster lives: its folder, ports, secrets and the environment of its clients.

Everything is under one folder (``<state folder>/cluster`` unless ``--root`` says otherwise):
``cluster.json`` (ports, the configuration file, PostgreSQL's data folder), ``secrets.json``
(0600: generated once, never printed), ``logs/``, each worker's folder, the Connect server's
scratch space, the state folder its clients use (``home/``) and the product's venv (``venv/``).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

from cdclake.exceptions import SetupError
from cdclake.paths import CHECKOUT, jars_dir, write_private

WORKERS = 2
BUCKET = "cdclake"
REGION = "us-east-1"
# Ports taken at `up`: every listener is on 127.0.0.1.
PORT_NAMES = ("postgres", "s3", "kafka", "master", "master_ui", "connect", "airflow",
              *(f"worker{i}_ui" for i in range(1, WORKERS + 1)))
SECRET_NAMES = ("spark", "postgres", "airflow_db", "iceberg_db", "s3_access_key", "s3_secret_key")


def checkout() -> Path:
    """The checkout the cluster is built from (the wheel, include/compose)."""
    if CHECKOUT is None:
        raise SetupError("`cdclake cluster` runs from a checkout: it builds the wheel from it and reads "
                         "include/compose; with an installed cdclake, use docker-compose.yml")
    return CHECKOUT


def compose_dir() -> Path:
    """The configuration files compose mounts, read by the native cluster too."""
    return checkout() / "include" / "compose"


def cluster_jars() -> Path:
    """hadoop-aws, its AWS SDK bundle and the PostgreSQL JDBC driver (include/compose/spark/pom.xml,
    fetched by scripts/setup.sh): the cluster image's class path, not shipped with jobs."""
    folder = jars_dir() / "cluster"
    if not any(folder.glob("hadoop-aws-*.jar")) or not any(folder.glob("postgresql-*.jar")):
        raise SetupError(f"no hadoop-aws/PostgreSQL jars in {folder}: run scripts/setup.sh")
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / "cluster.json"

    @property
    def secrets_file(self) -> Path:
        return self.root / "secrets.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def home(self) -> Path:
        """The state folder of the cluster's clients (Airflow, the CLI): CDCLAKE_HOME."""
        return self.root / "home"

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def worker_dir(self, number: int) -> Path:
        return self.root / f"worker{number}"

    @property
    def connect_dir(self) -> Path:
        return self.root / "connect"

    def pid_file(self, service: str) -> Path:
        return self.root / "pids" / f"{service}.pid"

    def log(self, service: str) -> Path:
        return self.logs / f"{service}.log"

    def make(self) -> None:
        for folder in (self.root, self.logs, self.home, self.root / "pids"):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.root.chmod(0o700)

    # --- recorded state ---------------------------------------------------------------------
    def state(self) -> dict[str, object]:
        try:
            return dict(json.loads(self.state_file.read_text()))
        except FileNotFoundError:
            return {}

    def save_state(self, state: dict[str, object]) -> None:
        self.state_file.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")

    def ports(self) -> dict[str, int]:
        """The cluster's ports: taken once, kept for its life (a restart listens where clients look)."""
        state = self.state()
        ports = {str(k): int(v) for k, v in dict(state.get("ports") or {}).items()}  # type: ignore[call-overload]
        if set(PORT_NAMES) - set(ports):
            ports.update({name: free_port() for name in PORT_NAMES if name not in ports})
            self.save_state({**state, "ports": ports})
        return ports

    def secrets(self) -> dict[str, str]:
        """The cluster's secrets, generated once into a 0600 file; never printed or logged."""
        try:
            found = {str(k): str(v) for k, v in json.loads(self.secrets_file.read_text()).items()}
        except FileNotFoundError:
            found = {}
        if set(SECRET_NAMES) - set(found):
            found.update({name: secrets.token_hex(24) for name in SECRET_NAMES if name not in found})
            # S3 access key ids are upper-case alphanumerics
            found["s3_access_key"] = found["s3_access_key"][:20].upper()
            write_private(self.secrets_file, json.dumps(found) + "\n")
        return found


def catalog_uri(layout: Layout, user: str = "iceberg") -> str:
    secret = layout.secrets()["iceberg_db" if user == "iceberg" else "airflow_db"]
    return f"postgresql+psycopg2://{user}:{secret}@127.0.0.1:{layout.ports()['postgres']}/{user}"


def s3_endpoint(layout: Layout) -> str:
    return f"http://127.0.0.1:{layout.ports()['s3']}"


def client_env(layout: Layout, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the cluster's clients (Airflow, ``cdclake`` commands): the product's venv
    first on PATH and no checkout on PYTHONPATH; the catalog on PostgreSQL, the warehouse on S3,
    jobs on the Connect server, the broker's port. Holds secrets: for child processes only."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith("CDCLAKE_") and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
                                                          "SPARK_HOME")}
    ports, found = layout.ports(), layout.secrets()
    config = layout.state().get("config")
    env.update({
        "PATH": os.pathsep.join([str(layout.venv / "bin"), env.get("PATH", "")]),
        "VIRTUAL_ENV": str(layout.venv),
        "CDCLAKE_HOME": str(layout.home),
        "CDCLAKE_JARS": str(jars_dir()),
        "CDCLAKE_CATALOG_URI": catalog_uri(layout),
        "CDCLAKE_WAREHOUSE": f"s3a://{BUCKET}/warehouse",
        "CDCLAKE_SPARK_REMOTE": f"sc://127.0.0.1:{ports['connect']}",
        "CDCLAKE_KAFKA_PORT": str(ports["kafka"]),
        "CDCLAKE_AIRFLOW_DB": catalog_uri(layout, "airflow"),
        "AIRFLOW__API__PORT": str(ports["airflow"]),
        "AWS_ACCESS_KEY_ID": found["s3_access_key"],
        "AWS_SECRET_ACCESS_KEY": found["s3_secret_key"],
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": s3_endpoint(layout),
        "GX_ANALYTICS_ENABLED": "false",
        "TZ": "UTC",
    })
    if config:
        env["CDCLAKE_CONFIG"] = str(config)
    return env
