"""The member against cases of Kafka's own client tests (``AbstractCoordinatorTest`` and
``ConsumerCoordinatorTest``, classic protocol): each test names the Kafka test it follows. kgroup's
code and assertions are its own; the behaviour is Kafka 4.0's."""

from __future__ import annotations

from kgroup.member import (
    CommitFailed,
    ConsumerMember,
    FatalError,
    MemberState,
    PartitionsLost,
    Phase,
    RejoinRequested,
)
from kgroup.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
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
from kgroup.model import ErrorCode

from .helpers import answer_fetch, assigned, find_coordinator, join_as_follower, kinds, new_member, only, tp


def stable(member: ConsumerMember, now: int = 1000) -> ConsumerMember:
    """A follower ``m-1`` of generation 1 owning t-0 and t-1, positions fetched."""
    fetch = only(join_as_follower(member, [tp("t", 0), tp("t", 1)], now=now), OffsetFetchRequest)
    answer_fetch(member, fetch, {tp("t", 0): 5, tp("t", 1): 6}, now=now)
    member.drain_events()
    return member


def rejoining(member: ConsumerMember, now: int) -> JoinGroupRequest:
    """A heartbeat answered REBALANCE_IN_PROGRESS, then poll(): the JoinGroup that goes out."""
    hb = only(member.background(now), HeartbeatRequest)
    member.on_response(now, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    out = member.poll(now + 1)
    join = [r for r in out if isinstance(r.body, JoinGroupRequest)]
    assert len(join) == 1, kinds(out)
    assert isinstance(join[0].body, JoinGroupRequest)
    return join[0].body


def test_retain_member_id_after_join_group_disconnect() -> None:
    """testRetainMemberIdAfterJoinGroupDisconnect: a JoinGroup lost to a disconnect is sent again,
    after rediscovering the coordinator, with the same member id and generation."""
    member = stable(new_member(enable_auto_commit=False))
    hb = only(member.background(4000), HeartbeatRequest)
    member.on_response(4000, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    [join] = [r for r in member.poll(4001) if isinstance(r.body, JoinGroupRequest)]
    assert isinstance(join.body, JoinGroupRequest) and join.body.member_id == "m-1"
    assert member.on_request_failed(4002, join.correlation_id) == []
    assert member.coordinator is None and member.member_id == "m-1" and member.generation == 1
    find = only(member.background(member.next_wakeup_ms() or 0), FindCoordinatorRequest)
    again = only(
        member.on_response(4200, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, 3)),
        JoinGroupRequest,
    )
    assert isinstance(again.body, JoinGroupRequest) and again.body.member_id == "m-1"


def test_retain_member_id_after_sync_group_disconnect() -> None:
    """testRetainMemberIdAfterSyncGroupDisconnect: the SyncGroup fails; the member rejoins with the
    member id the JoinGroup gave it, not an empty one."""
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    resp = JoinGroupResponse(ErrorCode.NONE, 4, "consumer", "range", leader="x", member_id="m-7")
    sync = only(member.on_response(1, join.correlation_id, resp), SyncGroupRequest)
    member.on_request_failed(2, sync.correlation_id)
    assert member.member_id == "m-7" and member.phase is Phase.JOINING
    find = only(member.background(member.next_wakeup_ms() or 0), FindCoordinatorRequest)
    again = only(
        member.on_response(200, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, 3)),
        JoinGroupRequest,
    )
    assert isinstance(again.body, JoinGroupRequest) and again.body.member_id == "m-7"


def test_join_group_protocol_type_and_name() -> None:
    """testJoinGroupProtocolTypeAndName: SyncGroup carries the protocol type and the name the
    JoinGroup answer selected; a SyncGroup answer naming another protocol is
    INCONSISTENT_GROUP_PROTOCOL, thrown out of poll() (the next poll() joins again)."""
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    resp = JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", leader="x", member_id="m")
    sync = only(member.on_response(1, join.correlation_id, resp), SyncGroupRequest)
    assert isinstance(sync.body, SyncGroupRequest)
    assert (sync.body.protocol_type, sync.body.protocol_name) == ("consumer", "range")
    member.on_response(
        2, sync.correlation_id, SyncGroupResponse(ErrorCode.NONE, assigned(), "consumer", "other")
    )
    assert member.state is MemberState.REBALANCING
    [fatal] = [e for e in member.drain_events() if isinstance(e, FatalError)]
    assert fatal.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert kinds(member.poll(3)) == ["JoinGroupRequest"]


def test_join_group_answer_with_another_protocol_type_is_thrown() -> None:
    """testJoinGroupProtocolTypeAndName, JoinGroup half: a protocol type other than ``consumer`` is
    INCONSISTENT_GROUP_PROTOCOL, thrown out of poll(); the next poll() joins again."""
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    resp = JoinGroupResponse(ErrorCode.NONE, 1, "connect", "range", leader="x", member_id="m")
    assert member.on_response(1, join.correlation_id, resp) == []
    assert member.state is MemberState.REBALANCING
    assert [e.error for e in member.drain_events() if isinstance(e, FatalError)] == [
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    ]
    assert kinds(member.poll(2)) == ["JoinGroupRequest"]


def test_heartbeat_sent_when_completing_rebalance() -> None:
    """testHeartbeatSentWhenCompletingRebalance: the heartbeat thread runs in COMPLETING_REBALANCE
    (JoinGroup answered, SyncGroup waiting), so a slow SyncGroup does not cost the session."""
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    resp = JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", leader="x", member_id="m")
    only(member.on_response(100, join.correlation_id, resp), SyncGroupRequest)
    assert member.phase is Phase.SYNCING
    hb = only(member.background(3100), HeartbeatRequest)
    assert isinstance(hb.body, HeartbeatRequest) and (hb.body.generation_id, hb.body.member_id) == (1, "m")


def test_heartbeat_rebalance_in_progress_during_rebalancing_is_ignored() -> None:
    """testHeartbeatRebalanceInProgressResponseDuringRebalancing: REBALANCE_IN_PROGRESS to a
    heartbeat while COMPLETING_REBALANCE neither requests a rejoin nor disturbs the sync."""
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    resp = JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", leader="x", member_id="m")
    sync = only(member.on_response(100, join.correlation_id, resp), SyncGroupRequest)
    member.drain_events()
    hb = only(member.background(3100), HeartbeatRequest)
    assert (
        member.on_response(3101, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS)) == []
    )
    assert member.phase is Phase.SYNCING and not any(
        isinstance(e, RejoinRequested) for e in member.drain_events()
    )
    out = member.on_response(
        3102, sync.correlation_id, SyncGroupResponse(ErrorCode.NONE, assigned(tp("t", 0)))
    )
    assert member.state is MemberState.STABLE and kinds(out) == ["OffsetFetchRequest"]


def test_rejoin_reason_is_sent_with_the_join_group() -> None:
    """testRejoinReason: the JoinGroup carries why the member rejoins."""
    member = stable(new_member(enable_auto_commit=False))
    body = rejoining(member, 4000)
    assert body.reason == "group is already rebalancing"


def test_backoff_and_retry_upon_retriable_error() -> None:
    """testBackoffAndRetryUponRetriableError: COORDINATOR_LOAD_IN_PROGRESS to a JoinGroup is
    retried after retry.backoff.ms, with the coordinator kept."""
    member = new_member(retry_backoff_ms=250)
    join = only(find_coordinator(member, now=10), JoinGroupRequest)
    out = member.on_response(
        20, join.correlation_id, JoinGroupResponse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    )
    assert out == [] and member.coordinator is not None
    assert member.next_wakeup_ms() == 270
    again = only(member.background(270), JoinGroupRequest)
    assert again.correlation_id != join.correlation_id


def test_commit_rebalance_in_progress_requests_rejoin_without_reset() -> None:
    """ConsumerCoordinatorTest#testCommitOffsetRebalanceInProgress: REBALANCE_IN_PROGRESS to a commit
    asks for a rejoin but keeps the generation (the partitions are revoked, not lost)."""
    member = stable(new_member(auto_commit_interval_ms=1000))
    member.record_processed(tp("t", 0), 9)
    commit = only(member.poll(2000), OffsetCommitRequest)
    results = ((tp("t", 0), ErrorCode.REBALANCE_IN_PROGRESS), (tp("t", 1), ErrorCode.REBALANCE_IN_PROGRESS))
    member.on_response(2001, commit.correlation_id, OffsetCommitResponse(results))
    assert member.rejoin_needed and member.generation == 1 and member.member_id == "m-1"
    events = member.drain_events()
    assert any(isinstance(e, CommitFailed) for e in events)
    assert not any(isinstance(e, PartitionsLost) for e in events)


def test_commit_unknown_member_resets_the_generation() -> None:
    """ConsumerCoordinatorTest#testCommitOffsetUnknownMemberId: UNKNOWN_MEMBER_ID to a commit resets
    the generation and member id; the next rejoin gives the partitions up as lost."""
    member = stable(new_member(auto_commit_interval_ms=1000))
    member.record_processed(tp("t", 0), 9)
    commit = only(member.poll(2000), OffsetCommitRequest)
    results = ((tp("t", 0), ErrorCode.UNKNOWN_MEMBER_ID), (tp("t", 1), ErrorCode.UNKNOWN_MEMBER_ID))
    member.on_response(2001, commit.correlation_id, OffsetCommitResponse(results))
    assert member.member_id == "" and member.generation == -1 and member.rejoin_needed
    out = member.poll(2002)
    assert "JoinGroupRequest" in kinds(out)
    lost = [e for e in member.drain_events() if isinstance(e, PartitionsLost)]
    assert lost == [PartitionsLost((tp("t", 0), tp("t", 1)), 1)]


def test_commit_illegal_generation_keeps_the_member_id() -> None:
    """ConsumerCoordinatorTest#testCommitOffsetIllegalGeneration: ILLEGAL_GENERATION resets the
    generation but keeps the member id (it may still be valid)."""
    member = stable(new_member(auto_commit_interval_ms=1000))
    member.record_processed(tp("t", 0), 9)
    commit = only(member.poll(2000), OffsetCommitRequest)
    results = ((tp("t", 0), ErrorCode.ILLEGAL_GENERATION), (tp("t", 1), ErrorCode.ILLEGAL_GENERATION))
    member.on_response(2001, commit.correlation_id, OffsetCommitResponse(results))
    assert member.member_id == "m-1" and member.generation == -1
    out = member.poll(2002)
    [join] = [r.body for r in out if isinstance(r.body, JoinGroupRequest)]
    assert join.member_id == "m-1"
