"""``GroupMetadataManagerTest``'s consumer-group reconciliation, full responses, size limit, states,
assignor failures, and session / rebalance timeouts."""

from __future__ import annotations

import dataclasses

from kgroup.group import ConsumerGroups, CoordinatorConfig
from kgroup.group.assignors.api import (
    GroupAssignment,
    GroupSpec,
    PartitionAssignorError,
    SubscribedTopicDescriber,
)
from kgroup.group.consumer.group import ConsumerGroupState
from kgroup.group.consumer.timers import RebalanceTimer, SessionTimer
from kgroup.group.records.consumer import MemberAssignmentState, TargetAssignmentMetadataValue
from kgroup.messages import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, TopicPartitions
from kgroup.model import ErrorCode, TopicId

from .context import (
    GROUP,
    ConsumerTestContext,
    Current,
    Epoch,
    MockAssignor,
    Subscription,
    Target,
    TargetMetadata,
    as_sets,
    assert_records,
    assignment,
    current,
    epochs,
    image,
    member,
    owned,
)

S = MemberAssignmentState
G = ConsumerGroupState
FOO = TopicId.from_int(0xF00F00)
BAR = TopicId.from_int(0xBA4BA4)
M1, M2, M3 = "member-one", "member-two", "member-three"


def _ctx(*topics: tuple[TopicId, str, int], **config: object) -> tuple[ConsumerTestContext, MockAssignor]:
    assignor = MockAssignor("range")
    settings = dataclasses.replace(CoordinatorConfig(), **config)  # type: ignore[arg-type]
    return ConsumerTestContext(image(*topics, racks=True), settings, assignors=(assignor,)), assignor


def _join(
    member_id: str, *names: str, timeout_ms: int = 5000, instance_id: str | None = None
) -> dict[str, object]:
    return dict(
        member_id=member_id,
        instance_id=instance_id,
        member_epoch=0,
        server_assignor="range",
        rebalance_timeout_ms=timeout_ms,
        subscribed_topic_names=names,
        topic_partitions=(),
    )


def test_consumer_group_heartbeat_full_response() -> None:
    """testConsumerGroupHeartbeatFullResponse: the assignment is sent on joining and on every full
    request (topic names or a regex), and left out otherwise."""
    ctx, assignor = _ctx((FOO, "foo", 2))
    assignor.prepare({M1: assignment((FOO, (0, 1)))})
    joined = ctx.heartbeat(**_join(M1, "foo", "bar")).heartbeat
    assert (joined.member_epoch, joined.heartbeat_interval_ms, joined.assignment) == (
        2,
        5000,
        (TopicPartitions(FOO, (0, 1)),),
    )
    partial = ctx.heartbeat(member_id=M1, member_epoch=2).heartbeat
    assert (partial.member_epoch, partial.heartbeat_interval_ms, partial.assignment) == (2, 5000, None)
    full = dict(
        member_id=M1, member_epoch=2, rebalance_timeout_ms=5000, server_assignor="range", topic_partitions=()
    )
    by_names = ctx.heartbeat(subscribed_topic_names=("foo", "bar"), **full).heartbeat
    assert (by_names.member_epoch, by_names.assignment) == (2, (TopicPartitions(FOO, (0, 1)),))
    # adding a regex not resolved yet does not bump the epoch; the response is still full
    by_regex = ctx.heartbeat(subscribed_topic_regex="foo.*", **full).heartbeat
    assert (by_regex.member_epoch, by_regex.assignment) == (2, (TopicPartitions(FOO, (0, 1)),))


def test_reconciliation_process() -> None:
    """testReconciliationProcess: a third member joins; the others revoke, then it gets its partitions
    as they are released; the group goes Reconciling, then Stable."""
    ctx, assignor = _ctx((FOO, "foo", 6), (BAR, "bar", 3))
    m1 = member(
        M1, epoch=10, previous=9, names=("foo", "bar"), assigned=epochs(10, (FOO, (0, 1, 2)), (BAR, (0, 1)))
    )
    m2 = member(
        M2, epoch=10, previous=9, names=("foo", "bar"), assigned=epochs(10, (FOO, (3, 4, 5)), (BAR, (2,)))
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
        metadata_hash=ctx.hash_of("foo", "bar"),
    )
    assignor.prepare(
        {
            M1: assignment((FOO, (0, 1)), (BAR, (0,))),
            M2: assignment((FOO, (2, 3)), (BAR, (2,))),
            M3: assignment((FOO, (4, 5)), (BAR, (1,))),
        }
    )
    assert (ctx.member(M1).state, ctx.member(M2).state, ctx.group().state) == (S.STABLE, S.STABLE, G.STABLE)

    def value(state: S, epoch: int, previous: int, assigned: object = None, pending: object = None) -> object:
        return Current(
            GROUP,
            "",
            member(
                "",
                state=state,
                epoch=epoch,
                previous=previous,
                assigned=assigned,  # type: ignore[arg-type]
                pending=pending,
            ).assignment_value(),
        ).value

    def last_value(result: object) -> object:
        record = result.records[-1]  # type: ignore[attr-defined]
        assert isinstance(record, Current)
        return record.value

    # member three joins: a new target; it waits for partitions others still own
    r = ctx.heartbeat(**_join(M3, "foo", "bar"))
    assert (r.heartbeat.member_epoch, r.heartbeat.assignment) == (11, ())
    assert last_value(r) == value(S.UNRELEASED_PARTITIONS, 11, 0)
    assert (ctx.member(M3).state, ctx.group().state) == (S.UNRELEASED_PARTITIONS, G.RECONCILING)

    # member one must revoke foo-2 and bar-1 first: it stays at epoch 10
    r = ctx.heartbeat(member_id=M1, member_epoch=10)
    assert r.heartbeat.member_epoch == 10
    assert as_sets(r.heartbeat.assignment) == {FOO: {0, 1}, BAR: {0}}
    assert [rec.value for rec in r.records] == [  # type: ignore[union-attr]
        value(
            S.UNREVOKED_PARTITIONS,
            10,
            10,
            epochs(10, (FOO, (0, 1)), (BAR, (0,))),
            epochs(10, (FOO, (2,)), (BAR, (1,))),
        )
    ]
    assert ctx.rebalance_deadline(M1, 10) == ctx.time_ms + 5000

    # member two must revoke foo-4 and foo-5
    r = ctx.heartbeat(member_id=M2, member_epoch=10)
    assert as_sets(r.heartbeat.assignment) == {FOO: {3}, BAR: {2}}
    assert [rec.value for rec in r.records] == [  # type: ignore[union-attr]
        value(S.UNREVOKED_PARTITIONS, 10, 10, epochs(10, (FOO, (3,)), (BAR, (2,))), epochs(10, (FOO, (4, 5))))
    ]

    # member three: nothing released yet
    r = ctx.heartbeat(member_id=M3, member_epoch=11)
    assert (r.heartbeat.member_epoch, r.heartbeat.assignment) == (11, None)
    assert [rec.value for rec in r.records] == [value(S.UNRELEASED_PARTITIONS, 11, 11)]  # type: ignore[union-attr]

    # member one acknowledges the revocation by reporting what it still owns: epoch 11, Stable
    r = ctx.heartbeat(member_id=M1, member_epoch=10, topic_partitions=owned((FOO, (0, 1)), (BAR, (0,))))
    assert (r.heartbeat.member_epoch, r.heartbeat.assignment) == (11, None)
    assert [rec.value for rec in r.records] == [  # type: ignore[union-attr]
        value(S.STABLE, 11, 10, epochs(10, (FOO, (0, 1)), (BAR, (0,))))
    ]
    assert ctx.rebalance_timers(M1) == []
    assert (ctx.member(M1).state, ctx.group().state) == (S.STABLE, G.RECONCILING)

    # member two heartbeats without acknowledging: nothing changes
    r = ctx.heartbeat(member_id=M2, member_epoch=10)
    assert (r.heartbeat.member_epoch, r.heartbeat.assignment, r.records) == (10, None, [])
    assert ctx.member(M2).state is S.UNREVOKED_PARTITIONS

    # member three gets bar-1, released by member one, and still waits for foo-4 and foo-5
    r = ctx.heartbeat(member_id=M3, member_epoch=11)
    assert r.heartbeat.assignment == (TopicPartitions(BAR, (1,)),)
    assert [rec.value for rec in r.records] == [  # type: ignore[union-attr]
        value(S.UNRELEASED_PARTITIONS, 11, 11, epochs(11, (BAR, (1,))))
    ]
    r = ctx.heartbeat(member_id=M3, member_epoch=11)
    assert (r.heartbeat.assignment, r.records) == (None, [])
    assert ctx.member(M3).state is S.UNRELEASED_PARTITIONS

    # member two acknowledges: it keeps foo-3 and bar-2 at epoch 10 and gets foo-2 at epoch 11
    r = ctx.heartbeat(member_id=M2, member_epoch=10, topic_partitions=owned((FOO, (3,)), (BAR, (2,))))
    assert r.heartbeat.member_epoch == 11
    assert as_sets(r.heartbeat.assignment) == {FOO: {2, 3}, BAR: {2}}
    assert [rec.value for rec in r.records] == [  # type: ignore[union-attr]
        value(S.STABLE, 11, 10, {FOO: {2: 11, 3: 10}, BAR: {2: 10}})
    ]
    assert ctx.group().state is G.RECONCILING

    # member three gets everything
    r = ctx.heartbeat(member_id=M3, member_epoch=11, topic_partitions=owned((BAR, (1,))))
    assert as_sets(r.heartbeat.assignment) == {FOO: {4, 5}, BAR: {1}}
    assert [rec.value for rec in r.records] == [  # type: ignore[union-attr]
        value(S.STABLE, 11, 11, epochs(11, (FOO, (4, 5)), (BAR, (1,))))
    ]
    assert (ctx.member(M3).state, ctx.group().state) == (S.STABLE, G.STABLE)


def test_new_member_is_rejected_when_maximum_members_is_reached() -> None:
    """testNewMemberIsRejectedWithMaximumMembersIsReached"""
    ctx, _ = _ctx((FOO, "foo", 6), (BAR, "bar", 3), consumer_max_size=2)
    m1 = member(
        M1, epoch=10, previous=9, names=("foo", "bar"), assigned=epochs(10, (FOO, (0, 1, 2)), (BAR, (0, 1)))
    )
    m2 = member(
        M2, epoch=10, previous=9, names=("foo", "bar"), assigned=epochs(10, (FOO, (3, 4, 5)), (BAR, (2,)))
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
        metadata_hash=ctx.hash_of("foo", "bar"),
    )
    result = ctx.heartbeat(**_join(M3, "foo", "bar"))
    assert result.heartbeat.error_code is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert (
        result.heartbeat.error_message == "The consumer group has reached its maximum capacity of 2 members."
    )
    assert result.records == []
    # the members already in keep heartbeating
    assert ctx.heartbeat(member_id=M1, member_epoch=10).heartbeat.error_code is ErrorCode.NONE


def test_consumer_group_states() -> None:
    """testConsumerGroupStates: Empty, Assigning, Reconciling, Stable as records are replayed."""
    ctx, _ = _ctx((FOO, "foo", 6))
    ctx.build_group(GROUP, 10)
    assert ctx.group().state is G.EMPTY
    ctx.replay(Subscription(GROUP, M1, member(M1, epoch=0, previous=-1, names=("foo",)).metadata_value()))
    ctx.replay(Epoch(GROUP, (11, ctx.hash_of("foo"))))
    assert ctx.group().state is G.ASSIGNING
    ctx.replay(Target(GROUP, M1, assignment((FOO, (1, 2, 3)))))
    ctx.replay(TargetMetadata(GROUP, TargetAssignmentMetadataValue(11, 12345)))
    assert ctx.group().state is G.RECONCILING
    ctx.replay(
        current(
            member(
                M1, state=S.UNREVOKED_PARTITIONS, epoch=11, previous=10, assigned=epochs(10, (FOO, (1, 2, 3)))
            )
        )
    )
    assert ctx.group().state is G.RECONCILING
    ctx.replay(current(member(M1, epoch=11, previous=10, assigned=epochs(10, (FOO, (1, 2, 3))))))
    assert ctx.group().state is G.STABLE


class _FailingAssignor(MockAssignor):
    def assign(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        raise PartitionAssignorError("Assignment failed.")


def test_partition_assignor_exception_on_regular_heartbeat() -> None:
    """testPartitionAssignorExceptionOnRegularHeartbeat: UNKNOWN_SERVER_ERROR, nothing written."""
    ctx = ConsumerTestContext(image((FOO, "foo", 6), (BAR, "bar", 3)), assignors=(_FailingAssignor("range"),))
    result = ctx.heartbeat(**_join(M1, "foo", "bar"))
    assert result.heartbeat.error_code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert (
        result.heartbeat.error_message
        == "Failed to compute a new target assignment for epoch 2: Assignment failed."
    )
    assert result.records == []
    assert sorted(ctx.coordinator.kind(ConsumerGroups).group_ids()) == []
    assert ctx.session_deadline(M1) is None


def test_session_timeout_lifecycle() -> None:
    """testSessionTimeoutLifecycle: armed on the first heartbeat, re-armed on each, gone on leave."""
    ctx, assignor = _ctx((FOO, "foo", 6))
    assignor.prepare({M1: assignment((FOO, range(6)))})
    response = ctx.heartbeat(**_join(M1, "foo", timeout_ms=90_000)).heartbeat
    assert ctx.session_deadline(M1) == ctx.time_ms + 45_000
    assert ctx.sleep(response.heartbeat_interval_ms) == []
    response = ctx.heartbeat(member_id=M1, member_epoch=response.member_epoch).heartbeat
    assert ctx.session_deadline(M1) == ctx.time_ms + 45_000
    assert ctx.sleep(response.heartbeat_interval_ms) == []
    ctx.heartbeat(member_id=M1, member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert ctx.session_deadline(M1) is None
    assert ctx.rebalance_timers(M1) == []


def _fenced_alone(ctx: ConsumerTestContext, member_id: str, epoch: int, metadata_hash: int) -> list[object]:
    """What fencing a group's last member writes: Kafka 4.4 also resets the target assignment's
    metadata (``consumerGroupFenceMembers``: ``group.members().size() == members.size()``)."""
    return [
        Current(GROUP, member_id, None),
        Target(GROUP, member_id, None),
        Subscription(GROUP, member_id, None),
        Epoch(GROUP, (epoch, metadata_hash)),
        TargetMetadata(GROUP, TargetAssignmentMetadataValue(epoch, 0)),
    ]


def test_session_timeout_expiration() -> None:
    """testSessionTimeoutExpiration"""
    ctx, assignor = _ctx((FOO, "foo", 6))
    assignor.prepare({M1: assignment((FOO, range(6)))})
    ctx.heartbeat(**_join(M1, "foo", timeout_ms=90_000))
    assert ctx.session_deadline(M1) == ctx.time_ms + 45_000
    fired = ctx.sleep(45_000 + 1)
    assert [key for key, _ in fired] == [SessionTimer(GROUP, M1)]
    assert_records(_fenced_alone(ctx, M1, 3, 0), fired[0][1])  # type: ignore[arg-type]
    assert ctx.session_deadline(M1) is None
    assert ctx.rebalance_timers(M1) == []
    assert ctx.group().state is G.EMPTY


def test_session_timeout_expiration_static_member() -> None:
    """testSessionTimeoutExpirationStaticMember: a static member that left for now keeps its session;
    when nobody took its place before it expires, it is removed."""
    ctx, assignor = _ctx((FOO, "foo", 6))
    assignor.prepare({M1: assignment((FOO, range(6)))})
    ctx.heartbeat(**_join(M1, "foo", timeout_ms=90_000, instance_id=M1))
    assert ctx.session_deadline(M1) == ctx.time_ms + 45_000
    ctx.heartbeat(
        member_id=M1,
        instance_id=M1,
        member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        rebalance_timeout_ms=90_000,
        subscribed_topic_names=("foo",),
        topic_partitions=(),
    )
    assert ctx.session_deadline(M1) == ctx.time_ms + 45_000
    fired = ctx.sleep(45_000 + 1)
    assert [key for key, _ in fired] == [SessionTimer(GROUP, M1)]
    assert_records(_fenced_alone(ctx, M1, 3, 0), fired[0][1])  # type: ignore[arg-type]
    assert ctx.session_deadline(M1) is None
    assert ctx.rebalance_timers(M1) == []


def test_rebalance_timeout_lifecycle() -> None:
    """testRebalanceTimeoutLifecycle: armed when the member must revoke, with the member's latest
    rebalance timeout; cancelled when it acknowledges; a stale timer does nothing."""
    ctx, assignor = _ctx((FOO, "foo", 3))
    assignor.prepare({M1: assignment((FOO, (0, 1, 2)))})
    first = ctx.heartbeat(**_join(M1, "foo", timeout_ms=180_000)).heartbeat
    assert (first.member_epoch, first.assignment) == (2, (TopicPartitions(FOO, (0, 1, 2)),))
    assert ctx.sleep(first.heartbeat_interval_ms) == []
    assignor.prepare({M1: assignment((FOO, (0, 1))), M2: assignment((FOO, (2,)))})
    second = ctx.heartbeat(**_join(M2, "foo", timeout_ms=90_000)).heartbeat
    assert (second.member_epoch, second.assignment) == (3, ())
    assert ctx.sleep(second.heartbeat_interval_ms) == []
    revoking = ctx.heartbeat(
        member_id=M1, member_epoch=2, rebalance_timeout_ms=12_000, subscribed_topic_names=("foo",)
    ).heartbeat
    assert (revoking.member_epoch, revoking.assignment) == (2, (TopicPartitions(FOO, (0, 1)),))
    key = RebalanceTimer(GROUP, M1, 2)
    assert ctx.rebalance_timers(M1) == [key]
    assert ctx.deadline(key) == ctx.time_ms + 12_000
    assert ctx.sleep(revoking.heartbeat_interval_ms) == []
    acked = ctx.heartbeat(member_id=M1, member_epoch=2, topic_partitions=owned((FOO, (0, 1)))).heartbeat
    assert (acked.member_epoch, acked.assignment) == (3, None)
    assert ctx.rebalance_timers(M1) == []
    # the timer captured earlier, fired anyway (stale): nothing happens
    stale = ctx.coordinator.on_timer(ctx.time_ms + 60_000, key)
    assert (stale.records, stale.replies, stale.timers) == ((), (), ())


def test_rebalance_timeout_expiration() -> None:
    """testRebalanceTimeoutExpiration: a member that does not revoke in time is fenced."""
    ctx, assignor = _ctx((FOO, "foo", 3))
    assignor.prepare({M1: assignment((FOO, (0, 1, 2)))})
    first = ctx.heartbeat(**_join(M1, "foo", timeout_ms=10_000)).heartbeat
    assert first.member_epoch == 2
    assert ctx.sleep(first.heartbeat_interval_ms) == []
    assignor.prepare({M1: assignment((FOO, (0, 1))), M2: assignment((FOO, (2,)))})
    second = ctx.heartbeat(**_join(M2, "foo", timeout_ms=10_000)).heartbeat
    assert (second.member_epoch, second.assignment) == (3, ())
    assert ctx.sleep(second.heartbeat_interval_ms) == []
    revoking = ctx.heartbeat(member_id=M1, member_epoch=2).heartbeat
    assert (revoking.member_epoch, revoking.assignment) == (2, (TopicPartitions(FOO, (0, 1)),))
    fired = ctx.sleep(10_000 + 1)
    assert [key for key, _ in fired] == [RebalanceTimer(GROUP, M1, 2)]
    assert_records(
        [
            Current(GROUP, M1, None),
            Target(GROUP, M1, None),
            Subscription(GROUP, M1, None),
            Epoch(GROUP, (4, ctx.hash_of("foo"))),
        ],
        fired[0][1],
    )
    assert ctx.session_deadline(M1) is None
    assert ctx.rebalance_timers(M1) == []
