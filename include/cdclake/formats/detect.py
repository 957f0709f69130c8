"""``auto``: choose a JSON format per message by structural signature.

Precedence: JSON formats are tried in ascending ``detect_priority``; the first whose ``matches``
accepts the document decodes it, and its id is what ``source_format`` reports. Each format's
signature checks fields that only it has, so more specific shapes carry lower priorities (e.g.
CloudCanal, a Canal superset, is tried before Canal). Binary formats (Avro) are never detected:
configure them per topic. A tombstone (a null value, or the text ``null`` as consoles print it)
is a control message whatever the format; a document that is not an object matches none.
"""

from __future__ import annotations

from typing import Any

from cdclake.formats import errors
from cdclake.formats.base import JsonDecoder, parse_json_value
from cdclake.formats.canonical import Decoded, RawMessage
from cdclake.formats.errors import DecodeError
from cdclake.formats.exact_json import leading_object


def detectable() -> list[type[JsonDecoder]]:
    from cdclake.formats import registry

    found = [d for d in registry().values()
             if issubclass(d, JsonDecoder) and d.detect_priority is not None]
    return sorted(found, key=lambda d: (d.detect_priority, d.format_id))


def detect(doc: Any) -> type[JsonDecoder] | None:
    if not isinstance(doc, dict):
        return None
    for decoder in detectable():
        if decoder.matches(doc):
            return decoder
    return None


_JSON_KINDS = {list: "array", str: "string", bool: "boolean"}  # anything else parsed is a number


class AutoDecoder(JsonDecoder):
    format_id = "auto"
    description = "detect the JSON format of each message by its structure"

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._decoders: dict[str, JsonDecoder] = {}

    def decode(self, message: RawMessage) -> Decoded:
        if message.value is None:
            # A null value is a Kafka tombstone (log-compaction delete marker, e.g. Debezium's
            # after a delete): whatever the format, it is a control message, not a change.
            return Decoded(control="TOMBSTONE")
        try:
            doc = parse_json_value("auto", message, self.options.max_value_bytes)
        except DecodeError as exc:
            return self._decode_concatenated(message, exc)
        if doc is None:
            # The JSON text ``null``: how Kafka consoles print a tombstone, read as
            # debezium_json reads it.
            return Decoded(control="TOMBSTONE")
        if not isinstance(doc, dict):
            raise DecodeError("auto", errors.UNKNOWN_FORMAT,
                              f"the message is a JSON {_JSON_KINDS.get(type(doc), 'number')}, "
                              "not an object: no format sends that")
        decoder_class = detect(doc)
        if decoder_class is None:
            raise DecodeError("auto", errors.UNKNOWN_FORMAT,
                              f"no format matches a message with top-level fields {sorted(doc)[:12]}")
        return self._decoder(decoder_class).decode_document(doc, message)

    def _decode_concatenated(self, message: RawMessage, error: DecodeError) -> Decoded:
        """A value of documents written back to back, decoded whole by the format its first
        document matches when that format writes such values (its own error names a bad later
        document); else ``error`` (not JSON) stands."""
        first = leading_object(message.value) if error.reason == errors.INVALID_JSON else None
        decoder_class = detect(first) if first is not None else None
        if decoder_class is None or not decoder_class.concatenated_documents:
            raise error
        return self._decoder(decoder_class).decode(message)

    def _decoder(self, decoder_class: type[JsonDecoder]) -> JsonDecoder:
        decoder = self._decoders.get(decoder_class.format_id)
        if decoder is None:
            decoder = self._decoders[decoder_class.format_id] = decoder_class.detected(self.options)
        return decoder
