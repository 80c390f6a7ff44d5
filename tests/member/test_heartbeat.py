"""Heartbeats, their errors, session loss, max.poll.interval.ms expiry, and close."""

from __future__ import annotations

import pytest

from kgroup.member import (
    ConsumerMember,
    Fenced,
    LeftGroup,
    MemberState,
    PartitionsLost,
    PartitionsRevoked,
    Phase,
    RejoinRequested,
)
from kgroup.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from kgroup.model import ErrorCode, KgroupError
from kgroup.wire.consumer_protocol import decode_subscription

from .helpers import COORDINATOR, answer_fetch, join_as_follower, kinds, new_member, only, tp


def stable_member(now: int = 1000, **config: object) -> ConsumerMember:
    """A follower in generation 1 owning t-0 and t-1 (positions fetched: t-0 at 5, t-1 unset)."""
    member = new_member(**config)
    fetch = only(join_as_follower(member, [tp("t", 0), tp("t", 1)], now=now), OffsetFetchRequest)
    answer_fetch(member, fetch, {tp("t", 0): 5}, now=now)
    member.drain_events()
    return member


def test_heartbeats_every_interval_and_session_renewed() -> None:
    member = stable_member()
    assert member.next_wakeup_ms() == 4000  # joined at 1000 + heartbeat.interval.ms
    assert member.background(3999) == []
    hb = only(member.background(4000), HeartbeatRequest)
    assert isinstance(hb.body, HeartbeatRequest)
    assert (hb.body.generation_id, hb.body.member_id, hb.node_id) == (1, "m-1", COORDINATOR)
    assert member.next_wakeup_ms() == 7000
    assert member.on_response(4001, hb.correlation_id, HeartbeatResponse(ErrorCode.NONE)) == []
    # the session now ends 45 s after the answer, not after the join
    for t in range(7000, 46_001, 3000):
        beat = only(member.background(t), HeartbeatRequest)
        member.on_response(t, beat.correlation_id, HeartbeatResponse(ErrorCode.NONE))
    assert member.coordinator == COORDINATOR and member.state is MemberState.STABLE


def test_rebalance_in_progress_rejoins_at_next_poll_eager_revokes_first() -> None:
    member = stable_member(enable_auto_commit=False)
    hb = only(member.background(4000), HeartbeatRequest)
    assert (
        member.on_response(4001, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS)) == []
    )
    assert member.drain_events() == [RejoinRequested("group is already rebalancing")]
    assert member.state is MemberState.STABLE and member.rejoin_needed  # nothing happens until poll()
    join = only(member.poll(4500), JoinGroupRequest)
    assert member.drain_events() == [PartitionsRevoked((tp("t", 0), tp("t", 1)), 1)]
    assert member.assignment() == frozenset()
    assert isinstance(join.body, JoinGroupRequest)
    sub = decode_subscription(join.body.protocols[0].metadata)
    assert (join.body.member_id, sub.generation_id, sub.owned_partitions) == ("m-1", 1, ())
    assert join.body.reason == "group is already rebalancing"


@pytest.mark.parametrize(
    ("error", "member_id"), [(ErrorCode.ILLEGAL_GENERATION, "m-1"), (ErrorCode.UNKNOWN_MEMBER_ID, "")]
)
def test_generation_errors_reset_and_lose_partitions(error: ErrorCode, member_id: str) -> None:
    member = stable_member()
    hb = only(member.background(4000), HeartbeatRequest)
    member.on_response(4001, hb.correlation_id, HeartbeatResponse(error))
    assert member.phase is Phase.UNJOINED and member.generation == -1 and member.member_id == member_id
    assert member.next_wakeup_ms() is None  # heartbeats stop; the application's poll rejoins
    join = only(member.poll(4100), JoinGroupRequest)  # no commit: the generation is gone
    assert PartitionsLost((tp("t", 0), tp("t", 1)), 1) in member.drain_events()
    assert isinstance(join.body, JoinGroupRequest) and join.body.member_id == member_id
    assert decode_subscription(join.body.protocols[0].metadata).generation_id == -1


def test_answers_to_stale_heartbeats_are_ignored() -> None:
    member = stable_member()
    hb = only(member.background(4000), HeartbeatRequest)
    member._generation = type(member._generation)(2, "m-1", "range")  # a newer generation arrived meanwhile
    member.on_response(4001, hb.correlation_id, HeartbeatResponse(ErrorCode.ILLEGAL_GENERATION))
    assert member.phase is Phase.STABLE and member.generation == 2


def test_fenced_instance_is_fatal() -> None:
    member = stable_member(group_instance_id="i-1")
    hb = only(member.background(4000), HeartbeatRequest)
    assert isinstance(hb.body, HeartbeatRequest) and hb.body.group_instance_id == "i-1"
    member.on_response(4001, hb.correlation_id, HeartbeatResponse(ErrorCode.FENCED_INSTANCE_ID))
    # Kafka throws from poll(); the application then closes and the partitions are lost
    assert member.drain_events() == [Fenced(1, "m-1", "i-1"), PartitionsLost((tp("t", 0), tp("t", 1)), 1)]
    assert member.state is MemberState.FAILED
    assert member.poll(4100) == [] and member.background(4100) == []
    assert member.close(4200) == [] and member.state is MemberState.CLOSED


def test_session_timeout_without_answers_rediscovers_the_coordinator() -> None:
    member = stable_member(session_timeout_ms=10_000)
    sent = [only(member.background(t), HeartbeatRequest) for t in (4000, 7000, 10_000)]
    assert member.next_wakeup_ms() == 11_000  # session started at the join (1000)
    member.poll(10_500)  # the application is alive; only the coordinator is silent
    find = only(member.background(11_000), FindCoordinatorRequest)
    assert member.coordinator is None
    # the abandoned heartbeats' late answers change nothing
    assert (
        member.on_response(11_001, sent[0].correlation_id, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        == []
    )
    assert member.phase is Phase.STABLE
    member.on_response(11_002, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))
    hb = only(member.background(13_000), HeartbeatRequest)
    member.on_response(13_001, hb.correlation_id, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    assert member.phase is Phase.UNJOINED  # the coordinator had removed it
    member.poll(13_100)
    assert PartitionsLost((tp("t", 0), tp("t", 1)), 1) in member.drain_events()


def test_failed_heartbeat_retries_after_backoff() -> None:
    member = stable_member()
    hb = only(member.background(4000), HeartbeatRequest)
    assert member.on_request_failed(4050, hb.correlation_id) == []
    wake = member.next_wakeup_ms()
    assert (
        member.coordinator is None and wake is not None and wake <= 4050
    )  # due: the heartbeat thread looks it up
    find = only(member.background(4050), FindCoordinatorRequest)
    member.on_response(4060, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))
    assert member.next_wakeup_ms() == 4150
    assert kinds(member.background(4150)) == ["HeartbeatRequest"]


def test_dynamic_member_leaves_when_poll_interval_expires() -> None:
    member = stable_member(max_poll_interval_ms=20_000, session_timeout_ms=30_000)
    member.poll(2000)
    for t in range(4000, 22_000, 3000):
        hb = only(member.background(t), HeartbeatRequest)
        member.on_response(t, hb.correlation_id, HeartbeatResponse(ErrorCode.NONE))
    assert member.next_wakeup_ms() == 22_000  # last poll 2000 + max.poll.interval.ms
    leave = only(member.background(22_000), LeaveGroupRequest)
    assert isinstance(leave.body, LeaveGroupRequest)
    assert [m.member_id for m in leave.body.members] == ["m-1"]
    assert member.drain_events() == [
        RejoinRequested("consumer pro-actively leaving the group"),  # resetGenerationOnLeaveGroup
        LeftGroup("consumer poll timeout has expired.", True),
    ]
    assert member.phase is Phase.UNJOINED and member.member_id == "" and member.next_wakeup_ms() is None
    join = only(member.poll(30_000), JoinGroupRequest)
    assert PartitionsLost((tp("t", 0), tp("t", 1)), 1) in member.drain_events()
    assert isinstance(join.body, JoinGroupRequest) and join.body.member_id == ""


def test_static_member_does_not_leave_when_poll_interval_expires() -> None:
    member = stable_member(max_poll_interval_ms=5000, group_instance_id="i-1")
    only(member.background(4000), HeartbeatRequest)
    assert member.background(6000) == []  # poll deadline 1000 + 5000: no LeaveGroup for static members
    assert LeftGroup("consumer poll timeout has expired.", False) in member.drain_events()
    join = only(member.poll(9000), JoinGroupRequest)
    assert isinstance(join.body, JoinGroupRequest)
    assert (join.body.member_id, join.body.group_instance_id) == ("", "i-1")


def test_dynamic_close_commits_revokes_and_leaves_in_order() -> None:
    member = stable_member()
    member.record_processed(tp("t", 0), 9)
    out = member.close(5000)
    assert kinds(out) == ["OffsetCommitRequest", "LeaveGroupRequest"]
    commit = out[0].body
    assert isinstance(commit, OffsetCommitRequest)
    assert [(p.partition, p.committed_offset) for p in commit.offsets] == [(tp("t", 0), 9)]
    assert (commit.generation_id, commit.member_id) == (1, "m-1")
    assert member.drain_events() == [
        PartitionsRevoked((tp("t", 0), tp("t", 1)), 1),
        LeftGroup("the consumer is being closed", True),
    ]
    assert member.state is MemberState.CLOSED and member.next_wakeup_ms() is None
    with pytest.raises(KgroupError, match="closed"):
        member.poll(5001)
    assert member.close(5002) == []


def test_static_close_sends_no_leave_group() -> None:
    member = stable_member(group_instance_id="i-1", enable_auto_commit=False)
    assert member.close(5000) == []
    assert member.drain_events()[-1] == LeftGroup("the consumer is being closed", False)


def test_close_during_a_rebalance_loses_partitions() -> None:
    member = stable_member(group_instance_id="i-1", enable_auto_commit=False)
    member._phase = Phase.SYNCING  # closed while its SyncGroup is in flight
    member.close(5000)
    assert member.drain_events()[0] == PartitionsLost((tp("t", 0), tp("t", 1)), 1)
