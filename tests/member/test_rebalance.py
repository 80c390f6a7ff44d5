"""Auto-commit timing, the pre-join commit, eager vs cooperative callbacks, rejoin triggers."""

from __future__ import annotations

import pytest

from kgroup.assignors.sticky import StickyAssignor
from kgroup.assignors.sticky.userdata import decode_sticky_user_data
from kgroup.member import (
    CommitFailed,
    ConsumerMember,
    JoinedGroup,
    OffsetsCommitted,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Phase,
    RejoinRequested,
)
from kgroup.messages import (
    ConsumerAssignment,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, KgroupError, RebalanceProtocol, TopicMetadata, TopicPartition
from kgroup.wire.consumer_protocol import decode_subscription, encode_assignment

from .helpers import (
    TOPICS,
    FixedAssignor,
    answer_fetch,
    find_coordinator,
    join_as_follower,
    join_member,
    kinds,
    new_member,
    only,
    tp,
)

COOP = (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)


def stable(member: ConsumerMember, partitions: list[TopicPartition], now: int = 1000) -> ConsumerMember:
    fetch = only(join_as_follower(member, partitions, now=now), OffsetFetchRequest)
    answer_fetch(member, fetch, {p: 10 for p in partitions}, now=now)
    member.drain_events()
    return member


def commit_ok(member: ConsumerMember, req: object, now: int) -> list[object]:
    assert isinstance(req.body, OffsetCommitRequest)  # type: ignore[attr-defined]
    results = tuple((p.partition, ErrorCode.NONE) for p in req.body.offsets)  # type: ignore[attr-defined]
    return member.on_response(now, req.correlation_id, OffsetCommitResponse(results))  # type: ignore[attr-defined,return-value]


def test_auto_commit_every_interval_from_poll() -> None:
    member = stable(new_member(), [tp("t", 0), tp("t", 1)])  # synced at 1000
    member.record_processed(tp("t", 0), 17)
    assert member.poll(5999) == []
    commit = only(member.poll(6000), OffsetCommitRequest)
    assert isinstance(commit.body, OffsetCommitRequest)
    assert [(p.partition, p.committed_offset) for p in commit.body.offsets] == [
        (tp("t", 0), 17),
        (tp("t", 1), 10),
    ]
    assert (commit.body.generation_id, commit.body.member_id) == (1, "m-1")
    assert member.poll(10_999) == []
    commit_ok(member, commit, 6001)
    assert member.committed()[tp("t", 0)] == 17
    assert member.drain_events() == [OffsetsCommitted(((tp("t", 0), 17), (tp("t", 1), 10)), 1)]
    assert kinds(member.poll(11_000)) == ["OffsetCommitRequest"]


def test_retriable_auto_commit_failure_retries_after_backoff() -> None:
    member = stable(new_member(), [tp("t", 0)])
    commit = only(member.poll(6000), OffsetCommitRequest)
    member.on_response(
        6001,
        commit.correlation_id,
        OffsetCommitResponse(((tp("t", 0), ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),)),
    )
    assert member.drain_events() == [CommitFailed(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, (tp("t", 0),))]
    assert member.poll(6050) == []
    assert kinds(member.poll(6101)) == ["OffsetCommitRequest"]


def test_no_auto_commit_when_disabled_or_nothing_consumed() -> None:
    member = stable(new_member(enable_auto_commit=False), [tp("t", 0)])
    assert member.poll(60_000) == []
    empty = new_member()
    join_as_follower(empty, [tp("t", 0)], now=1000)  # OffsetFetch not answered: no position yet
    assert empty.poll(6000) == []


def rebalance_requested(member: ConsumerMember, now: int) -> None:
    hb = only(member.background(now), HeartbeatRequest)
    member.on_response(now, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    member.drain_events()


def test_eager_prepare_commits_and_waits_before_revoking_and_joining() -> None:
    member = stable(new_member(), [tp("t", 0), tp("t", 1)])
    member.record_processed(tp("t", 1), 33)
    rebalance_requested(member, 4000)
    commit = only(member.poll(4100), OffsetCommitRequest)
    assert member.phase is Phase.PREPARING and member.pending_revocation() == {tp("t", 0), tp("t", 1)}
    assert member.drain_events() == []  # revocation waits for the commit
    join = commit_ok(member, commit, 4110)
    assert kinds(join) == ["JoinGroupRequest"]  # type: ignore[arg-type]
    events = member.drain_events()
    assert events == [
        OffsetsCommitted(((tp("t", 0), 10), (tp("t", 1), 33)), 1),
        PartitionsRevoked((tp("t", 0), tp("t", 1)), 1),
    ]


def test_prepare_commit_failure_still_joins() -> None:
    member = stable(new_member(), [tp("t", 0)])
    rebalance_requested(member, 4000)
    commit = only(member.poll(4100), OffsetCommitRequest)
    out = member.on_response(
        4110, commit.correlation_id, OffsetCommitResponse(((tp("t", 0), ErrorCode.REBALANCE_IN_PROGRESS),))
    )
    assert kinds(out) == ["JoinGroupRequest"]


def test_prepare_commit_retriable_failure_retries_first() -> None:
    member = stable(new_member(), [tp("t", 0)])
    rebalance_requested(member, 4000)
    commit = only(member.poll(4100), OffsetCommitRequest)
    out = member.on_response(
        4110,
        commit.correlation_id,
        OffsetCommitResponse(((tp("t", 0), ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),)),
    )
    assert out == [] and member.next_wakeup_ms() == 4210
    again = only(member.background(4210), OffsetCommitRequest)
    assert kinds(commit_ok(member, again, 4220)) == ["JoinGroupRequest"]  # type: ignore[arg-type]


def coop_member(**config: object) -> ConsumerMember:
    return new_member(("t", "u"), assignors=[FixedAssignor("cooperative-sticky", protocols=COOP)], **config)


def test_cooperative_keeps_partitions_and_revokes_only_the_difference() -> None:
    member = stable(coop_member(enable_auto_commit=False), [tp("t", 0), tp("t", 1), tp("t", 2)])
    assert member.protocol is RebalanceProtocol.COOPERATIVE
    rebalance_requested(member, 4000)
    join = only(member.poll(4100), JoinGroupRequest)
    assert member.drain_events() == []  # nothing revoked before JoinGroup
    assert member.assignment() == {tp("t", 0), tp("t", 1), tp("t", 2)}
    assert isinstance(join.body, JoinGroupRequest)
    sub = decode_subscription(join.body.protocols[0].metadata)
    assert (sub.owned_partitions, sub.generation_id) == ((tp("t", 0), tp("t", 1), tp("t", 2)), 1)
    sync = only(
        member.on_response(
            4200,
            join.correlation_id,
            JoinGroupResponse(ErrorCode.NONE, 2, "consumer", "cooperative-sticky", "x", member_id="m-1"),
        ),
        SyncGroupRequest,
    )
    out = member.on_response(
        4300,
        sync.correlation_id,
        SyncGroupResponse(
            ErrorCode.NONE, encode_assignment(ConsumerAssignment((tp("t", 0), tp("t", 1), tp("u", 1))))
        ),
    )
    # revoked t-2 → rejoin at once (second rebalance); u-1 is new → OffsetFetch
    assert kinds(out) == ["OffsetFetchRequest", "JoinGroupRequest"]
    assert member.drain_events() == [
        JoinedGroup(2, "m-1", False, "cooperative-sticky"),
        PartitionsRevoked((tp("t", 2),), 2),
        RejoinRequested("need to revoke partitions and re-join"),
        PartitionsAssigned((tp("u", 1),), 2),
    ]
    assert member.positions() == {tp("t", 0): 10, tp("t", 1): 10}  # kept through the rebalance


def test_commit_on_revoke_commits_what_is_given_up_first() -> None:
    member = stable(coop_member(enable_auto_commit=False, commit_on_revoke=True), [tp("t", 0), tp("t", 1)])
    member.record_processed(tp("t", 1), 99)
    rebalance_requested(member, 4000)
    join = only(member.poll(4100), JoinGroupRequest)
    sync = only(
        member.on_response(
            4200,
            join.correlation_id,
            JoinGroupResponse(ErrorCode.NONE, 2, "consumer", "cooperative-sticky", "x", member_id="m-1"),
        ),
        SyncGroupRequest,
    )
    out = member.on_response(
        4300,
        sync.correlation_id,
        SyncGroupResponse(ErrorCode.NONE, encode_assignment(ConsumerAssignment((tp("t", 0),)))),
    )
    assert kinds(out) == ["OffsetCommitRequest", "JoinGroupRequest"]
    body = out[0].body
    assert isinstance(body, OffsetCommitRequest)
    assert [(p.partition, p.committed_offset) for p in body.offsets] == [(tp("t", 1), 99)]


def test_subscription_change_rejoins_and_cooperative_revokes_dropped_topics() -> None:
    member = stable(coop_member(enable_auto_commit=False), [tp("t", 0), tp("u", 0)])
    assert member.poll(2000) == []
    member.subscribe(["t"])
    join = only(member.poll(2100), JoinGroupRequest)
    assert member.drain_events() == [
        RejoinRequested("subscription has changed"),
        PartitionsRevoked((tp("u", 0),), 1),
    ]
    assert isinstance(join.body, JoinGroupRequest) and decode_subscription(
        join.body.protocols[0].metadata
    ).topics == ("t",)


def test_partition_count_change_makes_only_the_leader_rejoin() -> None:
    leader = new_member(("t",), assignors=[FixedAssignor("range", {"a": [tp("t", 0)], "b": [tp("t", 1)]})])
    join = only(find_coordinator(leader), JoinGroupRequest)
    resp = JoinGroupResponse(
        ErrorCode.NONE,
        1,
        "consumer",
        "range",
        "a",
        member_id="a",
        members=(join_member("a", ["t"]), join_member("b", ["t", "u"])),
    )
    sync = only(leader.on_response(1, join.correlation_id, resp), SyncGroupRequest)
    leader.on_response(
        2,
        sync.correlation_id,
        SyncGroupResponse(ErrorCode.NONE, encode_assignment(ConsumerAssignment((tp("t", 0),)))),
    )
    follower = stable(new_member(("t",)), [tp("t", 1)])
    assert leader.poll(100) == []  # the metadata it assigned from has not changed
    grown = {**TOPICS, "u": TopicMetadata("u", 5)}  # a topic only the other member subscribes to
    for m in (leader, follower):
        m.update_metadata(grown)
        m.drain_events()
    assert kinds(leader.poll(200)) == ["JoinGroupRequest"]
    assert leader.drain_events()[0] == RejoinRequested("cached metadata has changed")
    assert follower.poll(200) == [] and not follower.rejoin_needed


def test_seek_and_record_processed_check_their_input() -> None:
    member = stable(new_member(), [tp("t", 0)])
    member.seek(tp("t", 0), 3)
    assert member.positions()[tp("t", 0)] == 3
    with pytest.raises(KgroupError, match="not assigned"):
        member.seek(tp("t", 3), 0)
    with pytest.raises(KgroupError, match="next_offset"):
        member.record_processed(tp("t", 0), -2)
    with pytest.raises(KgroupError, match="pass a list"):
        member.subscribe("t")
    with pytest.raises(KgroupError, match="topics: empty"):
        member.subscribe([])


def test_lost_partitions_are_not_committed() -> None:
    member = stable(new_member(), [tp("t", 0)])
    hb = only(member.background(4000), HeartbeatRequest)
    member.on_response(4001, hb.correlation_id, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    out = member.poll(4100)
    assert kinds(out) == ["JoinGroupRequest"]
    assert PartitionsLost((tp("t", 0),), 1) in member.drain_events()


def test_reset_while_the_prepare_commit_waits_loses_the_partitions() -> None:
    """Issue 9 defect 1: Kafka calls onJoinPrepare again from every poll() while its commit is pending,
    with the *current* generation. When the heartbeat thread learns UNKNOWN_MEMBER_ID meanwhile, the
    prepare that goes on sees a reset generation: the partitions are lost (onPartitionsLost), not kept,
    and JoinGroup goes out with no member id and no owned partitions."""
    member = stable(coop_member(), [tp("t", 0), tp("t", 1)])
    member.record_processed(tp("t", 0), 20)
    rebalance_requested(member, 4000)
    commit = only(member.poll(4100), OffsetCommitRequest)
    assert member.phase is Phase.PREPARING
    heartbeat = only(member.background(7000), HeartbeatRequest)
    member.on_response(7010, heartbeat.correlation_id, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    assert member.phase is Phase.PREPARING and member.member_id == ""
    join = commit_ok(member, commit, 7020)
    assert kinds(join) == ["JoinGroupRequest"]  # type: ignore[arg-type]
    events = [e for e in member.drain_events() if isinstance(e, (PartitionsLost, PartitionsRevoked))]
    assert events == [PartitionsLost((tp("t", 0), tp("t", 1)), 1)]
    assert member.assignment() == frozenset()
    body = join[0].body  # type: ignore[attr-defined]
    assert isinstance(body, JoinGroupRequest) and body.member_id == ""
    sub = decode_subscription(body.protocols[0].metadata)
    assert (sub.owned_partitions, sub.generation_id) == ((), -1)


def test_prepare_goes_on_when_its_timer_expires_with_the_commit_in_flight() -> None:
    """onJoinPrepare's joinPrepareTimer (the rebalance timeout, max.poll.interval.ms): when it expires
    with the commit still unanswered, Kafka goes on to join; a late answer is an ordinary commit's."""
    member = stable(coop_member(max_poll_interval_ms=10_000), [tp("t", 0)])
    member.record_processed(tp("t", 0), 20)
    rebalance_requested(member, 4000)
    commit = only(member.poll(4100), OffsetCommitRequest)
    assert member.next_wakeup_ms() is not None and member.next_wakeup_ms() <= 14_100  # type: ignore[operator]
    out = member.background(14_100)
    assert "JoinGroupRequest" in kinds(out) and member.phase is Phase.JOINING
    assert member.assignment() == {tp("t", 0)}  # cooperative: nothing revoked (still subscribed)
    late = commit_ok(member, commit, 14_200)
    assert late == [] and member.phase is Phase.JOINING


def test_eager_sticky_member_refusing_an_assignment_keeps_its_stale_claim() -> None:
    """Issue 22, the member's half (Kafka's ``ConsumerCoordinator.onJoinComplete``): an assignment that
    does not match the current subscription is refused *before* ``assignor.onAssignment``, so eager
    sticky's user data — the member's claim — stays the last accepted assignment and its generation,
    and every later JoinGroup sends it again. With the leader's ``StickyAssignor`` handing such a stale
    claim back (tests/assignors/test_sticky_rules.py) the member refuses again: a rejoin loop."""
    member = stable(
        new_member(("t", "u"), assignors=[StickyAssignor()], enable_auto_commit=False),
        [tp("t", 0), tp("u", 0)],
    )
    def sent_claim(join: object) -> tuple[tuple[str, ...], tuple[list[TopicPartition], int | None]]:
        assert isinstance(join, JoinGroupRequest)
        sub = decode_subscription(join.protocols[0].metadata)
        assert sub.user_data is not None
        return sub.topics, decode_sticky_user_data(sub.user_data)  # (partitions, generation)

    rebalance_requested(member, 4000)
    join = only(member.poll(4100), JoinGroupRequest)  # sent with t and u
    member.subscribe(["t"])  # while the JoinGroup is in flight
    # generation 2 was assigned from the subscription the JoinGroup carried
    out = join_as_follower(member, [tp("t", 0), tp("u", 0)], now=4200, generation=2, join=join)
    rejoin = only(out, JoinGroupRequest)
    events = member.drain_events()
    assert RejoinRequested("received assignment does not match the current subscription") in events
    assert not any(isinstance(e, PartitionsAssigned) for e in events)
    assert member.assignment() == frozenset()
    stale = ([tp("t", 0), tp("u", 0)], 1)  # what generation 1 gave it: onAssignment was not called
    assert sent_claim(rejoin.body) == (("t",), stale)
    # generation 3: the leader's StickyAssignor gives the stale claim u-0 back; refused again
    out = join_as_follower(member, [tp("t", 0), tp("u", 0)], now=4300, generation=3, join=rejoin)
    assert sent_claim(only(out, JoinGroupRequest).body) == (("t",), stale)
    # an assignment inside the subscription is taken, and the claim is renewed
    out = join_as_follower(member, [tp("t", 0)], now=4400, generation=4, join=only(out, JoinGroupRequest))
    assert kinds(out) == ["OffsetFetchRequest"]
    assert member.assignment() == {tp("t", 0)}
    rebalance_requested(member, 8000)
    assert sent_claim(only(member.poll(8100), JoinGroupRequest).body) == (("t",), ([tp("t", 0)], 4))
