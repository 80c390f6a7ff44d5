"""`kgroup lag` against kgroup's broker and Apache Kafka 4.4.0: one scenario, the same answer.

A classic group and a consumer-protocol group each own a 3-partition topic of 30 keyed records
(murmur2, so both brokers hold the same records per partition); the member commits offsets on two
partitions. `kgroup lag --json` must give, on both brokers, every partition with Kafka's columns:
the committed offset (none for the third), the log end offset, the lag and the member as owner.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target

from kgroup import partition_for_key
from kgroup.cli import main

PARTITIONS = 3
KEYS = [f"key-{n}".encode() for n in range(30)]


def _lag_json(bootstrap: str, group: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["lag", "--bootstrap-servers", bootstrap, "--group", group, "--json"])
    out, err = capsys.readouterr()
    assert exit_.value.code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_lag_of_a_group_with_a_member(
    target: Target, names: str, protocol: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, PARTITIONS)
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "partitioner": "murmur2_random"})
    for key in KEYS:
        producer.produce(topic, key=key, value=b"v")
    assert producer.flush(30) == 0
    ends = [sum(1 for k in KEYS if partition_for_key(k, PARTITIONS) == p) for p in range(PARTITIONS)]
    config: dict[str, Any] = {
        "bootstrap.servers": target.bootstrap_servers,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "group.protocol": protocol,
    }
    if protocol == "classic":
        config["session.timeout.ms"] = 10_000
    consumer = Consumer(config)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < PARTITIONS and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert len(consumer.assignment()) == PARTITIONS
        consumer.commit(
            offsets=[TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 1)], asynchronous=False
        )
        member_id = consumer.memberid()
        # the coordinator may still be settling (a consumer group's Reconciling): wait for Stable
        deadline = time.monotonic() + 30
        data = _lag_json(target.bootstrap_servers, group, capsys)
        while data["state"] != "Stable" and time.monotonic() < deadline:
            consumer.poll(0.2)
            data = _lag_json(target.bootstrap_servers, group, capsys)
    finally:
        consumer.close()
    assert data["group"] == group and data["state"] == "Stable" and data["type"] == protocol
    committed = [2, 1, None]
    expected = [
        {
            "topic": topic,
            "partition": p,
            "current_offset": committed[p],
            "log_end_offset": ends[p],
            "lag": None if committed[p] is None else ends[p] - committed[p],
            "consumer_id": member_id,
            "host": data["partitions"][p]["host"],
            "client_id": "rdkafka",
        }
        for p in range(PARTITIONS)
    ]
    assert data["partitions"] == expected
    assert all(row["host"].endswith("127.0.0.1") for row in data["partitions"])
    # after the member left: the committed partitions only, without an owner
    data = _lag_json(target.bootstrap_servers, group, capsys)
    assert data["state"] == "Empty"
    assert [
        (r["partition"], r["current_offset"], r["lag"], r["consumer_id"]) for r in data["partitions"]
    ] == [
        (0, 2, ends[0] - 2, None),
        (1, 1, ends[1] - 1, None),
    ]
