"""Decoding errors: every rejection names the format, the field and the condition."""

from __future__ import annotations

# Stable reason codes (stored in cdc.quarantine.reason_code; gates and users filter on them).
INVALID_JSON = "INVALID_JSON"          # value is not JSON (or not UTF-8 text)
INVALID_ENCODING = "INVALID_ENCODING"  # value bytes are not valid UTF-8 / charset
UNKNOWN_FORMAT = "UNKNOWN_FORMAT"      # no decoder accepts the message's structure
MISSING_FIELD = "MISSING_FIELD"        # a required field is absent or null
INVALID_FIELD = "INVALID_FIELD"        # a field has the wrong type or an unparseable value
INVALID_OP = "INVALID_OP"              # the operation/type value is not one the format defines
MISSING_KEY = "MISSING_KEY"            # an UPDATE/DELETE that nothing identifies
INVALID_AVRO = "INVALID_AVRO"          # Avro datum truncated or not of the schema
MISSING_SCHEMA = "MISSING_SCHEMA"      # a schema the format needs is not configured
EMPTY_VALUE = "EMPTY_VALUE"            # zero-length value where a message was expected
TOO_LARGE = "TOO_LARGE"                # value exceeds the configured maximum size
# Not bad input: the decoder itself failed (an unexpected exception). The changelog gate fails
# the hour on any, whatever the quarantine rate.
DECODER_ERROR = "DECODER_ERROR"

REASON_CODES = (
    INVALID_JSON, INVALID_ENCODING, UNKNOWN_FORMAT, MISSING_FIELD, INVALID_FIELD, INVALID_OP,
    MISSING_KEY, INVALID_AVRO, MISSING_SCHEMA, EMPTY_VALUE, TOO_LARGE, DECODER_ERROR,
)

# Warning codes: a change decoded from its row image although the message's metadata contradicts
# the image. A warning reads "<CODE>: <detail>" in the row's ``warnings``; normalize counts them per
# topic and code (ops.run_stats, metric ``warnings``) and the changelog gate bounds their rate.
TYPE_MAP_MISMATCH = "TYPE_MAP_MISMATCH"              # a type map or column list names other columns
OLD_NAMES_UNKNOWN_COLUMN = "OLD_NAMES_UNKNOWN_COLUMN"  # an UPDATE's old values name absent columns
KEY_NAMES_UNKNOWN_COLUMN = "KEY_NAMES_UNKNOWN_COLUMN"  # the declared key names no column of the image
DRIFT_CODES = (TYPE_MAP_MISMATCH, OLD_NAMES_UNKNOWN_COLUMN, KEY_NAMES_UNKNOWN_COLUMN)
# The code counted for a warning that carries none (a value kept as text, and the like).
OTHER_WARNING = "OTHER"


def warning(code: str, detail: str) -> str:
    """A row warning with its code: ``"<CODE>: <detail>"``."""
    if code not in DRIFT_CODES:
        raise ValueError(f"unknown warning code {code!r}")
    return f"{code}: {detail}"


class DecodeError(Exception):
    """A message that a format cannot turn into change rows."""

    def __init__(self, format_id: str, reason: str, detail: str) -> None:
        if reason not in REASON_CODES:
            raise ValueError(f"unknown reason code {reason!r}")
        self.format_id = format_id
        self.reason = reason
        self.detail = detail
        super().__init__(f"{format_id}: {detail}")

    @property
    def message(self) -> str:
        return str(self)


class FieldError(ValueError):
    """A field of the wrong JSON kind or an unreadable value, found by a helper that has no
    decoder at hand; its text names the field path. The decoder raises it as ``INVALID_FIELD``."""
