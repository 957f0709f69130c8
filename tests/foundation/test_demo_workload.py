"""The demo's traffic decodes into source tables that each come from one topic (or a topic with a
table_prefix): otherwise its compaction refuses the table and `cdclake demo` fails."""

from __future__ import annotations

import datetime as dt

from cdclake.config import load_config
from cdclake.demo import WORKLOAD, demo_config, workload
from cdclake.formats import get_decoder
from cdclake.formats.base import FormatOptions
from cdclake.formats.canonical import RawMessage
from cdclake.formats.decoding import decode_batch


def test_every_demo_source_table_has_one_topic(tmp_path) -> None:
    path = tmp_path / "pipeline.yml"
    path.write_text(demo_config(9092))
    prefixes = load_config(path, env={}).table_prefixes
    hours = [dt.datetime(2025, 2, 3, 7 + i) for i in range(3)]
    topics_of: dict[tuple[str, str], set[str]] = {}
    for topic, (fmt, _scenarios) in WORKLOAD.items():
        messages = [RawMessage(value=m.value, key=m.key, topic=topic, offset=i, timestamp_ms=m.timestamp_ms)
                    for i, m in enumerate(workload(hours, [topic])) if m.topic == topic]
        rows = decode_batch(get_decoder(fmt, FormatOptions()), messages).rows
        for row in rows:
            if row.get("table_name"):
                source = (prefixes.get(topic, ""), f"{row['database']}.{row['table_name']}")
                topics_of.setdefault(source, set()).add(topic)
    assert topics_of and {s: t for s, t in topics_of.items() if len(t) > 1} == {}


def test_the_demo_keeps_an_scd2_history_of_one_topic(tmp_path) -> None:
    path = tmp_path / "pipeline.yml"
    path.write_text(demo_config(9092))
    config = load_config(path, env={})
    assert {t.name: t.history for t in config.topics if t.history} == {"demo.debezium": ("*",)}
