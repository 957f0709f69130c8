"""Column names that differ only by case, on sources that compare names ignoring case: folded into
one spelling (the table's, or for a new column its lower-case or first spelling)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

if TYPE_CHECKING:
    pass

def case_spellings(existing: Iterable[str], declared: Iterable[str]) -> dict[str, str]:
    """Lower-case column name -> the one spelling the table gives it: the table's own where it has
    the column; for a new one the all-lower-case spelling if the hour has it, else the first in
    sort order."""
    spellings: dict[str, str] = {}
    for name in sorted(declared, key=lambda n: (n != n.lower(), n)):
        spellings.setdefault(name.lower(), name)
    spellings.update({name.lower(): name for name in existing})
    return spellings


def spelled_as(spellings: Mapping[str, str]) -> Callable[[Column], Column]:
    spelling = F.create_map(*[F.lit(part) for pair in sorted(spellings.items()) for part in pair])
    return lambda name: F.coalesce(F.try_element_at(spelling, F.lower(name)), name)


def fold_case(changes: DataFrame, spellings: Mapping[str, str]) -> DataFrame:
    """Changelog rows with the column names of their images and key columns spelled as
    ``spellings`` says (:func:`case_spellings`; column types are folded where they are read, in
    :func:`declared_columns`, as one message may type a column under both spellings)."""
    spelled = spelled_as(spellings)
    return (changes
            .withColumn("before", F.transform_keys("before", lambda name, _: spelled(name)))
            .withColumn("after", F.transform_keys("after", lambda name, _: spelled(name)))
            .withColumn("primary_key_columns", F.transform("primary_key_columns", spelled)))
