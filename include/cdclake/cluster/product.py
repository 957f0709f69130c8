"""The product as the cluster runs it: the wheel built from the checkout, installed into a venv of
the cluster's own. The executors' Python, the Connect server's and Airflow's are that venv's, so
no process of the cluster imports from the checkout.

The venv reaches the project's dependencies (pyspark, Airflow, pandas, ...) in this interpreter's
site-packages through a ``.pth`` path line rather than installing them again; Python reads no
``.pth`` file of a folder added that way, so the checkout's editable install stays out of it.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from cdclake.cluster.layout import Layout, checkout
from cdclake.exceptions import SetupError

# Not copied for the build: the checkout's environments, jars, state and build output.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv*", ".jars", ".cdclake", "build", "dist", "*.egg-info",
                                     "__pycache__", ".*_cache", "target", "out", "node_modules")
# PostgreSQL drivers (constraints.txt pins them): of pyiceberg's catalog and Airflow's metadata
# database, and Airflow's async one (asyncpg), with the modules they are imported as.
POSTGRES_DRIVERS = {"psycopg2-binary": "psycopg2", "asyncpg": "asyncpg"}
# Commands the product runs from its venv's bin/: Airflow's entry point, and pyspark's scripts.
ENTRY_POINTS = ("airflow",)
SHELL_COMMANDS = ("spark-submit", "spark-class", "find-spark-home", "find_spark_home.py")


def build_wheel(layout: Layout) -> Path:
    """The wheel of the checkout, built from a copy (a build in place leaves build/ behind)."""
    dist = layout.root / "dist"
    source = layout.root / "source"
    for folder in (dist, source):
        shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(checkout(), source, ignore=NOT_SOURCES, symlinks=True)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "--no-index", "-q", "-w", str(dist), str(source)],
                           capture_output=True, text=True, check=False)
    shutil.rmtree(source, ignore_errors=True)
    if built.returncode != 0:
        raise SetupError(f"building the wheel failed:\n{(built.stdout + built.stderr)[-2000:]}")
    (wheel,) = dist.glob("cdclake-*.whl")
    return wheel


def install(layout: Layout) -> Path:
    """A fresh venv with the wheel (replacing any earlier one); returns its site-packages."""
    wheel = build_wheel(layout)
    shutil.rmtree(layout.venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(layout.venv)], check=True)
    site = Path(subprocess.run([str(layout.python), "-c",
                                "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    _pip(layout, "--no-deps", "--no-index", str(wheel))
    # The dependencies become visible only now: pip saw no other cdclake to replace.
    dependencies = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site / "cdclake-dependencies.pth").write_text("".join(f"{path}\n" for path in dependencies))
    missing = [name for name, module in POSTGRES_DRIVERS.items()
               if subprocess.run([str(layout.python), "-c", f"import {module}"], capture_output=True,
                                 check=False).returncode != 0]
    if missing:
        _pip(layout, "--no-deps", "-c", str(checkout() / "constraints.txt"), *missing)
    _commands(layout)
    return site


def _pip(layout: Layout, *args: str) -> None:
    # Without PYTHONPATH: a checkout on it (its cdclake.egg-info) makes pip see cdclake installed.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(layout.python), "install", "-q",
                           *args], capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SetupError(f"pip install {' '.join(args)} failed:\n{done.stderr[-2000:]}")


def _commands(layout: Layout) -> None:
    """The venv's ``airflow`` (an entry point of a dependency, which pip did not install here) and
    pyspark's scripts."""
    python = layout.python
    bin_dir = layout.venv / "bin"
    for name in ENTRY_POINTS:
        (point,) = importlib.metadata.entry_points(group="console_scripts", name=name)
        module, attribute = point.value.split(":")
        script = bin_dir / name
        script.write_text(f"#!{python}\nimport sys\nfrom {module} import {attribute}\n"
                          f"sys.exit({attribute}())\n")
        script.chmod(0o755)
    for name in SHELL_COMMANDS:
        found = Path(sys.executable).parent / name
        if found.exists() and not (bin_dir / name).exists():
            (bin_dir / name).symlink_to(found)


def site_packages(layout: Layout) -> Path:
    return Path(subprocess.run([str(layout.python), "-c",
                                "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
