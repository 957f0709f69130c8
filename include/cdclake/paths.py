"""Where things live: the project root, the state folder, the jars, the configuration file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def state_home() -> Path:
    """The state folder (broker data, catalog, warehouse, logs): ``$CDCLAKE_HOME`` or ``.cdclake/``.

    Private to its owner (0700), so the catalog, the data and the secrets files inside are out of
    other local users' reach whatever their own modes; an existing folder is tightened.
    """
    home = Path(os.environ.get("CDCLAKE_HOME") or PROJECT_ROOT / ".cdclake").resolve()
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
    """Jars resolved by Maven at set-up (``scripts/setup.sh``); ``$CDCLAKE_JARS`` moves them."""
    return Path(os.environ.get("CDCLAKE_JARS") or PROJECT_ROOT / ".jars").resolve()


def config_path() -> Path:
    """The pipeline configuration: ``$CDCLAKE_CONFIG`` or ``include/config/pipeline.yml``."""
    return Path(os.environ.get("CDCLAKE_CONFIG") or PROJECT_ROOT / "include" / "config" / "pipeline.yml")
