"""Crash safety: `kill -9` the broker process while a subprocess produces with acks=all; a restart on the
same data directory has every acknowledged record, exactly once, in order."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.broker.procs import BrokerProcess

PRODUCER = r"""
import sys
from confluent_kafka import Producer
bootstrap, acked_path = sys.argv[1], sys.argv[2]
producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                     "linger.ms": 2, "message.timeout.ms": 60000})
out = open(acked_path, "a", buffering=1)
def on_delivery(err, msg):
    if err is None:
        out.write(f"{msg.partition()} {msg.offset()} {msg.key().decode()}\n")
for i in range(1_000_000):
    while True:
        try:
            producer.produce("crash", key=f"{i:09d}".encode(), value=b"x" * 100, partition=i % 2,
                             on_delivery=on_delivery)
            break
        except BufferError:
            producer.poll(0.05)
    producer.poll(0)
"""


@pytest.mark.slow
def test_kill_9_mid_stream_keeps_every_acknowledged_record(tmp_path: Path) -> None:
    from confluent_kafka import Consumer, TopicPartition

    data = tmp_path / "data"
    acked = tmp_path / "acked.txt"
    broker = BrokerProcess(data, "--topic", "crash:2", "--fsync", "never")
    committer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "crash-committer"})
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER, broker.bootstrap_servers, str(acked)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # let it run until a few thousand records are acknowledged
            if acked.exists() and acked.read_text().count("\n") >= 3000:
                break
            time.sleep(0.05)
        # a group commits offsets (synchronously: acknowledged) while the producer keeps going
        wanted_commits = [TopicPartition("crash", 0, 1000), TopicPartition("crash", 1, 1200)]
        committed_ok = committer.commit(offsets=wanted_commits, asynchronous=False)
        assert all(tp.error is None for tp in committed_ok)
        broker.kill()
    finally:
        broker.kill()
        committer.close()
        time.sleep(0.3)
        producer.kill()
        producer.wait(timeout=30)
    lines = [line.split() for line in acked.read_text().splitlines()]
    assert len(lines) >= 3000
    acknowledged = {(int(p), int(o)): key for p, o, key in lines}
    assert len(acknowledged) == len(lines)  # no offset acknowledged twice

    restarted = BrokerProcess(data)
    try:
        consumer = Consumer(
            {
                "bootstrap.servers": restarted.bootstrap_servers,
                "group.id": "crash-committer",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition("crash", p, 0) for p in (0, 1)])
        stored: dict[tuple[int, int], str] = {}
        wanted = max(o for _, o in acknowledged)
        deadline = time.monotonic() + 60
        done = {0: False, 1: False}
        ends = {p: consumer.get_watermark_offsets(TopicPartition("crash", p), timeout=10)[1] for p in (0, 1)}
        while not all(done.values()) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            stored[(message.partition(), message.offset())] = message.key().decode()
            if message.offset() + 1 >= ends[message.partition()]:
                done[message.partition()] = True
        committed = consumer.committed([TopicPartition("crash", 0), TopicPartition("crash", 1)], timeout=20)
        consumer.close()
    finally:
        restarted.terminate()
    assert wanted >= 0
    assert [(tp.partition, tp.offset) for tp in committed] == [(0, 1000), (1, 1200)]  # every committed offset
    for position, key in acknowledged.items():
        assert stored.get(position) == key, f"acknowledged record {key} at {position} missing after restart"
    keys = list(stored.values())
    assert len(keys) == len(set(keys))  # exactly once
    for partition in (0, 1):
        in_order = [stored[(p, o)] for p, o in sorted(stored) if p == partition]
        assert in_order == sorted(in_order)  # the producer's order within the partition
