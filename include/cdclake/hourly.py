"""Airflow-side steps of the hourly DAG that need no Spark (the DAG file stays thin)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from cdclake.config import load_config


def _naive_utc(moment: dt.datetime) -> dt.datetime:
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return dt.datetime(moment.year, moment.month, moment.day, moment.hour)


def plan_hour_to_file(interval_start: dt.datetime, run_id: str, topics: list[str] | None = None) -> str:
    """Plan the hour's offset ranges (failing loudly on retention gaps, missing topics or an hour
    that is not over) and write the plan where the land job reads it; returns the file path."""
    from airflow.sdk.exceptions import AirflowFailException

    from cdclake.exceptions import ConfigError, TopicNotFoundError
    from spark_jobs.land_job import plan_hour

    hour = _naive_utc(interval_start)
    try:
        config = load_config()
        plan = plan_hour(config, hour, tuple(topics) if topics else None)
    except (ConfigError, TopicNotFoundError) as exc:  # a retry would fail the same way
        raise AirflowFailException(str(exc)) from exc
    folder = config.home / "plans"
    folder.mkdir(parents=True, exist_ok=True)
    safe_run = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)
    path = folder / f"{hour.strftime('%Y%m%dT%H')}__{safe_run}.json"
    path.write_text(plan.to_json())
    return str(Path(path))
