"""``GroupMetadataManagerTest``'s consumer-group heartbeat cases: validation, member ids, unknown
groups and members, member epochs, rejoining with epoch 0, duplicate full heartbeats."""

from __future__ import annotations

from kgroup.group.records.consumer import MemberAssignmentState
from kgroup.messages import TopicPartitions
from kgroup.model import ErrorCode, TopicId

from .context import GROUP, ConsumerTestContext, MockAssignor, assignment, epochs, image, member, owned

S = MemberAssignmentState
FOO = TopicId.from_int(0xF00F00)
BAR = TopicId.from_int(0xBA4BA4)
M1 = "member-one"
M2 = "member-two"


def _ctx(*topics: tuple[TopicId, str, int]) -> tuple[ConsumerTestContext, MockAssignor]:
    assignor = MockAssignor("range")
    return ConsumerTestContext(image(*topics, racks=True), assignors=(assignor,)), assignor


def test_consumer_heartbeat_regex_validation() -> None:
    """testConsumerHeartbeatRegexValidation"""
    ctx, assignor = _ctx()
    assignor.prepare({})
    join = dict(member_id=M1, rebalance_timeout_ms=5000, topic_partitions=())
    bad = ctx.heartbeat(member_epoch=0, subscribed_topic_regex="[", **join)
    assert bad.heartbeat.error_code is ErrorCode.INVALID_REGULAR_EXPRESSION
    assert bad.heartbeat.error_message == (
        "SubscribedTopicRegex `[` is not a valid regular expression: missing closing ]."
    )
    assert bad.records == []
    # a valid regex: the regex is not resolved yet, so the epoch does not move
    assert ctx.heartbeat(member_epoch=0, subscribed_topic_regex=".*", **join).heartbeat.member_epoch == 1
    bad = ctx.heartbeat(member_epoch=1, subscribed_topic_regex="[", **join)
    assert bad.heartbeat.error_code is ErrorCode.INVALID_REGULAR_EXPRESSION
    # back to topic names (the regex becomes null): the epoch is bumped
    assert ctx.heartbeat(member_epoch=1, subscribed_topic_names=("foo",), **join).heartbeat.member_epoch == 2


def test_member_id_generation() -> None:
    """testMemberIdGeneration: before v1 of the API the coordinator chooses the member id."""
    ctx, assignor = _ctx()
    assignor.prepare({})
    result = ctx.heartbeat(
        0,
        member_id="",
        member_epoch=0,
        server_assignor="range",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    response = result.heartbeat
    assert response.error_code is ErrorCode.NONE
    assert response.member_id
    assert (response.member_epoch, response.heartbeat_interval_ms, response.assignment) == (2, 5000, ())
    # from v1 the member chooses its id: an empty one is refused
    refused = ctx.heartbeat(
        1,
        member_id="",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo",),
        topic_partitions=(),
    )
    assert refused.heartbeat.error_code is ErrorCode.INVALID_REQUEST
    assert refused.heartbeat.error_message == "MemberId can't be empty."


def test_unknown_group_id() -> None:
    """testUnknownGroupId"""
    ctx, _ = _ctx()
    result = ctx.heartbeat(
        member_id=M1,
        member_epoch=100,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert result.heartbeat.error_code is ErrorCode.GROUP_ID_NOT_FOUND
    assert result.heartbeat.error_message == f"Consumer group {GROUP} not found."
    assert result.records == []


def test_unknown_member_id_joins_consumer_group() -> None:
    """testUnknownMemberIdJoinsConsumerGroup"""
    ctx, assignor = _ctx()
    assignor.prepare({})
    first = ctx.heartbeat(
        member_id=M1,
        member_epoch=0,
        server_assignor="range",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert first.heartbeat.error_code is ErrorCode.NONE
    result = ctx.heartbeat(
        member_id=M2,
        member_epoch=1,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert result.heartbeat.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert result.heartbeat.error_message == f"Member {M2} is not a member of group {GROUP}."


def _stable_member_at_100(ctx: ConsumerTestContext, names: tuple[str, ...] = ("foo", "bar")) -> None:
    m = member(M1, epoch=100, previous=99, names=names, assigned=epochs(100, (FOO, (1, 2, 3))))
    ctx.build_group(
        GROUP,
        100,
        [m],
        targets={M1: assignment((FOO, (1, 2, 3)))},
        assignment_epoch=100,
        assignment_timestamp_ms=12345,
    )


def test_consumer_group_member_epoch_validation() -> None:
    """testConsumerGroupMemberEpochValidation"""
    ctx, _ = _ctx()
    _stable_member_at_100(ctx)
    hb = dict(member_id=M1, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"))
    greater = ctx.heartbeat(member_epoch=200, **hb).heartbeat
    assert greater.error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert greater.error_message == (
        "The consumer group member has a greater member epoch (200) than the one known by the group "
        "coordinator (100). The member must abandon all its partitions and rejoin."
    )
    smaller = ctx.heartbeat(member_epoch=50, **hb).heartbeat
    assert smaller.error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert smaller.error_message == (
        "The consumer group member has a smaller member epoch (50) than the one known by the group "
        "coordinator (100). The member must abandon all its partitions and rejoin."
    )
    # the previous epoch without owned partitions is fenced
    assert ctx.heartbeat(member_epoch=99, **hb).heartbeat.error_code is ErrorCode.FENCED_MEMBER_EPOCH
    # the previous epoch with a subset of the owned partitions is accepted (the response with the bumped
    # epoch may have been lost): the member gets its epoch back
    result = ctx.heartbeat(member_epoch=99, topic_partitions=owned((FOO, (1, 2))), **hb)
    assert (result.heartbeat.error_code, result.heartbeat.member_epoch) == (ErrorCode.NONE, 100)


def _rejoin(ctx: ConsumerTestContext) -> tuple[int, tuple[TopicPartitions, ...] | None]:
    response = ctx.heartbeat(
        member_id=M1,
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo",),
        topic_partitions=(),
    ).heartbeat
    assert response.error_code is ErrorCode.NONE
    assert response.member_id == M1
    assert response.heartbeat_interval_ms == 5000
    return response.member_epoch, response.assignment


def test_member_can_rejoin_with_epoch_zero_in_stable_state() -> None:
    """testMemberCanRejoinWithEpochZeroInStableState: the group epoch does not move, the member gets
    its current state back."""
    ctx, _ = _ctx((FOO, "foo", 3))
    m = member(M1, epoch=100, previous=99, names=("foo",), assigned=epochs(100, (FOO, (0, 1, 2))))
    ctx.build_group(
        GROUP,
        100,
        [m],
        targets={M1: assignment((FOO, (0, 1, 2)))},
        assignment_epoch=100,
        assignment_timestamp_ms=12345,
        metadata_hash=ctx.hash_of("foo"),
    )
    assert ctx.member(M1).state is S.STABLE
    assert _rejoin(ctx) == (100, (TopicPartitions(FOO, (0, 1, 2)),))
    assert ctx.group().group_epoch == 100


def test_member_can_rejoin_with_epoch_zero_in_unrevoked_partitions_state() -> None:
    """testMemberCanRejoinWithEpochZeroInUnrevokedPartitionsState: the member reaches epoch 101."""
    ctx, _ = _ctx((FOO, "foo", 3))
    m = member(
        M1,
        state=S.UNREVOKED_PARTITIONS,
        epoch=100,
        previous=99,
        names=("foo",),
        assigned=epochs(11, (FOO, (0, 1))),
        pending=epochs(11, (FOO, (2,))),
    )
    ctx.build_group(
        GROUP,
        101,
        [m],
        targets={M1: assignment((FOO, (0, 1)))},
        assignment_epoch=101,
        assignment_timestamp_ms=12345,
        metadata_hash=ctx.hash_of("foo"),
    )
    assert ctx.member(M1).state is S.UNREVOKED_PARTITIONS
    assert _rejoin(ctx) == (101, (TopicPartitions(FOO, (0, 1)),))


def test_member_can_rejoin_with_epoch_zero_in_unreleased_partitions_state() -> None:
    """testMemberCanRejoinWithEpochZeroInUnreleasedPartitionsState"""
    ctx, _ = _ctx((FOO, "foo", 3))
    m = member(
        M1,
        state=S.UNRELEASED_PARTITIONS,
        epoch=100,
        previous=99,
        names=("foo",),
        assigned=epochs(11, (FOO, (0,))),
    )
    ctx.build_group(
        GROUP,
        100,
        [m],
        targets={M1: assignment((FOO, (0, 1, 2)))},
        assignment_epoch=100,
        assignment_timestamp_ms=12345,
        metadata_hash=ctx.hash_of("foo"),
    )
    assert ctx.member(M1).state is S.UNRELEASED_PARTITIONS
    assert _rejoin(ctx) == (100, (TopicPartitions(FOO, (0, 1, 2)),))
    assert ctx.group().group_epoch == 100


def _full(member_id: str, epoch: int, *partitions: int) -> dict[str, object]:
    return dict(
        member_id=member_id,
        member_epoch=epoch,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo",),
        server_assignor="range",
        topic_partitions=owned((FOO, partitions)),
    )


def _assert_duplicate_is_idle(ctx: ConsumerTestContext, request: dict[str, object], state: S) -> object:
    first = ctx.heartbeat(**request)
    assert ctx.member(str(request["member_id"])).state is state
    second = ctx.heartbeat(**request)
    assert second.response == first.response
    assert second.records == []
    assert ctx.member(str(request["member_id"])).state is state
    return first.response


def test_duplicate_full_heartbeat_in_stable_state() -> None:
    """testDuplicateFullHeartbeatInStableState"""
    ctx, _ = _ctx((FOO, "foo", 3))
    m = member(M1, epoch=100, previous=99, names=("foo",), assigned=epochs(100, (FOO, (0, 1, 2))))
    ctx.build_group(
        GROUP,
        100,
        [m],
        targets={M1: assignment((FOO, (0, 1, 2)))},
        assignment_epoch=100,
        assignment_timestamp_ms=12345,
        metadata_hash=ctx.hash_of("foo"),
    )
    response = _assert_duplicate_is_idle(ctx, _full(M1, 100, 0, 1, 2), S.STABLE)
    assert response == ctx.heartbeat(**_full(M1, 100, 0, 1, 2)).response
    assert ctx.heartbeat(**_full(M1, 100, 0, 1, 2)).heartbeat.assignment == (TopicPartitions(FOO, (0, 1, 2)),)


def test_duplicate_full_heartbeat_in_unrevoked_partitions_state() -> None:
    """testDuplicateFullHeartbeatInUnrevokedPartitionsState: the member still reports owning [0, 1, 2]."""
    ctx, _ = _ctx((FOO, "foo", 3))
    m = member(
        M1,
        state=S.UNREVOKED_PARTITIONS,
        epoch=100,
        previous=99,
        names=("foo",),
        assigned=epochs(11, (FOO, (0, 1))),
        pending=epochs(11, (FOO, (2,))),
    )
    ctx.build_group(
        GROUP,
        101,
        [m],
        targets={M1: assignment((FOO, (0, 1)))},
        assignment_epoch=101,
        assignment_timestamp_ms=12345,
        metadata_hash=ctx.hash_of("foo"),
    )
    first = ctx.heartbeat(**_full(M1, 100, 0, 1, 2)).heartbeat
    assert (first.member_epoch, first.assignment) == (100, (TopicPartitions(FOO, (0, 1)),))
    _assert_duplicate_is_idle(ctx, _full(M1, 100, 0, 1, 2), S.UNREVOKED_PARTITIONS)


def test_duplicate_full_heartbeat_in_unreleased_partitions_state() -> None:
    """testDuplicateFullHeartbeatInUnreleasedPartitionsState: member two still revokes [1, 2]."""
    ctx, _ = _ctx((FOO, "foo", 3))
    m1 = member(
        M1,
        state=S.UNRELEASED_PARTITIONS,
        epoch=100,
        previous=99,
        names=("foo",),
        assigned=epochs(11, (FOO, (0,))),
    )
    m2 = member(
        M2,
        state=S.UNREVOKED_PARTITIONS,
        epoch=99,
        previous=98,
        names=("foo",),
        pending=epochs(11, (FOO, (1, 2))),
    )
    ctx.build_group(
        GROUP,
        100,
        [m1, m2],
        targets={M1: assignment((FOO, (0, 1, 2))), M2: {}},
        assignment_epoch=100,
        assignment_timestamp_ms=12345,
        metadata_hash=ctx.hash_of("foo"),
    )
    first = ctx.heartbeat(**_full(M1, 100, 0)).heartbeat
    assert (first.member_epoch, first.assignment) == (100, (TopicPartitions(FOO, (0,)),))
    _assert_duplicate_is_idle(ctx, _full(M1, 100, 0), S.UNRELEASED_PARTITIONS)


def test_duplicate_full_heartbeat_with_revocation_ack() -> None:
    """testDuplicateFullHeartbeatWithRevocationAck: the first heartbeat acknowledges the revocation."""
    ctx, _ = _ctx((FOO, "foo", 3))
    m = member(
        M1,
        state=S.UNREVOKED_PARTITIONS,
        epoch=100,
        previous=99,
        names=("foo",),
        assigned=epochs(11, (FOO, (0, 1))),
        pending=epochs(11, (FOO, (2,))),
    )
    ctx.build_group(
        GROUP,
        101,
        [m],
        targets={M1: assignment((FOO, (0, 1)))},
        assignment_epoch=101,
        assignment_timestamp_ms=12345,
        metadata_hash=ctx.hash_of("foo"),
    )
    first = ctx.heartbeat(**_full(M1, 100, 0, 1)).heartbeat
    assert (first.member_epoch, first.assignment) == (101, (TopicPartitions(FOO, (0, 1)),))
    assert ctx.member(M1).state is S.STABLE
    _assert_duplicate_is_idle(ctx, _full(M1, 100, 0, 1), S.STABLE)
