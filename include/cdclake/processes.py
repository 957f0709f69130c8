"""The embedded services' processes (the Kafka broker, the Spark Connect server): found again by
their PID file and command line, and stopped by signal, so that only what cdclake started is
ever stopped."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def recorded_pid(pid_file: Path, *markers: str) -> int | None:
    """The PID in ``pid_file`` if that process still runs and its command line holds every one
    of ``markers`` (a reused PID is someone else's)."""
    try:
        pid = int(pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    if not pid_alive(pid):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return pid
    return pid if all(marker in cmdline for marker in markers) else None


def stop_process(pid: int, timeout_s: float, group: bool = False) -> None:
    """SIGTERM ``pid`` (with ``group``, its process group: one started in a session of its own),
    SIGKILL it after ``timeout_s``; reaps it when it is a child."""
    _signal(pid, signal.SIGTERM, group)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and pid_alive(pid):
        _reap(pid)
        time.sleep(0.2)
    if pid_alive(pid):
        _signal(pid, signal.SIGKILL, group)
        time.sleep(0.5)
        _reap(pid)


def _signal(pid: int, sig: signal.Signals, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
