"""The format registry: format id -> decoder class, plus ``auto`` detection.

Every module in this package that is not part of the framework (``FRAMEWORK_MODULES``) is one
format and must define ``DECODER``, its decoder class. ``auto`` tries the JSON formats in
ascending ``detect_priority`` (the documented precedence, see ``detect.py``).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from cdclake.formats.base import Decoder, FormatOptions

FRAMEWORK_MODULES = frozenset({"base", "canonical", "errors", "values", "exact_json", "logical_types",
                               "detect", "decoding", "kafka_connect"})


@cache
def registry() -> dict[str, type[Decoder]]:
    """All formats by id, sorted by id."""
    found: dict[str, type[Decoder]] = {}
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name in FRAMEWORK_MODULES or module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        decoder = getattr(module, "DECODER", None)
        if decoder is None or not decoder.format_id:
            raise ImportError(f"format module {module.__name__} must define DECODER with a format_id")
        if decoder.format_id in found:
            raise ImportError(f"format id {decoder.format_id!r} is registered twice")
        found[decoder.format_id] = decoder
    return dict(sorted(found.items()))


def format_ids() -> list[str]:
    return list(registry())


def get_decoder(format_id: str, options: FormatOptions | None = None) -> Decoder:
    """A decoder for ``format_id`` (``auto`` gives the detecting decoder)."""
    if format_id == "auto":
        from cdclake.formats.detect import AutoDecoder

        return AutoDecoder(options)
    try:
        return registry()[format_id](options)
    except KeyError:
        known = ", ".join(["auto", *registry()])
        raise ValueError(f"unknown format {format_id!r}; known formats: {known}") from None
