"""The Kafka client configuration: from an Airflow connection when there is one, else the config file.

The apache-kafka provider keeps a connection's whole client configuration (``bootstrap.servers``,
``security.protocol``, ``sasl.*``, ``ssl.*`` ...) as the connection's extra JSON; cdclake reads the
same shape. Resolution happens when a task or command runs (never at import or DAG parse time):

1. ``AIRFLOW_CONN_<CONN_ID>`` in the environment (JSON with ``extra``, or a URI), no Airflow needed;
2. inside an Airflow process (Airflow already imported), ``BaseHook.get_connection(conn_id)``;
3. otherwise ``PipelineConfig.bootstrap_servers`` plus ``kafka.options`` from the config file.

Secret values (``sasl.password``, ``sasl.jaas.config`` ...) are registered with
:mod:`cdclake.masking` as soon as they are read. Settings are librdkafka (confluent-kafka) keys;
:func:`spark_kafka_options` translates them for Spark's Kafka source, which uses the Java client.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from cdclake import masking
from cdclake.exceptions import ConfigError

log = logging.getLogger(__name__)

# librdkafka keys that mean nothing to the Java client (or are set by the landing job itself).
_LIBRDKAFKA_ONLY = frozenset({
    "sasl.username", "sasl.password", "ssl.ca.location", "ssl.certificate.location",
    "ssl.key.location", "ssl.key.password", "enable.ssl.certificate.verification",
    "group.id", "enable.auto.commit", "auto.offset.reset", "isolation.level", "client.id",
    "socket.timeout.ms", "api.version.request", "debug", "log_level", "statistics.interval.ms",
    "topic.metadata.refresh.interval.ms", "oauth_cb", "error_cb", "stats_cb", "throttle_cb",
})

_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def kafka_client_config(config: Any, conn_id: str | None = None,
                        env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The confluent-kafka client configuration for ``config`` (a ``PipelineConfig``)."""
    conn_id = conn_id or config.kafka_conn_id
    env = os.environ if env is None else env
    found = _from_environment(conn_id, env)
    if found is None and "airflow" in sys.modules:
        found = _from_airflow(conn_id)
    if found is None:
        found = {"bootstrap.servers": config.bootstrap_servers, **config.kafka_options}
        source = "the configuration file"
    else:
        source = f"connection {conn_id!r}"
    settings = {str(k): str(v) for k, v in found.items() if v is not None}
    masking.register_settings(settings)
    if not settings.get("bootstrap.servers"):
        raise ConfigError(f"no bootstrap.servers in {source}; set it there (Kafka client config JSON)")
    log.debug("Kafka settings from %s: bootstrap.servers=%s", source, settings["bootstrap.servers"])
    return settings


def _from_environment(conn_id: str, env: Mapping[str, str]) -> dict[str, Any] | None:
    text = env.get(f"AIRFLOW_CONN_{conn_id.upper()}")
    if not text:
        return None
    text = text.strip()
    if text.startswith("{"):
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"AIRFLOW_CONN_{conn_id.upper()} is not valid JSON: {exc}") from None
        extra = raw.get("extra") or {}
        return json.loads(extra) if isinstance(extra, str) else dict(extra)
    # URI form: kafka://?__extra__=<json> or kafka://?bootstrap.servers=...&security.protocol=...
    query = dict(parse_qsl(urlsplit(text).query))
    if "__extra__" in query:
        return dict(json.loads(unquote(query["__extra__"])))
    return query


def _from_airflow(conn_id: str) -> dict[str, Any] | None:
    try:
        from airflow.sdk import BaseHook
    except ImportError:  # an Airflow without the task SDK
        return None
    try:
        return dict(BaseHook.get_connection(conn_id).extra_dejson)
    except Exception as exc:  # AirflowNotFoundException and friends: fall back to the file
        log.info("Airflow connection %r not usable (%s); using the configuration file", conn_id, exc)
        return None


def spark_kafka_options(settings: Mapping[str, str]) -> dict[str, str]:
    """``kafka.*`` options for Spark's Kafka source from librdkafka-style ``settings``.

    Keys both clients share pass through; SASL user/password become a JAAS line; a PEM CA file
    becomes a PEM trust store. Keys only librdkafka knows are dropped (logged).
    """
    options: dict[str, str] = {}
    for key, value in settings.items():
        if key not in _LIBRDKAFKA_ONLY:
            options[f"kafka.{key}"] = value
    mechanism = settings.get("sasl.mechanism") or settings.get("sasl.mechanisms")
    options.pop("kafka.sasl.mechanisms", None)
    if mechanism:
        options["kafka.sasl.mechanism"] = mechanism
    user, password = settings.get("sasl.username"), settings.get("sasl.password")
    if user is not None and password is not None and "sasl.jaas.config" not in settings:
        module = _JAAS_MODULES.get((mechanism or "PLAIN").upper())
        if module is None:
            raise ConfigError(f"sasl.mechanism {mechanism!r} needs sasl.jaas.config for Spark; add it "
                              "to the Kafka connection")
        quoted_user, quoted_password = (v.replace("\\", "\\\\").replace('"', '\\"') for v in (user, password))
        options["kafka.sasl.jaas.config"] = (
            f'{module} required username="{quoted_user}" password="{quoted_password}";')
    if "ssl.ca.location" in settings and "ssl.truststore.location" not in settings:
        options["kafka.ssl.truststore.type"] = "PEM"
        options["kafka.ssl.truststore.location"] = settings["ssl.ca.location"]
    dropped = sorted(k for k in settings if k in _LIBRDKAFKA_ONLY and not k.startswith(("sasl.", "ssl.ca")))
    if dropped:
        log.info("Kafka settings not passed to Spark (librdkafka only): %s", ", ".join(dropped))
    return options
