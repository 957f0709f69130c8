"""Imports go one way: ``spark_jobs`` depends on ``cdclake``, never ``cdclake`` on ``spark_jobs``
(so the pure-Python package runs, and type-checks, without Spark)."""

from __future__ import annotations

import ast
from pathlib import Path

CDCLAKE = Path(__file__).resolve().parents[2] / "include" / "cdclake"
FORBIDDEN = "spark_jobs"


def _imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [node.module] if node.level == 0 and node.module else []  # relative: inside cdclake


def test_cdclake_never_imports_spark_jobs() -> None:
    files = sorted(CDCLAKE.rglob("*.py"))
    assert files, f"no Python files under {CDCLAKE}"
    offending = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):  # every level: module, function and TYPE_CHECKING blocks
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for module in _imported_modules(node):
                if module == FORBIDDEN or module.startswith(FORBIDDEN + "."):
                    offending.append(f"{path.relative_to(CDCLAKE.parents[1])}:{node.lineno}: {module}")
    assert not offending, "cdclake imports spark_jobs:\n" + "\n".join(offending)
