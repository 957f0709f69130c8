"""What the wheel holds (its metadata and the build requirements are in pyproject.toml).

The code packages are found under their three roots. The folders the product reads at run time
from outside them (``cdclake.paths.BUNDLED_FOLDERS``: Airflow's DAGs and plugin, the GX suites, the
default configuration, the demo's messages) travel as package data in ``cdclake/_bundled/<name>``.
pyproject.toml cannot both find packages and map further ones to folders, hence this file.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from setuptools import find_namespace_packages, setup

HERE = Path(__file__).resolve().parent
# Folder -> the top-level package found in it; subpackages follow their parent's folder.
ROOTS = {"include": "cdclake", ".": "spark_jobs", "plugins": "cdclake_airflow"}
PACKAGE_DATA = {
    "cdclake.formats": ["avro/*.avsc", "avro/README.md"],
    "spark_jobs": ["fast_path.json"],
    "cdclake_airflow": ["page.html"],
}
# Per bundled folder, its data files (its *.py files go as modules); of the demo's folder
# (tests/fixtures), the input files of the scenarios cdclake.demo replays.
BUNDLED_DATA = {"expectations": ["*.json"], "config": ["*.yml"]}
DEMO_INPUTS = ("input.jsonl", "input.raw", "input.bin", "input.b64l", "keys.jsonl")


def module_literal(module: str, name: str) -> Any:
    """A module-level constant of the project, read without importing it (a build has none of the
    project's dependencies)."""
    for node in ast.parse((HERE / module).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == name:
            return ast.literal_eval(value)
    raise LookupError(f"{module} assigns no literal {name}")


def packages() -> tuple[list[str], dict[str, str], dict[str, list[str]]]:
    """(packages, package_dir, package_data) of the wheel. Folders of data files are namespace
    packages too: setuptools ships only the data of listed packages."""
    found: list[str] = []
    folders: dict[str, str] = {}
    for root, top in ROOTS.items():
        found += find_namespace_packages(str(HERE / root), include=[top, f"{top}.*"],
                                         exclude=["*.__pycache__"])
        folders[top] = (Path(root) / top).as_posix()
    data = dict(PACKAGE_DATA)
    for name, folder in module_literal("include/cdclake/paths.py", "BUNDLED_FOLDERS").items():
        package = f"cdclake._bundled.{name}"
        found.append(package)
        folders[package] = folder
        data[package] = BUNDLED_DATA.get(name, [])
    workload = module_literal("include/cdclake/demo.py", "WORKLOAD")
    for scenario in sorted({s for _format, names in workload.values() for s in names}):
        fmt, name = scenario.split("/")
        package = f"cdclake._bundled.demo.{fmt}.{name}"
        found += [f"cdclake._bundled.demo.{fmt}", package]
        data[package] = list(DEMO_INPUTS)
    return sorted(set(found)), folders, data


found, folders, data = packages()
setup(packages=found, package_dir=folders, package_data=data)
