"""Secrets never echoed: passwords found in the configuration are masked in errors and logs.

Secrets enter through three doors: a catalog URI's user info, the Kafka client settings (from
an Airflow connection, ``AIRFLOW_CONN_*`` or ``kafka.options``) and ``spark.conf``. Each value
found is registered here once; :func:`mask` then replaces it in any text, the CLI masks every
error it prints, :class:`MaskingFilter` masks this process's log records, and inside an Airflow
task the value also goes to Airflow's own masker, which covers task logs and tracebacks.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

MASK = "***"

# Setting names whose values are secrets (Kafka, Spark, S3, JDBC spellings).
SENSITIVE_KEY = re.compile(r"(?i)password|passwd|secret|token|jaas|credential|private[._-]?key|"
                           r"api[._-]?key")

# A value shorter than this is not masked: masking "a" or "1" would garble every line.
_MIN_LENGTH = 4

_registered: set[str] = set()

# The password of a JAAS login line (``... password="secret";``).
JAAS_PASSWORD = re.compile(r'password\s*=\s*"((?:[^"\\]|\\.)*)"')


def sensitive(key: str) -> bool:
    """Whether a setting called ``key`` holds a secret."""
    return bool(SENSITIVE_KEY.search(key))


def uri_password(uri: str) -> str | None:
    """The password in a URI's user info (``scheme://user:password@host``), if any."""
    try:
        return urlsplit(uri).password
    except ValueError:
        return None


def mask_uri(uri: str) -> str:
    """``uri`` with the password of its user info replaced by ``***``."""
    password = uri_password(uri)
    if not password:
        return uri
    scheme, sep, rest = uri.partition("://")
    userinfo, at, host = rest.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return f"{scheme}{sep}{user}:{MASK}{at}{host}"


def register(*values: str | None) -> None:
    """Remember secret values for :func:`mask` (and Airflow's masker in a task process)."""
    fresh = {v for v in values if v and len(v) >= _MIN_LENGTH and v not in _registered}
    if not fresh:
        return
    _registered.update(fresh)
    if "airflow.sdk" in sys.modules:  # in an Airflow process: its task logs mask them too
        try:
            from airflow.sdk.log import mask_secret
        except ImportError:
            return
        for value in fresh:
            mask_secret(value)


def register_settings(settings: Mapping[str, object]) -> None:
    """Register the values of ``settings`` whose keys name secrets (``sasl.password``,
    ``sasl.jaas.config`` and the password inside it, ``fs.s3a.secret.key`` ...)."""
    for key, value in settings.items():
        if value is None or not sensitive(str(key)):
            continue
        text = str(value)
        register(text, *JAAS_PASSWORD.findall(text))


def mask(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every registered secret (and ``extra``) replaced by ``***``; passwords in
    URIs are masked even when never registered."""
    values = sorted({*_registered, *(v for v in extra if v and len(v) >= _MIN_LENGTH)}, key=len,
                    reverse=True)
    for value in values:
        text = text.replace(value, MASK)
    return re.sub(r"(\b[a-z][a-z0-9+.-]*://[^\s/:@]+:)([^\s/@]+)(@)", rf"\1{MASK}\3", text)


class MaskingFilter(logging.Filter):
    """Masks registered secrets in every record that passes through a handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _registered or "://" in str(record.msg):
            message = record.getMessage()
            masked = mask(message)
            if masked != message:
                record.msg, record.args = masked, None
        return True


def install_log_filter(logger: logging.Logger | None = None) -> None:
    """Add :class:`MaskingFilter` to ``logger``'s handlers (the root's by default)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, MaskingFilter) for f in handler.filters):
            handler.addFilter(MaskingFilter())
