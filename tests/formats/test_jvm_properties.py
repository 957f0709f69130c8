"""The JVM fast path equals the Python decoders on generated messages, or declines them.

Hypothesis makes messages for each format with a fast path from that format's fixtures that the
jar decodes (the shapes real producers send): as they are, with edge values in their leaves
(int64 bounds, 700-digit decimals, lone surrogates, times with zones and fractions, nulls, base64
text), with a key removed from an object (partial images), and malformed (cut short, a field of
another JSON kind, bytes that are not UTF-8). Each message goes through the jar's decoders (one
JVM for the module, ``cdclake.jvm.DecodeMain`` over a pipe, no Spark) and the Python decoder.
Whenever the jar gives rows, the Python decoder gives the same rows, whole, and no warning (a
warning the jar cannot carry); an exception in the jar fails the test. Messages it declines are
the Python decoder's alone. The number that took each path is printed after each format.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from cdclake.decode_cli import read_keys, read_messages
from cdclake.formats import get_decoder
from cdclake.formats.base import PAIR_KEY, PAIR_ROLE, FormatOptions
from cdclake.formats.canonical import RawMessage
from cdclake.formats.decoding import decode_one
from cdclake.paths import jars_dir
from spark_jobs.jvm_decode import FAST_FORMATS, ROW_SCHEMA
from tests.formats.fixture_cases import all_cases

EXAMPLES = 2000
ZONES = ("UTC", "Asia/Shanghai", "America/New_York", "Asia/Kolkata")
# The row struct's field names, in order (a comma inside map<string,string> starts none).
FIELDS = re.findall(r"(?:^|,\s*)(\w+)\s", ROW_SCHEMA)


class JarDecoders:
    """The jar's ``DecodeMain``: one message a line in, its outcome a line out."""

    def __init__(self) -> None:
        import pyspark

        jar = jars_dir() / "spark" / "cdclake-jvm.jar"
        assert jar.exists(), f"{jar} is missing: run scripts/setup.sh"
        spark_jars = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
        self.process = subprocess.Popen(
            ["java", "-Xss4m", "-cp", f"{jar}{os.pathsep}{spark_jars}", "cdclake.jvm.DecodeMain"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def decode(self, format_id: str, zone: str, value: bytes, key: bytes | None) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        def b64(data: bytes | None) -> str:
            return "-" if data is None else base64.b64encode(data).decode("ascii")

        self.process.stdin.write(f"{format_id}\t{zone}\t{b64(value)}\t{b64(key)}\n".encode("ascii"))
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the jar's DecodeMain ended"
        return dict(json.loads(line))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(30)


@pytest.fixture(scope="module")
def jar() -> Iterator[JarDecoders]:
    decoders = JarDecoders()
    yield decoders
    decoders.close()


def _seeds(format_id: str, jar: JarDecoders) -> list[tuple[bytes, bytes | None]]:
    """The format's fixture messages of the shapes the fast path takes: those it decodes as sent
    (of the fixtures without per-topic options, which keep a topic on the Python path)."""
    seeds = []
    for case in all_cases():
        if case.format_id != format_id or set(case.options()) - {"source_timezone"}:
            continue
        keys = read_keys(case.keys_path) if case.keys_path else None
        for _line, message in read_messages(case.input_path, False, keys, case.whole_file):
            if message.value and jar.decode(format_id, "UTC", message.value, message.key)["path"] == "fast":
                seeds.append((message.value, message.key))
    return seeds


# -- edge values and mutations ------------------------------------------------------------------

_RAW = "@@cdclake-raw-number-{}@@"
_NUMBERS = ("9" * 700 + ".5", "-0." + "0" * 400 + "1", "1E+400", "1e-400", "12345678901234567890123",
            "-9223372036854775809", "18446744073709551616", "0.1000", "-0", "1.0", "5e-324")
_TEXTS = ("", "null", "NULL", " 1", "1 ", "2024-02-29 23:59:59.999999", "2024-01-01T00:00:00+08:00",
          "2024-03-10 02:30:00", "0000-00-00 00:00:00", "9999-12-31 23:59:59.9999999", "1970-01-01",
          "12:34:56.789", "24:00:00", "aGVsbG8gd29ybGQ=", "not base64!", "\x00", "\ud800", "\udfff\ud800",
          "\U0001d11e", "é", "\u2028", "true", "1.5", "NaN", "-Infinity", "0x1F", "{}", "[1]")


class RawNumber(str):
    """A JSON number written digit for digit (see :func:`_serialised`)."""


def _edge_values() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from([2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**64, 0, 1, -1, 2**31, 10**18]),
        st.integers(),
        st.sampled_from(_NUMBERS).map(RawNumber),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(_TEXTS),
        st.text(st.characters(codec=None, exclude_categories=()), max_size=12),
        st.none(), st.booleans(),
        st.lists(st.integers(), max_size=3),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    )


def _paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for name, child in node.items():
            yield from _paths(child, (*path, name))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _paths(child, (*path, index))


def _replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(document, dict):
        return {k: _replaced(v, rest, value) if k == head else v for k, v in document.items()}
    return [_replaced(v, rest, value) if i == head else v for i, v in enumerate(document)]


def _without(document: Any, path: tuple[Any, ...]) -> Any:
    """``document`` without the object member at ``path``."""
    if len(path) == 1:
        return {k: v for k, v in document.items() if k != path[0]}
    head, rest = path[0], path[1:]
    if isinstance(document, dict):
        return {k: _without(v, rest) if k == head else v for k, v in document.items()}
    return [_without(v, rest) if i == head else v for i, v in enumerate(document)]


def _serialised(document: Any, ascii_only: bool) -> bytes:
    numbers: list[str] = []

    def default(node: Any) -> Any:
        raise TypeError(type(node))

    def marked(node: Any) -> Any:
        if isinstance(node, RawNumber):
            numbers.append(str(node))
            return _RAW.format(len(numbers) - 1)
        if isinstance(node, dict):
            return {k: marked(v) for k, v in node.items()}
        if isinstance(node, list):
            return [marked(v) for v in node]
        return node

    text = json.dumps(marked(document), ensure_ascii=ascii_only, separators=(",", ":"), default=default)
    for index, number in enumerate(numbers):
        text = text.replace(json.dumps(_RAW.format(index)), number)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def _messages(draw: st.DrawFn, seeds: list[tuple[bytes, bytes | None]]) -> tuple[bytes, bytes | None, str]:
    value, key = draw(st.sampled_from(seeds))
    zone = draw(st.sampled_from(ZONES))
    mutation = draw(st.sampled_from(["as sent", "edge", "edge", "edge", "partial", "malformed"]))
    try:
        document = json.loads(value)
    except ValueError:
        document = None
    if mutation == "as sent":
        return value, key, zone
    if document is None or mutation == "malformed":
        how = draw(st.sampled_from(["cut", "kind", "bytes"]) if document is not None else st.just("cut"))
        if how == "cut":
            return value[:draw(st.integers(0, max(len(value) - 1, 0)))], key, zone
        if how == "bytes":
            at = draw(st.integers(0, len(value)))
            stray = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"]))
            return value[:at] + stray + value[at:], key, zone
        path = draw(st.sampled_from([p for p, _ in _paths(document)]))
        other: Any = draw(st.sampled_from([[], {}, "x", 1, None, True]))
        return _serialised(_replaced(document, path, other), True), key, zone
    if mutation == "partial":
        members = [p for p, _node in _paths(document) if p and isinstance(_parent(document, p), dict)]
        if members:
            document = _without(document, draw(st.sampled_from(members)))
        return _serialised(document, draw(st.booleans())), key, zone
    leaves = [p for p, node in _paths(document) if p and not isinstance(node, (dict, list))]
    for _ in range(draw(st.integers(1, 3)) if leaves else 0):
        document = _replaced(document, draw(st.sampled_from(leaves)), draw(_edge_values()))
    return _serialised(document, draw(st.booleans())), key, zone


def _parent(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        document = document[step]
    return document


# -- the property -------------------------------------------------------------------------------

def _python_rows(format_id: str, zone: str, value: bytes, key: bytes | None) -> list[dict[str, Any]] | None:
    """The Python decoder's rows as the jar's fields name them; None when it rejects the message
    or reads a control message."""
    decoder = get_decoder(format_id, FormatOptions(source_timezone=zone))
    outcome = decode_one(decoder, RawMessage(value=value, key=key, topic="t", offset=1,
                                             timestamp_ms=1_717_243_500_123))
    if outcome.rejected is not None or outcome.control is not None:
        return None
    named = {"pair_key": PAIR_KEY, "pair_role": PAIR_ROLE}
    return [{**{name: row.get(named.get(name, name)) for name in FIELDS}, "warnings": row.get("warnings")}
            for row in outcome.rows]


@pytest.mark.parametrize("format_id", sorted(FAST_FORMATS))
def test_the_jar_gives_the_python_rows_or_declines(format_id: str, jar: JarDecoders,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    seeds = _seeds(format_id, jar)
    assert seeds, f"no fixture message of {format_id} takes the fast path"
    paths: Counter[str] = Counter()

    # A fixed seed: the same messages wherever the repository is cloned (derandomize alone
    # derives its seed from the test's location).
    @seed(EXAMPLES)
    @settings(max_examples=EXAMPLES, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_messages(seeds))
    def check(message: tuple[bytes, bytes | None, str]) -> None:
        value, key, zone = message
        outcome = jar.decode(format_id, zone, value, key)
        assert outcome["path"] != "failed", (value, outcome)
        if outcome["path"] == "declined":
            paths["declined"] += 1
            return
        paths["fast"] += 1
        python = _python_rows(format_id, zone, value, key)
        assert python is not None, (value, "the jar decoded a message the Python decoder rejects")
        assert [row.pop("warnings") for row in python] == [[]] * len(python), value
        assert outcome["rows"] == python, value

    check()
    with capsys.disabled():
        print(f" [{format_id}: {sum(paths.values())} messages, {paths['fast']} fast, "
              f"{paths['declined']} declined]", end="")
    assert sum(paths.values()) >= EXAMPLES
    assert paths["fast"] > 0
