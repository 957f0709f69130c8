"""Small helpers for landing tests: unique topics, records with explicit CreateTime."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

H0 = dt.datetime(2023, 7, 15, 10)  # naive UTC, like landed_hour (an hour no other test uses)
HOUR = dt.timedelta(hours=1)


def epoch_ms(moment: dt.datetime) -> int:
    return int(moment.replace(tzinfo=dt.UTC).timestamp() * 1000)


@dataclass(frozen=True)
class Record:
    partition: int
    at: dt.datetime
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


def make_topic(bootstrap: str, prefix: str, partitions: int = 1) -> str:
    name = f"{prefix}.{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    return name


def send(bootstrap: str, topic: str, records: Sequence[Record]) -> list[int]:
    """Produce ``records`` in order; returns their offsets."""
    offsets: list[int] = [-1] * len(records)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for index, r in enumerate(records):
        def delivered(err, msg, index=index) -> None:
            assert err is None, err
            offsets[index] = msg.offset()
        producer.produce(topic, key=r.key, value=r.value, partition=r.partition,
                         timestamp=epoch_ms(r.at), headers=list(r.headers) or None, on_delivery=delivered)
        # one at a time: keeps the offsets in the order given (and the test readable)
        producer.flush(30)
    assert producer.flush(30) == 0
    return offsets
