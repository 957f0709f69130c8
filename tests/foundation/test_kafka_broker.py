"""The embedded broker is a real Kafka (KRaft): records keep keys, headers and CreateTime."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.slow


def test_produce_and_consume_keys_headers_and_create_time(kafka_bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.create_topics([NewTopic("foundation.roundtrip", 2, 1)]).values():
        future.result()
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    headers: list[list[tuple[str, str | bytes | None]]] = [[("h", f"x{i}".encode())] for i in range(5)]
    sent = [(p, f"k{i}".encode(), f"v{i}".encode(), 1_700_000_000_000 + i, headers[i])
            for i, p in enumerate([0, 1, 0, 1, 0])]
    for partition, key, value, ts, record_headers in sent:
        producer.produce("foundation.roundtrip", key=key, value=value, partition=partition,
                         timestamp=ts, headers=record_headers)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "foundation",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("foundation.roundtrip", p, 0) for p in (0, 1)])
    got: list[tuple[Any, ...]] = []
    while len(got) < len(sent):
        message = consumer.poll(10)
        assert message is not None, "timed out waiting for records"
        assert message.error() is None
        ts_type, ts = message.timestamp()
        got.append((message.partition(), message.offset(), message.key(), message.value(), ts_type, ts,
                    message.headers()))
    consumer.close()
    expected = [(0, 0, b"k0", b"v0", 1, 1_700_000_000_000, [("h", b"x0")]),
                (0, 1, b"k2", b"v2", 1, 1_700_000_000_002, [("h", b"x2")]),
                (0, 2, b"k4", b"v4", 1, 1_700_000_000_004, [("h", b"x4")]),
                (1, 0, b"k1", b"v1", 1, 1_700_000_000_001, [("h", b"x1")]),
                (1, 1, b"k3", b"v3", 1, 1_700_000_000_003, [("h", b"x3")])]
    assert sorted(got) == expected


def test_cli_status_start_again_and_stop(tmp_path, monkeypatch) -> None:
    """`cdclake kafka start|status|stop` on a second state folder and port, as a user runs it."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env_home = {"CDCLAKE_HOME": str(tmp_path)}
    import os

    env = {**os.environ, **env_home}
    message_file = tmp_path / "message.jsonl"
    message_file.write_text('{"a": 1}\n')
    cli = [sys.executable, "-m", "cdclake.cli", "kafka"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*cli, *args], capture_output=True, text=True, env=env, timeout=120)

    assert run("status").stdout.strip() == "Kafka broker is not running"
    started = run("start", "--port", str(port))
    assert started.returncode == 0, started.stderr
    assert f"listening on localhost:{port}" in started.stdout
    try:
        again = run("start", "--port", str(port))
        assert again.returncode == 0 and "already running" in again.stdout
        status = run("status")
        assert status.returncode == 0 and f"localhost:{port}" in status.stdout
        # The other commands follow the running broker, not the file's kafka.port (9092).
        unset = {k: v for k, v in env.items() if k != "CDCLAKE_KAFKA_PORT"}
        sent = subprocess.run([sys.executable, "-m", "cdclake.cli", "produce", "--topic", "follow.port",
                               str(message_file)], capture_output=True, text=True, env=unset, timeout=120)
        assert sent.returncode == 0, sent.stderr
        topics = AdminClient({"bootstrap.servers": f"localhost:{port}"}).list_topics(timeout=30).topics
        assert "follow.port" in topics
    finally:
        stopped = run("stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert run("stop").stdout.strip() == "Kafka broker is not running"
    assert run("status").returncode == 3


def test_cluster_ids_never_start_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    # The storage tool parses "-t -Xy..." as a missing argument: 1 broker start in 64 failed so.
    import uuid

    from cdclake import kafka_broker

    drawn = iter([uuid.UUID(bytes=b"\xfb" + bytes(15)), uuid.UUID(bytes=b"\x01" + bytes(15))])
    monkeypatch.setattr(kafka_broker.uuid, "uuid4", lambda: next(drawn))
    assert kafka_broker._cluster_id() == "AQAAAAAAAAAAAAAAAAAAAA"
