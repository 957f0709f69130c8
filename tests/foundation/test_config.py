"""The pipeline configuration: the hourly DAG's start date (file, environment override, checks)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from cdclake.config import DEFAULT_START_DATE, load_config
from cdclake.exceptions import ConfigError


def _config(tmp_path: Path, text: str, **env: str):
    path = tmp_path / "pipeline.yml"
    path.write_text(text)
    return load_config(path, env=env)


def test_start_date_defaults_to_the_shipped_value(tmp_path: Path) -> None:
    assert _config(tmp_path, "topics: []\n").start_date == DEFAULT_START_DATE
    assert load_config(env={}).start_date == dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(("value", "expected"), [
    ('"2025-02-03T07:00:00Z"', dt.datetime(2025, 2, 3, 7, tzinfo=dt.UTC)),
    ('"2025-02-03T07:00"', dt.datetime(2025, 2, 3, 7, tzinfo=dt.UTC)),
    ('"2025-02-03T15:00:00+08:00"', dt.datetime(2025, 2, 3, 7, tzinfo=dt.UTC)),
    ("2025-02-03", dt.datetime(2025, 2, 3, tzinfo=dt.UTC)),
])
def test_start_date_from_the_file_is_an_utc_hour(tmp_path: Path, value: str, expected: dt.datetime) -> None:
    assert _config(tmp_path, f"schedule:\n  start_date: {value}\n").start_date == expected


def test_the_environment_overrides_the_file(tmp_path: Path) -> None:
    config = _config(tmp_path, 'schedule:\n  start_date: "2025-02-03T07:00:00Z"\n',
                     CDCLAKE_START_DATE="2100-01-01T00:00:00Z")
    assert config.start_date == dt.datetime(2100, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(("value", "reason"), [
    ('"2025-02-03T07:30:00Z"', "must be on the hour"),
    ('"yesterday"', "not an ISO date-time"),
])
def test_bad_start_dates_are_refused_with_the_reason(tmp_path: Path, value: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        _config(tmp_path, f"schedule:\n  start_date: {value}\n")


def test_flattened_debezium_topic_options(tmp_path: Path) -> None:
    config = _config(tmp_path, "topics:\n  - name: dbz.inventory.customers\n    format: debezium_json\n"
                               "    flattened: true\n    source_table: inventory.customers\n")
    [topic] = config.topics
    assert (topic.flattened, topic.source_table) == (True, "inventory.customers")
    assert _config(tmp_path, "topics:\n  - name: t\n").topics[0].flattened is False


@pytest.mark.parametrize(("entry", "reason"), [
    ("format: debezium_json\n    flattened: true", "needs 'source_table'"),
    ("format: canal_json\n    flattened: true\n    source_table: d.t", "is for format debezium_json"),
    ("format: debezium_json\n    flattened: yes please\n    source_table: d.t", "must be true or false"),
    ("format: debezium_json\n    source_table: just_a_table", "database.table or database.schema.table"),
])
def test_bad_flattened_options_are_refused(tmp_path: Path, entry: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        _config(tmp_path, f"topics:\n  - name: t\n    {entry}\n")


def test_binary_encoding_reaches_the_topic_and_its_decoder_options(tmp_path: Path) -> None:
    from spark_jobs.normalize import topic_formats

    config = _config(tmp_path, "topics:\n  - name: tencent.dts\n    format: canal_json\n"
                               "    binary_encoding: hex\n")
    assert config.topics[0].binary_encoding == "hex"
    assert topic_formats(config)["tencent.dts"].options.binary_encoding == "hex"
    assert _config(tmp_path, "topics:\n  - name: t\n").topics[0].binary_encoding is None


def test_update_images_swapped_reaches_the_decoder_options(tmp_path: Path) -> None:
    from spark_jobs.normalize import topic_formats

    config = _config(tmp_path, "topics:\n  - name: aliyun.dts.legacy\n    format: canal_json\n"
                               "    update_images_swapped: true\n")
    assert topic_formats(config)["aliyun.dts.legacy"].options.update_images_swapped is True
    assert _config(tmp_path, "topics:\n  - name: t\n").topics[0].update_images_swapped is False


@pytest.mark.parametrize(("entry", "reason"), [
    ("format: canal_json\n    binary_encoding: utf8", "must be one of"),
    ("format: debezium_json\n    binary_encoding: hex", "read by the Canal family"),
    ("format: debezium_json\n    update_images_swapped: true", "read by the Canal family"),
    ("format: canal_json\n    update_images_swapped: 1", "must be true or false"),
    ("format: canal_json\n    update_image_swapped: true", r"unknown key\(s\) \['update_image_swapped'\]"),
])
def test_bad_canal_family_options_are_refused(tmp_path: Path, entry: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        _config(tmp_path, f"topics:\n  - name: t\n    {entry}\n")


def test_produced_timezone_reaches_the_ogg_decoder_options(tmp_path: Path) -> None:
    from spark_jobs.normalize import topic_formats

    config = _config(tmp_path, "topics:\n  - name: ogg\n    format: ogg_json\n"
                               "    produced_timezone: America/Chicago\n")
    assert topic_formats(config)["ogg"].options.produced_timezone == "America/Chicago"
    assert _config(tmp_path, "topics:\n  - name: t\n").topics[0].produced_timezone is None


def test_unavailable_value_placeholder_reaches_the_debezium_decoder_options(tmp_path: Path) -> None:
    from spark_jobs.normalize import topic_formats

    config = _config(tmp_path, "topics:\n  - name: pg\n    format: debezium_json\n"
                               "    unavailable_value_placeholder: 'hex:3c3c746f6173743e3e'\n")
    assert topic_formats(config)["pg"].options.unavailable_value_placeholder == "hex:3c3c746f6173743e3e"
    assert _config(tmp_path, "topics:\n  - name: t\n").topics[0].unavailable_value_placeholder is None


@pytest.mark.parametrize(("entry", "reason"), [
    ("format: canal_json\n    unavailable_value_placeholder: x", "read by debezium_json"),
    ("format: debezium_json\n    unavailable_value_placeholder: 'hex:zz'", "hexadecimal bytes"),
    ("format: debezium_json\n    unavailable_value_placeholder: ''", "must not be empty"),
])
def test_bad_placeholder_settings_are_refused(tmp_path: Path, entry: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        _config(tmp_path, f"topics:\n  - name: t\n    {entry}\n")


def test_table_prefix_reaches_compaction_and_must_be_a_plain_name(tmp_path: Path) -> None:
    from spark_jobs.compact import options_from_config

    config = _config(tmp_path, "topics:\n  - name: a\n  - name: b\n    table_prefix: eu_2\n")
    assert options_from_config(config).table_prefixes == {"b": "eu_2"}
    for bad in ("EU", "eu__west", "_eu", "eu-west", "''"):
        with pytest.raises(ConfigError, match="'table_prefix' must be lower-case letters and digits"):
            _config(tmp_path, f"topics:\n  - name: t\n    table_prefix: {bad}\n")


def test_history_is_chosen_per_topic_or_per_table(tmp_path: Path) -> None:
    from spark_jobs.compact import options_from_config

    config = _config(tmp_path, "topics:\n  - name: a\n    history: true\n  - name: b\n"
                               "    history: [shop.orders, users]\n  - name: c\n    history: false\n")
    options = options_from_config(config)
    assert options.history == {"a": ("*",), "b": ("shop.orders", "users")}
    assert options.keeps_history("a", ("any", None, "thing"))
    assert options.keeps_history("b", ("shop", None, "orders"))
    assert options.keeps_history("b", ("hr", None, "users"))
    assert not options.keeps_history("b", ("shop", None, "items"))
    assert not options.keeps_history("c", ("shop", None, "orders"))
    for bad in ("yes_please", "[]", "{orders: true}"):
        with pytest.raises(ConfigError, match="'history' must be true, false or a list of tables"):
            _config(tmp_path, f"topics:\n  - name: t\n    history: {bad}\n")


@pytest.mark.parametrize(("entry", "reason"), [
    ("format: canal_json\n    produced_timezone: UTC", "read by ogg_json"),
    ("format: ogg_json\n    produced_timezone: America/Chicagoo", "IANA time zone name"),
    ("format: drs_json\n    source_timezone: Asia/Shangai", "IANA time zone name"),
])
def test_bad_time_zones_are_refused(tmp_path: Path, entry: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        _config(tmp_path, f"topics:\n  - name: t\n    {entry}\n")


def test_per_table_columns_reach_the_decoder_options(tmp_path: Path) -> None:
    from spark_jobs.normalize import topic_formats

    config = _config(tmp_path, "topics:\n  - name: cdc.shop\n    format: canal_json\n"
                               "    primary_keys:\n      shop.orders: [order_id]\n"
                               "    string_columns:\n      shop.orders: [code, note]\n      bins: [code]\n")
    options = topic_formats(config)["cdc.shop"].options
    assert options.primary_key_overrides == {"shop.orders": ("order_id",)}
    assert options.string_columns == {"shop.orders": ("code", "note"), "bins": ("code",)}
    assert _config(tmp_path, "topics:\n  - name: t\n").topics[0].string_columns == {}


@pytest.mark.parametrize(("entry", "reason"), [
    ("string_columns: [code]", r"'string_columns' must map \"db.table\""),
    ("string_columns:\n      shop.orders: code", r"'shop.orders' must be a list of column names, got 'code'"),
    ("string_columns:\n      shop.orders: []", "must be a list of column names"),
    ("primary_keys:\n      shop.orders: id", r"'primary_keys': 'shop.orders' must be a list of column names"),
    ("primary_keys:\n      shop.orders: [1]", "must be a list of column names, got \\[1\\]"),
])
def test_bad_per_table_columns_are_refused(tmp_path: Path, entry: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        _config(tmp_path, f"topics:\n  - name: t\n    {entry}\n")


def test_the_transaction_stall_is_read_and_checked(tmp_path: Path) -> None:
    assert _config(tmp_path, "topics: []\n").max_transaction_stall_hours == 2.0
    half = _config(tmp_path, "landing:\n  max_transaction_stall_hours: 0.5\n")
    assert half.max_transaction_stall_hours == 0.5
    for bad in ("0", "soon", "true"):
        with pytest.raises(ConfigError, match="landing.max_transaction_stall_hours"):
            _config(tmp_path, f"landing:\n  max_transaction_stall_hours: {bad}\n")


def test_a_start_date_is_explicit_only_when_set_and_a_topic_may_set_its_own(tmp_path: Path) -> None:
    assert not _config(tmp_path, "topics: []\n").start_date_explicit
    assert _config(tmp_path, "topics: []\n", CDCLAKE_START_DATE="2025-02-03T07:00:00Z").start_date_explicit
    config = _config(tmp_path, 'schedule:\n  start_date: "2025-02-03T07:00:00Z"\ntopics:\n'
                               '  - {name: a, start_date: "2025-03-01T10:00:00+02:00"}\n  - {name: b}\n')
    assert config.start_date_explicit
    assert [t.start_date for t in config.topics] == [dt.datetime(2025, 3, 1, 8, tzinfo=dt.UTC), None]
    with pytest.raises(ConfigError, match=r"topic 'a': 'start_date' '2025-03-01T10:30:00Z' must be on"):
        _config(tmp_path, 'topics:\n  - {name: a, start_date: "2025-03-01T10:30:00Z"}\n')


def test_retention_keeps_everything_by_default_and_takes_whole_days(tmp_path: Path) -> None:
    from cdclake.retention import RetentionConfig

    assert _config(tmp_path, "topics: []\n").retention == RetentionConfig(None, None, None)
    config = _config(tmp_path, "retention:\n  raw_days: 30\n  quarantine_days: 90\n  changelog_days: null\n")
    assert config.retention == RetentionConfig(raw_days=30, quarantine_days=90)
    assert config.retention.cutoff("raw", dt.datetime(2025, 3, 31, 10, 30, tzinfo=dt.UTC)) == \
        dt.datetime(2025, 3, 1, 10)
    config = _config(tmp_path, "retention:\n  changelog_days: 60\n")
    assert config.retention == RetentionConfig(changelog_days=60)
    assert config.retention.cutoff("changelog", dt.datetime(2025, 3, 31, 10, 30, tzinfo=dt.UTC)) == \
        dt.datetime(2025, 1, 30, 10)
    for text, reason in (("raw_days: 0", "at least 1"), ("raw_days: 1.5", "whole number"),
                         ("changelog_days: -2", "at least 1"),
                         ("raw_dayz: 3", "unknown key")):
        with pytest.raises(ConfigError, match=reason):
            _config(tmp_path, f"retention:\n  {text}\n")
