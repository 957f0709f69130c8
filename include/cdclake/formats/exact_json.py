"""JSON read exactly: every number kept as its source text (:class:`JsonNumber`, never through
float), and documents written back to back (batches, transaction mode) split apart. Writing
JSON back is ``values.dumps_compact`` (it applies the canonical text rules)."""

from __future__ import annotations

import json
from typing import Any


class JsonNumber(str):
    """A JSON number kept as its exact source text (never through float)."""


# One decoder for every call: ``json.loads`` with hooks builds a new JSONDecoder (and scanner)
# per call, which costs as much as parsing a small message.
_EXACT_DECODER = json.JSONDecoder(parse_int=JsonNumber, parse_float=JsonNumber,
                                  parse_constant=JsonNumber)


def loads_exact(text: str | bytes) -> Any:
    """``json.loads`` that keeps every number as its exact text (:class:`JsonNumber`)."""
    if not isinstance(text, str):
        return json.loads(text, parse_int=JsonNumber, parse_float=JsonNumber,
                          parse_constant=JsonNumber)
    if text.startswith("\ufeff"):  # what json.loads says (a BOM is not JSON)
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _EXACT_DECODER.decode(text)


class ConcatenatedJsonError(ValueError):
    """Document ``index`` (0-based) of back-to-back JSON documents is not a JSON object."""

    def __init__(self, index: int, detail: str) -> None:
        super().__init__(f"document {index}: {detail}")
        self.index = index
        self.detail = detail


def split_concatenated_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects written back to back in ``text`` (no separator, or whitespace between
    them), with exact numbers; :class:`ConcatenatedJsonError` names the first one that is not a
    JSON object (anything else between the documents included)."""
    documents: list[dict[str, Any]] = []
    position, end = 0, len(text)
    while True:
        while position < end and text[position] in " \t\r\n":
            position += 1
        if position == end:
            return documents
        try:
            document, position = _EXACT_DECODER.raw_decode(text, position)
        except ValueError as exc:
            raise ConcatenatedJsonError(len(documents), str(exc)) from None
        if not isinstance(document, dict):
            raise ConcatenatedJsonError(len(documents), "not a JSON object")
        documents.append(document)


def leading_object(value: bytes | None) -> dict[str, Any] | None:
    """The first JSON object of a value that holds more text after it (documents written back to
    back, the later ones valid or not), or None."""
    try:
        text = (value or b"").decode("utf-8")
    except UnicodeDecodeError:
        return None
    start = len(text) - len(text.lstrip(" \t\r\n"))
    try:
        document, end = _EXACT_DECODER.raw_decode(text, start)
    except ValueError:
        return None
    return document if isinstance(document, dict) and text[end:].strip() else None


def concatenated_objects(value: bytes | None) -> list[dict[str, Any]] | None:
    """The JSON objects of a value holding two or more of them written back to back, or None when
    the value is not such a sequence (not UTF-8, one document, or any document not an object).

    Who writes such values: TiCDC's Maxwell batches (``maxwell_json``) and GoldenGate's Kafka
    handler in transaction mode (``ogg_json``)."""
    try:
        documents = split_concatenated_objects((value or b"").decode("utf-8"))
    except (UnicodeDecodeError, ConcatenatedJsonError):
        return None
    return documents if len(documents) > 1 else None
