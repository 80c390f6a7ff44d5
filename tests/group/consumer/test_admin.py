"""``GroupMetadataManagerTest``'s consumer-group describe, delete and list cases, and a consumer group
beside classic groups: kgroup answers as Kafka with ``group.consumer.migration.policy=disabled``
(no online upgrade or downgrade; an *empty* classic group becomes a consumer group)."""

from __future__ import annotations

from kgroup.group import ClassicGroups, ConsumerGroups, CoordinatorConfig, GroupCreated, GroupDeleted
from kgroup.group.records.consumer import ConsumerGroupMetadata, ConsumerGroupTargetAssignmentMetadata
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kgroup.model import ErrorCode, TopicId

from .context import ConsumerTestContext, MockAssignor, image, member

FOO = TopicId.from_int(0xF00F00)


def _describe(ctx: ConsumerTestContext, *group_ids: str) -> tuple[DescribedConsumerGroup, ...]:
    response = ctx.send(ConsumerGroupDescribeRequest(group_ids)).response
    assert isinstance(response, ConsumerGroupDescribeResponse)
    return response.groups


def test_consumer_group_describe_no_errors() -> None:
    """testConsumerGroupDescribeNoErrors: the default assignor when nobody asks for one, the preferred
    one otherwise."""
    ctx = ConsumerTestContext(assignors=(MockAssignor("range"),))
    ctx.build_group("group-id-1", 10)
    m = member("member-id", epoch=0, previous=-1, names=("topicName",), assignor="assignorName")
    m = m.__class__(
        **{**{f: getattr(m, f) for f in m.__dataclass_fields__}, "client_id": "", "client_host": ""}
    )
    ctx.build_group("group-id-2", 10, [m])
    described_member = DescribedConsumerMember(
        member_id="member-id",
        instance_id=None,
        rack_id=None,
        member_epoch=0,
        client_id="",
        client_host="",
        subscribed_topic_names=("topicName",),
        subscribed_topic_regex="",
        assignment=(),
        target_assignment=(),
        member_type=1,
    )
    assert _describe(ctx, "group-id-1", "group-id-2") == (
        DescribedConsumerGroup(ErrorCode.NONE, "group-id-1", None, "Empty", 10, 1, "range", ()),
        DescribedConsumerGroup(
            ErrorCode.NONE, "group-id-2", None, "Assigning", 10, 1, "assignorName", (described_member,)
        ),
    )


def test_consumer_group_describe_with_errors() -> None:
    """testConsumerGroupDescribeWithErrors: ``Group <id> not found.``; a classic group is not one."""
    ctx = ConsumerTestContext(assignors=(MockAssignor("range"),))
    assert _describe(ctx, "groupId") == (
        DescribedConsumerGroup(ErrorCode.GROUP_ID_NOT_FOUND, "groupId", "Group groupId not found."),
    )
    ctx.replay(GroupCreated("classic", ctx.time_ms))
    assert _describe(ctx, "classic") == (
        DescribedConsumerGroup(
            ErrorCode.GROUP_ID_NOT_FOUND, "classic", "Group classic is not a consumer group."
        ),
    )


def test_consumer_group_describe_orders_topic_names_as_a_java_hash_set() -> None:
    """``asConsumerGroupDescribeMember`` lists the member's ``HashSet`` of names in its iteration order."""
    ctx = ConsumerTestContext(assignors=(MockAssignor("range"),))
    names = ("topic-b", "topic-a", "zeta", "alpha", "m")
    ctx.build_group("g", 10, [member("member-id", epoch=0, previous=-1, names=names)])
    (group,) = _describe(ctx, "g")
    # what ``new ArrayList<>(new HashSet<>(List.of("topic-b", "topic-a", "zeta", "alpha", "m")))`` gives
    # on JDK 17 (run with java): by bucket, not by name
    assert group.members[0].subscribed_topic_names == ("zeta", "alpha", "topic-a", "topic-b", "m")


def test_consumer_group_delete() -> None:
    """testConsumerGroupDelete: an empty group's tombstones (kgroup has no ConsumerGroupPartitionMetadata
    record, which Kafka 4.x no longer writes and only tombstones)."""
    ctx = ConsumerTestContext()
    ctx.build_group("group-id", 10)
    error, result = ctx.coordinator.delete_group(ctx.time_ms, "group-id")
    assert error is ErrorCode.NONE
    # Kafka's tombstones, then kgroup's GroupDeleted: the offsets go with the group (Kafka writes an
    # offset tombstone per committed offset; kgroup's log keeps offsets in the group's records)
    assert list(result.records) == [
        ConsumerGroupTargetAssignmentMetadata("group-id", None),
        ConsumerGroupMetadata("group-id", None),
        GroupDeleted("group-id"),
    ]
    assert not ctx.coordinator.has_group("group-id")


def test_consumer_group_delete_refuses_a_group_with_members() -> None:
    """``ConsumerGroup.validateDeleteGroup``: NON_EMPTY_GROUP unless the group is Empty."""
    ctx = ConsumerTestContext()
    ctx.build_group("group-id", 10, [member("m", epoch=10, previous=9, names=("foo",))])
    error, result = ctx.coordinator.delete_group(ctx.time_ms, "group-id")
    assert (error, result.records) == (ErrorCode.NON_EMPTY_GROUP, ())
    assert ctx.coordinator.has_group("group-id")


def test_list_groups_lists_consumer_groups_with_their_type_and_state() -> None:
    """testListGroups (consumer part): type "consumer", protocol type "consumer", the state; filters."""
    ctx = ConsumerTestContext()
    ctx.build_group("empty", 10)
    ctx.build_group("assigning", 10, [member("m", epoch=0, previous=-1, names=("foo",))])
    ctx.replay(GroupCreated("classic", ctx.time_ms))

    def listed(**filters: tuple[str, ...]) -> tuple[ListedGroup, ...]:
        response = ctx.send(ListGroupsRequest(**filters)).response
        assert isinstance(response, ListGroupsResponse)
        return response.groups

    consumer_groups = (
        ListedGroup("assigning", "consumer", "Assigning", "consumer"),
        ListedGroup("empty", "consumer", "Empty", "consumer"),
    )
    assert listed(types_filter=("Consumer",)) == consumer_groups
    assert listed(states_filter=("assigning",), types_filter=("consumer",)) == consumer_groups[:1]
    assert [g.group_id for g in listed()] == ["assigning", "classic", "empty"]
    assert [g.group_id for g in listed(types_filter=("classic",))] == ["classic"]


def _join_classic(ctx: ConsumerTestContext, group_id: str) -> JoinGroupResponse | None:
    """A static classic member joins (its answer waits for the rebalance when the group is new)."""
    request = JoinGroupRequest(
        group_id, 10_000, 5_000, "", (JoinGroupProtocol("range", b"\x00"),), group_instance_id="instance"
    )
    response = ctx.send(request).response
    assert response is None or isinstance(response, JoinGroupResponse)
    return response


def test_consumer_group_heartbeat_with_non_empty_classic_group() -> None:
    """testConsumerGroupHeartbeatWithNonEmptyClassicGroup: with the migration policy disabled,
    GROUP_ID_NOT_FOUND and Kafka's message for it."""
    ctx = ConsumerTestContext(
        image((FOO, "foo", 2)), config=CoordinatorConfig(consumer_migration_policy="disabled")
    )
    _join_classic(ctx, "classic-group-id")
    assert ctx.coordinator.kind(ClassicGroups).group("classic-group-id").members
    result = ctx.heartbeat(
        group_id="classic-group-id",
        member_id="m",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert result.heartbeat.error_code is ErrorCode.GROUP_ID_NOT_FOUND
    assert result.heartbeat.error_message == (
        "Cannot upgrade classic group classic-group-id to consumer group because online upgrade is disabled."
    )
    assert result.records == []
    # a heartbeat past joining gets Kafka's "not a consumer group"
    later = ctx.heartbeat(group_id="classic-group-id", member_id="m", member_epoch=3)
    assert later.heartbeat.error_code is ErrorCode.GROUP_ID_NOT_FOUND
    assert later.heartbeat.error_message == "Group classic-group-id is not a consumer group."


def test_consumer_group_heartbeat_with_empty_classic_group() -> None:
    """testConsumerGroupHeartbeatWithEmptyClassicGroup: the empty classic group becomes a consumer group."""
    ctx = ConsumerTestContext()
    ctx.replay(GroupCreated("classic-group-id", ctx.time_ms))
    result = ctx.heartbeat(
        group_id="classic-group-id",
        member_id="m",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert (result.heartbeat.error_code, result.heartbeat.member_epoch) == (ErrorCode.NONE, 2)
    assert sorted(ctx.coordinator.kind(ConsumerGroups).group_ids()) == ["classic-group-id"]
    assert ctx.coordinator.group_ids() == ["classic-group-id"]


def test_classic_join_to_a_consumer_group_is_refused() -> None:
    """A JoinGroup to a consumer group: with the migration disabled no classic member may join it."""
    ctx = ConsumerTestContext()
    ctx.build_group("consumer-group-id", 10, [member("m", epoch=10, previous=9, names=("foo",))])
    response = _join_classic(ctx, "consumer-group-id")
    assert response is not None
    assert response.error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
