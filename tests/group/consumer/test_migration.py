"""Classic-protocol members in a consumer group, and the online upgrade and downgrade between a classic
and a consumer group (Kafka 4.4's ``classicGroupJoinToConsumerGroup`` and friends,
``convertToConsumerGroup``, ``convertToClassicGroup``; GroupMetadataManagerTest's
testJoiningConsumerGroupWithNewDynamicMember, testClassicGroupSyncToConsumerGroup*,
testClassicGroupHeartbeatToConsumerGroup*, testConsumerGroupHeartbeatWithStableClassicGroup,
testLastConsumerProtocolMemberLeavingConsumerGroup)."""

from __future__ import annotations

from random import Random
from typing import Any

from kgroup.group import ClassicGroups, ConsumerGroups, CoordinatorConfig, GroupCoordinator, TimerTable
from kgroup.group.consumer.group import ConsumerGroupState
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.records import Record
from kgroup.group.records.consumer import MemberAssignmentState
from kgroup.group.states import GroupState
from kgroup.messages import (
    ConsumerAssignment,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerSubscription,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Envelope,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, TopicId, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment, encode_assignment, encode_subscription

T0 = TopicId.from_int(7)
METADATA = encode_subscription(ConsumerSubscription(("t0",)))
PROTOCOLS = (JoinGroupProtocol("range", METADATA),)


class Harness:
    """A coordinator over one 4-partition topic; requests answered, timers fired as they come due."""

    def __init__(self, config: CoordinatorConfig | None = None) -> None:
        self.coordinator = GroupCoordinator(
            config or CoordinatorConfig(group_initial_rebalance_delay_ms=0), rng=Random(1)
        )
        self.coordinator.set_metadata(MetadataImage.of([TopicImage(T0, "t0", 4)], 1))
        self.timers = TimerTable()
        self.records: list[Record] = []
        self.now = 0

    def send(self, body: Any, version: int = -1) -> Any:
        self.now += 10
        result = self.coordinator.handle(self.now, Envelope("c", 1, body, api_version=version))
        self.records.extend(result.records)
        self.timers.apply(result.timers)
        replies = list(result.replies)
        while (key := self.timers.pop_due(self.now)) is not None:
            fired = self.coordinator.on_timer(self.now, key)
            self.records.extend(fired.records)
            self.timers.apply(fired.timers)
            replies.extend(fired.replies)
        return replies[0].body if replies else None

    def heartbeat(self, member_id: str, epoch: int, **fields: Any) -> ConsumerGroupHeartbeatResponse:
        if epoch == 0:
            fields = {
                "rebalance_timeout_ms": 30_000,
                "subscribed_topic_names": ("t0",),
                "topic_partitions": (),
            }
        answer = self.send(ConsumerGroupHeartbeatRequest("g", member_id, epoch, **fields), 1)
        assert isinstance(answer, ConsumerGroupHeartbeatResponse)
        return answer

    def join(self, member_id: str = "") -> JoinGroupResponse:
        answer = self.send(JoinGroupRequest("g", 45_000, 30_000, member_id, PROTOCOLS))
        assert isinstance(answer, JoinGroupResponse)
        return answer

    def sync(self, join: JoinGroupResponse, *assignments: SyncGroupAssignment) -> SyncGroupResponse:
        answer = self.send(
            SyncGroupRequest(
                "g",
                join.generation_id,
                join.member_id,
                assignments,
                protocol_type="consumer",
                protocol_name="range",
            )
        )
        assert isinstance(answer, SyncGroupResponse)
        return answer

    def rebuilt(self) -> GroupCoordinator:
        copy = GroupCoordinator(self.coordinator.config, rng=Random(1))
        for record in self.records:
            copy.replay(record)
        return copy


def _partitions(*numbers: int) -> bytes:
    return encode_assignment(ConsumerAssignment(tuple(TopicPartition("t0", n) for n in numbers)))


def test_a_classic_member_joins_a_consumer_group_and_gets_its_share_once_released() -> None:
    h = Harness()
    first = h.heartbeat("m1", 0)
    assert first.member_epoch == 2 and first.assignment is not None
    h.now += 1000  # past group.consumer.assignment.interval.ms: the next join computes a new target
    required = h.join()
    assert required.error_code is ErrorCode.MEMBER_ID_REQUIRED and required.member_id
    joined = h.join(required.member_id)
    # answered at once: the member epoch as generation, protocol type consumer, never the leader
    assert (
        joined.error_code,
        joined.generation_id,
        joined.protocol_type,
        joined.protocol_name,
        joined.leader,
    ) == (
        ErrorCode.NONE,
        3,
        "consumer",
        "range",
        "",
    )
    synced = h.sync(joined)
    assert synced.error_code is ErrorCode.NONE
    assert decode_assignment(synced.assignment).partitions == ()  # its partitions are still m1's
    # waiting on partitions m1 still owns: its heartbeats are fine (waitingOnUnreleasedPartition)
    heartbeat = h.send(HeartbeatRequest("g", joined.generation_id, joined.member_id))
    assert isinstance(heartbeat, HeartbeatResponse) and heartbeat.error_code is ErrorCode.NONE
    # m1 revokes half and acknowledges; now the classic member is told to rejoin, and gets the rest
    revoke = h.heartbeat("m1", first.member_epoch)
    assert revoke.assignment is not None and revoke.assignment[0].partitions == (0, 1)
    assert h.heartbeat("m1", revoke.member_epoch, topic_partitions=revoke.assignment).member_epoch == 3
    heartbeat = h.send(HeartbeatRequest("g", joined.generation_id, joined.member_id))
    assert heartbeat.error_code is ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = h.join(joined.member_id)
    assert rejoined.generation_id == 3
    assert decode_assignment(h.sync(rejoined).assignment).partitions == (
        TopicPartition("t0", 2),
        TopicPartition("t0", 3),
    )
    heartbeat = h.send(HeartbeatRequest("g", rejoined.generation_id, rejoined.member_id))
    assert heartbeat.error_code is ErrorCode.NONE
    group = h.coordinator.kind(ConsumerGroups).group("g")
    assert group.state is ConsumerGroupState.STABLE
    described = h.send(ConsumerGroupDescribeRequest(("g",)))
    assert isinstance(described, ConsumerGroupDescribeResponse)
    assert sorted(m.member_type for m in described.groups[0].members) == [0, 1]
    # DescribeGroups (the classic API) shows a consumer group as Dead, as Kafka's does
    classic_view = h.send(DescribeGroupsRequest(("g",)))
    assert isinstance(classic_view, DescribeGroupsResponse) and classic_view.groups[0].group_state == "Dead"
    assert h.rebuilt().snapshot() == h.coordinator.snapshot()


def test_classic_requests_are_checked_as_kafka_checks_them() -> None:
    h = Harness()
    h.heartbeat("m1", 0)
    joined = h.join(h.join().member_id)
    stale = h.send(HeartbeatRequest("g", joined.generation_id + 1, joined.member_id))
    assert stale.error_code is ErrorCode.ILLEGAL_GENERATION
    generation = joined.generation_id
    unknown = h.send(SyncGroupRequest("g", generation, "x", protocol_type="consumer", protocol_name="range"))
    assert unknown.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    wrong = h.send(
        SyncGroupRequest(
            "g", generation, joined.member_id, protocol_type="consumer", protocol_name="roundrobin"
        )
    )
    assert wrong.error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # a consumer-protocol member is not a classic member
    assert h.send(HeartbeatRequest("g", generation, "m1")).error_code is ErrorCode.UNKNOWN_MEMBER_ID
    left = h.send(LeaveGroupRequest("g", (LeaveGroupMember(joined.member_id), LeaveGroupMember("ghost"))))
    assert isinstance(left, LeaveGroupResponse)
    assert [m.error_code for m in left.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    assert [m.member_id for m in h.coordinator.kind(ConsumerGroups).group("g").members] == ["m1"]


def test_classic_members_are_refused_when_the_migration_policy_is_disabled() -> None:
    h = Harness(CoordinatorConfig(group_initial_rebalance_delay_ms=0, consumer_migration_policy="disabled"))
    h.heartbeat("m1", 0)
    assert h.join().error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def _classic_group(h: Harness) -> JoinGroupResponse:
    joined = h.join(h.join().member_id)
    assert joined.error_code is ErrorCode.NONE and joined.generation_id == 1
    synced = h.sync(joined, SyncGroupAssignment(joined.member_id, _partitions(0, 1, 2, 3)))
    assert synced.error_code is ErrorCode.NONE
    commit = h.send(
        OffsetCommitRequest("g", 1, joined.member_id, (OffsetCommitPartition(TopicPartition("t0", 0), 42),))
    )
    assert commit.results[0][1] is ErrorCode.NONE
    return joined


def test_a_consumer_protocol_member_upgrades_a_classic_group_and_the_last_one_leaving_downgrades_it() -> None:
    h = Harness()
    classic = _classic_group(h)
    first = h.heartbeat("m1", 0)
    assert first.error_code is ErrorCode.NONE and first.member_epoch == 2
    group = h.coordinator.kind(ConsumerGroups).group("g")
    upgraded = {m.member_id: m for m in group.members}
    # the classic member keeps what it owned, at the classic generation, still speaking classic
    old = upgraded[classic.member_id]
    assert (old.member_epoch, old.state, old.uses_classic_protocol) == (1, MemberAssignmentState.STABLE, True)
    assert dict(old.assigned_partitions) == {T0: {0: 1, 1: 1, 2: 1, 3: 1}}
    assert upgraded["m1"].state is MemberAssignmentState.UNRELEASED_PARTITIONS
    assert h.send(HeartbeatRequest("g", 1, classic.member_id)).error_code is ErrorCode.REBALANCE_IN_PROGRESS
    fetched = h.send(OffsetFetchRequest("g"))
    assert isinstance(fetched, OffsetFetchResponse) and fetched.partitions[0].committed_offset == 42
    # the only consumer-protocol member leaves: the group turns classic and rebalances
    left = h.send(ConsumerGroupHeartbeatRequest("g", "m1", -1), 1)
    assert left.error_code is ErrorCode.NONE
    assert "g" not in sorted(h.coordinator.kind(ConsumerGroups).group_ids())
    view = h.coordinator.kind(ClassicGroups).group("g")
    assert (view.state, view.generation, view.protocol_type, view.protocol) == (
        GroupState.PREPARING_REBALANCE,
        2,
        "consumer",
        "range",
    )
    assert view.member_ids == (classic.member_id,)
    assert dict(h.coordinator.committed_offsets("g"))[TopicPartition("t0", 0)].offset == 42
    assert h.rebuilt().snapshot() == h.coordinator.snapshot()


def test_the_upgrade_is_refused_with_kafkas_reasons() -> None:
    h = Harness(CoordinatorConfig(group_initial_rebalance_delay_ms=0, consumer_migration_policy="downgrade"))
    _classic_group(h)
    refused = h.heartbeat("m1", 0)
    assert refused.error_code is ErrorCode.GROUP_ID_NOT_FOUND
    assert (
        refused.error_message
        == "Cannot upgrade classic group g to consumer group because online upgrade is disabled."
    )
    assert h.coordinator.kind(ClassicGroups).group("g").state is GroupState.STABLE


def test_a_classic_static_member_replacing_the_last_consumer_protocol_member_downgrades_the_group() -> None:
    """``validateOnlineDowngradeWithReplacedMember``: the group's only consumer-protocol member is
    static; a classic consumer with its instance id joins in its place, the group turns classic,
    Stable at the group epoch (its target assignment was current), the joining member in the place
    of the one it replaced, with that member's partitions."""
    h = Harness()
    first = h.heartbeat("m1", 0)
    assert first.member_epoch == 2
    h.now += 1000
    # a static consumer-protocol member of instance "i1" joins, a classic member joins, m1 leaves
    static = h.send(
        ConsumerGroupHeartbeatRequest(
            "g",
            "s1",
            0,
            instance_id="i1",
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("t0",),
            topic_partitions=(),
        ),
        1,
    )
    assert static.error_code is ErrorCode.NONE
    h.now += 1000
    classic = h.join(h.join().member_id)
    assert classic.error_code is ErrorCode.NONE
    # let everyone reconcile: m1 leaves, s1 and the classic member share the partitions
    assert h.send(ConsumerGroupHeartbeatRequest("g", "m1", -1), 1).error_code is ErrorCode.NONE
    h.now += 1000
    for _ in range(6):
        h.heartbeat("s1", _epoch(h, "s1"), topic_partitions=_owned(h, "s1"))
        rejoin = h.join(classic.member_id)
        h.sync(rejoin)
        h.now += 1000
    group = h.coordinator.kind(ConsumerGroups).group("g")
    assert group.state is ConsumerGroupState.STABLE, group
    s1_partitions = dict(next(m for m in group.members if m.member_id == "s1").assigned_partitions)
    # s1 leaves for now (-2), and a classic consumer with instance id i1 takes its place
    assert h.send(ConsumerGroupHeartbeatRequest("g", "s1", -2, instance_id="i1"), 1).member_epoch == -2
    replacing = h.send(JoinGroupRequest("g", 45_000, 30_000, "", PROTOCOLS, group_instance_id="i1"))
    assert isinstance(replacing, JoinGroupResponse) and replacing.error_code is ErrorCode.NONE
    assert "g" not in sorted(h.coordinator.kind(ConsumerGroups).group_ids())
    view = h.coordinator.kind(ClassicGroups).group("g")
    assert view.state is GroupState.STABLE and view.generation == group.group_epoch
    assert set(view.member_ids) == {classic.member_id, replacing.member_id}
    assignment = decode_assignment(view.member(replacing.member_id).assignment)
    assert {(tp.partition) for tp in assignment.partitions} == set(s1_partitions[T0])
    assert h.rebuilt().snapshot() == h.coordinator.snapshot()


def _epoch(h: Harness, member_id: str) -> int:
    return next(
        m.member_epoch
        for m in h.coordinator.kind(ConsumerGroups).group("g").members
        if m.member_id == member_id
    )


def _owned(h: Harness, member_id: str) -> tuple[Any, ...]:
    from kgroup.messages import TopicPartitions

    member = next(
        m for m in h.coordinator.kind(ConsumerGroups).group("g").members if m.member_id == member_id
    )
    return tuple(TopicPartitions(t, tuple(sorted(p))) for t, p in member.assigned_partitions.items())
