"""The differential suite, topic ids: a deleted and re-created topic is a new topic, with a new id, on
kgroup's broker as on Apache Kafka 4.4.0 — in Metadata, and to the KIP-848 coordinator, which takes the
re-created topic for a new subscription (raw ConsumerGroupHeartbeat / ConsumerGroupDescribe v1).

Compared as observed: the ids' relations (the re-created topic's id differs from the first one; the
coordinator names exactly the id Metadata gives), the member's epochs at each step and the partitions it
is assigned under each id. Ids themselves are random on both brokers.
"""

from __future__ import annotations

import time
from typing import Any

from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_consumer_protocol import _describe, _heartbeat
from tests.apache_kafka.wire import Raw, create_topic, find_coordinator, metadata

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3


def _topic_id(raw: Raw, name: str) -> Any:
    (topic,) = metadata(raw, [name], auto_create=False)["topics"]
    assert topic["error_code"] == NONE, topic
    return topic["topic_id"]


def _delete(raw: Raw, name: str) -> None:
    answer = raw.call("DeleteTopics", 6, {"topics": [{"name": name, "topic_id": None}], "timeout": 30_000})
    assert answer["responses"][0]["error_code"] == NONE, answer
    deadline = time.monotonic() + 30
    while metadata(raw, [name], auto_create=False)["topics"][0]["error_code"] != UNKNOWN_TOPIC_OR_PARTITION:
        assert time.monotonic() < deadline, f"{name} still listed 30 s after its deletion"
        time.sleep(0.1)


def _assigned(answer: dict[str, Any]) -> list[tuple[Any, list[int]]] | None:
    """The assignment a heartbeat answer carries ([(topic id, partitions)]), None when unchanged."""
    if answer["assignment"] is None:
        return None
    return [(t["topic_id"], sorted(t["partitions"])) for t in answer["assignment"]["topic_partitions"]]


def _heartbeat_until(raw: Raw, group: str, member: str, epoch: int, wanted: Any) -> int:
    """Heartbeat (bounded: 30 s) until an answer assigns ``wanted``; the member's epoch then. Apache
    Kafka's coordinator sees a topic change once the broker publishes its next metadata image."""
    deadline = time.monotonic() + 30
    while True:
        answer = _heartbeat(raw, group_id=group, member_id=member, member_epoch=epoch)
        assert answer["error_code"] == NONE, answer
        epoch = answer["member_epoch"]
        if _assigned(answer) == wanted:
            return int(epoch)
        assert time.monotonic() < deadline, f"never assigned {wanted}: {answer}"
        time.sleep(0.2)


def test_a_recreated_topic_is_a_new_topic_to_metadata_and_the_consumer_coordinator(
    target: Target, names: str
) -> None:
    group, topic, member = f"{names}-g", f"{names}-t", f"{names}-member"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 2)
        first = _topic_id(raw, topic)
    with (
        Raw(find_coordinator(target.bootstrap_servers, group)) as coordinator,
        Raw(target.bootstrap_servers) as raw,
    ):
        joined = _heartbeat(
            coordinator, group_id=group, member_id=member, subscribed_topic_names=[topic], topic_partitions=[]
        )
        assert joined["error_code"] == NONE, joined
        epochs = [joined["member_epoch"]]
        at_once = _assigned(joined) == [(first, [0, 1])]
        if not at_once:  # (Apache Kafka: once its image has the topic)
            epochs.append(_heartbeat_until(coordinator, group, member, epochs[-1], [(first, [0, 1])]))
        _delete(raw, topic)
        epochs.append(_heartbeat_until(coordinator, group, member, epochs[-1], []))  # the topic is gone
        create_topic(raw, topic, 3)
        second = _topic_id(raw, topic)
        assert second != first  # a new topic, a new id
        epochs.append(_heartbeat_until(coordinator, group, member, epochs[-1], [(second, [0, 1, 2])]))
        (described,) = _describe(coordinator, group)
    (described_member,) = described["members"]
    assert [t["topic_id"] for t in described_member["assignment"]["topic_partitions"]] == [second]
    assert [t["topic_id"] for t in described_member["target_assignment"]["topic_partitions"]] == [second]
    # one epoch per change: joined and assigned at once, the topic gone, the new topic. (Kafka's
    # coordinator may take in the image naming the new topic only after the join — under load, a moment
    # after its broker's metadata cache has it: that image is a change of its own, one epoch more)
    last = 4 if at_once else 5
    assert epochs == list(range(2, last + 1))
    assert (described["group_epoch"], described["assignment_epoch"], described_member["member_epoch"]) == (
        last,
        last,
        last,
    )
    assert at_once or target.kind == "apache"  # kgroup's coordinator has every topic its broker has
