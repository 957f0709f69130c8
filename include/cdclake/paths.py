"""Where things live: the project root, the state folder, the jars, the configuration file."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def state_home() -> Path:
    """The state folder (broker data, catalog, warehouse, logs): ``$CDCLAKE_HOME`` or ``.cdclake/``."""
    home = Path(os.environ.get("CDCLAKE_HOME") or PROJECT_ROOT / ".cdclake").resolve()
    home.mkdir(parents=True, exist_ok=True)
    return home


def jars_dir() -> Path:
    """Jars resolved by Maven at set-up (``scripts/setup.sh``); ``$CDCLAKE_JARS`` moves them."""
    return Path(os.environ.get("CDCLAKE_JARS") or PROJECT_ROOT / ".jars").resolve()


def config_path() -> Path:
    """The pipeline configuration: ``$CDCLAKE_CONFIG`` or ``include/config/pipeline.yml``."""
    return Path(os.environ.get("CDCLAKE_CONFIG") or PROJECT_ROOT / "include" / "config" / "pipeline.yml")
