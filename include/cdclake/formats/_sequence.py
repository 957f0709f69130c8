"""Ordering and vendor-time helpers shared by the DRS, DataWorks and MongoDB decoders.

``source_sequence`` must sort as text in the same order as the vendor's numbers, so integer
sequences are zero-padded to 20 digits (int64 fits). Vendor epoch times come in milliseconds,
except where a manual says seconds (DRS SQL Server ``es``): :func:`epoch_micros_by_magnitude`
tells them apart by size, since a millisecond clock passed 10^11 in 1973.
"""

from __future__ import annotations

import re
from typing import Any

from cdclake.formats.values import ConversionWarning, micros_from_epoch

SEQUENCE_WIDTH = 20
# Below this, an epoch number is seconds: 10^11 ms is March 1973, 10^11 s is the year 5138.
_SECONDS_BELOW = 10**11


def sortable_sequence(value: Any) -> str | None:
    """Vendor sequence -> text that sorts like the number (``27677`` -> ``000...027677``).

    Non-numeric sequences are kept as they are (they still identify, they just sort as text).
    """
    if value is None:
        return None
    text = str(value).strip()
    if not text or text.lower() == "null":
        return None
    if re.fullmatch(r"\d+", text):
        return (text.lstrip("0") or "0").rjust(SEQUENCE_WIDTH, "0")
    return text


def epoch_micros(value: Any, unit: str = "ms") -> int | None:
    """Epoch number (JSON number text, int or numeric string) -> micros; None when absent/unusable."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return micros_from_epoch(value, unit)
    except ConversionWarning:
        return None


def epoch_micros_by_magnitude(value: Any) -> int | None:
    """Epoch number in seconds or milliseconds (decided by size) -> micros."""
    if value is None or isinstance(value, bool):
        return None
    try:
        magnitude = abs(float(str(value).strip()))
    except ValueError:
        return None
    return epoch_micros(value, "s" if magnitude < _SECONDS_BELOW else "ms")
