"""``cdclake decode``: captured messages in, canonical change rows out (JSON lines).

Input files are JSON lines (blank lines and ``#`` comment lines skipped) for JSON formats. For
binary formats (``dts_avro``, ``drs_avro``) a file holds one datum, or, if its name ends in
``.b64`` / ``.b64l``, one base64-encoded datum per line (the multi-datum form). With
``--whole-file`` each file is one message (e.g. a pretty-printed JSON document). Messages get the
coordinates topic = file name, partition 0, offset = position of the message in its file.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from cdclake.formats import get_decoder, registry
from cdclake.formats.base import FormatOptions, JsonDecoder
from cdclake.formats.canonical import RawMessage, row_to_json_dict
from cdclake.formats.decoding import decode_batch
from cdclake.zone_skew import zone_hint


def read_messages(path: Path, binary: bool, keys: list[bytes | None] | None = None,
                  whole_file: bool = False) -> Iterator[tuple[int, RawMessage]]:
    """(line number, message) for each message of one input file, in order, with CLI coordinates."""
    topic = path.name
    if whole_file or (binary and not path.name.endswith((".b64", ".b64l"))):
        key = keys[0] if keys else None
        yield 1, RawMessage(value=path.read_bytes(), key=key, topic=topic, partition=0, offset=0)
        return
    index = 0
    for line_no, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not line.strip() or line.lstrip().startswith(b"#"):
            continue
        value = base64.b64decode(line.strip()) if binary else line.rstrip(b"\r")
        key = keys[index] if keys and index < len(keys) else None
        yield line_no, RawMessage(value=value, key=key, topic=topic, partition=0, offset=index)
        index += 1


def read_keys(path: Path) -> list[bytes | None]:
    """One Kafka key per line; the literal line ``null`` means no key."""
    keys: list[bytes | None] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        keys.append(None if line.strip() == "null" else line.encode("utf-8"))
    return keys


def is_binary_format(format_id: str) -> bool:
    if format_id == "auto":
        return False
    decoder = registry().get(format_id)
    return decoder is not None and not issubclass(decoder, JsonDecoder)


# The changelog gate's default gates.clock_skew_minutes: a smaller skew is not worth a warning.
_CLOCK_SKEW_MINUTES = 10


def skew_hint(rows: list[dict[str, Any]]) -> str | None:
    """The changelog gate's time-zone diagnosis for rows whose event time runs ahead of their
    produced time by a whole zone offset, before any hour runs."""
    # Canonical times are epoch microseconds.
    skews = [(r["event_time"] - r["produced_time"]) / 60_000_000 for r in rows
             if isinstance(r.get("event_time"), int) and isinstance(r.get("produced_time"), int)]
    ahead = [s for s in skews if s > _CLOCK_SKEW_MINUTES]
    if not ahead:
        return None
    hint = zone_hint("event_time_minutes_after_produced_time", ahead)
    return f"{len(ahead)} row(s) with event_time ahead of produced_time: {hint}" if hint else None


def run_decode(files: list[str], format_id: str, key_file: str | None, schema_file: str | None,
               timezone: str, out: TextIO, err: TextIO, whole_file: bool = False,
               flattened: bool = False, source_table: str | None = None,
               binary_encoding: str | None = None, update_images_swapped: bool = False,
               produced_timezone: str | None = None,
               unavailable_value_placeholder: str | None = None) -> int:
    try:
        decoder = get_decoder(format_id, FormatOptions(
            source_timezone=timezone, schema_file=schema_file, flattened=flattened,
            source_table=source_table, binary_encoding=binary_encoding,
            update_images_swapped=update_images_swapped, produced_timezone=produced_timezone,
            unavailable_value_placeholder=unavailable_value_placeholder))
    except ValueError as exc:
        print(f"cdclake decode: {exc}", file=err)
        return 2
    keys = read_keys(Path(key_file)) if key_file else None
    binary = is_binary_format(format_id)
    rejected_any = False
    for name in files:
        path = Path(name)
        if not path.is_file():
            print(f"cdclake decode: {name}: no such file", file=err)
            rejected_any = True
            continue
        numbered = list(read_messages(path, binary, keys, whole_file))
        line_of = {message.offset: line_no for line_no, message in numbered}
        result = decode_batch(decoder, (message for _, message in numbered))
        for row in result.rows:
            out.write(json.dumps(row_to_json_dict(row), ensure_ascii=False) + "\n")
        for rejected in result.rejected:
            rejected_any = True
            line_no = line_of[rejected.message.offset]
            print(f"{name}:{line_no}: {rejected.reason}: {rejected.detail}", file=err)
        hint = skew_hint(result.rows)
        if hint:
            print(f"{name}: warning: {hint}", file=err)
        if result.controls:  # counted, not changes: said, so that no message passes unseen
            kinds = Counter(kind for _, kind in result.controls)
            print(f"{name}: {len(result.controls)} control message(s), no change rows: "
                  + ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items())), file=err)
    return 1 if rejected_any else 0
