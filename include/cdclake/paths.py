"""Where things live: the checkout (if any), the state folder, the jars, the configuration file and
the files read at run time from outside the Python packages."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cdclake.exceptions import SetupError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Run from a checkout (editable install or PYTHONPATH), the package sits in include/cdclake beside
# pyproject.toml; an installed wheel has no checkout (PROJECT_ROOT is then the folder above
# site-packages, which holds nothing of cdclake).
CHECKOUT: Path | None = (PROJECT_ROOT if Path(__file__).resolve().parents[1].name == "include"
                         and (PROJECT_ROOT / "pyproject.toml").is_file() else None)

# Folders the product reads at run time from outside its packages: a wheel carries each as package
# data in cdclake/_bundled/<name> (setup.py maps the same folders); a checkout reads its own.
BUNDLED_FOLDERS = {
    "dags": "dags",                # Airflow's DAGs folder
    "plugins": "plugins",          # Airflow's plugins folder (the UI page's plugin module)
    "expectations": "expectations",  # the quality gates' GX suites
    "config": "include/config",    # the default pipeline.yml
    "demo": "tests/fixtures",      # the demo's messages (only the scenarios cdclake.demo replays)
}
BUNDLED = Path(__file__).resolve().parent / "_bundled"


def bundled_dir(name: str) -> Path:
    """The folder of ``name`` (a key of :data:`BUNDLED_FOLDERS`): a checkout's own, or the
    installed wheel's copy. A real folder either way: Airflow and the GX suites need paths."""
    return CHECKOUT / BUNDLED_FOLDERS[name] if CHECKOUT else BUNDLED / name


def import_paths() -> list[str]:
    """What a child process needs on PYTHONPATH to import cdclake, spark_jobs and cdclake_airflow
    as this process does: a checkout's root and include/ (beside an editable install, for runs
    without it); nothing for an installed wheel."""
    return [str(CHECKOUT), str(CHECKOUT / "include")] if CHECKOUT else []


def state_home() -> Path:
    """The state folder (broker data, catalog, warehouse, logs): ``$CDCLAKE_HOME``, else a
    checkout's ``.cdclake/`` or, installed, ``~/.cdclake``.

    Private to its owner (0700), so the catalog, the data and the secrets files inside are out of
    other local users' reach whatever their own modes; an existing folder is tightened.
    """
    default = (CHECKOUT or Path.home()) / ".cdclake"
    home = Path(os.environ.get("CDCLAKE_HOME") or default).resolve()
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    private_dir(home)
    return home


def private_dir(path: Path) -> None:
    """``path`` (a folder this user owns) made 0700; a shared sticky folder such as /tmp is left
    alone (it is a mistake as a state folder, not ours to lock)."""
    info = path.stat()
    if info.st_uid == os.getuid() and not info.st_mode & stat.S_ISVTX and info.st_mode & 0o077:
        path.chmod(0o700)


def write_private(path: Path, text: str) -> None:
    """Write a secrets file, readable by its owner only from the moment it exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    private_file(path)


def private_file(path: Path) -> None:
    """``path`` (a secrets file) made 0600 if it exists."""
    if path.exists() and path.stat().st_mode & 0o077:
        path.chmod(0o600)


def jars_dir() -> Path:
    """The Maven jars (Spark extras, Kafka broker, JVM fast path): ``$CDCLAKE_JARS``, else a
    checkout's ``.jars/`` (``scripts/setup.sh`` makes it). A wheel does not carry them (hundreds of
    MB): an installed cdclake needs ``$CDCLAKE_JARS``."""
    configured = os.environ.get("CDCLAKE_JARS")
    if not configured and not CHECKOUT:
        raise SetupError("the jars (Spark extras, Kafka broker, JVM fast path) are not part of the "
                         "installed cdclake: set CDCLAKE_JARS to a jars folder, e.g. the .jars/ that "
                         "scripts/setup.sh makes in a checkout")
    folder = Path(configured or PROJECT_ROOT / ".jars").expanduser().resolve()
    if not folder.is_dir():
        raise SetupError(f"CDCLAKE_JARS={configured}: no such folder; point it at a jars folder (the .jars/ "
                         "that scripts/setup.sh makes in a checkout)" if configured else
                         f"no jars in {folder}: run scripts/setup.sh (or set CDCLAKE_JARS)")
    return folder


def config_path() -> Path:
    """The pipeline configuration: ``$CDCLAKE_CONFIG``, else the default ``pipeline.yml``
    (a checkout's ``include/config/``, or the installed wheel's copy)."""
    return Path(os.environ.get("CDCLAKE_CONFIG") or bundled_dir("config") / "pipeline.yml")
