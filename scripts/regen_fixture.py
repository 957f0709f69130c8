"""Rewrite a fixture's expected files from what the decoder prints now.

    .venv/bin/python scripts/regen_fixture.py debezium_json/flattened_topic_tombstones [...]

Run it after a deliberate decoder change or for a new fixture folder, then read the diff
(``git diff tests/fixtures``): only the fields the change meant to move may differ.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.formats.test_fixtures_cli import CASES, decode_case  # noqa: E402


def main(case_ids: list[str]) -> int:
    known = {case.id: case for case in CASES}
    missing = [c for c in case_ids if c not in known]
    if missing:
        print(f"unknown fixture(s): {missing}", file=sys.stderr)
        return 2
    for case_id in case_ids:
        case = known[case_id]
        rows, errors = decode_case(case, case.format_id)
        folder = case.input_path.parent
        (folder / "expected.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        errors_path = folder / "expected_errors.jsonl"
        if errors or errors_path.exists():
            errors_path.write_text("".join(json.dumps(e) + "\n" for e in errors), encoding="utf-8")
        print(f"{case_id}: {len(rows)} rows, {len(errors)} rejected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
