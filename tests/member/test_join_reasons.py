"""The reason a JoinGroup carries, as Kafka's AbstractCoordinator sets it (``requestRejoin``,
``requestRejoinIfNecessary``, ``joinGroupIfNeeded``) and cuts it (``maybeTruncateReason``)."""

from __future__ import annotations

from kgroup.member.errors import MAX_REASON_LENGTH, truncate_reason
from kgroup.messages import (
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode

from .helpers import FixedAssignor, assigned, find_coordinator, join_as_follower, new_member, only


def reason_of(request: object) -> str | None:
    assert isinstance(request, JoinGroupRequest)
    return request.reason


def test_truncate_reason_counts_java_characters() -> None:
    """maybeTruncateReason keeps 255 Java chars (UTF-16 units); a pair cut in half is sent as '?'."""
    assert truncate_reason("") == ""
    assert truncate_reason("x" * 255) == "x" * 255
    assert truncate_reason("x" * 300) == "x" * MAX_REASON_LENGTH
    # each emoji is two UTF-16 units: 127 of them are 254 units, the 128th is cut in half
    assert truncate_reason("\U0001f600" * 200) == "\U0001f600" * 127 + "?"
    assert truncate_reason("é" * 300) == "é" * 255


def test_a_long_member_id_reason_is_truncated() -> None:
    """MEMBER_ID_REQUIRED's reason names the member id; the JoinGroup carries at most 255 chars."""
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    long_id = "m" * 400
    again = only(
        member.on_response(
            1, join.correlation_id, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=long_id)
        ),
        JoinGroupRequest,
    )
    expected = f"need to re-join with the given member-id: {long_id}"[:255]
    assert reason_of(again.body) == expected


def test_a_pending_rejoin_keeps_its_reason_when_the_subscription_changes() -> None:
    """requestRejoinIfNecessary: the subscription check does not overwrite the reason of a rejoin
    already asked for (here the heartbeat's REBALANCE_IN_PROGRESS)."""
    member = new_member()
    join_as_follower(member, [])
    hb = only(member.background(3000), HeartbeatRequest)
    member.on_response(3001, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    member.subscribe(["t", "u"])
    assert reason_of(only(member.poll(3002), JoinGroupRequest).body) == "group is already rebalancing"


def test_a_join_group_that_failed_without_an_answer_names_the_disconnect() -> None:
    """A JoinGroup whose connection failed: Kafka's future fails with DisconnectException."""
    member = new_member(retry_backoff_ms=100)
    join = only(find_coordinator(member), JoinGroupRequest)
    member.on_request_failed(10, join.correlation_id)
    find = member.background(110)
    again = only(
        member.on_response(111, find[0].correlation_id, FindCoordinatorResponse(ErrorCode.NONE, 3)),
        JoinGroupRequest,
    )
    assert reason_of(again.body) == "rebalance failed due to DisconnectException"


def test_sync_answered_after_a_heartbeat_reset_names_illegal_generation() -> None:
    """SyncGroupResponseHandler: a successful answer after the heartbeat thread reset the generation
    fails the join as ILLEGAL_GENERATION; the member rejoins at once, saying so."""
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    resp = JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", "x", member_id="m-1")
    sync = only(member.on_response(1, join.correlation_id, resp), SyncGroupRequest)
    hb = only(member.background(3001), HeartbeatRequest)
    member.on_response(3002, hb.correlation_id, HeartbeatResponse(ErrorCode.ILLEGAL_GENERATION))
    out = member.on_response(3003, sync.correlation_id, SyncGroupResponse(ErrorCode.NONE, assigned()))
    again = only(out, JoinGroupRequest)
    assert reason_of(again.body) == "rebalance failed due to IllegalGenerationException"


def test_leader_failure_keeps_heartbeating_until_the_next_poll() -> None:
    """The leader's own assignment failed (an assignor it did not offer): Kafka's member is still
    COMPLETING_REBALANCE with its heartbeat thread on; the next poll() sends JoinGroup again."""
    member = new_member(assignors=[FixedAssignor("range")])
    join = only(find_coordinator(member), JoinGroupRequest)
    resp = JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "other", "m-1", member_id="m-1")
    assert member.on_response(1, join.correlation_id, resp) == []
    assert member.error_pending
    member.drain_events()
    assert member.next_wakeup_ms() == 3001
    only(member.background(3001), HeartbeatRequest)
    again = only(member.poll(3002), JoinGroupRequest)
    assert reason_of(again.body) == "rebalance failed due to IllegalStateException"
