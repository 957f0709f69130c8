"""The pipeline configuration: one YAML file, environment overrides, one frozen object.

Configuration enters once (file + ``CDCLAKE_*`` environment variables) and is passed down as a
:class:`PipelineConfig`; transforms never read the environment themselves.

Environment overrides: ``CDCLAKE_KAFKA_BOOTSTRAP``, ``CDCLAKE_KAFKA_PORT``,
``CDCLAKE_CATALOG_URI``, ``CDCLAKE_WAREHOUSE``, ``CDCLAKE_SPARK_MASTER``, ``CDCLAKE_SPARK_CONF``
(``key=value,key=value`` merged over ``spark.conf``), ``CDCLAKE_SPARK_PORT`` and
``CDCLAKE_SPARK_REMOTE`` (the Spark Connect server), ``CDCLAKE_START_DATE`` (the hourly DAG's
first hour, ``schedule.start_date``), ``CDCLAKE_HOME``
(state folder) and ``CDCLAKE_CONFIG`` (this file's path).

Secrets stay out of the file: any value may reference the environment as ``${NAME}``, and a
password, secret or JAAS login written literally (in ``kafka.options``, ``spark.conf`` or the
catalog URI's user info) is refused. Kafka credentials can also live in the Airflow connection
(``kafka.airflow_conn_id``). Every secret found is registered with :mod:`cdclake.masking`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from cdclake import masking, retention
from cdclake.exceptions import ConfigError
from cdclake.paths import config_path, state_home
from cdclake.retention import RetentionConfig

DEFAULT_START_DATE = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class TopicConfig:
    name: str
    format: str = "auto"
    source_timezone: str = "UTC"
    # "db.table" or "table" -> key columns; overrides what messages say.
    primary_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # "db.table" or "table" -> columns typed STRING whatever the messages declare.
    string_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    schema_file: str | None = None
    quarantine_rate_max: float | None = None
    # Changes decoded despite metadata that contradicts their image (warnings TYPE_MAP_MISMATCH,
    # OLD_NAMES_UNKNOWN_COLUMN, KEY_NAMES_UNKNOWN_COLUMN), as a share of the topic's change rows.
    warning_rate_max: float | None = None
    # debezium_json only: ExtractNewRecordState output (bare rows; tombstones are deletes of the
    # table ``source_table``).
    flattened: bool = False
    source_table: str | None = None
    # Canal family only: how binary columns travel when it is not the format's own encoding
    # ("hex" for Tencent Cloud DTS Canal JSON in its not-fully-compatible mode).
    binary_encoding: str | None = None
    # Canal family only: UPDATE ``data`` is the before image and ``old`` the after image (Alibaba
    # Cloud DTS Canal Json from instances created before 2022-03-20).
    update_images_swapped: bool = False
    # ogg_json only: the zone of ``current_ts`` (the replicat host) when it is not
    # ``source_timezone`` (GoldenGate's ``goldengate.userexit.timestamp=utc`` puts ``op_ts`` in UTC).
    produced_timezone: str | None = None
    # debezium_json only: the connector's ``unavailable.value.placeholder`` when it is not
    # Debezium's default (``hex:`` and hex digits for bytes, as Debezium reads it).
    unavailable_value_placeholder: str | None = None
    # Keeps this topic's tables apart from the same db.table of another topic (shards, regions):
    # ``eu`` makes ``shop.orders`` ``current.eu_shop__orders``.
    table_prefix: str | None = None
    # SCD2 history tables (history.<db>__<table>): ("*",) for every table of the topic, or the
    # tables named ("db.table" or "table"); from ``history: true`` or a list.
    history: tuple[str, ...] = ()
    # Where the topic's history begins (see cdclake.topic_starts), for a topic added to a running
    # lake whose earlier hours are to be landed; hour-aligned, UTC.
    start_date: dt.datetime | None = None


# Formats whose decoder reads ``binary_encoding`` and ``update_images_swapped`` (the Canal
# family), and the encodings.
CANAL_FAMILY_FORMATS = ("auto", "canal_json", "cloudcanal_json", "drs_json", "drs_json_c", "oms_canal")
# The same as cdclake.formats._canal_family.BINARY_ENCODINGS (not imported: this module is read
# at DAG parse time and stays free of the decoders).
BINARY_ENCODINGS = ("latin1", "hex", "base64", "byte_list")


@dataclass(frozen=True)
class GateConfig:
    quarantine_rate_max: float = 0.05
    warning_rate_max: float = 0.05
    event_time_floor: str = "2000-01-01"
    future_tolerance_minutes: int = 60
    clock_skew_minutes: int = 10


@dataclass(frozen=True)
class MaintenanceConfig:
    """Daily table maintenance (``spark_jobs.maintenance``); ``maintenance:`` in the YAML file."""

    # Snapshots older than this are expired (time travel reaches back this far) ...
    snapshot_retention_days: int = 7
    # ... but every table keeps at least this many, and snapshots that branches/tags reference.
    retain_last: int = 5
    # Files no snapshot references are deleted only once older than this: an in-flight write's
    # files are unreferenced until it commits, so this must exceed the longest write.
    orphan_file_age_days: int = 3
    # rewrite_data_files: rewrite a group once it has this many files ...
    min_input_files: int = 5
    # ... or any data file with at least this many delete files (merge-on-read current tables).
    delete_file_threshold: int = 1
    target_file_size_bytes: int | None = None
    # A current table (created unpartitioned) is bucketed by key once it holds this many rows.
    bucket_rows: int = 1_000_000
    # GX validation results and Data Docs pages of gates older than this are deleted (the
    # durable record is ops.gate_results).
    gate_results_retention_days: int = 30


@dataclass(frozen=True)
class PipelineConfig:
    bootstrap_servers: str
    kafka_port: int
    kafka_options: dict[str, str]
    kafka_conn_id: str
    catalog_name: str
    catalog_uri: str
    warehouse: str
    spark_master: str
    spark_driver_memory: str
    spark_conf: dict[str, str]
    # The Spark Connect server every job runs on (``cdclake spark start`` listens on spark_port).
    spark_port: int
    spark_remote: str
    topics: tuple[TopicConfig, ...]
    gates: GateConfig
    tombstone_retention_days: int
    max_value_bytes: int
    home: Path
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)
    # The hourly DAG's first data interval; the scheduler catches up from here, older hours are
    # backfills. Hour-aligned, UTC.
    start_date: dt.datetime = DEFAULT_START_DATE
    # Set by the user (file or CDCLAKE_START_DATE): the lake's history begins there, so an hour
    # after it lands only once the hours before it have (see cdclake.topic_starts).
    start_date_explicit: bool = False
    # landing.max_transaction_stall_hours: an open transaction may hold a partition back this long.
    max_transaction_stall_hours: float = 2.0
    # compaction.threads: tables compacted at once (each its own Iceberg commits) on one session.
    compaction_threads: int = 4
    retention: RetentionConfig = field(default_factory=RetentionConfig)

    def topic(self, name: str) -> TopicConfig:
        for topic in self.topics:
            if topic.name == name:
                return topic
        return TopicConfig(name=name)

    @property
    def table_prefixes(self) -> dict[str, str]:
        """Topic -> its ``table_prefix``, for the topics that set one."""
        return {t.name: t.table_prefix for t in self.topics if t.table_prefix}


def _running_broker_port(home: Path) -> int | None:
    """The port of the broker this state folder runs (``cdclake kafka start --port P``), if any:
    the clients follow it rather than the file's ``kafka.port``, which only says where to start
    one (``CDCLAKE_KAFKA_PORT`` still wins)."""
    if not (home / "kafka" / "broker.pid").exists():
        return None
    from cdclake.kafka_broker import status

    running = status(home)
    return running[1] if running and running[1] else None


def _running_spark_port(home: Path) -> int | None:
    """The port of the Spark Connect server this state folder runs (``cdclake spark start
    --port P``), if any, as for the broker."""
    if not (home / "spark" / "server.pid").exists():
        return None
    from cdclake.spark_server import status

    running = status(home)
    return running[1] if running and running[1] else None


def load_config(path: Path | None = None, env: dict[str, str] | None = None) -> PipelineConfig:
    """Read the YAML file and apply environment overrides."""
    env = dict(os.environ) if env is None else env
    file = Path(path or config_path())
    try:
        raw: dict[str, Any] = yaml.safe_load(file.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"configuration file {file} not found; set CDCLAKE_CONFIG or create it") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file {file} is not valid YAML: {exc}") from None
    _refuse_literal_secrets(raw, file)
    raw = _expand(raw, env, file, "")
    home = state_home()
    kafka = raw.get("kafka") or {}
    catalog = raw.get("catalog") or {}
    spark = raw.get("spark") or {}
    gates = raw.get("gates") or {}
    port = int(env.get("CDCLAKE_KAFKA_PORT") or _running_broker_port(home) or kafka.get("port") or 9092)
    bootstrap = env.get("CDCLAKE_KAFKA_BOOTSTRAP") or kafka.get("bootstrap_servers") or f"localhost:{port}"
    topics = tuple(_topic(t) for t in raw.get("topics") or [])
    start_date = env.get("CDCLAKE_START_DATE") or (raw.get("schedule") or {}).get("start_date")
    spark_port = int(env.get("CDCLAKE_SPARK_PORT") or _running_spark_port(home) or spark.get("port") or 15002)
    spark_remote = str(env.get("CDCLAKE_SPARK_REMOTE") or spark.get("remote") or f"sc://127.0.0.1:{spark_port}")
    config = PipelineConfig(
        bootstrap_servers=str(bootstrap),
        kafka_port=port,
        kafka_options={str(k): str(v) for k, v in (kafka.get("options") or {}).items()},
        kafka_conn_id=str(kafka.get("airflow_conn_id") or "kafka_default"),
        catalog_name=str(catalog.get("name") or "lakehouse"),
        catalog_uri=env.get("CDCLAKE_CATALOG_URI") or catalog.get("uri") or f"sqlite:///{home}/catalog.db",
        warehouse=env.get("CDCLAKE_WAREHOUSE") or catalog.get("warehouse") or f"file://{home}/warehouse",
        spark_master=env.get("CDCLAKE_SPARK_MASTER") or spark.get("master") or "local[2]",
        spark_driver_memory=str(spark.get("driver_memory") or "4g"),
        spark_conf={**{str(k): str(v) for k, v in (spark.get("conf") or {}).items()},
                    **_conf_pairs(env.get("CDCLAKE_SPARK_CONF") or "")},
        spark_port=spark_port,
        spark_remote=spark_remote,
        topics=topics,
        gates=GateConfig(**{k: v for k, v in gates.items() if k in GateConfig.__dataclass_fields__}),
        tombstone_retention_days=int((raw.get("compaction") or {}).get("tombstone_retention_days", 7)),
        max_value_bytes=int((raw.get("normalize") or {}).get("max_value_bytes", 4 * 1024 * 1024)),
        home=home,
        maintenance=_maintenance(raw.get("maintenance") or {}),
        start_date=_start_date(start_date),
        start_date_explicit=start_date not in (None, ""),
        max_transaction_stall_hours=_stall_hours(
            (raw.get("landing") or {}).get("max_transaction_stall_hours")),
        compaction_threads=_compaction_threads((raw.get("compaction") or {}).get("threads")),
        retention=retention.parse(raw.get("retention") or {}),
    )
    masking.register(masking.uri_password(config.catalog_uri))
    masking.register_settings(config.kafka_options)
    masking.register_settings(config.spark_conf)
    return config


_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _expand(value: Any, env: dict[str, str], file: Path, where: str) -> Any:
    """Every ``${NAME}`` in the file's strings replaced by that environment variable."""
    if isinstance(value, dict):
        return {k: _expand(v, env, file, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, env, file, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def substitute(match: re.Match[str]) -> str:
        name = match[1]
        if name not in env:
            raise ConfigError(f"{file}: {where} refers to ${{{name}}}, which is not set in the environment")
        return env[name]

    return _REFERENCE.sub(substitute, value)


def _refuse_literal_secrets(raw: dict[str, Any], file: Path) -> None:
    """A secret written in the file itself (not a ``${NAME}`` reference) is refused."""
    def reference(text: str) -> bool:
        return bool(_REFERENCE.fullmatch(text))

    found: list[str] = []
    for section, key in (("kafka", "options"), ("spark", "conf")):
        for name, value in ((raw.get(section) or {}).get(key) or {}).items():
            if value is None or not masking.sensitive(str(name)):
                continue
            text = str(value)
            passwords = masking.JAAS_PASSWORD.findall(text) if "jaas" in str(name).lower() else [text]
            if not all(reference(p) for p in passwords):
                found.append(f"{section}.{key}.{name}")
    uri = str((raw.get("catalog") or {}).get("uri") or "")
    password = masking.uri_password(uri)
    if password is not None and not reference(password):
        found.append("catalog.uri (the password in its user info)")
    if found:
        raise ConfigError(
            f"{file} holds literal secrets in {', '.join(found)}: write ${{NAME}} there and set the "
            "environment variable NAME (or keep Kafka credentials in the Airflow connection "
            "kafka.airflow_conn_id names); the file is not a place for passwords")


def _compaction_threads(value: object) -> int:
    if value is None:
        return 4
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"compaction.threads must be a whole number of at least 1, got {value!r}")
    return value


def _stall_hours(value: object) -> float:
    if value is None:
        return 2.0
    try:
        if isinstance(value, bool):
            raise ValueError(value)
        hours = float(str(value))
    except ValueError:
        raise ConfigError("landing.max_transaction_stall_hours must be a number of hours, "
                          f"got {value!r}") from None
    if hours <= 0:
        raise ConfigError("landing.max_transaction_stall_hours must be more than 0")
    return hours


def _start_date(value: object, name: str = "schedule.start_date") -> dt.datetime:
    """``schedule.start_date`` (or a topic's): an ISO hour (``2025-02-03T07:00:00Z``); zone-less
    means UTC."""
    if value is None or value == "":
        return DEFAULT_START_DATE
    if isinstance(value, dt.datetime):
        parsed = value
    elif isinstance(value, dt.date):
        parsed = dt.datetime(value.year, value.month, value.day)
    else:
        try:
            parsed = dt.datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise ConfigError(f"{name} {value!r} is not an ISO date-time "
                              "(e.g. 2025-02-03T07:00:00Z)") from None
    parsed = parsed.replace(tzinfo=dt.UTC) if parsed.tzinfo is None else parsed.astimezone(dt.UTC)
    if (parsed.minute, parsed.second, parsed.microsecond) != (0, 0, 0):
        raise ConfigError(f"{name} {value!r} must be on the hour: the DAG runs hourly intervals")
    return parsed


def _conf_pairs(text: str) -> dict[str, str]:
    """``CDCLAKE_SPARK_CONF``: ``key=value`` pairs separated by commas or new lines (e.g. S3 endpoint)."""
    pairs: dict[str, str] = {}
    for item in (part.strip() for part in text.replace("\n", ",").split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"CDCLAKE_SPARK_CONF entry {item!r} is not key=value "
                              "(e.g. spark.hadoop.fs.s3a.endpoint=http://minio:9000)")
        pairs[key.strip()] = value.strip()
    return pairs


def _maintenance(raw: dict[str, Any]) -> MaintenanceConfig:
    unknown = sorted(set(raw) - set(MaintenanceConfig.__dataclass_fields__))
    if unknown:
        raise ConfigError(f"unknown key(s) under 'maintenance': {unknown}; known: "
                          f"{sorted(MaintenanceConfig.__dataclass_fields__)}")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None and key == "target_file_size_bytes":  # None: Iceberg's own target
            values[key] = None
            continue
        try:
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError(value)
            values[key] = int(value)
        except ValueError:
            raise ConfigError(f"maintenance.{key} must be a whole number, got {value!r} (leave the key "
                              f"out for the default, {getattr(MaintenanceConfig, key)!r})") from None
    config = MaintenanceConfig(**values)
    if config.retain_last < 1:
        raise ConfigError("maintenance.retain_last must be at least 1 (the current snapshot)")
    if config.snapshot_retention_days < 0:
        raise ConfigError("maintenance.snapshot_retention_days must be 0 or more")
    if config.gate_results_retention_days < 0:
        raise ConfigError("maintenance.gate_results_retention_days must be 0 or more")
    if config.orphan_file_age_days < 1:
        raise ConfigError("maintenance.orphan_file_age_days must be at least 1: younger unreferenced "
                          "files may belong to a write that has not committed yet")
    return config


_TABLE_PREFIX = re.compile(r"[a-z0-9]+(_[a-z0-9]+)*")


def _topic(raw: dict[str, Any]) -> TopicConfig:
    if "name" not in raw:
        raise ConfigError(f"every entry under 'topics' needs a 'name': {raw!r}")
    unknown = sorted(set(raw) - set(TopicConfig.__dataclass_fields__))
    if unknown:  # a misspelt option would otherwise be ignored silently
        raise ConfigError(f"topic {raw['name']!r}: unknown key(s) {unknown}; known: "
                          f"{sorted(TopicConfig.__dataclass_fields__)}")
    topic = TopicConfig(
        name=str(raw["name"]),
        format=str(raw.get("format") or "auto"),
        source_timezone=str(raw.get("source_timezone") or "UTC"),
        primary_keys=_table_columns(raw, "primary_keys"),
        string_columns=_table_columns(raw, "string_columns"),
        # Relative to where the configuration is read, made absolute here: the Spark Connect
        # server's decoders run elsewhere.
        schema_file=(None if raw.get("schema_file") is None
                     else str(Path(raw["schema_file"]).expanduser().resolve())),
        quarantine_rate_max=raw.get("quarantine_rate_max"),
        warning_rate_max=raw.get("warning_rate_max"),
        flattened=_boolean(raw.get("flattened", False), f"topic {raw['name']!r}: 'flattened'"),
        source_table=None if raw.get("source_table") is None else str(raw["source_table"]),
        binary_encoding=(None if raw.get("binary_encoding") is None
                         else str(raw["binary_encoding"])),
        update_images_swapped=_boolean(raw.get("update_images_swapped", False),
                                       f"topic {raw['name']!r}: 'update_images_swapped'"),
        produced_timezone=(None if raw.get("produced_timezone") is None
                           else str(raw["produced_timezone"])),
        unavailable_value_placeholder=(None if raw.get("unavailable_value_placeholder") is None
                                       else str(raw["unavailable_value_placeholder"])),
        table_prefix=None if raw.get("table_prefix") is None else str(raw["table_prefix"]),
        history=_history(raw),
        start_date=(None if raw.get("start_date") in (None, "")
                    else _start_date(raw["start_date"], f"topic {raw['name']!r}: 'start_date'")),
    )
    if topic.table_prefix is not None and not _TABLE_PREFIX.fullmatch(topic.table_prefix):
        raise ConfigError(f"topic {topic.name!r}: 'table_prefix' must be lower-case letters and "
                          "digits, single '_' between them (it starts current table names), "
                          f"got {topic.table_prefix!r}")
    _check_flattened(topic)
    _check_canal_family_options(topic)
    if topic.produced_timezone is not None and topic.format != "ogg_json":
        raise ConfigError(f"topic {topic.name!r}: 'produced_timezone' is read by ogg_json (the zone of "
                          f"GoldenGate's current_ts), not by {topic.format!r}")
    for name in ("source_timezone", "produced_timezone"):
        _check_zone(getattr(topic, name), f"topic {topic.name!r}: '{name}'")
    _check_placeholder(topic)
    return topic


def _history(raw: dict[str, Any]) -> tuple[str, ...]:
    value = raw.get("history", False)
    if isinstance(value, bool):
        return ("*",) if value else ()
    if isinstance(value, list) and value and all(isinstance(t, str) and t for t in value):
        return tuple(value)
    raise ConfigError(f"topic {raw['name']!r}: 'history' must be true, false or a list of tables "
                      f"(\"db.table\" or \"table\"), got {value!r}")


def _table_columns(raw: dict[str, Any], key: str) -> dict[str, tuple[str, ...]]:
    """A per-table option: ``{"db.table" or "table": [column, ...]}``."""
    value = raw.get(key) or {}
    where = f"topic {raw['name']!r}: {key!r}"
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must map \"db.table\" (or \"table\") to a list of column names, "
                          f"got {value!r}")
    tables = {}
    for table, columns in value.items():
        if (not isinstance(columns, list) or not columns
                or not all(isinstance(c, str) and c for c in columns)):
            raise ConfigError(f"{where}: {table!r} must be a list of column names, got {columns!r}")
        tables[str(table)] = tuple(columns)
    return tables


def _check_placeholder(topic: TopicConfig) -> None:
    setting = topic.unavailable_value_placeholder
    if setting is None:
        return
    where = f"topic {topic.name!r}: 'unavailable_value_placeholder'"
    if topic.format not in ("debezium_json", "auto"):
        raise ConfigError(f"{where} is read by debezium_json (Debezium's "
                          f"unavailable.value.placeholder), not by {topic.format!r}")
    if setting in ("", "hex:"):
        raise ConfigError(f"{where} must not be empty")
    if setting.startswith("hex:"):
        try:
            bytes.fromhex(setting[4:])
        except ValueError:
            raise ConfigError(f"{where}: 'hex:' must be followed by hexadecimal bytes, got "
                              f"{setting!r}") from None


def _check_canal_family_options(topic: TopicConfig) -> None:
    where = f"topic {topic.name!r}"
    if topic.binary_encoding is not None and topic.binary_encoding not in BINARY_ENCODINGS:
        raise ConfigError(f"{where}: 'binary_encoding' must be one of {list(BINARY_ENCODINGS)}, "
                          f"got {topic.binary_encoding!r}")
    used = [name for name, set_ in (("binary_encoding", topic.binary_encoding is not None),
                                    ("update_images_swapped", topic.update_images_swapped)) if set_]
    if used and topic.format not in CANAL_FAMILY_FORMATS:
        raise ConfigError(f"{where}: {used[0]!r} is read by the Canal family "
                          f"({', '.join(CANAL_FAMILY_FORMATS)}), not by {topic.format!r}")


def _check_zone(name: str | None, what: str) -> None:
    """An IANA time zone name (``Asia/Shanghai``) or UTC; a misspelt zone would fail every message."""
    if name is None or name in ("UTC", "Z", "Etc/UTC"):
        return
    try:
        ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        raise ConfigError(f"{what} must be an IANA time zone name such as Asia/Shanghai, "
                          f"got {name!r}") from None


def _boolean(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{what} must be true or false, got {value!r}")
    return value


def _check_flattened(topic: TopicConfig) -> None:
    where = f"topic {topic.name!r}"
    if topic.source_table is not None:
        parts = topic.source_table.split(".")
        if len(parts) not in (2, 3) or not all(p.strip() for p in parts):
            raise ConfigError(f"{where}: 'source_table' must be database.table or "
                              f"database.schema.table, got {topic.source_table!r}")
    if topic.flattened:
        if topic.format != "debezium_json":
            raise ConfigError(f"{where}: 'flattened' is for format debezium_json "
                              "(Debezium's ExtractNewRecordState output)")
        if topic.source_table is None:
            raise ConfigError(f"{where}: 'flattened' needs 'source_table', the table the tombstones "
                              "delete from (a tombstone carries only the key)")
