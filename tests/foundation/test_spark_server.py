"""The Spark Connect server: `cdclake spark start|status|stop` as a user runs it, isolated sessions,
Spark SQL through `cdclake sql`, and clear failures when the server is not there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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


def test_cli_start_status_sql_kill_and_stop(tmp_path) -> None:
    """A second server on a state folder and port of its own: listening on 127.0.0.1 only, a
    second start and a stop without a server say so, `cdclake sql` reads Iceberg's metadata, and
    after a kill -9 a client fails at once naming the URL and `cdclake spark start`."""
    port = _free_port()
    env = {**os.environ, "CDCLAKE_HOME": str(tmp_path)}
    env.pop("CDCLAKE_SPARK_PORT", None)
    env.pop("CDCLAKE_SPARK_REMOTE", None)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cdclake.cli", *args], capture_output=True, text=True,
                              env=env, timeout=180)

    status = cli("spark", "status")
    assert (status.returncode, status.stdout.strip()) == (3, "Spark Connect server is not running")
    stopped = cli("spark", "stop")
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "Spark Connect server is not running")
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
        status = cli("spark", "status")
        assert status.returncode == 0 and f"sc://127.0.0.1:{port}" in status.stdout
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
        assert cli("sql", "SELECT count(*) FROM lakehouse.ops.probe", "--format", "csv").stdout \
            .splitlines() == ["count(1)", "3"]
    finally:
        cli("spark", "stop")
    assert cli("spark", "status").returncode == 3


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

    from cdclake.spark_server import SparkServerError
    from spark_jobs.session import connect

    remote = f"sc://127.0.0.1:{_free_port()}"
    began = time.monotonic()
    with pytest.raises(SparkServerError, match=f"server at {remote} cannot be reached.*cdclake spark start"):
        connect(replace(config, spark_remote=remote))
    assert time.monotonic() - began < 5
