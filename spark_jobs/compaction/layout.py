"""What compaction's parts share: the current tables' metadata columns and table properties, a
source table's identity, the options and the errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from spark_jobs.identifiers import (
    KEY_BUCKETS,
    source_label,
)

if TYPE_CHECKING:
    pass

META_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_cdc_key", "string"),
    ("_cdc_op", "string"),
    ("_cdc_event_time", "timestamp"),
    ("_cdc_order_key", "string"),
    ("_cdc_kafka_topic", "string"),
    ("_cdc_kafka_partition", "int"),
    ("_cdc_kafka_offset", "bigint"),
    ("_cdc_run_id", "string"),
)
OCCURRENCE = "_cdc_occurrence"
WIDEN_PREFIX = "_cdc_widen_"  # a column being widened, while it is rewritten (change_column_type)
TRUNCATE_PROPERTY = "cdc.truncated-before"
SOURCE_PROPERTY = "cdc.source"
KEYLESS_PROPERTY = "cdc.keyless"
TOPIC_PROPERTY = "cdc.topic"  # the one topic the table's changes come from
# The newest landing hour compacted into the table (``YYYY-MM-DDTHH:00:00Z``, text order = time order).
COMPACTED_THROUGH_PROPERTY = "cdc.compacted-through"
# Every table compaction creates (current, tombstone and history tables).
TABLE_PROPERTIES = ("'format-version'='2', 'write.distribution-mode'='hash', "
                    "'write.merge.mode'='merge-on-read', 'write.delete.mode'='merge-on-read', "
                    "'write.update.mode'='merge-on-read'")
# "true" once column names differing only by case have been folded into one spelling (see
# :func:`fold_case`): from then on the table's hour and history changes are always folded.
CASE_FOLDED_PROPERTY = "cdc.case-folded"


class CompactionError(RuntimeError):
    """One table could not be compacted; the message says why and what to do."""


class IncompatibleSchemaChange(CompactionError):
    """A column change that would lose data (type change, value that does not fit)."""


@dataclass(frozen=True)
class CompactionOptions:
    tombstone_retention_days: int = 7
    buckets: int = KEY_BUCKETS
    # topic -> its ``table_prefix``: the topic's source tables are its own (see :func:`table_space`)
    table_prefixes: Mapping[str, str] = field(default_factory=dict)
    # topic -> the source tables ("db.table" or "table"; "*": all) that keep an SCD2 history
    history: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Tables compacted at once on the session (see ``compact_hour``); 1 compacts one at a time.
    threads: int = 4
    # Hours of fewer tables compact each table alone: their hour-wide jobs cost more than they save.
    hour_wide_from: int = 3

    def keeps_history(self, topic: str | None, source_table: SourceTable) -> bool:
        chosen = self.history.get(topic or "", ())
        database, schema, table_name = source_table
        names = {"*", str(table_name), f"{database}.{table_name}", source_label(database, table_name, schema)}
        return bool(names & set(chosen))


SourceTable = tuple[str | None, str | None, str | None]  # (database, source schema, table)
