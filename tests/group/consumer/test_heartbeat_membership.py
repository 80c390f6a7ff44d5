"""``GroupMetadataManagerTest``'s consumer-group membership cases: joining an empty group, new target
assignments on subscription, metadata and membership changes, leaving, and static members."""

from __future__ import annotations

from kgroup.group import ConsumerGroups
from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.consumer.timers import SessionTimer
from kgroup.group.records.consumer import MemberAssignmentState
from kgroup.messages import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, TopicPartitions
from kgroup.model import ErrorCode, TopicId

from .context import (
    GROUP,
    ConsumerTestContext,
    Current,
    Epoch,
    MockAssignor,
    Result,
    Subscription,
    Target,
    as_sets,
    assert_records,
    assert_unordered_records,
    assignment,
    current,
    epochs,
    image,
    member,
    subscription,
    target,
    target_metadata,
)

S = MemberAssignmentState
FOO = TopicId.from_int(0xF00F00)
BAR = TopicId.from_int(0xBA4BA4)
ZAR = TopicId.from_int(0x2A42A4)
M1, M2, M3 = "member-one", "member-two", "member-three"
REJOIN = "member-two-again"


def _ctx(*topics: tuple[TopicId, str, int]) -> tuple[ConsumerTestContext, MockAssignor]:
    assignor = MockAssignor("range")
    return ConsumerTestContext(image(*topics, racks=True), assignors=(assignor,)), assignor


def _join(member_id: str, *names: str, instance_id: str | None = None) -> dict[str, object]:
    return dict(
        member_id=member_id,
        instance_id=instance_id,
        member_epoch=0,
        server_assignor="range",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=names,
        topic_partitions=(),
    )


def test_member_joins_empty_consumer_group() -> None:
    """testMemberJoinsEmptyConsumerGroup"""
    ctx, assignor = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    assignor.prepare({M1: assignment((FOO, range(6)), (BAR, range(3)))})
    assert sorted(ctx.coordinator.kind(ConsumerGroups).group_ids()) == []
    result = ctx.heartbeat(**_join(M1, "foo", "bar"))
    response = result.heartbeat
    assert (
        response.error_code,
        response.member_id,
        response.member_epoch,
        response.heartbeat_interval_ms,
    ) == (
        ErrorCode.NONE,
        M1,
        2,
        5000,
    )
    assert as_sets(response.assignment) == {FOO: frozenset(range(6)), BAR: frozenset(range(3))}
    expected = member(
        M1, epoch=2, previous=0, names=("foo", "bar"), assigned=epochs(2, (FOO, range(6)), (BAR, range(3)))
    )
    assert_records(
        [
            subscription(expected),
            Epoch(GROUP, (2, ctx.hash_of("foo", "bar"))),
            target(M1, assignment((FOO, range(6)), (BAR, range(3)))),
            target_metadata(2, ctx.time_ms),
            current(expected),
        ],
        result,
    )


def _foo_group(ctx: ConsumerTestContext, names: tuple[str, ...] = ("foo",)) -> None:
    m = member(M1, epoch=10, previous=9, names=names, assigned=epochs(10, (FOO, range(6))))
    ctx.build_group(
        GROUP,
        10,
        [m],
        targets={M1: assignment((FOO, range(6)))},
        assignment_epoch=10,
        metadata_hash=ctx.hash_of(*names),
    )


def test_updating_subscription_triggers_new_target_assignment() -> None:
    """testUpdatingSubscriptionTriggersNewTargetAssignment"""
    ctx, assignor = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    _foo_group(ctx)
    assignor.prepare({M1: assignment((FOO, range(6)), (BAR, range(3)))})
    result = ctx.heartbeat(member_id=M1, member_epoch=10, subscribed_topic_names=("foo", "bar"))
    assert result.heartbeat.member_epoch == 11
    assert as_sets(result.heartbeat.assignment) == {FOO: frozenset(range(6)), BAR: frozenset(range(3))}
    expected = member(
        M1,
        epoch=11,
        previous=10,
        names=("foo", "bar"),
        assigned={FOO: dict.fromkeys(range(6), 10), BAR: dict.fromkeys(range(3), 11)},
    )
    assert_records(
        [
            subscription(expected),
            Epoch(GROUP, (11, ctx.hash_of("foo", "bar"))),
            target(M1, assignment((FOO, range(6)), (BAR, range(3)))),
            target_metadata(11, ctx.time_ms),
            current(expected),
        ],
        result,
    )


def test_new_racks_data_in_metadata_image_triggers_epoch_bump() -> None:
    """testNewRacksDataInMetadataImageTriggersEpochBump: racks change the topic's hash."""
    assignor = MockAssignor("range")
    ctx = ConsumerTestContext(image((FOO, "foo", 6)), assignors=(assignor,))
    _foo_group(ctx)
    assignor.prepare({M1: assignment((FOO, range(6)))})
    ctx.set_metadata(image((FOO, "foo", 6), version=2, racks=True))
    result = ctx.heartbeat(member_id=M1, member_epoch=10)
    assert (result.heartbeat.member_epoch, result.heartbeat.assignment) == (11, None)
    expected = member(M1, epoch=11, previous=10, names=("foo",), assigned=epochs(10, (FOO, range(6))))
    assert_records(
        [Epoch(GROUP, (11, ctx.hash_of("foo"))), target_metadata(11, ctx.time_ms), current(expected)], result
    )


def test_remove_topic_cleanup_topic_hash() -> None:
    """testRemoveTopicCleanupTopicHash: the deleted topic's partitions are revoked."""
    assignor = MockAssignor("range")
    ctx = ConsumerTestContext(image((FOO, "foo", 6)), assignors=(assignor,))
    _foo_group(ctx)
    assignor.prepare({M1: {}})
    ctx.set_metadata(image(version=2))
    result = ctx.heartbeat(member_id=M1, member_epoch=10)
    assert (result.heartbeat.member_epoch, result.heartbeat.assignment) == (10, ())
    expected = member(
        M1,
        state=S.UNREVOKED_PARTITIONS,
        epoch=10,
        previous=10,
        names=("foo",),
        pending=epochs(10, (FOO, range(6))),
    )
    assert_records(
        [Epoch(GROUP, (11, 0)), target(M1, {}), target_metadata(11, ctx.time_ms), current(expected)], result
    )


def _two_members(
    ctx: ConsumerTestContext, *, static: bool = False, second_names: tuple[str, ...] = ("foo", "bar")
) -> None:
    m1 = member(
        M1,
        instance_id=M1 if static else None,
        epoch=10,
        previous=9,
        names=("foo", "bar"),
        assigned=epochs(10, (FOO, (0, 1, 2)), (BAR, (0, 1))),
    )
    m2 = member(
        M2,
        instance_id=M2 if static else None,
        epoch=10,
        previous=9,
        names=second_names,
        assigned=epochs(10, (FOO, (3, 4, 5)), (BAR, (2,))),
    )
    ctx.build_group(
        GROUP,
        10,
        [m1, m2],
        targets={
            M1: assignment((FOO, (0, 1, 2)), (BAR, (0, 1))),
            M2: assignment((FOO, (3, 4, 5)), (BAR, (2,))),
        },
        assignment_epoch=10,
        metadata_hash=ctx.hash_of("foo", "bar", *second_names),
    )


def _three_way(assignor: MockAssignor) -> None:
    assignor.prepare(
        {
            M1: assignment((FOO, (0, 1)), (BAR, (0,))),
            M2: assignment((FOO, (2, 3)), (BAR, (1,))),
            M3: assignment((FOO, (4, 5)), (BAR, (2,))),
        }
    )


def _assert_third_member_joined(ctx: ConsumerTestContext, result: Result, instance_id: str | None) -> None:
    assert result.heartbeat.member_epoch == 11
    assert result.heartbeat.assignment == ()
    # member three's partitions are still owned by the others at epoch 10
    expected = member(
        M3, instance_id=instance_id, state=S.UNRELEASED_PARTITIONS, epoch=11, previous=0, names=("foo", "bar")
    )
    assert_unordered_records(
        [
            [subscription(expected)],
            [Epoch(GROUP, (11, ctx.hash_of("foo", "bar")))],
            [
                target(M1, assignment((FOO, (0, 1)), (BAR, (0,)))),
                target(M2, assignment((FOO, (2, 3)), (BAR, (1,)))),
                target(M3, assignment((FOO, (4, 5)), (BAR, (2,)))),
            ],
            [target_metadata(11, ctx.time_ms)],
            [current(expected)],
        ],
        result,
    )


def test_new_joining_member_triggers_new_target_assignment() -> None:
    """testNewJoiningMemberTriggersNewTargetAssignment"""
    ctx, assignor = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    _two_members(ctx)
    _three_way(assignor)
    _assert_third_member_joined(ctx, ctx.heartbeat(**_join(M3, "foo", "bar")), None)


def test_group_epoch_bump_when_new_static_member_joins() -> None:
    """testGroupEpochBumpWhenNewStaticMemberJoins"""
    ctx, assignor = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    _two_members(ctx, static=True)
    _three_way(assignor)
    _assert_third_member_joined(ctx, ctx.heartbeat(**_join(M3, "foo", "bar", instance_id=M3)), M3)


def test_leaving_member_bumps_group_epoch() -> None:
    """testLeavingMemberBumpsGroupEpoch: the epoch's hash no longer counts zar, which only member two
    subscribed to."""
    ctx, _ = _ctx((FOO, "foo", 6), (BAR, "bar", 3), (ZAR, "zar", 1))
    _two_members(ctx, second_names=("foo", "bar", "zar"))
    result = ctx.heartbeat(
        member_id=M2,
        member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    response = result.heartbeat
    assert (
        response.error_code,
        response.member_id,
        response.member_epoch,
        response.heartbeat_interval_ms,
    ) == (
        ErrorCode.NONE,
        M2,
        LEAVE_GROUP_MEMBER_EPOCH,
        0,
    )
    assert response.assignment is None
    assert_records(
        [
            Current(GROUP, M2, None),
            Target(GROUP, M2, None),
            Subscription(GROUP, M2, None),
            Epoch(GROUP, (11, ctx.hash_of("foo", "bar"))),
        ],
        result,
    )


def test_leaving_static_member_bumps_group_epoch() -> None:
    """testLeavingStaticMemberBumpsGroupEpoch"""
    ctx, _ = _ctx((FOO, "foo", 6), (BAR, "bar", 3), (ZAR, "zar", 1))
    _two_members(ctx, static=True, second_names=("foo", "bar", "zar"))
    result = ctx.heartbeat(
        member_id=M2,
        instance_id=M2,
        member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert (result.heartbeat.member_id, result.heartbeat.member_epoch) == (M2, LEAVE_GROUP_MEMBER_EPOCH)
    assert_records(
        [
            Current(GROUP, M2, None),
            Target(GROUP, M2, None),
            Subscription(GROUP, M2, None),
            Epoch(GROUP, (11, ctx.hash_of("foo", "bar"))),
        ],
        result,
    )


def _temporarily_leave(ctx: ConsumerTestContext, instance_id: str, old: ConsumerGroupMember) -> None:
    result = ctx.heartbeat(
        member_id=old.member_id,
        instance_id=instance_id,
        member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    response = result.heartbeat
    assert (response.member_id, response.member_epoch, response.heartbeat_interval_ms) == (
        old.member_id,
        LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        0,
    )
    # only the member's epoch changes (-2), its partitions are kept at epoch 0: no group epoch bump
    away = old.with_assigned_epochs_reset().update_member_epoch(LEAVE_GROUP_STATIC_MEMBER_EPOCH)
    away = ConsumerGroupMember(**{**_fields(away), "previous_member_epoch": old.previous_member_epoch})
    assert_records([current(away)], result)


def _fields(m: ConsumerGroupMember) -> dict[str, object]:
    return {name: getattr(m, name) for name in m.__dataclass_fields__}


def test_no_group_epoch_bump_when_static_member_temporarily_leaves() -> None:
    """testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves"""
    ctx, _ = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    _two_members(ctx, static=True)
    _temporarily_leave(ctx, M2, ctx.member(M2))
    assert ctx.group().group_epoch == 10


def test_static_member_gets_back_assignment_upon_rejoin() -> None:
    """testStaticMemberGetsBackAssignmentUponRejoin: the new member id takes the old one's place and
    target, with no epoch bump; the old id's timers are gone."""
    ctx, _ = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    _two_members(ctx, static=True)
    old = ctx.member(M2)
    _temporarily_leave(ctx, M2, old)
    result = ctx.heartbeat(
        member_id=REJOIN,
        instance_id=M2,
        member_epoch=0,
        server_assignor="range",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    response = result.heartbeat
    assert (response.member_id, response.member_epoch, response.heartbeat_interval_ms) == (REJOIN, 10, 5000)
    assert as_sets(response.assignment) == {FOO: frozenset({3, 4, 5}), BAR: frozenset({2})}
    copied = member(
        REJOIN,
        instance_id=M2,
        epoch=0,
        previous=0,
        names=("foo", "bar"),
        assigned=epochs(0, (FOO, (3, 4, 5)), (BAR, (2,))),
    )
    rejoined = member(
        REJOIN,
        instance_id=M2,
        epoch=10,
        previous=0,
        names=("foo", "bar"),
        assigned=epochs(0, (FOO, (3, 4, 5)), (BAR, (2,))),
    )
    assert_records(
        [
            Current(GROUP, M2, None),
            Target(GROUP, M2, None),
            Subscription(GROUP, M2, None),
            subscription(copied),
            target(REJOIN, assignment((FOO, (3, 4, 5)), (BAR, (2,)))),
            current(copied),
            current(rejoined),
        ],
        result,
    )
    assert ctx.deadline(SessionTimer(GROUP, M2)) is None
    assert ctx.rebalance_timers(M2) == []
    assert ctx.session_deadline(REJOIN) == ctx.time_ms + 45_000


def test_static_member_rejoins_with_new_subscribed_topics() -> None:
    """testStaticMemberRejoinsWithNewSubscribedTopics"""
    ctx, assignor = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    m1 = member(
        M1,
        instance_id="instance-id-1",
        epoch=10,
        previous=9,
        names=("foo",),
        assigned=epochs(10, (FOO, (0, 1, 2))),
    )
    m2 = member(
        M2,
        instance_id="instance-id-2",
        epoch=10,
        previous=9,
        names=("foo",),
        assigned=epochs(10, (FOO, (3, 4, 5))),
    )
    ctx.build_group(
        GROUP,
        10,
        [m1, m2],
        targets={M1: assignment((FOO, (0, 1, 2))), M2: assignment((FOO, (3, 4, 5)))},
        assignment_epoch=10,
        metadata_hash=ctx.hash_of("foo"),
    )
    assignor.prepare(
        {M1: assignment((FOO, (0, 1, 2))), REJOIN: assignment((FOO, (3, 4, 5)), (BAR, (0, 1, 2)))}
    )
    left = ctx.heartbeat(
        member_id=M2, instance_id="instance-id-2", member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
    )
    assert left.heartbeat.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
    assert len(left.records) == 1
    result = ctx.heartbeat(
        member_id=REJOIN,
        instance_id="instance-id-2",
        member_epoch=0,
        server_assignor="range",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert (result.heartbeat.member_id, result.heartbeat.member_epoch) == (REJOIN, 11)
    assert as_sets(result.heartbeat.assignment) == {FOO: frozenset({3, 4, 5}), BAR: frozenset({0, 1, 2})}
    copied = member(
        REJOIN,
        instance_id="instance-id-2",
        epoch=0,
        previous=0,
        names=("foo",),
        assigned=epochs(0, (FOO, (3, 4, 5))),
    )
    rejoined = member(
        REJOIN,
        instance_id="instance-id-2",
        epoch=11,
        previous=0,
        names=("foo", "bar"),
        assigned={FOO: dict.fromkeys((3, 4, 5), 0), BAR: dict.fromkeys((0, 1, 2), 11)},
    )
    assert_records(
        [
            Current(GROUP, M2, None),
            Target(GROUP, M2, None),
            Subscription(GROUP, M2, None),
            subscription(copied),
            target(REJOIN, assignment((FOO, (3, 4, 5)))),
            current(copied),
            subscription(rejoined),
            Epoch(GROUP, (11, ctx.hash_of("foo", "bar"))),
            target(REJOIN, assignment((FOO, (3, 4, 5)), (BAR, (0, 1, 2)))),
            target_metadata(11, ctx.time_ms),
            current(rejoined),
        ],
        result,
    )
    assert ctx.deadline(SessionTimer(GROUP, M2)) is None
    assert ctx.rebalance_timers(M2) == []


def _static_group(ctx: ConsumerTestContext) -> None:
    m1 = member(
        M1, instance_id=M1, epoch=10, previous=9, names=("foo", "bar"), assigned=epochs(10, (FOO, (0, 1, 2)))
    )
    ctx.build_group(
        GROUP,
        10,
        [m1],
        targets={M1: assignment((FOO, (0, 1, 2)))},
        assignment_epoch=10,
        metadata_hash=ctx.hash_of("foo"),
    )


def test_should_throw_unreleased_instance_id_when_new_member_joins_with_in_use_instance_id() -> None:
    """testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId"""
    ctx, _ = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    _static_group(ctx)
    result = ctx.heartbeat(**_join(M2, "foo", "bar", instance_id=M1))
    assert result.heartbeat.error_code is ErrorCode.UNRELEASED_INSTANCE_ID
    assert result.heartbeat.error_message == (
        f"Static member {M2} with instance id {M1} cannot join the group because the instance id is "
        f"owned by {M1} member."
    )
    assert result.records == []


def test_should_throw_unknown_member_id_when_unknown_static_member_joins() -> None:
    """testShouldThrownUnknownMemberIdExceptionWhenUnknownStaticMemberJoins"""
    ctx, _ = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    _static_group(ctx)
    result = ctx.heartbeat(
        member_id=M2,
        instance_id=M2,
        member_epoch=10,
        server_assignor="range",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert result.heartbeat.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert result.heartbeat.error_message == f"Instance id {M2} is unknown."


def test_should_throw_fenced_instance_id_when_static_member_with_different_member_id_joins() -> None:
    """testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins"""
    ctx, _ = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    _static_group(ctx)
    result = ctx.heartbeat(
        member_id="unknown-" + M1,
        instance_id=M1,
        member_epoch=11,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert result.heartbeat.error_code is ErrorCode.FENCED_INSTANCE_ID
    assert result.heartbeat.error_message == (
        f"Static member unknown-{M1} with instance id {M1} was fenced by member {M1}."
    )


def test_consumer_group_member_epoch_validation_for_static_member() -> None:
    """testConsumerGroupMemberEpochValidationForStaticMember"""
    ctx, _ = _ctx()
    m = member(
        M1,
        instance_id=M1,
        epoch=100,
        previous=99,
        names=("foo", "bar"),
        assigned=epochs(100, (FOO, (1, 2, 3))),
    )
    ctx.build_group(
        GROUP,
        100,
        [m],
        targets={M1: assignment((FOO, (1, 2, 3)))},
        assignment_epoch=100,
        assignment_timestamp_ms=12345,
    )
    hb = dict(member_id=M1, instance_id=M1, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"))
    for epoch in (200, 50, 99):
        assert ctx.heartbeat(member_epoch=epoch, **hb).heartbeat.error_code is ErrorCode.FENCED_MEMBER_EPOCH
    result = ctx.heartbeat(member_epoch=99, topic_partitions=(TopicPartitions(FOO, (1, 2)),), **hb)
    assert (result.heartbeat.error_code, result.heartbeat.member_epoch) == (ErrorCode.NONE, 100)


def test_should_throw_unknown_member_id_when_unknown_static_member_leaves() -> None:
    """testShouldThrowUnknownMemberIdExceptionWhenUnknownStaticMemberLeaves"""
    ctx, _ = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    _static_group(ctx)
    result = ctx.heartbeat(
        member_id=M1,
        instance_id="unknown-" + M1,
        member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert result.heartbeat.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert result.heartbeat.error_message == f"Instance id unknown-{M1} is unknown."


def test_should_throw_fenced_instance_id_when_static_member_with_different_member_id_leaves() -> None:
    """testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdLeaves"""
    ctx, _ = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    _static_group(ctx)
    result = ctx.heartbeat(
        member_id="unknown-" + M1,
        instance_id=M1,
        member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert result.heartbeat.error_code is ErrorCode.FENCED_INSTANCE_ID
    assert ctx.member(M1).member_epoch == 10
