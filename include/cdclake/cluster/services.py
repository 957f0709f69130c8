"""The native cluster's processes, each started in a session of its own, bound to 127.0.0.1, with
its PID under ``<cluster>/pids`` and its output in ``<cluster>/logs``; stopped by that PID only.

PostgreSQL (Debian's package, a private cluster in a folder of ours) is initialised by
``include/compose/postgres/init-databases.sh``, the script compose's postgres service runs. The
Spark daemons share one secret (``spark.authenticate``), handed over in a 0600 properties file,
never on a command line. The S3 endpoint is moto's server (its own venv, ``.venv-s3``, made by
scripts/setup.sh): it speaks what s3a uses (HEAD, ListObjectsV2, multipart uploads, copies, bulk
deletes) and comes from PyPI; it keeps objects in memory and checks no credentials.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pyspark

from cdclake.cluster.layout import BUCKET, WORKERS, Layout, checkout, compose_dir
from cdclake.exceptions import SetupError
from cdclake.processes import pid_alive, recorded_pid, stop_process
from cdclake.spark_server import port_open

SPARK_HOME = Path(pyspark.__file__).resolve().parent
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
START_TIMEOUT_S = 120
# Each worker offers one core: two executors on two workers, as a cluster would have.
WORKER_CORES = 1
WORKER_MEMORY = "2g"
PG_BIN = Path(os.environ.get("CDCLAKE_PG_BIN", "/usr/lib/postgresql/15/bin"))


def spawn(layout: Layout, name: str, command: list[str], env: dict[str, str], cwd: Path) -> int:
    """Start ``command`` in a session of its own, output to its log; returns its PID."""
    with layout.log(name).open("ab") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True, cwd=str(cwd))
    layout.pid_file(name).write_text(str(process.pid))
    return process.pid


def wait_listening(layout: Layout, name: str, port: int, pid: int | None = None,
                   timeout_s: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not port_open("127.0.0.1", port):
        if pid is not None and not pid_alive(pid):
            raise SetupError(f"{name} exited before listening on 127.0.0.1:{port}; see {layout.log(name)}")
        if time.monotonic() > deadline:
            raise SetupError(f"{name} did not listen on 127.0.0.1:{port} within {timeout_s:.0f}s; "
                             f"see {layout.log(name)}")
        time.sleep(0.25)


def running(layout: Layout, name: str, marker: str) -> int | None:
    """The PID of the cluster's ``name`` process, if it runs (its command line holds ``marker``)."""
    return recorded_pid(layout.pid_file(name), marker)


def stop(layout: Layout, name: str, marker: str, timeout_s: float = 30) -> int | None:
    pid = running(layout, name, marker)
    if pid is not None:
        stop_process(pid, timeout_s, group=True)
    layout.pid_file(name).unlink(missing_ok=True)
    return pid


# --- PostgreSQL ---------------------------------------------------------------------------------
def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: then its commands run as the package's postgres user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.getuid() == 0 else command


def pg_data(layout: Layout) -> Path:
    """PostgreSQL's folder: in the cluster's, or (as root) a private one the postgres user owns,
    since it cannot enter root's 0700 folders."""
    recorded = layout.state().get("pg_dir")
    if recorded:
        return Path(str(recorded))
    if os.getuid() == 0:
        folder = Path(tempfile.mkdtemp(prefix="cdclake-pg-"))
        shutil.chown(folder, "postgres", "postgres")
    else:
        folder = layout.root / "postgres"
        folder.mkdir(mode=0o700, exist_ok=True)
    layout.save_state({**layout.state(), "pg_dir": str(folder)})
    return folder


def start_postgres(layout: Layout) -> None:
    folder, port, found = pg_data(layout), layout.ports()["postgres"], layout.secrets()
    data = folder / "data"
    if not (data / "PG_VERSION").exists():
        password_file = folder / "superuser"
        password_file.write_text(found["postgres"] + "\n")
        os.chmod(password_file, 0o600)
        if os.getuid() == 0:
            shutil.chown(password_file, "postgres", "postgres")
        init = subprocess.run(_as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres",
                                            "--auth-host=scram-sha-256", "--auth-local=reject",
                                            f"--pwfile={password_file}", "-E", "UTF8", "--no-sync"]),
                              capture_output=True, text=True, check=False)
        password_file.unlink()
        if init.returncode != 0:
            raise SetupError(f"initdb failed: {init.stderr[-1500:]}")
    if not pg_running(layout):
        # TCP on the loopback only; no Unix socket (every client logs in with a password).
        options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories=''"
        started = subprocess.run(_as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(data), "-w", "-t", "60",
                                               "-l", str(folder / "postgres.log"), "-o", options, "start"]),
                                 capture_output=True, text=True, check=False)
        if started.returncode != 0:
            raise SetupError(f"PostgreSQL did not start: {started.stdout[-800:]} {started.stderr[-800:]}; "
                             f"see {folder / 'postgres.log'}")
    env = {**os.environ, "PGHOST": "127.0.0.1", "PGPORT": str(port), "PGPASSWORD": found["postgres"],
           "POSTGRES_USER": "postgres", "AIRFLOW_DB_PASSWORD": found["airflow_db"],
           "ICEBERG_DB_PASSWORD": found["iceberg_db"]}
    init_dbs = subprocess.run(["bash", str(compose_dir() / "postgres" / "init-databases.sh")], env=env,
                              capture_output=True, text=True, check=False)
    if init_dbs.returncode != 0:
        raise SetupError(f"init-databases.sh failed: {init_dbs.stderr[-1500:]}")


def pg_pid(layout: Layout) -> int | None:
    try:
        pid = int((pg_data(layout) / "data" / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None
    return pid if pid_alive(pid) else None


def pg_running(layout: Layout) -> bool:
    return pg_pid(layout) is not None


def stop_postgres(layout: Layout, mode: str = "fast") -> int | None:
    pid = pg_pid(layout)
    if pid is not None:
        subprocess.run(_as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(pg_data(layout) / "data"), "-w",
                                     "-m", mode, "stop"]), capture_output=True, check=False)
    return pid


# --- S3 -----------------------------------------------------------------------------------------
def moto_server() -> Path:
    configured = os.environ.get("CDCLAKE_S3_SERVER")
    found = Path(configured) if configured else checkout() / ".venv-s3" / "bin" / "moto_server"
    if not found.exists():
        raise SetupError(f"{found} not found: run scripts/setup.sh (it makes .venv-s3 with moto's server)")
    return found


def start_s3(layout: Layout) -> None:
    port = layout.ports()["s3"]
    if running(layout, "s3", "moto_server") is None:
        pid = spawn(layout, "s3", [str(moto_server()), "-H", "127.0.0.1", "-p", str(port)],
                    {**os.environ, "PYTHONPATH": ""}, layout.root)
        wait_listening(layout, "s3", port, pid)
    request = urllib.request.Request(f"http://127.0.0.1:{port}/{BUCKET}", method="PUT")
    with urllib.request.urlopen(request, timeout=30):
        pass  # creating an existing bucket of ours answers 200 as well


# --- Spark standalone ---------------------------------------------------------------------------
def auth_properties(layout: Layout) -> Path:
    """The shared secret of ``spark.authenticate``, in a 0600 file every Spark daemon reads, written
    by compose's own script (include/compose/spark/auth.sh)."""
    path = layout.root / "spark-auth.properties"
    done = subprocess.run(["sh", str(compose_dir() / "spark" / "auth.sh"), str(path)],
                          env={**os.environ, "SPARK_AUTH_SECRET": layout.secrets()["spark"]},
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SetupError(f"auth.sh failed: {done.stderr[-500:]}")
    return path


def spark_env(layout: Layout) -> dict[str, str]:
    """The Spark daemons' environment: the loopback for every listener (web UIs included), UTC, the
    S3 credentials (executors inherit their worker's environment) and no checkout."""
    from cdclake.cluster.layout import client_env

    env = {k: v for k, v in client_env(layout).items() if not k.startswith("CDCLAKE_")}
    for key in ("SPARK_LOCAL_DIRS", "SPARK_CONF_DIR", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        env.pop(key, None)
    env.update({"SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "true",
                "SPARK_DAEMON_MEMORY": "256m", "SPARK_DAEMON_JAVA_OPTS": "-Duser.timezone=UTC"})
    return env


def start_master(layout: Layout) -> None:
    ports = layout.ports()
    if running(layout, "master", MASTER_CLASS) is not None:
        return
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    pid = spawn(layout, "master", [spark_class, MASTER_CLASS, "--host", "127.0.0.1",
                                   "--port", str(ports["master"]), "--webui-port", str(ports["master_ui"]),
                                   "--properties-file", str(auth_properties(layout))],
                spark_env(layout), layout.root)
    wait_listening(layout, "master", ports["master"], pid)


def master_url(layout: Layout) -> str:
    return f"spark://127.0.0.1:{layout.ports()['master']}"


def start_worker(layout: Layout, number: int) -> int:
    name = f"worker{number}"
    folder = layout.worker_dir(number)
    existing = running(layout, name, WORKER_CLASS)
    if existing is not None:
        return existing
    (folder / "local").mkdir(parents=True, exist_ok=True)
    env = {**spark_env(layout), "SPARK_LOCAL_DIRS": str(folder / "local")}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    return spawn(layout, name, [spark_class, WORKER_CLASS, master_url(layout), "--host", "127.0.0.1",
                                "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
                                "--work-dir", str(folder / "work"),
                                "--webui-port", str(layout.ports()[f"{name}_ui"]),
                                "--properties-file", str(auth_properties(layout))], env, folder)


def start_workers(layout: Layout) -> list[int]:
    pids = [start_worker(layout, n) for n in range(1, WORKERS + 1)]
    for number in range(1, WORKERS + 1):  # registered with the master: its log says so
        wait_listening(layout, f"worker{number}", layout.ports()[f"worker{number}_ui"], pids[number - 1])
    return pids
