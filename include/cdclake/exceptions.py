"""Errors cdclake raises for users; each message says what to do next."""

from __future__ import annotations


class CdclakeError(Exception):
    """Base of every cdclake error shown to a user."""


class ConfigError(CdclakeError):
    """The pipeline configuration is missing or invalid."""


class BrokerError(CdclakeError):
    """The embedded Kafka broker could not be started, stopped or reached."""


class SparkServerError(CdclakeError):
    """The Spark Connect server could not be started, stopped or reached."""


class SetupError(CdclakeError):
    """Something set-up should have installed is missing (jars, venv)."""


class LandingError(CdclakeError):
    """Planning or landing an hour of Kafka offsets failed."""


class TopicNotFoundError(LandingError):
    """A configured topic does not exist on the Kafka cluster."""


class HourNotOverError(LandingError):
    """The hour's end lies in the future: its offsets are not final yet."""


class RetentionGapError(LandingError):
    """Kafka no longer holds offsets that belong to an hour that was not landed."""


class ExpiredHourError(CdclakeError):
    """An hour's raw copy expired under retention: a re-run needs it landed again from Kafka
    (not a LandingError: retrying changes nothing)."""


class OffsetContinuityError(LandingError):
    """An hour's range does not start where the previous landed hour ended (gap or overlap)."""


class TransactionStalledError(LandingError):
    """A transaction left open holds a partition's last stable offset still past the allowed stall."""


class GateFailed(CdclakeError):
    """A quality gate found data that must not be published; the message lists what failed."""


class ErasureError(CdclakeError):
    """An erasure was refused (an unknown table or key, an hour in flight, a tag or branch that
    would keep the rows readable) or not confirmed; nothing was erased."""


class ErasureDeferred(ErasureError):
    """An erasure waits for an hour in flight to publish (the DAG's task retries it)."""
