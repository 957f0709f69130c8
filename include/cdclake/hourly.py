"""Steps of the hourly run that need no Spark: planning an hour's Kafka offsets, for the DAG's
plan task (the DAG file stays thin) and for the land job run without a plan."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from cdclake.config import PipelineConfig, load_config
from cdclake.exceptions import ConfigError, TopicNotFoundError
from cdclake.kafka_settings import kafka_client_config
from cdclake.offsets import OffsetPlan, plan_offset_ranges


def _naive_utc(moment: dt.datetime) -> dt.datetime:
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return dt.datetime(moment.year, moment.month, moment.day, moment.hour)


def plan_hour(config: PipelineConfig, hour: dt.datetime, topics: tuple[str, ...] | None = None,
              now: dt.datetime | None = None) -> OffsetPlan:
    """Plan ``[hour, hour + 1h)`` for ``topics`` (default: the configured ones)."""
    names = topics or tuple(t.name for t in config.topics)
    return plan_offset_ranges(kafka_client_config(config), names, hour, hour + dt.timedelta(hours=1), now=now,
                              max_transaction_stall=dt.timedelta(hours=config.max_transaction_stall_hours))


def plan_hour_to_file(interval_start: dt.datetime, run_id: str, topics: list[str] | None = None) -> str:
    """Plan the hour's offset ranges (failing loudly on retention gaps, missing topics or an hour
    that is not over) and write the plan where the land job reads it; returns the file path."""
    from airflow.sdk.exceptions import AirflowFailException  # only a DAG task runs this: Airflow is there

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
