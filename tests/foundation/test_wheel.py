"""The wheel is the product: built from the checkout it holds every package and every file the
product reads at run time, and installed into a fresh virtual environment (no checkout, no
PYTHONPATH, no editable install) it decodes each format as the checkout does and runs the demo.

The fresh environment sees the project's dependencies (Airflow, pyspark, GX, ...) in this
interpreter's site-packages through a ``.pth`` path line instead of installing them again. Python
does not read the ``.pth`` files of a folder added that way, so the checkout's editable install
stays inactive there (asserted)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from cdclake.demo import WORKLOAD
from cdclake.formats import format_ids
from cdclake.paths import BUNDLED_FOLDERS
from tests.formats.fixture_cases import FIXTURES, FixtureCase, all_cases

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# checkout folder -> the package it is in the wheel
PACKAGE_FOLDERS = {"include/cdclake": "cdclake", "spark_jobs": "spark_jobs",
                   "plugins/cdclake_airflow": "cdclake_airflow"}
# Not copied for the build: the environment, jars, state and build output of the checkout.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", ".jars", ".cdclake", "build", "dist", "*.egg-info",
                                     "__pycache__", ".*_cache", "target", "out", "node_modules")
# The dependencies' commands the product runs: Airflow (`cdclake run`, the demo) and spark-submit
# with the scripts it sources (`cdclake spark start`).
ENTRY_POINT_COMMANDS = ("airflow",)
SHELL_COMMANDS = ("spark-submit", "find-spark-home", "find_spark_home.py")
DEMO_TIMEOUT_S = 1500


@dataclass(frozen=True)
class Install:
    venv: Path
    site_packages: Path
    work: Path  # a folder outside the checkout, for the commands' cwd and state

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of an installed product: its venv's commands first and no checkout's."""
        checkout_bin = str(Path(sys.executable).parent)
        path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != checkout_bin]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("CDCLAKE_") and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
                                                             "SPARK_HOME")}
        return {**env, "PATH": os.pathsep.join([str(self.bin), *path]), "VIRTUAL_ENV": str(self.venv),
                "GX_ANALYTICS_ENABLED": "false", **extra}

    def run(self, *args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.bin / args[0]), *args[1:]], cwd=self.work, env=self.env(**extra),
                              capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the checkout (a build in place would leave build/ behind,
    whose stale files a later build packs), offline, with this environment's setuptools."""
    setuptools = importlib.metadata.version("setuptools")
    if tuple(int(part) for part in setuptools.split(".")[:2]) < (70, 1):
        pytest.fail(f"setuptools {setuptools} builds no wheel without the `wheel` package: the build "
                    "needs setuptools>=70.1 ([build-system] of pyproject.toml) in this environment")
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES, symlinks=True)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "--no-index", "-q", "-w", str(tmp / "dist"), str(source)],
                           capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    # setuptools ships the data files of listed packages only, and warns of any others it sees.
    assert "absent from the `packages` configuration" not in built.stderr, built.stderr
    (found,) = (tmp / "dist").glob("cdclake-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Install:
    tmp = tmp_path_factory.mktemp("installed")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # Installed before the dependencies are visible: pip then sees no other cdclake to replace.
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-index", str(wheel)], check=True)
    dependencies = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site / "cdclake-test-dependencies.pth").write_text("".join(f"{path}\n" for path in dependencies))
    for name in ENTRY_POINT_COMMANDS:
        (point,) = importlib.metadata.entry_points(group="console_scripts", name=name)
        module, attribute = point.value.split(":")
        script = venv / "bin" / name
        script.write_text(f"#!{python}\nimport sys\nfrom {module} import {attribute}\n"
                          f"sys.exit({attribute}())\n")
        script.chmod(0o755)
    for name in SHELL_COMMANDS:
        (venv / "bin" / name).symlink_to(Path(sys.executable).parent / name)
    work = tmp / "work"
    work.mkdir()
    return Install(venv, site, work)


def test_wheel_holds_every_package_and_run_time_file(wheel) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected: set[str] = set()
    for folder, package in PACKAGE_FOLDERS.items():
        for path in (ROOT / folder).rglob("*"):
            relative = path.relative_to(ROOT / folder)
            if path.is_file() and "__pycache__" not in relative.parts and not path.name.startswith("."):
                expected.add(f"{package}/{relative.as_posix()}")
    packages = {name.rsplit("/", 1)[0] for name in expected if name.endswith("/__init__.py")}
    assert {"cdclake/formats/debezium", "spark_jobs/compaction", "cdclake_airflow"} <= packages
    assert {"spark_jobs/fast_path.json", "cdclake_airflow/page.html"} <= expected
    for name, folder in BUNDLED_FOLDERS.items():
        if name == "demo":
            continue
        for path in (ROOT / folder).iterdir():
            if path.is_file() and not path.name.startswith("."):
                expected.add(f"cdclake/_bundled/{name}/{path.name}")
    scenarios = {s for _format, listed in WORKLOAD.values() for s in listed}
    for scenario in scenarios:
        for path in (FIXTURES / scenario).glob("*"):
            if path.name.startswith("input.") or path.name == "keys.jsonl":
                expected.add(f"cdclake/_bundled/demo/{scenario}/{path.name}")
    assert {f"cdclake/_bundled/{n}" for n in ("dags/cdclake_hourly.py", "expectations/current.json",
                                               "config/pipeline.yml", "plugins/cdclake_ui.py")} <= expected
    assert not expected - names, f"missing from {wheel.name}: {sorted(expected - names)}"
    assert not {n for n in names if n.startswith("cdclake/_bundled/demo/")} - expected


def test_installed_product_imports_from_its_own_site_packages(installed) -> None:
    probe = ("import json, cdclake, spark_jobs, cdclake_airflow, cdclake.formats.debezium, "
             "spark_jobs.compaction\nfrom cdclake import paths\n"
             "print(json.dumps({'modules': [m.__file__ for m in (cdclake, spark_jobs, cdclake_airflow, "
             "cdclake.formats.debezium, spark_jobs.compaction)], 'checkout': str(paths.CHECKOUT), "
             "'dags': str(paths.bundled_dir('dags')), 'config': str(paths.config_path())}))")
    run = installed.run("python", "-c", probe)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    for module in found["modules"]:
        assert Path(module).is_relative_to(installed.site_packages), module
    assert found["checkout"] == "None"
    assert Path(found["dags"]) == installed.site_packages / "cdclake" / "_bundled" / "dags"
    assert Path(found["config"]).is_file() and Path(found["config"]).is_relative_to(installed.site_packages)
    jars = installed.run("python", "-c", "from cdclake.paths import jars_dir; jars_dir()")
    assert jars.returncode != 0 and "set CDCLAKE_JARS" in jars.stderr, jars.stderr


def _decode_args(case: FixtureCase) -> list[str]:
    """``cdclake decode`` arguments for a fixture (its options that have a command-line flag)."""
    options = case.options()
    args = ["decode", "--format", case.format_id]
    flags = {"source_timezone": "--timezone", "schema_file": "--schema-file",
             "source_table": "--source-table", "binary_encoding": "--binary-encoding"}
    for key, flag in flags.items():
        if options.get(key):
            args += [flag, str(options[key])]
    if options.get("flattened"):
        args.append("--flattened")
    if case.keys_path:
        args += ["--key-file", str(case.keys_path)]
    if case.whole_file:
        args.append("--whole-file")
    return [*args, str(case.input_path)]


def test_installed_decode_prints_what_the_checkout_prints_for_every_format(installed) -> None:
    by_format: dict[str, list[FixtureCase]] = {}
    for case in all_cases():
        by_format.setdefault(case.format_id, []).append(case)
    assert set(by_format) == set(format_ids())
    for cases in by_format.values():
        # Each format's scenario with the most rows to print.
        case = max(cases, key=lambda c: ((c.folder / "expected.jsonl").stat().st_size, c.scenario))
        args = _decode_args(case)
        ours = subprocess.run([sys.executable, "-m", "cdclake.cli", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=120, check=False)
        theirs = installed.run("cdclake", *args)
        assert ours.stdout, (case.id, ours.stderr)
        assert (theirs.returncode, theirs.stdout, theirs.stderr) == (ours.returncode, ours.stdout,
                                                                     ours.stderr), case.id


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_installed_demo_runs_its_first_hour_and_publishes_current_tables(installed) -> None:
    home = installed.work / "demo"
    settings = {"CDCLAKE_HOME": str(installed.work / "state"), "CDCLAKE_JARS": str(ROOT / ".jars"),
                "CDCLAKE_KAFKA_PORT": str(_free_port()), "CDCLAKE_SPARK_PORT": str(_free_port())}
    began = time.monotonic()
    try:
        demo = installed.run("cdclake", "demo", "--hours", "1", "--home", str(home), timeout=DEMO_TIMEOUT_S,
                             **settings)
    finally:
        # The demo leaves its broker and Spark server running for the user: stopped by its state
        # folder's own PID files.
        for service in ("kafka", "spark"):
            installed.run("cdclake", service, "stop", **{**settings, "CDCLAKE_HOME": str(home)})
    print(f"\ninstalled demo, first hour: {time.monotonic() - began:.0f} s")
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "1 hour(s) ran" in demo.stdout
    tables = re.search(r"== current-state tables \((\d+)\)", demo.stdout)
    assert tables and int(tables.group(1)) > 0, demo.stdout
    rows = [int(n) for n in re.findall(r"^-- current\.\S+: (\d+) row\(s\)", demo.stdout, re.MULTILINE)]
    assert len(rows) == int(tables.group(1)) and sum(rows) > 0, demo.stdout
    # The hour ran the installed DAGs; of the checkout only the shared dependencies (.venv) show.
    (log,) = (home / "airflow" / "run-logs").glob("*.log")
    text = log.read_text(errors="replace")
    assert str(installed.site_packages / "cdclake" / "_bundled" / "dags") in text
    assert set(re.findall(re.escape(f"{ROOT}/") + r"([^/\s'\"]+)", text)) <= {".venv", ".jars"}
