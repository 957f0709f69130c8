"""``cdclake spark start|stop|status``: the state folder's Spark Connect server from the command line.

``start`` and ``stop`` run :mod:`cdclake.spark_server`'s; ``stop`` also ends a server left running
on the port by a deleted state folder. ``status`` says which server listens at the configured
address, the state folder that started it and its scratch space, and whether this state folder
may use it (:func:`cdclake.spark_check.check_server`).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from cdclake.exceptions import SparkServerError
from cdclake.spark_check import (
    ServerInfo,
    ServerNotUsable,
    check_server,
    is_own_address,
    probe,
    serves,
    shown_remote,
)
from cdclake.spark_server import (
    local_remote,
    local_server,
    port_open,
    recorded_scratch,
    remote_address,
    server_paths,
    start,
    status,
    stop,
    stop_orphan,
)

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

def _describe(info: ServerInfo, home: Path | None = None) -> str:
    """Who started the server and its scratch space; ``home``: the state folder asking."""
    where = (f"started from state folder {info.home}" if info.home
             else "started by an older cdclake or not by `cdclake spark start` (it names no state folder)")
    if info.home is not None and not info.home.exists():
        where += " (which no longer exists)"
    elif info.home is not None and home is not None and info.home != home and serves(info.home, home):
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
              f"{recorded_scratch(server_paths(config.home))}; connect with `pyspark --remote {url}`")
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
              f"the Spark Connect server at {shown_remote(remote)} (CDCLAKE_SPARK_REMOTE) cannot be reached")
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
        theirs = exc.info.home is not None and not serves(exc.info.home, Path(config.home))
        print(f"{'not for this state folder' if theirs else 'this state folder cannot use it'}: {exc}")
        return 3 if theirs else 1
    print(f"Spark Connect server running{_pid(info.pid or (current[0] if current else None))}, listening on "
          f"{info.shown}; {_describe(info, Path(config.home))}")
    return 0


def _pid(pid: int | None) -> str:
    return f" (pid {pid})" if pid else ""
