"""MongoDB shell-syntax documents (as Huawei DRS writes ``value``/``where``) -> canonical text.

A small recursive-descent parser for mongo shell syntax (extended-JSON wrappers accepted too) and the
canonical text of its values: ``field_text`` for a top-level field, ``to_ejson`` (relaxed Extended
JSON v2) for the rest. The syntax DRS writes and the canonical text of each BSON type are in the
vendor notes.

Vendor notes: docs/formats/_mongo_shell.md
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from cdclake.formats.exact_json import JsonNumber
from cdclake.formats.values import (
    ConversionWarning,
    decimal_text,
    dumps_compact,
    iso_utc_from_epoch_text,
    iso_utc_from_zoned_text,
)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class MongoShellSyntaxError(ValueError):
    """Text that is not a MongoDB shell-syntax document; the message gives the position."""

    def __init__(self, detail: str, position: int) -> None:
        self.position = position
        super().__init__(f"{detail} at position {position}")


# ---------------------------------------------------------------- BSON values without a JSON type

@dataclass(frozen=True)
class ObjectId:
    hex: str


@dataclass(frozen=True)
class MongoDate:
    iso: str | None  # ISO-8601 UTC, fraction kept; None outside years 1-9999
    millis: str | None = None  # epoch milliseconds, kept when there is no ISO form

    @property
    def shell_text(self) -> str:
        """How the Java driver's shell mode writes a date outside ISODate's range."""
        return f"new Date({self.millis})"


@dataclass(frozen=True)
class Int64:
    digits: str


@dataclass(frozen=True)
class Int32:
    digits: str


@dataclass(frozen=True)
class Decimal128:
    text: str  # plain decimal digits, or NaN / Infinity / -Infinity


@dataclass(frozen=True)
class Binary:
    subtype: int
    data: bytes


@dataclass(frozen=True)
class BsonTimestamp:
    seconds: int
    increment: int


@dataclass(frozen=True)
class Regex:
    pattern: str
    options: str


@dataclass(frozen=True)
class Special:
    """MinKey, MaxKey, undefined, and non-finite doubles (NaN, Infinity, -Infinity)."""

    name: str


MIN_KEY, MAX_KEY, UNDEFINED = Special("MinKey"), Special("MaxKey"), Special("undefined")


# ---------------------------------------------------------------- parser

_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_SPACE = re.compile(r"[ \t\r\n\ufeff]*")
# A run of string characters that are neither the closing quote nor a backslash.
_PLAIN_RUN = {'"': re.compile(r'[^"\\]+'), "'": re.compile(r"[^'\\]+")}
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t", "v": "\v", "0": "\0"}


class DocumentFieldError(ValueError):
    """A message field that should hold one document does not; the message names the field."""


def parse_document_field(text: str, name: str, notation: str) -> dict[str, Any]:
    """Field ``name``'s text as one document (``notation`` says what it should be written in)."""
    try:
        value = parse_document(text)
    except MongoShellSyntaxError as exc:
        raise DocumentFieldError(f"'{name}' is not {notation}: {exc}") from None
    except RecursionError:
        raise DocumentFieldError(f"'{name}' is nested too deeply to parse") from None
    if not isinstance(value, dict):
        raise DocumentFieldError(f"'{name}' must be a document, got {text[:40]!r}")
    return value


def parse_document(text: str) -> Any:
    """Parse one shell-syntax value (normally a document); raise :class:`MongoShellSyntaxError`."""
    parser = _Parser(text)
    try:
        value = parser.value()
    except IndexError:  # the lexer read past the end: the text stops inside a value
        raise MongoShellSyntaxError("unexpected end of text", len(text)) from None
    parser.skip_space()
    if parser.pos != len(text):
        raise MongoShellSyntaxError(f"unexpected {parser.peek_text()!r} after the document", parser.pos)
    return value


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    # -- lexical helpers
    def skip_space(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def peek_text(self) -> str:
        return self.text[self.pos:self.pos + 12] or "end of text"

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = self.peek_text() if self.pos < len(self.text) else "end of text"
            raise MongoShellSyntaxError(f"expected {char!r}, found {found!r}", self.pos)
        self.pos += 1

    def error(self, detail: str, position: int | None = None) -> MongoShellSyntaxError:
        return MongoShellSyntaxError(detail, self.pos if position is None else position)

    # -- grammar
    def value(self) -> Any:
        char = self.peek()
        if char == "{":
            return self.document()
        if char == "[":
            return self.array()
        if char in "\"'":
            return self.string()
        if char == "/":
            return self.regex()
        if char and (char.isdigit() or char in "+-."):
            if self.text.startswith(("-Infinity", "+Infinity"), self.pos):
                sign = self.text[self.pos]
                self.pos += len("-Infinity")
                return Special("-Infinity" if sign == "-" else "Infinity")
            return self.number()
        match = _IDENT.match(self.text, self.pos)
        if not match:
            raise self.error(f"expected a value, found {self.peek_text()!r}")
        return self.word(match)

    def document(self) -> dict[str, Any]:
        start = self.pos
        self.expect("{")
        out: dict[str, Any] = {}
        while True:
            if self.peek() == "}":
                self.pos += 1
                return _from_ejson(out)
            key = self.key()
            self.expect(":")
            out[key] = self.value()
            char = self.peek()
            if char == ",":
                self.pos += 1
            elif char != "}":
                if not char:
                    raise self.error(f"document opened at position {start} is not closed")
                raise self.error(f"expected ',' or '}}', found {self.peek_text()!r}")

    def key(self) -> str:
        char = self.peek()
        if char in "\"'":
            return self.string()
        match = _IDENT.match(self.text, self.pos) or re.compile(r"\d+").match(self.text, self.pos)
        if not match:
            raise self.error(f"expected a field name, found {self.peek_text()!r}")
        self.pos = match.end()
        return match.group()

    def array(self) -> list[Any]:
        start = self.pos
        self.expect("[")
        out: list[Any] = []
        while True:
            if self.peek() == "]":
                self.pos += 1
                return out
            out.append(self.value())
            char = self.peek()
            if char == ",":
                self.pos += 1
            elif char != "]":
                if not char:
                    raise self.error(f"array opened at position {start} is not closed")
                raise self.error(f"expected ',' or ']', found {self.peek_text()!r}")

    def string(self) -> str:
        quote = self.text[self.pos]
        start = self.pos
        self.pos += 1
        parts: list[str] = []
        text, n = self.text, len(self.text)
        plain = _PLAIN_RUN[quote]
        while True:
            run = plain.match(text, self.pos)
            if run is not None:  # a run of ordinary characters at once
                parts.append(run.group())
                self.pos = run.end()
            if self.pos >= n:
                raise self.error("string is not closed", start)
            char = text[self.pos]
            if char == quote:
                self.pos += 1
                return "".join(parts)
            if char == "\\":
                parts.append(self.escape())
                continue
            parts.append(char)
            self.pos += 1

    def escape(self) -> str:
        at = self.pos
        code = self.text[self.pos + 1:self.pos + 2]
        if code in _ESCAPES:
            self.pos += 2
            return _ESCAPES[code]
        if code in ("u", "x"):
            width = 4 if code == "u" else 2
            digits = self.text[self.pos + 2:self.pos + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise self.error(f"bad \\{code} escape", at)
            self.pos += 2 + width
            point = int(digits, 16)
            # A UTF-16 surrogate pair written as two \u escapes is one character.
            if 0xD800 <= point < 0xDC00 and self.text.startswith("\\u", self.pos):
                low = self.text[self.pos + 2:self.pos + 6]
                if len(low) == 4 and all(c in "0123456789abcdefABCDEF" for c in low) \
                        and 0xDC00 <= int(low, 16) < 0xE000:
                    self.pos += 6
                    return chr(0x10000 + ((point - 0xD800) << 10) + (int(low, 16) - 0xDC00))
            return chr(point)
        raise self.error(f"bad escape {self.text[at:at + 2]!r}", at)

    def number(self) -> JsonNumber:
        match = _NUMBER.match(self.text, self.pos)
        if not match:
            raise self.error(f"bad number {self.peek_text()!r}")
        self.pos = match.end()
        text = match.group()
        return JsonNumber(text[1:] if text.startswith("+") else text)

    def regex(self) -> Regex:
        start = self.pos
        self.pos += 1
        text, n = self.text, len(self.text)
        pattern: list[str] = []
        while True:
            if self.pos >= n or text[self.pos] in "\r\n":
                raise self.error("regular expression is not closed", start)
            char = text[self.pos]
            if char == "\\" and self.pos + 1 < n:
                pattern.append(text[self.pos:self.pos + 2])
                self.pos += 2
                continue
            self.pos += 1
            if char == "/":
                break
            pattern.append(char)
        flags = re.compile(r"[a-z]*").match(text, self.pos)
        self.pos = flags.end() if flags else self.pos
        return Regex("".join(pattern), "".join(sorted(flags.group() if flags else "")))

    def word(self, match: re.Match[str]) -> Any:
        start = self.pos
        name = match.group()
        self.pos = match.end()
        if name == "new":
            self.skip_space()
            following = _IDENT.match(self.text, self.pos)
            if not following:
                raise self.error("expected a constructor after 'new'")
            return self.word(following)
        if name in ("true", "false"):
            return name == "true"
        if name == "null":
            return None
        if name == "undefined":
            return UNDEFINED
        if name == "NaN":
            return Special("NaN")
        if name == "Infinity":
            return Special("Infinity")
        if name in ("MinKey", "MaxKey"):
            if self.peek() == "(":
                self.pos += 1
                self.expect(")")
            return MIN_KEY if name == "MinKey" else MAX_KEY
        builder = _CONSTRUCTORS.get(name)
        if builder is None:
            raise self.error(f"unknown name {name!r}", start)
        if self.peek() != "(":
            raise self.error(f"expected '(' after {name}")
        self.pos += 1
        args: list[Any] = []
        while self.peek() != ")":
            if not self.peek():
                raise self.error(f"{name}( is not closed", start)
            args.append(self.value())
            if self.peek() == ",":
                self.pos += 1
            elif self.peek() != ")":
                raise self.error(f"expected ',' or ')' in {name}(...), found {self.peek_text()!r}")
        self.pos += 1
        try:
            return builder(args)
        except (ValueError, TypeError, ConversionWarning) as exc:
            raise self.error(f"bad {name}(...): {exc}", start) from None


# ---------------------------------------------------------------- constructors

def _one_arg(args: list[Any], *types: type) -> Any:
    if len(args) != 1 or not isinstance(args[0], types):
        raise ValueError("takes exactly one argument of the right kind")
    return args[0]


def _object_id(args: list[Any]) -> ObjectId:
    text = _one_arg(args, str)
    if not re.fullmatch(r"[0-9a-fA-F]{24}", text):
        raise ValueError(f"{text!r} is not 24 hex digits")
    return ObjectId(text.lower())


def _integer(args: list[Any], bits: int) -> str:
    raw = str(_one_arg(args, str, JsonNumber)).strip()
    if not re.fullmatch(r"[+-]?\d+", raw):
        raise ValueError(f"{raw!r} is not an integer")
    number = int(raw)
    if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
        raise ValueError(f"{raw} is out of the {bits}-bit range")
    return str(number)


def _decimal(args: list[Any]) -> Decimal128:
    raw = str(_one_arg(args, str, JsonNumber)).strip()
    special = {"nan": "NaN", "infinity": "Infinity", "inf": "Infinity", "-infinity": "-Infinity",
               "-inf": "-Infinity", "+infinity": "Infinity"}.get(raw.lower())
    if special:
        return Decimal128(special)
    try:
        return Decimal128(decimal_text(Decimal(raw)))
    except (InvalidOperation, ConversionWarning):
        raise ValueError(f"{raw!r} is not a decimal") from None


def _date(args: list[Any]) -> MongoDate:
    """``ISODate("...")``, or ``new Date(ms)``: the Java driver's shell mode writes the latter for
    dates outside 0100-9999, which may lie outside the years an ISO instant here can hold."""
    value = _one_arg(args, str, JsonNumber)
    if isinstance(value, JsonNumber):
        try:
            return MongoDate(iso_utc_from_epoch_text(value, "ms"))
        except ConversionWarning:
            if not re.fullmatch(r"-?\d+", value):
                raise
            return MongoDate(None, str(int(value)))
    return MongoDate(iso_from_date_text(value))


def iso_from_date_text(text: str) -> str:
    """``2023-05-17T09:18:31.439Z`` / ``+0800`` / ``+08:00`` / ``2023-05-17`` -> ISO UTC."""
    body = text.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", body):
        datetime.strptime(body, "%Y-%m-%d")
        return f"{body}T00:00:00Z"
    match = re.fullmatch(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(:\d{2})?(\.\d+)?\s*(Z|[+-]\d{2}:?\d{2})?",
                         body)
    if not match:
        raise ValueError(f"{text!r} is not an ISO date")
    zone = match[5] or "Z"
    seconds = match[3] or ":00"
    return iso_utc_from_zoned_text(f"{match[1]}T{match[2]}{seconds}{match[4] or ''}{zone}")


def _timestamp(args: list[Any]) -> BsonTimestamp:
    if len(args) != 2 or not all(isinstance(a, JsonNumber) for a in args):
        raise ValueError("takes two integers (seconds, increment)")
    seconds, increment = (int(_integer([a], 64)) for a in args)
    if not (0 <= seconds < 2**32 and 0 <= increment < 2**32):
        raise ValueError("seconds and increment must be unsigned 32-bit")
    return BsonTimestamp(seconds, increment)


def _subtype(value: Any) -> int:
    if isinstance(value, JsonNumber) and re.fullmatch(r"\d+", value) and int(value) < 256:
        return int(value)
    raise ValueError("subtype must be an integer 0-255")


def _bin_data(args: list[Any]) -> Binary:
    if len(args) != 2 or not isinstance(args[1], str):
        raise ValueError("takes (subtype, base64 text)")
    return Binary(_subtype(args[0]), _strict_base64(args[1]))


def _hex_data(args: list[Any]) -> Binary:
    if len(args) != 2 or not isinstance(args[1], str):
        raise ValueError("takes (subtype, hex text)")
    try:
        return Binary(_subtype(args[0]), binascii.unhexlify(args[1]))
    except (binascii.Error, ValueError):
        raise ValueError(f"{args[1][:40]!r} is not hex") from None


def _uuid(args: list[Any]) -> Binary:
    text = _one_arg(args, str)
    digits = text.replace("-", "")
    if not re.fullmatch(r"[0-9a-fA-F]{32}", digits):
        raise ValueError(f"{text!r} is not a UUID")
    return Binary(4, binascii.unhexlify(digits))


def _strict_base64(text: str) -> bytes:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{text[:40]!r} is not base64") from None


_CONSTRUCTORS = {
    "ObjectId": _object_id,
    "ISODate": _date,
    "Date": _date,
    "NumberLong": lambda args: Int64(_integer(args, 64)),
    "NumberInt": lambda args: Int32(_integer(args, 32)),
    "NumberDecimal": _decimal,
    "Timestamp": _timestamp,
    "BinData": _bin_data,
    "HexData": _hex_data,
    "UUID": _uuid,
}


# ---------------------------------------------------------------- extended JSON input wrappers

def _from_ejson(doc: dict[str, Any]) -> Any:
    """A wrapper document such as ``{"$oid": "..."}`` as its BSON value; other documents as is."""
    if not doc or not next(iter(doc)).startswith("$"):
        return doc
    keys = set(doc)
    try:
        if keys == {"$oid"}:
            return _object_id([doc["$oid"]])
        if keys == {"$date"}:
            inner = doc["$date"]
            if isinstance(inner, Int64):
                inner = JsonNumber(inner.digits)
            return _date([inner])
        if keys == {"$numberLong"}:
            return Int64(_integer([doc["$numberLong"]], 64))
        if keys == {"$numberInt"}:
            return Int32(_integer([doc["$numberInt"]], 32))
        if keys == {"$numberDecimal"}:
            return _decimal([doc["$numberDecimal"]])
        if keys == {"$numberDouble"}:
            text = str(doc["$numberDouble"])
            if text in ("NaN", "Infinity", "-Infinity"):
                return Special(text)
            return JsonNumber(text) if _NUMBER.fullmatch(text) else doc
        if keys == {"$binary"} and isinstance(doc["$binary"], dict):
            inner = doc["$binary"]
            return Binary(int(str(inner.get("subType", "0")), 16), _strict_base64(str(inner["base64"])))
        if keys == {"$binary", "$type"}:
            return Binary(int(str(doc["$type"]), 16), _strict_base64(str(doc["$binary"])))
        if keys == {"$uuid"}:
            return _uuid([doc["$uuid"]])
        if keys == {"$timestamp"} and isinstance(doc["$timestamp"], dict):
            inner = doc["$timestamp"]
            return _timestamp([JsonNumber(str(inner["t"])), JsonNumber(str(inner["i"]))])
        if keys == {"$minKey"}:
            return MIN_KEY
        if keys == {"$maxKey"}:
            return MAX_KEY
        if keys == {"$undefined"}:
            return UNDEFINED
        if keys == {"$regularExpression"} and isinstance(doc["$regularExpression"], dict):
            inner = doc["$regularExpression"]
            return Regex(str(inner.get("pattern", "")), "".join(sorted(str(inner.get("options", "")))))
    except (ValueError, KeyError, TypeError):
        return doc  # not a well-formed wrapper: an ordinary document with '$' field names
    return doc


def from_json_value(value: Any) -> Any:
    """A value parsed as plain JSON (``loads_exact``) with its EJSON wrappers resolved."""
    if isinstance(value, dict):
        return _from_ejson({k: from_json_value(v) for k, v in value.items()})
    if isinstance(value, list):
        return [from_json_value(v) for v in value]
    return value


# ---------------------------------------------------------------- canonical text

def to_ejson(value: Any) -> Any:
    """Relaxed Extended JSON v2 of a parsed value (a JSON-ready structure for ``dumps_compact``)."""
    if isinstance(value, dict):
        return {k: to_ejson(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_ejson(v) for v in value]
    if isinstance(value, ObjectId):
        return {"$oid": value.hex}
    if isinstance(value, MongoDate):  # canonical form for dates without an ISO text (EJSON v2)
        return {"$date": value.iso if value.iso is not None else {"$numberLong": value.millis}}
    if isinstance(value, Int64 | Int32):
        return JsonNumber(value.digits)
    if isinstance(value, Decimal128):
        return {"$numberDecimal": value.text}
    if isinstance(value, Binary):
        return {"$binary": {"base64": base64.b64encode(value.data).decode("ascii"),
                            "subType": f"{value.subtype:02x}"}}
    if isinstance(value, BsonTimestamp):
        return {"$timestamp": {"t": value.seconds, "i": value.increment}}
    if isinstance(value, Regex):
        return {"$regularExpression": {"pattern": value.pattern, "options": value.options}}
    if isinstance(value, Special):
        if value.name == "MinKey":
            return {"$minKey": 1}
        if value.name == "MaxKey":
            return {"$maxKey": 1}
        if value.name == "undefined":
            return {"$undefined": True}
        return {"$numberDouble": value.name}
    return value


def field_text(value: Any) -> tuple[str | None, str | None]:
    """(canonical text, logical type) of a top-level field; type None for a null value."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        return ("true" if value else "false"), "BOOLEAN"
    if isinstance(value, str) and not isinstance(value, JsonNumber):
        return value, "STRING"
    if isinstance(value, JsonNumber):
        if re.fullmatch(r"-?\d+", value) and _INT64_MIN <= int(value) <= _INT64_MAX:
            return str(int(value)), "LONG"
        return str(value), "DOUBLE"
    if isinstance(value, ObjectId):
        return value.hex, "STRING"
    if isinstance(value, MongoDate):
        return (value.iso if value.iso is not None else value.shell_text), "TIMESTAMP"
    if isinstance(value, Int64 | Int32):
        return value.digits, "LONG"
    if isinstance(value, Decimal128):
        return value.text, "DECIMAL"
    if isinstance(value, Binary):
        return base64.b64encode(value.data).decode("ascii"), "BINARY"
    if isinstance(value, Special) and value.name in ("NaN", "Infinity", "-Infinity"):
        return value.name, "DOUBLE"
    return dumps_compact(to_ejson(value)), "JSON"

