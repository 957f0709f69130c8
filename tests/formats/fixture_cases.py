"""Fixture discovery shared by the CLI-path and Spark-path fixture tests.

Layout: ``tests/fixtures/<format_id>/<scenario>/`` with

- ``input.jsonl`` (JSON lines), ``input.raw`` (the whole file is one message, e.g. a manual's
  example kept verbatim), ``input.bin`` (one binary datum) or ``input.b64l`` (base64 datums, one a
  line); optional ``keys.jsonl`` (one Kafka key a message, ``null`` for none);
- ``expected.jsonl``: the canonical rows ``cdclake decode --format <format_id>`` prints;
- ``expected_errors.jsonl`` (optional): ``{"line": N, "reason": "CODE"}`` per rejected message,
  where N is the input line (1 for ``input.raw``/``input.bin``);
- ``options.json`` (optional): FormatOptions fields, e.g. ``{"source_timezone": "Asia/Shanghai"}``;
- ``auto.json`` (optional): ``{"format": "<id>"}`` the id ``auto`` must report, or
  ``{"skip": "reason"}`` where auto does not apply. Without it, auto must give the same rows as
  the folder's format (binary formats are never auto-detected).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_REPOSITORY = Path(__file__).resolve().parents[2]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INPUT_NAMES = ("input.jsonl", "input.raw", "input.bin", "input.b64l")


@dataclass(frozen=True)
class FixtureCase:
    format_id: str
    scenario: str
    folder: Path

    @property
    def id(self) -> str:
        return f"{self.format_id}/{self.scenario}"

    @property
    def input_path(self) -> Path:
        for name in INPUT_NAMES:
            if (self.folder / name).exists():
                return self.folder / name
        raise FileNotFoundError(f"{self.folder}: no input file ({', '.join(INPUT_NAMES)})")

    @property
    def whole_file(self) -> bool:
        return self.input_path.name in ("input.raw", "input.bin")

    @property
    def keys_path(self) -> Path | None:
        path = self.folder / "keys.jsonl"
        return path if path.exists() else None

    def options(self) -> dict[str, Any]:
        """The fixture's topic options; a relative ``schema_file`` is the repository's, made
        absolute (as the configuration makes it) for the Spark Connect server's workers."""
        path = self.folder / "options.json"
        options = json.loads(path.read_text()) if path.exists() else {}
        if options.get("schema_file"):
            options["schema_file"] = str(_REPOSITORY / options["schema_file"])
        return options

    def auto(self) -> dict[str, Any]:
        path = self.folder / "auto.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def expected_rows(self) -> list[dict[str, Any]]:
        return _jsonl(self.folder / "expected.jsonl")

    def expected_errors(self) -> list[dict[str, Any]]:
        return _jsonl(self.folder / "expected_errors.jsonl")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def all_cases() -> list[FixtureCase]:
    cases = []
    for format_dir in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        for scenario in sorted(p for p in format_dir.iterdir() if p.is_dir()):
            cases.append(FixtureCase(format_dir.name, scenario.name, scenario))
    return cases
