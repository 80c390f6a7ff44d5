"""The share group kind (KIP-932): ShareGroupHeartbeat, describe, list, delete, timers and replay, as
Kafka 4.4.0's ``GroupMetadataManager`` behaves in its share-group cases (GroupMetadataManagerTest's
``testShareGroup*``: written here from the behaviours, not copied)."""

from __future__ import annotations

from random import Random

import pytest

from kgroup.group.config import CoordinatorConfig
from kgroup.group.coordinator import GroupCoordinator
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.records.serde import decode_record, encode_record
from kgroup.group.share.kind import ShareGroups
from kgroup.group.share.timers import ShareSessionTimer
from kgroup.messages import (
    ConsumerGroupHeartbeatRequest,
    Envelope,
    ListGroupsRequest,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kgroup.model import ErrorCode, TopicId

ORDERS = TopicId.from_int(0x0123456789ABCDEF0123456789ABCDEF)
EVENTS = TopicId.from_int(0xFEDCBA9876543210FEDCBA9876543210)
IMAGE = MetadataImage.of([TopicImage(ORDERS, "orders", 3), TopicImage(EVENTS, "events", 2)])


class Share:
    """A coordinator with the two topics; heartbeats run the initialisation tasks they hand out
    (``run_tasks``), as a host does."""

    def __init__(self, config: CoordinatorConfig | None = None, *, run_tasks: bool = True) -> None:
        self.coordinator = GroupCoordinator(config or CoordinatorConfig(), rng=Random(7))
        self.coordinator.set_metadata(IMAGE)
        self.run_tasks = run_tasks
        self.records: list[object] = []
        self.correlation = 0

    def heartbeat(
        self, now: int, member: str, epoch: int, topics: tuple[str, ...] | None = None, group: str = "g"
    ) -> ShareGroupHeartbeatResponse:
        self.correlation += 1
        request = ShareGroupHeartbeatRequest(group, member, epoch, subscribed_topic_names=topics)
        result = self.coordinator.handle(now, Envelope("c", self.correlation, request, client_id="cli"))
        self.records += result.records
        if self.run_tasks:
            for task in result.tasks:
                self.records += self.coordinator.complete(now, task, task.run()).records
        (reply,) = result.replies
        assert isinstance(reply.body, ShareGroupHeartbeatResponse)
        return reply.body

    def describe(self, *groups: str) -> ShareGroupDescribeResponse:
        result = self.coordinator.handle(0, Envelope("c", 0, ShareGroupDescribeRequest(groups)))
        body = result.replies[0].body
        assert isinstance(body, ShareGroupDescribeResponse)
        return body


def _partitions(response: ShareGroupHeartbeatResponse) -> dict[TopicId, set[int]] | None:
    if response.assignment is None:
        return None
    return {tp.topic_id: set(tp.partitions) for tp in response.assignment}


def test_a_member_joins_and_gets_partitions_once_their_share_state_is_initialised() -> None:
    s = Share()
    first = s.heartbeat(0, "m1", 0, ("orders",))
    # the group epoch goes 1 -> 2; nothing is initialised yet, so the assignment is empty
    assert (first.error_code, first.member_id, first.member_epoch) == (ErrorCode.NONE, "m1", 2)
    assert first.heartbeat_interval_ms == 5000
    assert _partitions(first) == {}
    # the initialisation completed: the next heartbeat bumps the epoch and assigns every partition
    second = s.heartbeat(5000, "m1", 2)
    assert second.member_epoch == 3
    assert _partitions(second) == {ORDERS: {0, 1, 2}}
    # nothing changed: the next answer has no assignment
    third = s.heartbeat(10_000, "m1", 3)
    assert (third.member_epoch, third.assignment) == (3, None)


def test_uninitialised_partitions_are_never_assigned() -> None:
    s = Share(run_tasks=False)
    s.heartbeat(0, "m1", 0, ("orders",))
    again = s.heartbeat(5000, "m1", 2)
    assert again.member_epoch == 2 and again.assignment is None


def test_more_members_than_partitions_share_every_partition() -> None:
    s = Share(CoordinatorConfig(share_assignment_interval_ms=0))
    s.heartbeat(0, "m1", 0, ("events",))
    epochs = {"m1": s.heartbeat(1, "m1", 2).member_epoch}
    for i in range(2, 6):
        epochs[f"m{i}"] = s.heartbeat(i, f"m{i}", 0, ("events",)).member_epoch
    # a heartbeat round reconciles every member to the last target
    held: dict[int, int] = {}
    for member, epoch in epochs.items():
        response = s.heartbeat(100, member, epoch)
        epochs[member] = response.member_epoch
    described = s.describe("g").groups[0]
    assert {m.member_epoch for m in described.members} == {described.assignment_epoch}
    for m in described.members:
        (topic,) = m.assignment
        for p in topic.partitions:
            held[p] = held.get(p, 0) + 1
    assert held == {0: 3, 1: 3}  # ceil(5 / 2) members on each of the two partitions


def test_a_member_joining_within_the_assignment_interval_waits_for_the_next_target() -> None:
    s = Share()
    s.heartbeat(0, "m1", 0, ("orders",))
    s.heartbeat(5000, "m1", 2)  # target computed at 5000 (epoch 3)
    joined = s.heartbeat(5100, "m2", 0, ("orders",))
    # the group epoch is 4 but the next target may not be computed before 6000: m2 is at epoch 3
    assert (joined.member_epoch, _partitions(joined)) == (3, {})
    later = s.heartbeat(6000, "m2", 3)
    assert later.member_epoch == 4 and _partitions(later)


@pytest.mark.parametrize(
    ("suffix", "joiner_quota"),
    [
        # the two ids share a bucket of the GroupSpec's HashMap (16 buckets) and the joiner comes first
        # in the group's TimelineHashMap: Apache Kafka 4.4.0 gave the joiner two partitions (seen in a
        # differential run, the joiner's answer epoch 4 [1, 2], with three different topic ids)
        ("t16240-20-test-which-member", 2),
        # no shared bucket, the old member's first: it keeps two (Kafka: the joiner's epoch 4 with [0])
        ("t16240-21-test-which-member", 1),
    ],
)
def test_a_joining_member_has_its_place_in_the_members_map_when_the_target_is_computed(
    suffix: str, joiner_quota: int
) -> None:
    """``ShareGroup.getOrMaybeCreateMember`` puts a joining member into the group's members before the
    target is computed (a consumer group's does not), so the simple assignor's member order — who gets
    the larger quota — is the order of the map holding the joiner, not the old members then the joiner."""
    first, joiner = f"member-0-{suffix}", f"member-1-{suffix}"
    s = Share()
    s.heartbeat(0, first, 0, ("orders",))
    assert sum(len(p) for p in (_partitions(s.heartbeat(1500, first, 2)) or {}).values()) == 3
    joined = s.heartbeat(3000, joiner, 0, ("orders",))
    assert joined.member_epoch == 4
    assert sum(len(p) for p in (_partitions(joined) or {}).values()) == joiner_quota


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (
            ShareGroupHeartbeatRequest("g", "", 0, subscribed_topic_names=("orders",)),
            "MemberId can't be empty.",
        ),
        (
            ShareGroupHeartbeatRequest("", "m", 0, subscribed_topic_names=("orders",)),
            "GroupId can't be empty.",
        ),
        (
            ShareGroupHeartbeatRequest("g", "m", 0, rack_id=" ", subscribed_topic_names=("o",)),
            "RackId can't be empty.",
        ),
        (ShareGroupHeartbeatRequest("g", "m", 0), "SubscribedTopicNames must be set in first request."),
        (
            ShareGroupHeartbeatRequest("g", "m", 0, subscribed_topic_names=()),
            "SubscribedTopicNames must be set in first request.",
        ),
        (ShareGroupHeartbeatRequest("g", "m", -2), "MemberEpoch is invalid."),
    ],
)
def test_invalid_requests(request_: ShareGroupHeartbeatRequest, message: str) -> None:
    s = Share()
    result = s.coordinator.handle(0, Envelope("c", 1, request_))
    body = result.replies[0].body
    assert isinstance(body, ShareGroupHeartbeatResponse)
    assert (body.error_code, body.error_message) == (ErrorCode.INVALID_REQUEST, message)
    assert not result.records


def test_unknown_group_member_and_fenced_epochs() -> None:
    s = Share()
    missing = s.heartbeat(0, "m1", 1)
    assert (missing.error_code, missing.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Share group g not found.",
    )
    s.heartbeat(0, "m1", 0, ("orders",))
    unknown = s.heartbeat(1, "m9", 2)
    assert unknown.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert unknown.error_message == "Member m9 is not a member of group g."
    greater = s.heartbeat(2, "m1", 3)
    assert greater.error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert "greater member epoch (3)" in (greater.error_message or "")
    s.heartbeat(5000, "m1", 2)  # now at epoch 3, previous 2
    assert s.heartbeat(5001, "m1", 2).error_code is ErrorCode.NONE  # the previous epoch is accepted
    smaller = s.heartbeat(5002, "m1", 1)
    assert smaller.error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert "does not match the previous member epoch (2)" in (smaller.error_message or "")


def test_the_group_max_size() -> None:
    s = Share(CoordinatorConfig(share_max_size=2))
    s.heartbeat(0, "m1", 0, ("orders",))
    s.heartbeat(0, "m2", 0, ("orders",))
    full = s.heartbeat(0, "m3", 0, ("orders",))
    assert full.error_code is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert full.error_message == "The share group has reached its maximum capacity of 2 members."
    assert s.heartbeat(0, "m2", 0, ("orders",)).error_code is ErrorCode.NONE  # a member already in


def test_a_group_of_another_kind_is_not_a_share_group() -> None:
    s = Share()
    joined = s.coordinator.handle(
        0,
        Envelope(
            "c",
            1,
            ConsumerGroupHeartbeatRequest(
                "g",
                "c1",
                0,
                rebalance_timeout_ms=1000,
                subscribed_topic_names=("orders",),
                topic_partitions=(),
            ),
        ),
    )
    assert joined.replies[0].body.error_code is ErrorCode.NONE  # type: ignore[union-attr]
    answer = s.heartbeat(0, "m1", 0, ("orders",))
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group g is not a share group.",
    )
    described = s.describe("g").groups[0]
    assert (described.error_code, described.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group g is not a share group.",
    )


def test_leave_and_session_timeout_fence_members() -> None:
    s = Share()
    s.heartbeat(0, "m1", 0, ("orders",))
    s.heartbeat(0, "m2", 0, ("orders",))
    left = s.heartbeat(1000, "m2", -1)
    assert (left.error_code, left.member_id, left.member_epoch, left.assignment) == (
        ErrorCode.NONE,
        "m2",
        -1,
        None,
    )
    assert s.heartbeat(1000, "m2", -1).error_code is ErrorCode.UNKNOWN_MEMBER_ID
    described = s.describe("g").groups[0]
    assert [m.member_id for m in described.members] == ["m1"] and described.group_state == "Stable"
    epoch = described.group_epoch
    # m1's session (45 s from its last heartbeat at 0) expires
    key = ShareSessionTimer("g", "m1")
    assert s.coordinator.on_timer(44_999, key).records == ()
    s.coordinator.on_timer(45_000, key)
    described = s.describe("g").groups[0]
    assert (described.group_state, described.members) == ("Empty", ())
    assert described.group_epoch == epoch + 1 == described.assignment_epoch


def test_list_and_delete() -> None:
    s = Share()
    s.heartbeat(0, "m1", 0, ("orders",))
    listed = (
        s.coordinator.handle(0, Envelope("c", 1, ListGroupsRequest(types_filter=("share",)))).replies[0].body
    )
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed.groups] == [  # type: ignore[union-attr]
        ("g", "share", "Stable", "share")
    ]
    error, _ = s.coordinator.delete_group(0, "g")
    assert error is ErrorCode.NON_EMPTY_GROUP
    s.heartbeat(1, "m1", -1)
    error, result = s.coordinator.delete_group(2, "g")
    assert error is ErrorCode.NONE and result.records
    assert not s.coordinator.has_group("g")


def test_replaying_the_records_or_a_checkpoint_rebuilds_the_groups() -> None:
    s = Share(CoordinatorConfig(share_assignment_interval_ms=0))
    s.heartbeat(0, "m1", 0, ("orders", "events"))
    s.heartbeat(1, "m2", 0, ("events",))
    s.heartbeat(2, "m1", 2)
    s.heartbeat(3, "m2", 3)
    s.heartbeat(4, "m3", 0, ("orders",))
    s.heartbeat(5, "m3", -1)
    expected = s.coordinator.snapshot().of("share")
    assert expected
    replayed = GroupCoordinator(rng=Random(1))
    for record in s.records:
        replayed.replay(decode_record(*encode_record(record)))  # type: ignore[arg-type]
    assert replayed.snapshot().of("share") == expected
    restored = GroupCoordinator(rng=Random(1))
    for record in s.coordinator.checkpoint():
        restored.replay(decode_record(*encode_record(record)))
    assert restored.snapshot().of("share") == expected
    assert restored.kind(ShareGroups).group("g").partition_states is not None


def test_the_other_kinds_requests_for_a_share_groups_id() -> None:
    """Refused as Kafka refuses them; no classic or consumer group is made of the id."""
    from kgroup.messages import (
        ConsumerGroupDescribeRequest,
        ConsumerGroupDescribeResponse,
        ConsumerGroupHeartbeatResponse,
        JoinGroupProtocol,
        JoinGroupRequest,
        JoinGroupResponse,
        OffsetCommitPartition,
        OffsetCommitRequest,
        OffsetCommitResponse,
    )
    from kgroup.model import TopicPartition

    s = Share()
    s.heartbeat(0, "m1", 0, ("orders",))
    c = s.coordinator
    join = c.handle(
        1, Envelope("c", 1, JoinGroupRequest("g", 10_000, 10_000, "", (JoinGroupProtocol("range", b""),)))
    )
    assert join.replies[0].body == JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    heartbeat = c.handle(
        1,
        Envelope(
            "c",
            2,
            ConsumerGroupHeartbeatRequest(
                "g",
                "c1",
                0,
                rebalance_timeout_ms=1000,
                subscribed_topic_names=("orders",),
                topic_partitions=(),
            ),
        ),
    )
    assert heartbeat.replies[0].body == ConsumerGroupHeartbeatResponse(
        ErrorCode.GROUP_ID_NOT_FOUND, "Group g is not a consumer group."
    )
    tp = TopicPartition("orders", 0)
    commit = c.handle(1, Envelope("c", 3, OffsetCommitRequest("g", -1, "", (OffsetCommitPartition(tp, 5),))))
    assert commit.replies[0].body == OffsetCommitResponse(((tp, ErrorCode.GROUP_ID_NOT_FOUND),))
    described = c.handle(1, Envelope("c", 4, ConsumerGroupDescribeRequest(("g",)))).replies[0].body
    assert isinstance(described, ConsumerGroupDescribeResponse)
    assert [(g.error_code, g.error_message) for g in described.groups] == [
        (ErrorCode.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    ]
    assert not join.records and not heartbeat.records and not commit.records
    assert c.snapshot().of("classic") == () and c.snapshot().of("consumer") == ()


def test_a_subscribed_topic_growing_bumps_the_epoch_and_its_new_partition_is_initialised_then_assigned() -> (
    None
):
    s = Share()
    s.heartbeat(0, "m1", 0, ("events",))
    assert _partitions(s.heartbeat(2000, "m1", 2)) == {EVENTS: {0, 1}}
    assert s.heartbeat(4000, "m1", 3).assignment is None
    s.coordinator.set_metadata(
        MetadataImage.of([TopicImage(ORDERS, "orders", 3), TopicImage(EVENTS, "events", 3)])
    )
    grown = s.heartbeat(6000, "m1", 3)  # the hash moved: epoch 4, partition 2 asked for
    assert grown.member_epoch == 4 and grown.assignment is None
    assigned = s.heartbeat(8000, "m1", 4)  # initialised since: epoch 5, assigned
    assert (assigned.member_epoch, _partitions(assigned)) == (5, {EVENTS: {0, 1, 2}})


def test_a_member_changing_its_subscription_gets_the_new_topics_partitions() -> None:
    s = Share()
    s.heartbeat(0, "m1", 0, ("events",))
    assert _partitions(s.heartbeat(2000, "m1", 2)) == {EVENTS: {0, 1}}
    changed = s.heartbeat(4000, "m1", 3, ("orders",))
    # the subscription moved the epoch; the new target keeps only initialised partitions (none of
    # orders yet): the member's assignment is empty, its answer carries it (a full request)
    assert (changed.member_epoch, _partitions(changed)) == (4, {})
    later = s.heartbeat(6000, "m1", 4)
    assert (later.member_epoch, _partitions(later)) == (5, {ORDERS: {0, 1, 2}})


def test_load_restarts_every_session() -> None:
    s = Share()
    s.heartbeat(0, "m1", 0, ("orders",))
    result = s.coordinator.load(30_000, ["g"])
    timers = {t.key: t.deadline_ms for t in result.timers}  # type: ignore[union-attr]
    assert timers == {ShareSessionTimer("g", "m1"): 75_000}
