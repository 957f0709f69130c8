"""The JVM fast path of decoding: a format's common shape decoded in Spark's JVM, no Python.

The Python decoders (``include/cdclake/formats/``) stay the reference.
``jvm/src/main/java/cdclake/jvm/`` holds a Spark SQL function, ``cdclake_jvm.fast_decode(format,
value, key, source_timezone)``, whose decoders take only the plain, common shape of their format and
return exactly the Python decoder's change rows for it (several for a Canal-family message of
several rows); for anything else they return null (they *decline*) and the message goes to the
Python decoder, which also owns every rejection: nothing is quarantined or dropped on the fast path.
The fixture suite runs through :func:`spark_jobs.decode_spark.decode_outcomes`, so every fixture of
a fast format checks the two paths against each other (``tests/formats/test_jvm_decode.py`` checks
declining and the rows field by field).

``scripts/setup.sh`` compiles the jar into ``.jars/spark/`` (so every session and spark-submit has
it). Without it, decoding falls back to the Python decoders for every message, with a warning.
The Spark setting ``spark.cdclake.decode.fastPath=false`` (``spark.conf`` in the pipeline file, or
``CDCLAKE_SPARK_CONF``) turns the fast path off: every message is decoded in Python.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cdclake.formats.base import FormatOptions

# The jar's function catalog (cdclake.jvm.Functions) and its decoding function, which Spark calls
# with its own values and whose rows it stores as they are (a UDF's were converted again).
CATALOG = "cdclake_jvm"
FUNCTION = f"{CATALOG}.fast_decode"
# The exact count-by-key aggregate (KeyCounts in the jar) that observes what a write streams; the
# jar's session extensions (cdclake.jvm.Extensions, in the server's spark.sql.extensions) add it.
KEY_COUNTS = "cdclake_key_counts"
# The jar's function catalog class: the setting spark.sql.catalog.cdclake_jvm names it.
CATALOG_CLASS = "cdclake.jvm.Functions"
# The outcome kinds of a message the fast path declined, in :func:`fast_outcomes` with ``outer``:
# a shape it leaves to Python (null), or an exception inside it (an empty array: a bug).
KIND_DECLINED = "declined"
KIND_DECLINED_ERROR = "declined_error"
DECLINED_KINDS = (KIND_DECLINED, KIND_DECLINED_ERROR)
# The jar's decoder that always fails (FastDecode.FAILING_FORMAT), for tests; no topic can name it.
FAILING_FORMAT = "cdclake_failing_decoder"
# The operator's switch: "false" sends every message to the Python decoders.
SWITCH = "spark.cdclake.decode.fastPath"
# The formats with a fast path and its change-row struct: one file for the jar and this module.
FAST_PATH_SPEC = Path(__file__).with_name("fast_path.json")
_SPEC = json.loads(FAST_PATH_SPEC.read_text())
FAST_FORMATS = frozenset(_SPEC["formats"])
ROW_SCHEMA: str = _SPEC["row_schema"]
# Epoch microseconds of 0001-01-01 and 9999-12-31T23:59:59.999999 (decoding.MIN/MAX_MICROS).
_MIN_MICROS, _MAX_MICROS = -62_135_596_800_000_000, 253_402_300_799_999_999

_log = logging.getLogger(__name__)


def takes_topic(format_id: str, options: FormatOptions) -> bool:
    """True when a topic's messages may take the fast path: its format has one, and the topic sets
    no option the fast decoders do not apply. They apply the source time zone and the value size
    limit; a table named by the topic (``source_table``) only serves messages naming none, which
    they decline; everything else (key overrides, string columns, binary encodings, swapped
    update images, ...) is left to the Python decoders."""
    applied = replace(options, source_timezone=FormatOptions.source_timezone,
                      max_value_bytes=FormatOptions.max_value_bytes, source_table=None)
    return format_id in FAST_FORMATS and applied == FormatOptions()


def enabled(spark: SparkSession) -> bool:
    """False when the session's ``spark.cdclake.decode.fastPath`` is ``false``."""
    return (spark.conf.get(SWITCH, "true") or "true").strip().lower() != "false"


def register(spark: SparkSession) -> bool:
    """Make the jar's function catalog serve ``spark`` (``cdclake_jvm.fast_decode``): a session
    setting, so a Spark Connect client needs no JVM of its own. False (and a warning) when the
    server has no jar, or no ``cdclake_key_counts`` (its extensions)."""
    try:
        if spark.conf.get(f"spark.sql.catalog.{CATALOG}", None) is None:
            spark.conf.set(f"spark.sql.catalog.{CATALOG}", CATALOG_CLASS)
        # Spark loads a catalog when a query first names it: a missing class fails here.
        spark.sql(f"SELECT {FUNCTION}('maxwell_json', X'7B7D', NULL, 'UTC'), {KEY_COUNTS}('x')").collect()
    except Exception as exc:  # the class is missing: set-up did not build the jar
        _log.warning("JVM fast path unavailable (%s: %s); every message is decoded in Python. "
                     "Run scripts/setup.sh to build it.", type(exc).__name__, str(exc)[:200])
        return False
    return True


def kafka_millis(column: str) -> Column:
    """A timestamp cut to whole milliseconds, toward the past (what the Python path keeps)."""
    micros = F.unix_micros(F.col(column))
    return F.timestamp_micros(micros - F.pmod(micros, F.lit(1000)))


def with_fast_rows(source: DataFrame, topics: dict[str, tuple[str, str, int]]) -> DataFrame:
    """``source`` (topic, partition, offset, timestamp, key, value) with ``_fast``: the fast path's
    change rows for the messages it decodes, null for every other message. ``topics`` maps each
    fast topic to (format, source time zone, maximum value bytes); messages over the limit, or
    whose Kafka timestamp no row can hold, are left to the Python decoder (which rejects them)."""
    pairs = [F.lit(item) for topic, (format_id, zone, limit) in topics.items()
             for item in (topic, F.struct(F.lit(format_id).alias("f"), F.lit(zone).alias("z"),
                                          F.lit(limit).alias("n")))]
    spec = F.create_map(*pairs)[F.col("topic")]
    micros = F.unix_micros(F.col("timestamp"))
    eligible = (spec.isNotNull() & F.col("value").isNotNull()
                & (F.octet_length("value") <= spec["n"])
                & (F.col("timestamp").isNull() | micros.between(_MIN_MICROS, _MAX_MICROS)))
    fast = F.when(eligible, F.call_function(FUNCTION, spec["f"], F.col("value"), F.col("key"), spec["z"]))
    return source.withColumn("_fast", fast).withColumn("_fast_format", spec["f"])


def fast_outcomes(tried: DataFrame, outcome_columns: list[str], row_kind: str,
                  outer: bool = False) -> DataFrame:
    """The outcome records (``decode_spark.OUTCOME_SCHEMA``) of the messages the fast path decoded:
    their change rows (``record_index`` each row's place), lineage from the message, the rest as a
    Python decoder leaves it. With ``outer``, each message it declined gives one record too,
    without a row, of kind :data:`KIND_DECLINED` (null) or :data:`KIND_DECLINED_ERROR` (an
    exception: no rows), so that a pass over the records sees every message."""
    explode = F.posexplode_outer if outer else F.posexplode  # without outer: none for null
    rows = tried.select("*", explode("_fast").alias("_index", "_row"))
    fast = F.col("_row")
    stamp = kafka_millis("timestamp")
    none = F.lit(None)
    values: dict[str, Column] = {
        "source_format": F.col("_fast_format"),
        "kafka_topic": F.col("topic"), "kafka_partition": F.col("partition"),
        "kafka_offset": F.col("offset"), "record_index": F.col("_index"),
        "landed_hour": none.cast("timestamp"), "run_id": none.cast("string"),
        "db_type": fast["db_type"], "database": fast["database"], "schema_name": fast["schema_name"],
        "table_name": fast["table_name"], "op": fast["op"],
        "primary_key_columns": fast["primary_key_columns"], "row_key": fast["row_key"],
        "before": fast["before"], "after": fast["after"], "after_is_full": fast["after_is_full"],
        "column_types": fast["column_types"],
        "event_time": F.timestamp_micros(fast["event_time"]),
        "produced_time": F.timestamp_micros(fast["produced_time"]),
        "kafka_timestamp": stamp, "source_sequence": fast["source_sequence"],
        "source_position": fast["source_position"], "transaction_id": fast["transaction_id"],
        "ddl": none.cast("string"), "warnings": F.array().cast("array<string>"),
        "_kind": F.when(failed(), F.lit(KIND_DECLINED_ERROR)).when(fast.isNull(), F.lit(KIND_DECLINED))
        .otherwise(F.lit(row_kind)) if outer else F.lit(row_kind),
        "_first": F.col("_index") == 0, "_pair_key": fast["pair_key"],
        "_pair_role": fast["pair_role"], "control_kind": none.cast("string"),
        "format_tried": none.cast("string"), "reason_code": none.cast("string"),
        "reason_message": none.cast("string"), "msg_topic": F.col("topic"),
        "msg_partition": F.col("partition"), "msg_offset": F.col("offset"), "msg_timestamp": stamp,
        "msg_key": F.col("key"), "msg_value": none.cast("binary"),
    }
    return rows.select(*[values[name].alias(name) for name in outcome_columns])


def failed() -> Column:
    """True for the messages of :func:`with_fast_rows` the fast path declined on an exception."""
    return F.col("_fast").isNotNull() & (F.size("_fast") == 0)


def declined() -> Column:
    """True for the messages of :func:`with_fast_rows` the fast path did not decode."""
    return F.col("_fast").isNull() | (F.size("_fast") == 0)
