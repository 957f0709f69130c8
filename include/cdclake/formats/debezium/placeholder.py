"""Unavailable values (PostgreSQL TOAST, Oracle LOB columns Debezium did not capture): the
connector's placeholder in every rendering, so that such a column is left out of the image."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from uuid import UUID

from cdclake.formats.exact_json import JsonNumber
from cdclake.formats.values import dumps_compact

# Postgres TOAST / Oracle LOB columns whose value Debezium did not capture: the connector's
# ``unavailable.value.placeholder`` (a topic's ``unavailable_value_placeholder`` when set).
UNAVAILABLE = "__debezium_unavailable_value"
UNAVAILABLE_B64 = base64.b64encode(UNAVAILABLE.encode()).decode()


@dataclass(frozen=True)
class Placeholder:
    """Every rendering of one unavailable-value placeholder. The PostgreSQL connector renders it
    in the column's type (UnchangedToastedPlaceholder): text as itself, bytea as its bytes
    (base64, or hex under binary.handling.mode=hex), text and binary arrays as a one-element
    list, uuid[] as the name-based UUID of its bytes (UUID.nameUUIDFromBytes), integer[] and
    bigint[] as the list of its bytes, an hstore as the map {placeholder: placeholder} (its JSON
    text in hstore.handling.mode=json)."""

    texts: frozenset[str]     # a whole column value
    elements: frozenset[str]  # the one element of an array value
    byte_list: tuple[str, ...]
    mapping: dict[str, str]

    @staticmethod
    @lru_cache(maxsize=16)
    def of(setting: str | None) -> Placeholder:
        """Debezium's setting: text, or ``hex:`` and the placeholder's bytes in hex."""
        if setting is None:
            setting = UNAVAILABLE
        if setting.startswith("hex:"):
            try:
                raw = bytes.fromhex(setting[4:])
            except ValueError:
                raise ValueError(f"unavailable_value_placeholder {setting!r}: 'hex:' must be "
                                 "followed by hexadecimal bytes") from None
        else:
            raw = setting.encode()
        if not raw:
            raise ValueError("unavailable_value_placeholder must not be empty")
        text = raw.decode("utf-8", errors="replace")
        forms = {text, base64.b64encode(raw).decode(), raw.hex(), raw.hex().upper()}
        uuid = str(UUID(bytes=hashlib.md5(raw).digest(), version=3))
        mapping = {text: text}
        return Placeholder(
            texts=frozenset(forms | {dumps_compact(mapping)}), elements=frozenset(forms | {uuid}),
            byte_list=tuple(str(b) for b in raw), mapping=mapping)

    def matches(self, value: Any) -> bool:
        """Whether a column value is this placeholder, in any of the renderings above."""
        if isinstance(value, JsonNumber):
            return False
        if isinstance(value, str):
            return value in self.texts
        if isinstance(value, list):
            if len(value) == 1:
                element = value[0]
                return (isinstance(element, str) and not isinstance(element, JsonNumber)
                        and element in self.elements)
            return (len(value) == len(self.byte_list)
                    and all(isinstance(v, JsonNumber) for v in value)
                    and tuple(str(v) for v in value) == self.byte_list)
        if isinstance(value, dict):
            return value == self.mapping
        return False


_PLACEHOLDER_KINDS = frozenset({str, list, dict})  # a placeholder's JSON kinds (numbers never are)
