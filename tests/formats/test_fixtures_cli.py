"""Every fixture through the CLI path (``cdclake decode``): rows and rejections exactly as expected."""

from __future__ import annotations

import io
import json
import re

import pytest

from cdclake.decode_cli import is_binary_format, read_keys, read_messages
from cdclake.formats import format_ids, get_decoder, registry
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import row_to_json_dict
from cdclake.formats.decoding import decode_batch
from tests.formats.fixture_cases import FIXTURES, FixtureCase, all_cases

CASES = all_cases()


def decode_case(case: FixtureCase, format_id: str) -> tuple[list[dict], list[dict]]:
    """(rows as printed, [{"line", "reason"}]) for a fixture decoded with ``format_id``."""
    options = FormatOptions(**case.options())
    decoder = get_decoder(format_id, options)
    keys = read_keys(case.keys_path) if case.keys_path else None
    binary = is_binary_format(case.format_id)
    numbered = list(read_messages(case.input_path, binary, keys, case.whole_file))
    line_of = {m.offset: n for n, m in numbered}
    result = decode_batch(decoder, (m for _, m in numbered))
    rows = [json.loads(json.dumps(row_to_json_dict(r), ensure_ascii=False)) for r in result.rows]
    errors = [{"line": line_of[r.message.offset], "reason": r.reason} for r in result.rejected]
    return rows, errors


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fixture_decodes_to_expected_rows(case: FixtureCase) -> None:
    rows, errors = decode_case(case, case.format_id)
    assert errors == case.expected_errors()
    assert rows == case.expected_rows()


@pytest.mark.parametrize("case", [c for c in CASES if not is_binary_format(c.format_id)],
                         ids=[c.id for c in CASES if not is_binary_format(c.format_id)])
def test_auto_detection_gives_the_same_rows(case: FixtureCase) -> None:
    auto = case.auto()
    if "skip" in auto:
        pytest.skip(auto["skip"])
    expected_format = auto.get("format", case.format_id)
    rows, errors = decode_case(case, "auto")
    expected = [dict(r, source_format=expected_format) for r in case.expected_rows()]
    if getattr(registry()[case.format_id], "sequence_field", None):
        # auto never orders the Canal family by ``id`` (see CanalFamilyDecoder.detected)
        expected = [dict(r, source_sequence=None) for r in expected]
    assert rows == expected
    assert [e["line"] for e in errors] == [e["line"] for e in case.expected_errors()]


def test_every_format_has_fixtures_and_every_fixture_folder_a_format() -> None:
    folders = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert folders == set(format_ids())


def test_every_rejection_names_format_field_and_reason() -> None:
    for case in CASES:
        if not case.expected_errors():
            continue
        out, err = io.StringIO(), io.StringIO()
        from cdclake.decode_cli import run_decode

        code = run_decode([str(case.input_path)], case.format_id,
                          str(case.keys_path) if case.keys_path else None, None,
                          case.options().get("source_timezone", "UTC"), out, err,
                          whole_file=case.whole_file)
        assert code == 1, case.id
        for line in err.getvalue().splitlines():
            if re.match(r".+: \d+ control message\(s\), no change rows: [A-Z_]+ \d+", line):
                continue  # the file's control messages, counted
            assert re.match(r".+:\d+: [A-Z_]+: [a-z_]+: .+", line), (case.id, line)
            assert "Traceback" not in line


def test_control_messages_are_counted_on_stderr(tmp_path) -> None:  # noqa: ANN001
    from cdclake.decode_cli import run_decode

    path = tmp_path / "tx.jsonl"
    path.write_text('{"status": "BEGIN", "id": "571", "event_count": null}\n'
                    '{"op": "c", "after": {"id": 1}, "source": {"db": "d", "table": "t"}}\n'
                    '{"status": "END", "id": "571", "event_count": 1}\n')
    out, err = io.StringIO(), io.StringIO()
    assert run_decode([str(path)], "debezium_json", None, None, "UTC", out, err) == 0
    assert len(out.getvalue().splitlines()) == 1
    assert err.getvalue() == (f"{path}: 2 control message(s), no change rows: TRANSACTION_BEGIN 1, "
                              "TRANSACTION_END 1\n")
