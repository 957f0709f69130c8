"""The Spark Connect server: `cdclake spark start|status|stop` as a user runs it, isolated sessions,
Spark SQL through `cdclake sql`, and clear failures when the server is not there, is not this
state folder's or lost its scratch space."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _free_port() -> int:
    from cdclake.kafka_broker import free_port

    return free_port()


LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, IPv4 or IPv6-mapped


def _listening(pid: int) -> dict[int, str]:
    """Port -> local address of every TCP socket ``pid`` listens on (/proc/net/tcp, tcp6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found[int(hex_port, 16)] = address
    return found


def _cli(env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess]:
    """`cdclake ARGS` as a user runs it, in ``env``."""

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cdclake.cli", *args], capture_output=True, text=True,
                              env=env, timeout=180)

    return cli


def _scratch(home: Path) -> Path:
    from cdclake.spark_server import server_paths

    return Path(server_paths(home).scratch_file.read_text())


def _assert_private_scratch(scratch: Path, home: Path, port: int) -> None:
    """The server's own scratch folder: under the system temp dir, named for it, 0700, outside
    the state folder, holding Spark's block manager folder."""
    assert scratch.parent == Path(tempfile.gettempdir()) and scratch.name.startswith(f"cdclake-spark-{port}-")
    assert not scratch.is_relative_to(home)
    assert stat.S_IMODE(scratch.stat().st_mode) == 0o700
    assert any(entry.name.startswith("blockmgr-") for entry in scratch.iterdir())


def test_cli_start_status_sql_kill_and_stop(tmp_path) -> None:
    """A second server on a state folder and port of its own: listening on 127.0.0.1 only, a
    second start and a stop without a server say so, `cdclake sql` reads Iceberg's metadata, and
    after a kill -9 a client fails at once naming the URL and `cdclake spark start`. Its scratch
    space is its own, outside the state folder: when it is deleted under the server, a client fails
    at once and `cdclake run`'s start restarts the server; a stop removes it."""
    port = _free_port()
    # The port of this test until the server runs (something else may listen on the file's 15002).
    env = {**os.environ, "CDCLAKE_HOME": str(tmp_path), "CDCLAKE_SPARK_PORT": str(port)}
    env.pop("CDCLAKE_SPARK_REMOTE", None)
    cli = _cli(env)

    status = cli("spark", "status")
    assert (status.returncode, status.stdout.strip()) == (3, "Spark Connect server is not running")
    stopped = cli("spark", "stop")
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "Spark Connect server is not running")
    env.pop("CDCLAKE_SPARK_PORT")
    started = cli("spark", "start", "--port", str(port))
    assert started.returncode == 0, started.stderr
    assert f"listening on sc://127.0.0.1:{port}" in started.stdout
    try:
        # Connect's port and the driver's own: 127.0.0.1 only, never every interface.
        from cdclake.spark_server import server_paths

        listening = _listening(int(server_paths(tmp_path).pid_file.read_text()))
        assert port in listening and set(listening.values()) <= LOOPBACK, listening
        again = cli("spark", "start", "--port", str(port))
        assert again.returncode == 0 and "already running" in again.stdout
        scratch = _scratch(tmp_path)
        _assert_private_scratch(scratch, tmp_path, port)
        status = cli("spark", "status")
        assert status.returncode == 0 and f"sc://127.0.0.1:{port}" in status.stdout
        assert f"started from state folder {tmp_path}; scratch space {scratch}" in status.stdout
        # Other commands of the state folder follow the running server's port.
        made = cli("sql", "CREATE TABLE lakehouse.ops.probe (id bigint) USING iceberg")
        assert made.returncode == 0, made.stderr
        assert cli("sql", "INSERT INTO lakehouse.ops.probe VALUES (1), (2)").returncode == 0
        rows = cli("sql", "SELECT operation, summary['added-records'] AS added "
                          "FROM lakehouse.ops.probe.snapshots", "--format", "csv")
        assert rows.returncode == 0, rows.stderr
        assert rows.stdout.splitlines() == ["operation,added", "append,2"]
        snapshot = cli("sql", "SELECT snapshot_id FROM lakehouse.ops.probe.history", "--format", "csv")
        snapshot_id = snapshot.stdout.splitlines()[1]
        assert cli("sql", "INSERT INTO lakehouse.ops.probe VALUES (3)").returncode == 0
        travelled = cli("sql", f"SELECT count(*) AS n FROM lakehouse.ops.probe VERSION AS OF {snapshot_id}",
                        "--format", "csv")
        assert travelled.stdout.splitlines() == ["n", "2"], travelled.stderr
        bad = cli("sql", "SELECT * FROM lakehouse.ops.no_such_table")
        assert bad.returncode == 2 and "no_such_table" in bad.stderr

        pid = int(server_paths(tmp_path).pid_file.read_text())
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while cli("spark", "status").returncode != 3 and time.monotonic() < deadline:
            time.sleep(0.5)
        env["CDCLAKE_SPARK_PORT"] = str(port)  # where it was (else the file's 15002)
        began = time.monotonic()
        failed = cli("sql", "SELECT 1")
        assert failed.returncode == 2
        assert time.monotonic() - began < 30  # at once, not through the client's retries
        assert f"the Spark Connect server at sc://127.0.0.1:{port} cannot be reached" in failed.stderr
        assert "cdclake spark start" in failed.stderr
        restarted = cli("spark", "start", "--port", str(port))
        assert restarted.returncode == 0, restarted.stderr
        assert not scratch.exists()  # the killed server's, removed by the next start
        scratch = _scratch(tmp_path)

        # A scratch space deleted under the server (a temp folder cleaner): refused at once, not a
        # shuffle's FileNotFoundException; `cdclake run` (ensure_running) restarts the server.
        shutil.rmtree(scratch)
        pid = int(server_paths(tmp_path).pid_file.read_text())
        began = time.monotonic()
        lost = cli("sql", "SELECT 1")
        assert time.monotonic() - began < 30
        assert lost.returncode == 2
        assert f"(pid {pid}) lost its scratch space {scratch}" in lost.stderr, lost.stderr
        assert "restart it: `cdclake spark stop`, then `cdclake spark start`" in lost.stderr
        ensure = subprocess.run([sys.executable, "-c", "from cdclake.config import load_config; "
                                 "from cdclake.spark_check import ensure_running; "
                                 "print(ensure_running(load_config()))"],
                                capture_output=True, text=True, env=env, timeout=180)
        assert ensure.stdout.strip() == f"sc://127.0.0.1:{port}", ensure.stderr
        assert int(server_paths(tmp_path).pid_file.read_text()) != pid
        scratch = _scratch(tmp_path)
        _assert_private_scratch(scratch, tmp_path, port)
        # A shuffle (into the new scratch space) over the rows written before the restarts.
        assert cli("sql", "SELECT id % 2 AS k, count(*) AS n FROM lakehouse.ops.probe GROUP BY 1 ORDER BY 1",
                   "--format", "csv").stdout.splitlines() == ["k,n", "0,1", "1,2"]
    finally:
        cli("spark", "stop")
    assert cli("spark", "status").returncode == 3
    assert not scratch.exists()  # removed at stop


def test_a_server_whose_state_folder_was_deleted_is_refused_and_stoppable(tmp_path, monkeypatch) -> None:
    """The user's case: a server started from state folder A keeps listening after A is deleted.
    From state folder B on the same port, `cdclake sql` fails at once naming the server's PID and
    A (no shuffle into A's deleted scratch space, no Connect retries), `cdclake run`'s start
    refuses it, `cdclake spark status` names A and the scratch space, a server that stops
    answering is reported within the probe's timeout, and `cdclake spark stop` in B stops it
    (nobody else could: its PID file went with A) and removes its scratch space."""
    from cdclake.config import load_config
    from cdclake.processes import pid_alive, stop_process
    from cdclake.spark_check import ServerNotUsable, check_server, ensure_running
    from cdclake.spark_server import server_paths

    port = _free_port()
    home_a, home_b = tmp_path / "a", tmp_path / "b"
    base = {k: v for k, v in os.environ.items() if k != "CDCLAKE_SPARK_REMOTE"}
    cli_a = _cli({**base, "CDCLAKE_HOME": str(home_a), "CDCLAKE_SPARK_PORT": str(port)})
    cli_b = _cli({**base, "CDCLAKE_HOME": str(home_b), "CDCLAKE_SPARK_PORT": str(port)})
    started = cli_a("spark", "start")
    assert started.returncode == 0, started.stderr
    pid = int(server_paths(home_a).pid_file.read_text())
    try:
        scratch = _scratch(home_a)
        _assert_private_scratch(scratch, home_a, port)
        kept = cli_b("spark", "stop")  # A's, while A exists: not B's to stop
        assert f"(pid {pid}) was started for state folder {home_a}: stop it there" in kept.stdout, kept.stdout
        assert pid_alive(pid)
        shutil.rmtree(home_a)

        began = time.monotonic()
        refused = cli_b("sql", "select id % 7, count(*) from range(100000) group by id % 7")
        took = time.monotonic() - began
        assert refused.returncode == 2 and took < 15, (took, refused.stderr)
        assert (f"the Spark Connect server at sc://127.0.0.1:{port} (pid {pid}) was started for another "
                f"state folder, {home_a}, which no longer exists, not for this one ({home_b})"
                ) in refused.stderr
        assert "`cdclake spark stop` here stops it" in refused.stderr
        assert "NoSuchFileException" not in refused.stderr and "Traceback" not in refused.stderr

        status = cli_b("spark", "status")
        assert status.returncode == 3, status.stdout
        assert (f"Spark Connect server running (pid {pid}), listening on sc://127.0.0.1:{port}; started "
                f"from state folder {home_a} (which no longer exists); scratch space {scratch}"
                ) in status.stdout
        assert "not for this state folder" in status.stdout

        # A DAG task of B: failed for good (AirflowFailException: no retry 5 minutes later), before
        # its job and after a failed one.
        task = subprocess.run(
            [sys.executable, "-c", "from cdclake_airflow.operators import fail_unless_reachable, "
                                   "lasting_server_problem as p; print(p('spark_probe')); "
                                   "fail_unless_reachable('spark_probe')"],
            capture_output=True, text=True, timeout=180,
            env={**base, "CDCLAKE_HOME": str(home_b), "CDCLAKE_SPARK_PORT": str(port),
                 "AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                 "AIRFLOW_CONN_SPARK_PROBE": json.dumps({"conn_type": "spark_connect",
                                                         "host": "sc://127.0.0.1", "port": port})})
        assert task.returncode == 1
        assert (f"AirflowFailException: the Spark Connect server at sc://127.0.0.1:{port} (pid {pid}) was "
                f"started for another state folder, {home_a}") in task.stderr, task.stderr[-2000:]
        assert f"(pid {pid}) was started for another state folder, {home_a}" in task.stdout

        # In process: `cdclake run`'s start (never a restart of another folder's server), and a
        # server that stops answering (SIGSTOP), still named through its scratch folder.
        monkeypatch.setenv("CDCLAKE_HOME", str(home_b))
        monkeypatch.setenv("CDCLAKE_SPARK_PORT", str(port))
        monkeypatch.delenv("CDCLAKE_SPARK_REMOTE", raising=False)
        config_b = load_config()
        with pytest.raises(ServerNotUsable, match=f"pid {pid}.* was started for another state folder") as no:
            ensure_running(config_b)
        assert not no.value.restartable
        os.kill(pid, signal.SIGSTOP)
        try:
            began = time.monotonic()
            with pytest.raises(ServerNotUsable, match=f"at sc://127.0.0.1:{port} \\(pid {pid}\\) does not "
                                                      "answer a Spark Connect call within 2 s") as silent:
                check_server(config_b, timeout=2)
            assert time.monotonic() - began < 10
            assert not silent.value.lasting  # a job that failed on it may retry: it may be restarting
        finally:
            os.kill(pid, signal.SIGCONT)

        stopped = cli_b("spark", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.strip() == (f"Spark Connect server stopped (pid {pid}), left running on port "
                                          f"{port} by the deleted state folder {home_a}")
        assert not pid_alive(pid) and not scratch.exists()
        assert cli_b("spark", "status").stdout.strip() == "Spark Connect server is not running"
    finally:
        if pid_alive(pid):
            stop_process(pid, 30, group=True)  # started in a session of its own


def test_sessions_keep_their_settings_apart(config, spark) -> None:
    """A task's audit branch (or any setting) lives on its own Connect session."""
    from spark_jobs.session import connect

    one, two = connect(config, "one"), connect(config, "two")
    try:
        one.conf.set("spark.wap.branch", "audit_20250101T00")
        assert one.conf.get("spark.wap.branch") == "audit_20250101T00"
        assert two.conf.get("spark.wap.branch", None) is None
        assert spark.conf.get("spark.wap.branch", None) is None
    finally:
        one.stop()
        two.stop()


def test_the_jvm_fast_path_is_registered_without_a_client_jvm(spark) -> None:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from spark_jobs import jvm_decode

    assert jvm_decode.register(spark)
    observation = Observation("keys")
    frame = spark.range(7).select((F.col("id") % 3).cast("string").alias("k"))
    frame.observe(observation, F.call_function(jvm_decode.KEY_COUNTS, F.col("k")).alias("n")).collect()
    assert observation.get["n"] == '{"0":3,"1":2,"2":2}'


def test_an_unreachable_server_fails_at_once_with_the_url_and_the_command(config) -> None:
    from dataclasses import replace

    from cdclake.exceptions import SparkServerError
    from spark_jobs.session import connect

    remote = f"sc://127.0.0.1:{_free_port()}"
    began = time.monotonic()
    with pytest.raises(SparkServerError, match=f"server at {remote} cannot be reached.*cdclake spark start"):
        connect(replace(config, spark_remote=remote))
    assert time.monotonic() - began < 5
