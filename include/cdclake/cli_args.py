"""Argument parsing shared by the `cdclake` commands and the jobs' entry points: hours, landing options."""

from __future__ import annotations

import argparse
import datetime as dt


def parse_hour(text: str) -> dt.datetime:
    """``2024-01-01T10``, ``2024-01-01T10:00``, ``2024-01-01T10:00:00Z`` or ``+00:00`` -> naive UTC
    hour. A time that is not on the hour is an error (hours are the unit of every write)."""
    body = text.strip().replace(" ", "T")
    if body.endswith("Z"):
        body = body[:-1] + "+00:00"
    if len(body) == 13:
        body += ":00"
    try:
        moment = dt.datetime.fromisoformat(body)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO hour: {text!r} (e.g. 2024-01-01T10:00:00Z)") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    if moment.minute or moment.second or moment.microsecond:
        raise argparse.ArgumentTypeError(f"{text!r} is not on the hour")
    return moment


def hour_text(hour: dt.datetime) -> str:
    return hour.strftime("%Y-%m-%dT%H:00:00Z")


def job_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--hour", required=True, type=parse_hour,
                        help="landing hour (UTC), e.g. 2024-01-01T10:00:00Z")
    parser.add_argument("--run-id", required=True, help="the Airflow run id (lineage)")
    parser.add_argument("--config", help="pipeline configuration file (default include/config/pipeline.yml)")
    return parser


def add_landing_options(parser: argparse.ArgumentParser) -> None:
    """The options of a landing that depart from the default (land once, keep what was landed)."""
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--accept-retention-gap", action="store_true",
                        help="an hour never landed: land it even though Kafka lost some of its "
                             "offsets; the ledger records the gap")
    choice.add_argument("--reland", action="store_true",
                        help="an hour already landed: read its recorded offsets from Kafka again "
                             "(refused if Kafka now holds fewer messages than the ledger records)")
    choice.add_argument("--skip", metavar="REASON",
                        help="record the hour as skipped (its offsets land in the next hour)")
