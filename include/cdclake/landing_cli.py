"""``cdclake produce``: send captured messages to Kafka (``cdclake land``: ``spark_jobs.commands.land``).

    cdclake produce --topic cdc.debezium [--key-file keys.jsonl] [--timestamp-ms MS] FILE...
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

from cdclake.exceptions import CdclakeError, ConfigError

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message

PRODUCE_TIMEOUT_S = 60.0


class _Partition(TypedDict, total=False):
    partition: int


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("produce", help="send captured messages (JSON lines) to a Kafka topic")
    p.add_argument("--topic", required=True, help="topic to write to (created if missing)")
    p.add_argument("--key-file", type=Path, help="message keys, one line per message of FILE(s)")
    p.add_argument("--timestamp-ms", type=int, help="CreateTime (epoch ms) for every message (default now)")
    p.add_argument("--partition", type=int, help="write every message to this partition")
    p.add_argument("--partitions", type=int, default=1, help="partitions when the topic is created (1)")
    p.add_argument("--whole-file", action="store_true",
                   help="each FILE is one message (pretty-printed JSON) instead of JSON lines")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.set_defaults(handler=_produce)


def read_messages(files: list[Path], whole_file: bool) -> Iterator[bytes]:
    """Message values from JSON-lines files (blank lines skipped) or one message per file."""
    for file in files:
        try:
            text = file.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read {file}: {exc.strerror}") from None
        if whole_file:
            yield text.strip().encode()
            continue
        for line in text.splitlines():
            if line.strip():
                yield line.strip().encode()


def _keys(key_file: Path | None) -> list[bytes | None] | None:
    if key_file is None:
        return None
    lines = key_file.read_text().splitlines()
    # "null" keeps a message without key (e.g. lines for keyless tables).
    return [None if line.strip() in ("", "null") else line.strip().encode() for line in lines]


def ensure_topic(settings: dict[str, str], topic: str, partitions: int) -> bool:
    """Create ``topic`` if the cluster lacks it; True when created."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(cast("dict[str, str | int | float | bool]", settings))
    if topic in admin.list_topics(timeout=30).topics:
        return False
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise CdclakeError(f"could not create topic {topic!r}: {exc}") from None
        return False
    return True


def produce(settings: dict[str, str], topic: str, values: list[bytes], keys: list[bytes | None] | None = None,
            timestamp_ms: int | None = None, partition: int | None = None) -> int:
    """Send ``values`` (with ``keys`` line by line) and wait until Kafka acknowledged all of them."""
    from confluent_kafka import Producer

    if keys is not None and len(keys) < len(values):
        raise ConfigError(f"the key file has {len(keys)} lines for {len(values)} messages; "
                          "give one line per message")
    failures: list[str] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failures.append(str(err))

    producer = Producer({**settings, "enable.idempotence": True, "linger.ms": 5})
    for index, value in enumerate(values):
        extra: _Partition = {} if partition is None else {"partition": partition}
        producer.produce(topic, value=value, key=None if keys is None else keys[index],
                         timestamp=timestamp_ms or 0, on_delivery=delivered, **extra)
        producer.poll(0)
    left = producer.flush(PRODUCE_TIMEOUT_S)
    if left or failures:
        first = f": {failures[0]}" if failures else ""
        raise CdclakeError(f"{left + len(failures)} of {len(values)} messages were not delivered to "
                           f"{topic!r}{first}; is the broker running (cdclake kafka status)?")
    return len(values)


def _produce(args: argparse.Namespace) -> int:
    from cdclake.config import load_config
    from cdclake.kafka_settings import kafka_client_config

    settings = kafka_client_config(load_config())
    values = list(read_messages(args.files, args.whole_file))
    created = ensure_topic(settings, args.topic, args.partitions)
    sent = produce(settings, args.topic, values, _keys(args.key_file), args.timestamp_ms, args.partition)
    print(f"sent {sent} messages to {args.topic}{' (topic created)' if created else ''}")
    return 0
