"""An assignment that cannot be computed fails the heartbeat that needed it (UNKNOWN_SERVER_ERROR, as
Kafka's write operation fails), writes nothing, and leaves the coordinator serving."""

from __future__ import annotations

from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.messages import ConsumerGroupHeartbeatRequest
from kgroup.model import ErrorCode, TopicId

from .test_migration import Harness

T1 = TopicId.from_int(8)


def test_a_target_naming_partitions_a_topic_no_longer_has_fails_the_heartbeat_not_the_coordinator() -> None:
    h = Harness()
    h.coordinator.set_metadata(
        MetadataImage.of([TopicImage(TopicId.from_int(7), "t0", 4), TopicImage(T1, "t1", 8)], 1)
    )
    first = h.heartbeat("m1", 0)
    assert first.error_code is ErrorCode.NONE
    h.now += 1000
    # a second member with another subscription: the heterogeneous uniform builder runs next time
    other = h.send(
        ConsumerGroupHeartbeatRequest(
            "g", "m2", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t1",), topic_partitions=()
        ),
        1,
    )
    assert other.error_code is ErrorCode.NONE
    h.now += 1000
    # t1 comes back with 2 partitions under the same id (kgroup serve keeps a re-created topic's id)
    h.coordinator.set_metadata(
        MetadataImage.of([TopicImage(TopicId.from_int(7), "t0", 4), TopicImage(T1, "t1", 2)], 2)
    )
    before = len(h.records)
    failed = h.send(ConsumerGroupHeartbeatRequest("g", "m2", other.member_epoch), 1)
    assert failed.error_code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert failed.error_message is not None and "which has 2 partitions" in failed.error_message
    assert not [r for r in h.records[before:] if type(r).__name__.startswith("ConsumerGroup")]
    # the coordinator keeps serving: a describe answers, and m2 leaving (which needs no assignment)
    # succeeds; m1's next heartbeat computes the target without m2's stale partitions
    from kgroup.messages import ConsumerGroupDescribeRequest

    described = h.send(ConsumerGroupDescribeRequest(("g",)), 1)
    assert described.groups[0].error_code is ErrorCode.NONE
    assert h.send(ConsumerGroupHeartbeatRequest("g", "m2", -1), 1).error_code is ErrorCode.NONE
    h.now += 1000
    again = h.send(ConsumerGroupHeartbeatRequest("g", "m1", first.member_epoch), 1)
    assert again.error_code is ErrorCode.NONE
