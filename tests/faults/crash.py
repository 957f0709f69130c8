"""Crash injection: the k-th commit of a job raises (or kills its process), as a job killed at
that commit point would stop there.

:class:`CrashAt` wraps one Spark session and counts its ``spark.sql`` statements that match a
pattern. :func:`commit_points` counts every commit in the process, on any Spark Connect session:
statements that commit (:data:`COMMIT`, but not ``CREATE ... IF NOT EXISTS``) and DataFrame
writes (``writeTo(...).append()``, ``overwrite(...)``, ...), which is how land and normalize write.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# The statements that commit: branch changes, DDL, DML, procedures.
COMMIT = r"^\s*(MERGE|INSERT|DELETE|UPDATE|ALTER|CALL|CREATE)\b"
# The DataFrameWriterV2 calls that commit.
_WRITES = ("append", "overwrite", "overwritePartitions", "create", "replace", "createOrReplace")


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


def crash_at(k: int) -> Callable[[int, str], None]:
    """A :func:`commit_points` hook that raises :class:`InjectedCrash` at the ``k``-th commit."""
    def hook(n: int, what: str) -> None:
        if n == k:
            raise InjectedCrash(f"crash injected at commit {k}: {what}")
    return hook


@contextmanager
def commit_points(hook: Callable[[int, str], None] | None = None) -> Iterator[list[str]]:
    """Number every commit made in this process while open (the yielded list names them, in
    order); ``hook(n, what)`` runs before the ``n``-th, and may raise or kill."""
    from pyspark.sql.connect.readwriter import DataFrameWriterV2
    from pyspark.sql.connect.session import SparkSession

    seen: list[str] = []
    pattern = re.compile(COMMIT, re.IGNORECASE)
    ensured = re.compile(r"^\s*CREATE \w+ IF NOT EXISTS", re.IGNORECASE)  # set-up that finds what it needs
    originals: dict[tuple[type, str], Any] = {(SparkSession, "sql"): SparkSession.sql}
    originals.update({(DataFrameWriterV2, name): getattr(DataFrameWriterV2, name) for name in _WRITES})

    def point(what: str) -> None:
        seen.append(what)
        if hook is not None:
            hook(len(seen), what)

    def sql(self: Any, text: str, *args: Any, **kwargs: Any) -> Any:
        if pattern.search(text) and not ensured.search(text):
            point(" ".join(text.split()))
        return originals[(SparkSession, "sql")](self, text, *args, **kwargs)

    def write(name: str) -> Any:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            point(f"writeTo({self._table_name}).{name}")
            return originals[(DataFrameWriterV2, name)](self, *args, **kwargs)
        return call

    SparkSession.sql = sql  # type: ignore[method-assign,assignment]
    for name in _WRITES:
        setattr(DataFrameWriterV2, name, write(name))
    try:
        yield seen
    finally:
        for (cls, name), original in originals.items():
            setattr(cls, name, original)
