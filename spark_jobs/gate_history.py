"""Expire old Great Expectations validation results and their Data Docs pages.

Every gate stores one GX validation result per batch (``<state>/gx/uncommitted/validations``) and
renders one Data Docs page for it (``<state>/gx/uncommitted/data_docs/local_site/validations``):
a few dozen files an hour, forever, unless something deletes them. Both trees are laid out
``<suite path>/<run name>/<run time>/<batch>.{json,html}``, the run time being when the gate ran
(``20240302T050012.123456Z``). :func:`expire_gate_results` deletes the run-time folders older than
a cut-off in both trees (and the folders left empty), then rebuilds the Data Docs index so it links
no deleted page. The durable record of the gates is ``ops.gate_results`` (the latest run of each
stage and hour); this only bounds the GX folder. Run daily by the maintenance DAG (step
``expire_gate_results``).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import shutil
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)

RESULTS_DIR = Path("uncommitted") / "validations"
SITE_VALIDATIONS_DIR = Path("uncommitted") / "data_docs" / "local_site" / "validations"
_RUN_TIME = re.compile(r"^\d{8}T\d{6}\.\d{6}Z$")


def import_gx() -> ModuleType:
    """``great_expectations``, imported with its usage analytics off and its logger at WARNING
    (imported after Airflow, GX logs every store and checkpoint at INFO)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    import great_expectations

    return great_expectations


def run_time_folders(tree: Path) -> list[tuple[dt.datetime, Path]]:
    """(run time as naive UTC, folder) of every run-time folder under ``tree``, oldest first."""
    if not tree.is_dir():
        return []
    found = [(dt.datetime.strptime(folder.name, "%Y%m%dT%H%M%S.%fZ"), folder)
             for folder in tree.rglob("*") if folder.is_dir() and _RUN_TIME.match(folder.name)]
    return sorted(found)


def expire_gate_results(gx_root: Path, older_than: dt.datetime) -> dict[str, int]:
    """Delete validation results and pages of gates run before ``older_than`` (naive UTC) under the
    GX project ``gx_root``; rebuild the Data Docs index when anything was deleted."""
    expired = {"expired_results": 0, "expired_pages": 0}
    for tree, metric, suffix in ((gx_root / RESULTS_DIR, "expired_results", ".json"),
                                 (gx_root / SITE_VALIDATIONS_DIR, "expired_pages", ".html")):
        for run_time, folder in run_time_folders(tree):
            if run_time >= older_than:
                break
            expired[metric] += sum(1 for _ in folder.rglob(f"*{suffix}"))
            shutil.rmtree(folder)
            _remove_empty_parents(folder.parent, tree)
    kept = sum(1 for _ in (gx_root / RESULTS_DIR).rglob("*.json")) if (gx_root / RESULTS_DIR).is_dir() else 0
    if expired["expired_results"] or expired["expired_pages"]:
        rebuild_docs_index(gx_root.parent)
    return {**expired, "kept_results": kept}


def _remove_empty_parents(folder: Path, root: Path) -> None:
    while folder != root and folder.is_relative_to(root) and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def rebuild_docs_index(project_root: Path) -> None:
    """Rebuild the Data Docs index of the GX project under ``project_root`` (re-rendering only the
    newest result's page: rendering every page would read every stored result)."""
    context = import_gx().get_context(mode="file", project_root_dir=str(project_root))
    keys = context.validation_results_store.list_keys()
    newest = max(keys, key=lambda k: k.run_id.run_time) if keys else None
    # No result left: render everything there is (the suites), which also writes an empty index.
    context.build_data_docs(resource_identifiers=[newest] if newest else None)
    log.info("Data Docs index rebuilt: %d validation result(s) kept", len(keys))
