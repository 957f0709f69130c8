"""``cdclake cluster up|down|status|env|exec``: the native cluster (:mod:`cdclake.cluster`).

``up`` builds and installs the wheel, then starts PostgreSQL, the S3 endpoint, the Kafka broker,
the Spark master and workers, the Connect server and Airflow (scheduler, DAG processor, triggerer,
API server; LocalExecutor on PostgreSQL), skipping what already runs. ``exec -- CMD`` runs a
command as the cluster's client (``cdclake airflow backfill ...``, ``cdclake query ...``); ``env``
prints that environment without its secrets. ``down`` stops everything it started, by PID, and
removes the cluster's folder (moto keeps the warehouse in memory: it does not outlive ``down``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time
from pathlib import Path

from cdclake import kafka_broker, masking
from cdclake.cluster import connect, services
from cdclake.cluster.layout import WORKERS, Layout, client_env
from cdclake.exceptions import CdclakeError
from cdclake.paths import state_home
from cdclake.spark_server import SERVER_CLASS, port_open


def layout_of(root: Path | None) -> Layout:
    return Layout((root or Path(os.environ.get("CDCLAKE_CLUSTER") or state_home() / "cluster")).resolve())


def up(layout: Layout, config: Path | None = None) -> int:
    from cdclake.cluster import product

    def say(text: str) -> None:
        print(text, flush=True)

    layout.make()
    if config is not None:
        layout.save_state({**layout.state(), "config": str(config.resolve())})
    for secret in layout.secrets().values():
        masking.register(secret)
    began = time.monotonic()
    site = product.install(layout)
    say(f"product: the wheel installed in {site}")
    services.start_postgres(layout)
    ports = layout.ports()
    say(f"PostgreSQL (Iceberg catalog, Airflow metadata): 127.0.0.1:{ports['postgres']}")
    services.start_s3(layout)
    say(f"S3 (moto server, bucket s3a://cdclake/warehouse): 127.0.0.1:{ports['s3']}")
    home = layout.home
    if kafka_broker.status(home) is None:
        kafka_broker.start(ports["kafka"], home)
    say(f"Kafka broker: 127.0.0.1:{ports['kafka']}")
    services.start_master(layout)
    services.start_workers(layout)
    say(f"Spark master {services.master_url(layout)} with {WORKERS} workers (spark.authenticate on)")
    connect.start(layout)
    say(f"Spark Connect server: sc://127.0.0.1:{ports['connect']} (master {services.master_url(layout)})")
    airflow = _client(layout, "cdclake", "airflow", "start", "--port", str(ports["airflow"]))
    if airflow.returncode != 0:
        raise CdclakeError(f"Airflow did not start:\n{masking.mask(airflow.stdout + airflow.stderr)[-2000:]}")
    say(f"Airflow (LocalExecutor on PostgreSQL): http://127.0.0.1:{ports['airflow']}")
    say(f"cluster up in {time.monotonic() - began:.0f} s; folder {layout.root}")
    return 0


def _client(layout: Layout, *command: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(layout.venv / "bin" / command[0]), *command[1:]], env=client_env(layout),
                          cwd=str(layout.root), capture_output=True, text=True, timeout=timeout, check=False)


def components(layout: Layout) -> dict[str, int | None]:
    """Each component's PID, None when it does not run."""
    postgres = services.pg_pid(layout) if layout.state().get("pg_dir") else None
    found: dict[str, int | None] = {"postgres": postgres,
                                    "s3": services.running(layout, "s3", "moto_server"),
                                    "kafka": (kafka_broker.status(layout.home) or (None,))[0],
                                    "master": services.running(layout, "master", services.MASTER_CLASS)}
    for number in range(1, WORKERS + 1):
        found[f"worker{number}"] = services.running(layout, f"worker{number}", services.WORKER_CLASS)
    found["connect"] = services.running(layout, "connect", SERVER_CLASS)
    try:  # the process group `cdclake airflow start` records
        pid = int((layout.home / "airflow" / "airflow.pid").read_text().strip())
        found["airflow"] = pid if services.pid_alive(pid) else None
    except (FileNotFoundError, ValueError):
        found["airflow"] = None
    return found


def status(layout: Layout) -> int:
    if not layout.state_file.exists():
        print(f"no cluster in {layout.root}")
        return 3
    ports = layout.ports()
    port_of = {"postgres": "postgres", "s3": "s3", "kafka": "kafka", "master": "master",
               "connect": "connect", "airflow": "airflow",
               **{f"worker{n}": f"worker{n}_ui" for n in range(1, WORKERS + 1)}}
    found = components(layout)
    for name, pid in found.items():
        port = ports[port_of[name]]
        state = f"running (pid {pid})" if pid else "not running"
        listening = "listening" if port_open("127.0.0.1", port) else "not listening"
        print(f"{name:10} {state:22} 127.0.0.1:{port} {listening}")
    return 0 if all(found.values()) else 3


def down(layout: Layout, keep: bool = False) -> int:
    if not layout.root.exists():
        print(f"no cluster in {layout.root}")
        return 0
    if (layout.venv / "bin" / "cdclake").exists():
        _client(layout, "cdclake", "airflow", "stop")
    stopped = [("connect", connect.stop(layout))]
    for number in range(WORKERS, 0, -1):
        stopped.append((f"worker{number}", services.stop(layout, f"worker{number}", services.WORKER_CLASS)))
    stopped.append(("master", services.stop(layout, "master", services.MASTER_CLASS)))
    stopped.append(("kafka", kafka_broker.stop(layout.home)))
    stopped.append(("s3", services.stop(layout, "s3", "moto_server")))
    if layout.state().get("pg_dir"):
        stopped.append(("postgres", services.stop_postgres(layout)))
    for name, pid in stopped:
        if pid:
            print(f"stopped {name} (pid {pid})")
    if not keep:
        pg_dir = layout.state().get("pg_dir")
        if pg_dir and Path(str(pg_dir)).name.startswith("cdclake-pg-"):
            shutil.rmtree(str(pg_dir), ignore_errors=True)
        shutil.rmtree(layout.root, ignore_errors=True)
        print(f"removed {layout.root}")
    return 0


# Printed by `env`: the settings a client needs, with the secrets as references to the 0600 file.
SECRET_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "CDCLAKE_CATALOG_URI", "CDCLAKE_AIRFLOW_DB")


def show_env(layout: Layout) -> int:
    env = client_env(layout, base={})
    for key in sorted(env):
        if key in SECRET_ENV:
            print(f"# {key}: secret (`cdclake cluster exec -- CMD` sets it; kept in {layout.secrets_file})")
        elif key != "PATH":
            print(f"export {key}={env[key]}")
    return 0


def run_as_client(layout: Layout, command: list[str]) -> int:
    if not command:
        raise CdclakeError("exec needs a command: cdclake cluster exec -- cdclake query \"...\"")
    if command[0] == "--":
        command = command[1:]
    env = client_env(layout)
    found = shutil.which(command[0], path=env["PATH"]) or command[0]
    os.execvpe(found, [found, *command[1:]], env)


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("cluster", help="the compose topology run natively (Spark standalone, "
                                            "PostgreSQL, S3, Airflow on the LocalExecutor)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    helps = {"up": "build the wheel, start every component (skipping what runs)",
             "down": "stop every component and remove the cluster's folder",
             "status": "each component's PID and port", "env": "the clients' settings, without secrets",
             "exec": "run a command as the cluster's client: exec -- CMD ..."}
    for action, text in helps.items():
        a = actions.add_parser(action, help=text)
        a.add_argument("--root", type=Path, help="the cluster's folder (default <state folder>/cluster, "
                                                 "or $CDCLAKE_CLUSTER)")
        if action == "up":
            a.add_argument("--config", type=Path, help="the pipeline configuration its clients use")
        if action == "down":
            a.add_argument("--keep", action="store_true", help="keep the cluster's folder (logs)")
        if action == "exec":
            a.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
        a.set_defaults(handler=_command)


def _command(args: argparse.Namespace) -> int:
    layout = layout_of(args.root)
    if args.action == "up":
        return up(layout, args.config)
    if args.action == "down":
        return down(layout, args.keep)
    if args.action == "env":
        return show_env(layout)
    if args.action == "exec":
        return run_as_client(layout, list(args.command))
    return status(layout)
