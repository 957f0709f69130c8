"""Malformed vendor messages are rejected with a named error, never through a decoder crash.

``decode_one`` turns any exception a decoder raises other than ``DecodeError`` into a
``DECODER_ERROR`` rejection whose detail reads ``<format>: unexpected <exception>: ...``: a
message that names no field, and a failed changelog gate. The sweep below mutates the fixture
messages one field at a time (a wrong JSON kind, text where a number belongs, a deleted field,
...) and requires every rejection to be a decoder's own: its detail starts with the format id
and is not the crash fallback, and its reason is a known code. It is bounded and deterministic: the first
``SWEEP_LINES`` messages of every JSON fixture, at most ``MAX_PATHS`` field paths of each
(spread over the whole message), and ``VALUES_PER_PATH`` replacements a path, taken in turn
from ``REPLACEMENTS``.

The explicit tests after it show the messages a user sees for the faults the sweep first found.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from cdclake.formats import errors, get_decoder
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import RawMessage
from cdclake.formats.decoding import Outcome, decode_one
from tests.formats.fixture_cases import FIXTURES, FixtureCase, all_cases

SWEEP_LINES = 2
MAX_PATHS = 40
VALUES_PER_PATH = 4
LIST_ITEMS = 2  # elements of an array whose paths are mutated
_DELETE = object()  # the field is removed
REPLACEMENTS: tuple[Any, ...] = (
    None, "x", [], True, {}, _DELETE, "9" * 400, 7, [[1]], "NaN", "", {"a": {"b": []}},
)
# decode_one's detail for a decoder crash: "<format>: unexpected <exception>: ..." (a decoder's own
# message may use the word later on: "'after' is not an (extended) JSON document: unexpected '"'").
CRASH_MARK = ": unexpected "

Path = tuple[str | int, ...]


def _json_cases() -> list[FixtureCase]:
    return [case for case in all_cases() if case.input_path.suffix in (".jsonl", ".raw")]


def _messages(case: FixtureCase) -> Iterator[tuple[int, Any, bytes | None]]:
    """(line, parsed message, Kafka key) of the case's first JSON messages."""
    text = case.input_path.read_text(encoding="utf-8")
    lines = [text] if case.whole_file else [line for line in text.splitlines() if line.strip()]
    keys = []
    if case.keys_path is not None:
        keys = [line for line in case.keys_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for index, line in enumerate(lines[:SWEEP_LINES]):
        try:
            document = json.loads(line)
        except ValueError:
            continue  # a fixture of bad JSON: nothing to mutate
        key = keys[index] if index < len(keys) else "null"
        yield index + 1, document, None if key.strip() == "null" else key.encode("utf-8")


def _paths(value: Any, prefix: Path = ()) -> Iterator[Path]:
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for name, child in value.items():
            yield from _paths(child, (*prefix, name))
    elif isinstance(value, list):
        for index, child in enumerate(value[:LIST_ITEMS]):
            yield from _paths(child, (*prefix, index))


def _spread(paths: list[Path]) -> list[Path]:
    """At most MAX_PATHS of ``paths``, evenly spread (envelope, schema and row fields alike)."""
    if len(paths) <= MAX_PATHS:
        return paths
    step = len(paths) / MAX_PATHS
    return [paths[int(index * step)] for index in range(MAX_PATHS)]


def _mutated(document: Any, path: Path, value: Any) -> bytes:
    copy = json.loads(json.dumps(document))
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    if value is _DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return json.dumps(copy).encode("utf-8")


def _options(case: FixtureCase) -> FormatOptions:
    options: dict[str, Any] = {name: tuple(value) if isinstance(value, list) else value
                               for name, value in case.options().items()}
    return FormatOptions(**options)


def _decode(format_id: str, options: FormatOptions, value: bytes, key: bytes | None = None) -> Outcome:
    message = RawMessage(value=value, key=key, topic="t", partition=0, offset=0,
                         timestamp_ms=1_700_000_000_000)
    return decode_one(get_decoder(format_id, options), message)


def _faults(case: FixtureCase) -> Iterator[str]:
    """Every sweep rejection of ``case`` that is a crash, names no format or has an unknown code."""
    decoder = get_decoder(case.format_id, _options(case))
    turn = 0
    for line, document, key in _messages(case):
        for path in _spread(list(_paths(document))):
            for _ in range(VALUES_PER_PATH):
                value = REPLACEMENTS[turn % len(REPLACEMENTS)]
                turn += 1
                try:
                    raw = _mutated(document, path, value)
                except (KeyError, IndexError, TypeError):
                    continue
                message = RawMessage(value=raw, key=key, topic="t", partition=0, offset=0,
                                     timestamp_ms=1_700_000_000_000)
                rejected = decode_one(decoder, message).rejected
                if rejected is None:
                    continue
                label = "<deleted>" if value is _DELETE else repr(value)[:30]
                where = f"{case.id} line {line} {list(path)} = {label}"
                if rejected.detail.startswith(f"{rejected.format_id}{CRASH_MARK}"):
                    yield f"{where}: crash fallback: {rejected.detail[:200]}"
                elif not rejected.detail.startswith(f"{rejected.format_id}: "):
                    yield f"{where}: detail does not start with the format id: {rejected.detail[:200]}"
                elif rejected.reason not in errors.REASON_CODES:
                    yield f"{where}: unknown reason {rejected.reason!r}"


_FORMATS = sorted({case.format_id for case in _json_cases()})


@pytest.mark.parametrize("format_id", _FORMATS)
def test_mutated_fixture_messages_are_rejected_by_name(format_id: str) -> None:
    faults = [fault for case in _json_cases() if case.format_id == format_id
              for fault in _faults(case)]
    assert not faults, f"{len(faults)} rejection(s) not named by the decoder:\n" + "\n".join(faults[:15])


# ---------------------------------------------------------------- the messages a user sees

def _fixture_message(case_id: str, line: int = 1) -> tuple[FixtureCase, Any]:
    format_id, scenario = case_id.split("/")
    case = FixtureCase(format_id, scenario, FIXTURES / format_id / scenario)
    for number, document, _ in _messages(case):
        if number == line:
            return case, document
    raise AssertionError(f"{case_id} has no JSON message on line {line}")


def _outcome(case_id: str, path: Path, value: Any, line: int = 1) -> Outcome:
    case, document = _fixture_message(case_id, line)
    return _decode(case.format_id, _options(case), _mutated(document, path, value))


@pytest.mark.parametrize(("case_id", "line", "path", "value", "detail"), [
    ("debezium_json/altinity_kafka_without_schema_registry", 1, ("schema", "fields"), True,
     "debezium_json: 'schema.fields' must be an array, got a boolean"),
    ("debezium_json/debezium_docs_type_mappings", 1, ("schema", "fields", 1, "fields", 1, "name"), True,
     "debezium_json: 'schema.fields[1].fields[1].name' must be a string, got a boolean"),
    ("debezium_json/debezium_docs_oracle", 1,
     ("payload", "tableChanges", 0, "table", "columns", 0, "length"), "x",
     "debezium_json: 'tableChanges[0].table.columns[0].length' must be an integer, got a string 'x'"),
    ("ogg_json/kafka_connect_handler_envelope", 1, ("schema", "fields"), True,
     "ogg_json: 'schema.fields' must be an array, got a boolean"),
    ("debezium_json/mysql_schema_include", 1, ("schema", "fields", 1, "fields", 2, "parameters", "scale"),
     None, "debezium_json: 'schema.fields[1].fields[2].parameters.scale' must be an integer, got null"),
    ("debezium_json/debezium_docs_db2", 1,
     ("payload", "tableChanges", 0, "table", "primaryKeyColumnNames"), True,
     "debezium_json: 'tableChanges[0].table.primaryKeyColumnNames' must be an array, got a boolean"),
])
def test_malformed_field_is_named(case_id: str, line: int, path: Path, value: Any, detail: str) -> None:
    outcome = _outcome(case_id, path, value, line)
    assert outcome.rejected is not None
    assert (outcome.rejected.reason, outcome.rejected.detail) == (errors.INVALID_FIELD, detail)


@pytest.mark.parametrize(("case_id", "line", "path", "value", "column", "kept", "warning"), [
    # A column value its declared type cannot read keeps its text, and the row says why (as every
    # format does for, e.g., MySQL's 0000-00-00 dates). An array element spoils the whole array.
    ("debezium_json/debezium_docs_type_mappings", 1, ("payload", "after", "prices", 0), [],
     "prices", '[[],"/2o="]', "column 'prices': not a decimal: '[]'; original text kept"),
    ("drs_json_generic/date_values_kept_whole", 1, ("data", 0, "ID"), "x",
     "ID", "x", "column 'ID': not a decimal: 'x'; original text kept"),
    ("oms_dataworks/manual_examples_corrected", 1, ("payload", "after", "data", "decimal"), "x",
     "decimal", "x", "column 'decimal': not a decimal: 'x'; original text kept"),
    ("ogg_json/kafka_connect_handler_envelope", 2, ("payload", "after", "AMOUNT"), [],
     "AMOUNT", "[]", "column 'AMOUNT': not a decimal: '[]'; original text kept"),
    # 5000 digits: more than int() reads; as days since the epoch, far beyond year 9999.
    ("debezium_json/altinity_kafka_without_schema_registry", 1, ("payload", "after", "hire_date"),
     "9" * 5000, "hire_date", "9" * 5000,
     "column 'hire_date': days since the epoch out of range: '" + "9" * 39 + "... (5002 characters); "
     "original text kept"),
])
def test_unreadable_column_value_is_kept_with_a_warning(case_id: str, line: int, path: Path, value: Any,
                                                        column: str, kept: str, warning: str) -> None:
    outcome = _outcome(case_id, path, value, line)
    assert outcome.rejected is None, outcome.rejected
    (row,) = outcome.rows
    assert row["after"][column] == kept
    assert warning in row["warnings"]
