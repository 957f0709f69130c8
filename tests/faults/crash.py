"""Crash injection: a Spark session whose k-th matching ``spark.sql`` call raises, as a job killed
at that commit point would stop there."""

from __future__ import annotations

import re
from typing import Any


class InjectedCrash(BaseException):
    """Not an ``Exception``: like a kill, no ``except Exception`` of the job catches it."""


class CrashAt:
    """Delegates to ``spark``; the ``k``-th ``sql`` call whose text matches ``pattern`` raises
    :class:`InjectedCrash` instead of running (1-based)."""

    def __init__(self, spark: Any, pattern: str, k: int = 1) -> None:
        self._spark, self._pattern, self._k = spark, re.compile(pattern), k
        self.calls: list[str] = []  # the matching statements, in order

    @property
    def seen(self) -> int:
        return len(self.calls)

    def sql(self, text: str, *args: Any, **kwargs: Any) -> Any:
        if self._pattern.search(text):
            self.calls.append(" ".join(text.split()))
            if self.seen == self._k:
                raise InjectedCrash(f"crash injected at call {self._k} matching {self._pattern.pattern!r}")
        return self._spark.sql(text, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spark, name)
