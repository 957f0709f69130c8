"""Secure defaults without services: secrets masked and kept out of pipeline.yml, private state
folders, the Airflow login settings, and a demo that never wipes a folder it did not make."""

from __future__ import annotations

import json
import logging
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cdclake import masking
from cdclake.config import load_config
from cdclake.exceptions import CdclakeError, ConfigError

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule required"


def _secret() -> str:
    return f"s3cr3t-{secrets.token_hex(8)}"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipeline.yml"
    path.write_text(text)
    return path


def test_uri_passwords_are_masked_even_unregistered() -> None:
    assert masking.mask_uri("postgresql+psycopg2://iceberg:p%40ss@db:5432/iceberg") == (
        "postgresql+psycopg2://iceberg:***@db:5432/iceberg")
    assert masking.mask_uri("sqlite:////state/catalog.db") == "sqlite:////state/catalog.db"
    text = "cannot reach postgresql://u:hunter2x@db/x (timeout); sc://127.0.0.1:15002 is fine"
    assert masking.mask(text) == (
        "cannot reach postgresql://u:***@db/x (timeout); sc://127.0.0.1:15002 is fine")


def test_kafka_secrets_are_registered_and_masked_including_the_jaas_line() -> None:
    from cdclake.kafka_settings import kafka_client_config, spark_kafka_options

    password = _secret()
    conn = json.dumps({"conn_type": "kafka", "extra": {
        "bootstrap.servers": "broker:9093", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "cdc", "sasl.password": password}})
    settings = kafka_client_config(load_config(env={}), env={"AIRFLOW_CONN_KAFKA_DEFAULT": conn})
    jaas = spark_kafka_options(settings)["kafka.sasl.jaas.config"]
    assert password in jaas
    assert masking.mask(f"options {settings} {jaas}").count(password) == 0
    assert masking.mask(f"failed with {jaas}") == (
        'failed with org.apache.kafka.common.security.scram.ScramLoginModule required username="cdc" '
        'password="***";')


def test_log_records_are_masked(caplog) -> None:
    password = _secret()
    masking.register(password)
    logger = logging.getLogger("cdclake.test_masking")
    handler = logging.StreamHandler()
    logger.addHandler(handler)
    try:
        masking.install_log_filter(logger)
        with caplog.at_level(logging.INFO, logger="cdclake.test_masking"):
            logger.info("connecting with %s", password)
    finally:
        logger.removeHandler(handler)
    assert caplog.records[-1].getMessage() == "connecting with ***"


def test_a_literal_secret_in_the_file_is_refused_naming_where(tmp_path) -> None:
    password = _secret()
    path = _write(tmp_path, f"""
kafka:
  options:
    security.protocol: SASL_SSL
    sasl.username: cdc
    sasl.password: {password}
spark:
  conf:
    spark.hadoop.fs.s3a.secret.key: {password}
catalog:
  uri: postgresql://iceberg:{password}@db/iceberg
""")
    with pytest.raises(ConfigError) as refused:
        load_config(path, env={})
    message = str(refused.value)
    for where in ("kafka.options.sasl.password", "spark.conf.spark.hadoop.fs.s3a.secret.key", "catalog.uri"):
        assert where in message
    assert password not in message


def test_a_literal_password_inside_a_jaas_line_is_refused(tmp_path) -> None:
    path = _write(tmp_path, f"""
kafka:
  options:
    sasl.jaas.config: '{PLAIN} username="u" password="lit3ral";'
""")
    with pytest.raises(ConfigError, match=r"kafka\.options\.sasl\.jaas\.config"):
        load_config(path, env={})


def test_secrets_come_from_the_environment_and_are_registered(tmp_path) -> None:
    password = _secret()
    path = _write(tmp_path, """
kafka:
  bootstrap_servers: ${KAFKA_BROKERS}
  options:
    sasl.username: cdc
    sasl.password: ${KAFKA_PASSWORD}
    sasl.jaas.config: 'PLAIN username="cdc" password="${KAFKA_PASSWORD}";'
catalog:
  uri: postgresql://iceberg:${ICEBERG_PASSWORD}@db/iceberg
""".replace("PLAIN", PLAIN))
    config = load_config(path, env={"KAFKA_BROKERS": "b1:9092,b2:9092", "KAFKA_PASSWORD": password,
                                    "ICEBERG_PASSWORD": password + "x"})
    assert config.bootstrap_servers == "b1:9092,b2:9092"
    assert config.kafka_options["sasl.password"] == password
    assert config.catalog_uri == f"postgresql://iceberg:{password}x@db/iceberg"
    assert masking.mask(f"{config.catalog_uri} {config.kafka_options}").count(password) == 0
    with pytest.raises(ConfigError, match=r"kafka\.options\.sasl\.password refers to \$\{KAFKA_PASSWORD\}"):
        load_config(path, env={"KAFKA_BROKERS": "b:9092", "ICEBERG_PASSWORD": "y"})


def test_cli_errors_are_masked(tmp_path) -> None:
    """A password that reaches an error message is printed as ***."""
    password = _secret()
    path = _write(tmp_path, "catalog:\n  uri: mysql://u:${PW}@db/x\n")
    env = {**os.environ, "CDCLAKE_HOME": str(tmp_path / "home"), "CDCLAKE_CONFIG": str(path), "PW": password}
    run = subprocess.run([sys.executable, "-m", "cdclake.cli", "query", "SELECT 1 FROM current.x"],
                         capture_output=True, text=True, env=env, check=False)
    assert run.returncode != 0
    assert password not in run.stdout + run.stderr
    assert run.stderr.strip(), "the command should fail loudly"


def test_the_state_folder_is_made_private_and_tightened(tmp_path, monkeypatch) -> None:
    from cdclake.paths import state_home

    fresh = tmp_path / "fresh" / "state"
    monkeypatch.setenv("CDCLAKE_HOME", str(fresh))
    assert state_home() == fresh and _mode(fresh) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    monkeypatch.setenv("CDCLAKE_HOME", str(loose))
    state_home()
    assert _mode(loose) == 0o700


def test_airflow_runs_with_a_login_on_localhost(tmp_path, monkeypatch) -> None:
    from cdclake.airflow_env import admin_password, airflow_env, password_file

    monkeypatch.setenv("CDCLAKE_HOME", str(tmp_path))
    monkeypatch.setenv("AIRFLOW__SIMPLE_AUTH_MANAGER__ALL_ADMINS", "True")  # the misspelt option
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "True")
    config = load_config(env={})
    password = admin_password(config)
    assert len(password) >= 20 and admin_password(config) == password
    assert _mode(password_file(config)) == 0o600
    env = airflow_env(config)
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS"] == "False"
    assert "AIRFLOW__SIMPLE_AUTH_MANAGER__ALL_ADMINS" not in env
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == "admin:admin"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] == str(password_file(config))
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"


def test_airflow_password_shows_the_login(tmp_path) -> None:
    env = {**os.environ, "CDCLAKE_HOME": str(tmp_path)}
    run = subprocess.run([sys.executable, "-m", "cdclake.cli", "airflow", "password"], capture_output=True,
                         text=True, env=env, check=True)
    stored = json.loads((tmp_path / "airflow" / "passwords.json").read_text())["admin"]
    assert run.stdout.splitlines()[:2] == ["user: admin", f"password: {stored}"]


def test_the_ui_address_follows_the_host() -> None:
    from cdclake.airflow_cli import ui_url

    assert ui_url("127.0.0.1", 8080) == "http://127.0.0.1:8080"
    assert ui_url("0.0.0.0", 8081) == "http://127.0.0.1:8081"
    assert ui_url("10.0.0.5", 8080) == "http://10.0.0.5:8080"


def test_the_demo_refuses_a_folder_it_did_not_make(tmp_path) -> None:
    from cdclake.demo import DEMO_MARKER, refuse_foreign_folder

    refuse_foreign_folder(tmp_path / "new")  # missing: fine
    (tmp_path / "empty").mkdir()
    refuse_foreign_folder(tmp_path / "empty")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("important")
    with pytest.raises(CdclakeError, match="not empty and was not created by `cdclake demo`"):
        refuse_foreign_folder(mine)
    assert (mine / "notes.txt").read_text() == "important"
    (mine / DEMO_MARKER).write_text("")
    refuse_foreign_folder(mine)


def test_cdclake_demo_refuses_on_the_command_line(tmp_path) -> None:
    (tmp_path / "keep.txt").write_text("x")
    env = {**os.environ, "CDCLAKE_HOME": str(tmp_path / "state")}
    run = subprocess.run([sys.executable, "-m", "cdclake.cli", "demo", "--home", str(tmp_path)],
                         capture_output=True, text=True, env=env, check=False)
    assert run.returncode == 2
    assert "refusing to use" in run.stderr and (tmp_path / "keep.txt").exists()


def test_the_spark_server_command_line_holds_no_password(tmp_path, monkeypatch) -> None:
    """A command line is world-readable (/proc/<pid>/cmdline): the catalog's password goes
    through a 0600 properties file instead."""
    from cdclake.spark_server import server_command, server_paths

    password = _secret()
    monkeypatch.setenv("CDCLAKE_HOME", str(tmp_path))
    monkeypatch.setenv("ICEBERG_PASSWORD", password)
    path = _write(tmp_path, "catalog:\n  uri: postgresql://iceberg:${ICEBERG_PASSWORD}@db:5432/iceberg\n")
    config = load_config(path)
    paths = server_paths(tmp_path)
    command = server_command(config, 15002, "127.0.0.1", paths)
    assert not [arg for arg in command if password in arg]
    assert command[command.index("--properties-file") + 1] == str(paths.secrets)
    assert paths.secrets.read_text() == f"spark.sql.catalog.lakehouse.jdbc.password={password}\n"
    assert _mode(paths.secrets) == 0o600
    assert "spark.sql.catalog.lakehouse.jdbc.user=iceberg" in command


def test_the_demo_folder_is_private_and_only_a_previous_demo_is_wiped(tmp_path) -> None:
    from cdclake.demo import DEMO_MARKER, prepare_home

    home = tmp_path / "demo"
    prepare_home(home)
    assert _mode(home) == 0o700 and [p.name for p in home.iterdir()] == [DEMO_MARKER]
    (home / "catalog.db").write_text("old demo")
    prepare_home(home)
    assert [p.name for p in home.iterdir()] == [DEMO_MARKER]
