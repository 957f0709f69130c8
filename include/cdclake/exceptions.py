"""Errors cdclake raises for users; each message says what to do next."""

from __future__ import annotations


class CdclakeError(Exception):
    """Base of every cdclake error shown to a user."""


class ConfigError(CdclakeError):
    """The pipeline configuration is missing or invalid."""


class BrokerError(CdclakeError):
    """The embedded Kafka broker could not be started, stopped or reached."""


class SetupError(CdclakeError):
    """Something set-up should have installed is missing (jars, venv)."""
