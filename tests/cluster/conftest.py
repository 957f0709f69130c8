"""The ``cluster`` tier: the native cluster (``cdclake cluster``) started once for the package, in a
folder of the test run's, with the demo's traffic for its three hours on its Kafka broker."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cdclake import demo
from cdclake.cluster.layout import Layout, client_env

ROOT = Path(__file__).resolve().parents[2]
UP_TIMEOUT_S = 900


@dataclass(frozen=True)
class Cluster:
    layout: Layout
    config: Path
    hours: list

    def client(self, *command: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """``command`` run as the cluster's client (its venv's ``cdclake``, no checkout)."""
        return subprocess.run([str(self.layout.venv / "bin" / command[0]), *command[1:]],
                              env=client_env(self.layout), cwd=str(self.layout.root), capture_output=True,
                              text=True, timeout=timeout, check=False)


def cdclake(*args: str, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The checkout's ``cdclake`` (as a user runs it from the checkout)."""
    base = dict(os.environ if env is None else env)
    base["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "include")])
    return subprocess.run([sys.executable, "-m", "cdclake.cli", *args], env=base, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="package")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster") / "cluster"
    config = root.parent / "pipeline.yml"
    layout = Layout(root)
    layout.make()
    hours = demo.demo_hours()
    # The schedule starts in the future: only the backfilled hours run.
    config.write_text(demo.demo_config(layout.ports()["kafka"])
                      + 'schedule:\n  start_date: "2100-01-01T00:00:00Z"\n')
    try:
        up = cdclake("cluster", "up", "--root", str(root), "--config", str(config), timeout=UP_TIMEOUT_S)
        print(up.stdout)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        demo.produce(f"127.0.0.1:{layout.ports()['kafka']}", demo.workload(hours))
        yield Cluster(layout, config, hours)
    finally:
        down = cdclake("cluster", "down", "--root", str(root), timeout=300)
        print(down.stdout, down.stderr)
