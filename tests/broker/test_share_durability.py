"""``kgroup serve``'s share partitions survive ``kill -9``: every acknowledgement is in
``__share_group_state`` before it is answered, and the topic is replayed at the next start.

A member acquires ten records, accepts three, rejects one, releases one and holds the other five when
the broker is killed. After the restart nothing accepted or rejected is delivered again; the released
record comes at delivery count 2 (its count was written), the five held ones at delivery count 1
(acquisitions are never written: as in Kafka they come back as never delivered).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from tests.apache_kafka.test_diff_share_fetch import _acks, _fetch, _part, _topic_id
from tests.apache_kafka.test_diff_share_group import _heartbeat, _until_assigned
from tests.apache_kafka.wire import Raw, find_coordinator, metadata
from tests.broker.procs import BrokerProcess

from kgroup.broker.cluster import SHARE_GROUP_STATE_TOPIC

NONE = 0
ACCEPT, RELEASE, REJECT = 1, 2, 3


def _join(bootstrap: str, group: str, topic: str) -> str:
    member = str(uuid.uuid4())
    with Raw(find_coordinator(bootstrap, group)) as raw:
        joined = _heartbeat(raw, group_id=group, member_id=member, subscribed_topic_names=[topic])
        assert joined["error_code"] == NONE, joined
        if not joined["assignment"] or not joined["assignment"]["topic_partitions"]:
            _until_assigned(raw, group, member, joined["member_epoch"])
    return member


def _acquired(answer: Any) -> list[tuple[int, int, int]]:
    assert answer["error_code"] == NONE, answer
    return [
        (a["first_offset"], a["last_offset"], a["delivery_count"])
        for t in answer["responses"]
        for p in t["partitions"]
        for a in p["acquired_records"]
    ]


def test_kill_9_keeps_every_acknowledgement(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, "--topic", "jobs:1", "--share-auto-offset-reset", "earliest")
    try:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
        for i in range(10):
            producer.produce("jobs", value=f"job-{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        del producer
        member = _join(broker.bootstrap_servers, "workers", "jobs")
        with Raw(broker.bootstrap_servers) as raw:
            topic_id = _topic_id(raw, "jobs")
            ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
            assert _acquired(
                _fetch(raw, group_id="workers", member_id=member, topics=ask, max_wait=5000)
            ) == [(0, 9, 1)]
            acked = raw.call(
                "ShareAcknowledge",
                1,
                {
                    "group_id": "workers",
                    "member_id": member,
                    "share_session_epoch": 1,
                    "topics": [_acks(topic_id, (0, 2, ACCEPT), (3, 3, REJECT), (4, 4, RELEASE))],
                },
            )
            assert [p["error_code"] for t in acked["responses"] for p in t["partitions"]] == [NONE]
            # kill -9 with the share session's connection still open: closing it first would let the
            # broker release 5..9 (Kafka releases a closed connection's acquired records), and that
            # release, if written before the kill, brings them back at delivery count 2
            broker.kill()
    finally:
        broker.kill()  # kill -9: no flush, no close; 5..9 still acquired

    restarted = BrokerProcess(data)
    try:
        member = _join(restarted.bootstrap_servers, "workers", "jobs")
        with Raw(restarted.bootstrap_servers) as raw:
            assert _topic_id(raw, "jobs") == topic_id
            ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
            first = _fetch(raw, group_id="workers", member_id=member, topics=ask, max_wait=5000)
            assert _acquired(first) == [(4, 4, 2), (5, 9, 1)]
            accepted = _fetch(
                raw,
                group_id="workers",
                member_id=member,
                share_session_epoch=1,
                topics=[_acks(topic_id, (4, 9, ACCEPT))],
                max_wait=300,
            )
            assert _acquired(accepted) == []  # nothing left: 0..3 are never delivered again
            state = metadata(raw, [SHARE_GROUP_STATE_TOPIC], auto_create=False)
            assert [t["error_code"] for t in state["topics"]] == [NONE]
            assert len(state["topics"][0]["partitions"]) == 50
    finally:
        restarted.kill()


def test_kill_9_with_a_real_share_consumer(tmp_path: Path) -> None:
    """librdkafka's ShareConsumer accepts some of the records and closes; ``kill -9``; after the restart
    another consumer of the group gets exactly the others, each at delivery count 1."""
    from tests.apache_kafka.test_share_consumers import _produce, _RdkafkaShare, _wait

    data = tmp_path / "data"
    broker = BrokerProcess(data, "--topic", "jobs:2", "--share-auto-offset-reset", "earliest")
    try:
        sent = _produce(broker.bootstrap_servers, "jobs", 2, 3000)
        first = _RdkafkaShare(broker.bootstrap_servers, "workers", "jobs", polls=1)
        try:
            _wait(lambda: len(first.records) > 0 and first.polls_left == 0, 60, "one poll of records")
        finally:
            first.close()  # what it polled was accepted (commit_sync) before it closes
        before = {(p, o) for p, o, _ in first.records}
        assert first.errors == [] and 0 < len(before) < len(sent)
    finally:
        broker.kill()

    # (the same settings: a partition the first consumer never fetched starts at the earliest offset)
    restarted = BrokerProcess(data, "--share-auto-offset-reset", "earliest")
    try:
        second = _RdkafkaShare(restarted.bootstrap_servers, "workers", "jobs")
        try:
            _wait(lambda: len(second.records) >= len(sent) - len(before), 60, "the other records")
            time.sleep(1.0)  # nothing more comes (an accepted record delivered again would show here)
        finally:
            second.close()
    finally:
        restarted.kill()
    after = [(p, o) for p, o, _ in second.records]
    assert sorted(after) == sorted(sent - before)
    assert {c for _, _, c in second.records} == {1} and second.errors == []
