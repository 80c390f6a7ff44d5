"""The member against Kafka 4.0's ``AbstractCoordinatorTest`` (classic protocol).

Each test names the Kafka test it follows (or, where ``AbstractCoordinatorTest`` has no case of its
own, the part of ``AbstractCoordinator`` whose behaviour it checks). The settings mirror that test
class: rebalance timeout (``max.poll.interval.ms``) 60 s, session 10 s, heartbeat 3 s, retry backoff
100 ms. The code and assertions are kgroup's own; the behaviour is Kafka's. Cases where kgroup's
member does something else are kept asserting Kafka's behaviour and marked ``xfail(strict=True)``;
the reason says what differs. The Kafka cases already in ``test_kafka_coordinator_cases.py`` are not
repeated here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import pytest

from kgroup.member import (
    ConsumerMember,
    FatalError,
    Fenced,
    JoinedGroup,
    LeftGroup,
    MemberEvent,
    MemberState,
    OutboundRequest,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Phase,
    RejoinRequested,
)
from kgroup.member.requests import Generation
from kgroup.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetFetchRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, RebalanceProtocol, TopicPartition

from .helpers import (
    COORDINATOR,
    FixedAssignor,
    answer_fetch,
    assigned,
    find_coordinator,
    kinds,
    new_member,
    only,
    subscription,
    tp,
)

REBALANCE_TIMEOUT_MS = 60_000
SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 3_000
RETRY_BACKOFF_MS = 100
MEMBER_ID = "memberId"
LEADER_ID = "leaderId"

E = TypeVar("E")

_SETTINGS: dict[str, object] = {
    "max_poll_interval_ms": REBALANCE_TIMEOUT_MS,
    "session_timeout_ms": SESSION_TIMEOUT_MS,
    "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
    "retry_backoff_ms": RETRY_BACKOFF_MS,
    "enable_auto_commit": False,  # AbstractCoordinatorTest's DummyCoordinator commits nothing
}


def kafka_member(*, cooperative: bool = False, **overrides: object) -> ConsumerMember:
    """A member with AbstractCoordinatorTest's timeouts (``overrides`` replace any of them)."""
    settings: dict[str, Any] = {**_SETTINGS, **overrides}
    if cooperative:
        assignor = FixedAssignor(
            "cooperative-sticky", protocols=(RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)
        )
        return new_member(assignors=[assignor], **settings)
    return new_member(**settings)


def join_ok(
    member: ConsumerMember,
    generation: int = 1,
    member_id: str = MEMBER_ID,
    *,
    leader: str = LEADER_ID,
    protocol_type: str | None = "consumer",
    protocol_name: str | None = None,
) -> JoinGroupResponse:
    """A successful JoinGroup answer making ``member`` a follower."""
    name = protocol_name if protocol_name is not None else member.assignor_names[0]
    return JoinGroupResponse(ErrorCode.NONE, generation, protocol_type, name, leader, member_id=member_id)


def sync_ok(member: ConsumerMember, *partitions: TopicPartition) -> SyncGroupResponse:
    return SyncGroupResponse(ErrorCode.NONE, assigned(*partitions), "consumer", member.group_protocol)


def body_of_join(request: OutboundRequest) -> JoinGroupRequest:
    assert isinstance(request.body, JoinGroupRequest), type(request.body).__name__
    return request.body


def pending_sync(member: ConsumerMember, now: int = 0, generation: int = 1) -> OutboundRequest:
    """FindCoordinator and JoinGroup answered; returns the SyncGroup in flight."""
    join = only(find_coordinator(member, now), JoinGroupRequest)
    return only(member.on_response(now, join.correlation_id, join_ok(member, generation)), SyncGroupRequest)


def joined(
    member: ConsumerMember,
    now: int = 0,
    *,
    generation: int = 1,
    member_id: str = MEMBER_ID,
    partitions: Sequence[TopicPartition] = (),
) -> ConsumerMember:
    """Kafka's ``joinGroup()``: coordinator found, JoinGroup and SyncGroup answered at ``now``."""
    join = only(find_coordinator(member, now), JoinGroupRequest)
    sync = only(
        member.on_response(now, join.correlation_id, join_ok(member, generation, member_id)),
        SyncGroupRequest,
    )
    out = member.on_response(now, sync.correlation_id, sync_ok(member, *partitions))
    if partitions:
        answer_fetch(member, only(out, OffsetFetchRequest), {}, now=now)
    else:
        assert out == []
    assert member.state is MemberState.STABLE
    member.drain_events()
    return member


def force_rejoin(member: ConsumerMember) -> tuple[OutboundRequest, int]:
    """The next heartbeat is answered REBALANCE_IN_PROGRESS and the application polls: the JoinGroup
    that goes out (Kafka's tests call ``requestRejoin`` for this) and the time it went out."""
    now = member.next_wakeup_ms()
    assert now is not None
    hb = only(member.background(now), HeartbeatRequest)
    member.on_response(now, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    out = member.poll(now)
    return only(out, JoinGroupRequest), now


def next_join(member: ConsumerMember, out: list[OutboundRequest], now: int) -> OutboundRequest:
    """Run the member (finding the coordinator again if it must) until its next JoinGroup goes out."""
    for _ in range(5):
        joins = [r for r in out if isinstance(r.body, JoinGroupRequest)]
        if joins:
            assert len(joins) == 1, kinds(out)
            return joins[0]
        finds = [r for r in out if isinstance(r.body, FindCoordinatorRequest)]
        if finds:
            out = member.on_response(
                now, finds[0].correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR)
            )
            continue
        due = member.next_wakeup_ms()
        assert due is not None, "the member has nothing to do and sent no JoinGroup"
        now = max(now, due)
        out = member.background(now)
    raise AssertionError("no JoinGroup was sent")


def heartbeat_until_something_else(member: ConsumerMember) -> tuple[int, list[OutboundRequest]]:
    """Run the heartbeat thread at each wakeup, answering every heartbeat NONE, until it does
    something other than heartbeat; returns that time and what it sent."""
    for _ in range(1000):
        now = member.next_wakeup_ms()
        assert now is not None
        out = member.background(now)
        if len(out) != 1 or not isinstance(out[0].body, HeartbeatRequest):
            return now, out
        member.on_response(now, out[0].correlation_id, HeartbeatResponse(ErrorCode.NONE))
    raise AssertionError("the member only ever heartbeats")


def of_type(events: list[MemberEvent], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


# --- coordinator discovery ---------------------------------------------------------------------------


@pytest.mark.xfail(
    reason="kgroup retries FindCoordinator after a constant retry_backoff_ms; Kafka backs off "
    "exponentially (x2 per attempt, +-20% jitter, up to retry.backoff.max.ms)",
    strict=True,
)
def test_coordinator_discovery_backs_off_exponentially() -> None:
    """testCoordinatorDiscoveryExponentialBackoff: with retry.backoff.ms 10 and a max of 100, the
    lookups after failures are 10, 20, 40, 80 ms apart (each +-20%)."""
    member = kafka_member(retry_backoff_ms=10)
    find = only(member.poll(0), FindCoordinatorRequest)
    now = 0
    gaps: list[int] = []
    for _ in range(4):
        member.on_response(
            now, find.correlation_id, FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        )
        due = member.next_wakeup_ms()
        assert due is not None
        find = only(member.background(due), FindCoordinatorRequest)
        gaps.append(due - now)
        now = due
    for attempt, gap in enumerate(gaps):
        expected = min(10 * 2**attempt, 100)
        assert expected * 0.8 <= gap <= expected * 1.2, gaps


def test_lookup_coordinator_sends_one_find_coordinator_at_a_time() -> None:
    """testLookupCoordinator: while a FindCoordinator is in flight no second one is sent (polls and
    the heartbeat thread reuse it); once it completed, a later lookup is a new request."""
    member = kafka_member()
    find = only(member.poll(0), FindCoordinatorRequest)
    assert find.node_id is None  # any broker (Kafka: the least-loaded node)
    assert member.poll(10) == [] and member.background(10) == []
    assert member.next_wakeup_ms() is None  # nothing to do until the lookup is answered
    join = only(
        member.on_response(20, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR)),
        JoinGroupRequest,
    )
    assert member.coordinator == COORDINATOR and join.node_id == COORDINATOR
    # the coordinator is lost: the next lookup is a new request
    assert member.on_request_failed(30, join.correlation_id) == []
    due = member.next_wakeup_ms()
    assert due is not None
    again = only(member.background(due), FindCoordinatorRequest)
    assert again.correlation_id not in (find.correlation_id, join.correlation_id)
    assert member.background(due) == []


def test_find_coordinator_answer_restarts_the_session_timer() -> None:
    """AbstractCoordinator.FindCoordinatorResponseHandler (``heartbeat.resetSessionTimeout()``), with
    the heartbeat thread's session check: after the session expired and the coordinator was found
    again, the member waits a whole new session before it gives the coordinator up again."""
    member = joined(kafka_member())
    for t in (3000, 6000, 9000):  # heartbeats nobody answers
        only(member.background(t), HeartbeatRequest)
    assert member.next_wakeup_ms() == SESSION_TIMEOUT_MS
    find = only(member.background(SESSION_TIMEOUT_MS), FindCoordinatorRequest)
    assert member.coordinator is None and member.state is MemberState.STABLE
    member.on_response(10_050, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))
    for t in (12_000, 15_000, 18_000):
        only(member.background(t), HeartbeatRequest)
    assert member.next_wakeup_ms() == 20_050
    assert member.coordinator == COORDINATOR
    assert kinds(member.background(20_050)) == ["FindCoordinatorRequest"]
    assert member.generation == 1 and member.member_id == MEMBER_ID  # the session check resets nothing


# --- JoinGroup ---------------------------------------------------------------------------------------


def test_timed_out_join_attempt_keeps_waiting_for_the_same_join_group() -> None:
    """testTimeoutAndRetryJoinGroupIfNeeded: a poll() that ends before the JoinGroup is answered
    leaves it pending; later polls neither prepare again nor send another JoinGroup, and the late
    answer completes the rebalance."""
    member = joined(kafka_member(), partitions=[tp("t", 0), tp("t", 1)])
    join, now = force_rejoin(member)
    assert of_type(member.drain_events(), PartitionsRevoked) == [
        PartitionsRevoked((tp("t", 0), tp("t", 1)), 1)
    ]
    later = now + 40_000  # Kafka's REQUEST_TIMEOUT_MS: the first attempt's poll timer has run out
    assert member.poll(later) == [] and member.background(later) == []
    assert member.phase is Phase.JOINING and member.drain_events() == []
    sync = only(member.on_response(later, join.correlation_id, join_ok(member, 2)), SyncGroupRequest)
    out = member.on_response(later, sync.correlation_id, sync_ok(member, tp("t", 0)))
    assert kinds(out) == ["OffsetFetchRequest"]
    events = member.drain_events()
    assert of_type(events, PartitionsRevoked) == []  # onJoinPrepare ran once
    assert of_type(events, PartitionsAssigned) == [PartitionsAssigned((tp("t", 0),), 2)]
    assert member.state is MemberState.STABLE and member.generation == 2


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode.INVALID_SESSION_TIMEOUT,
        ErrorCode.INVALID_GROUP_ID,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.UNKNOWN_SERVER_ERROR,
    ],
)
def test_non_retriable_join_group_errors_are_reported_not_retried(error: ErrorCode) -> None:
    """testGroupMaxSizeExceptionIsFatal (and the rest of JoinGroupResponseHandler's non-retriable
    answers: its fatal list, UNSUPPORTED_VERSION and unexpected errors): the join fails with an error
    the application sees, and no JoinGroup is retried by itself."""
    member = kafka_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    assert member.on_response(5, join.correlation_id, JoinGroupResponse(error)) == []
    assert [e.error for e in of_type(member.drain_events(), FatalError)] == [error]
    assert member.next_wakeup_ms() is None
    assert member.background(REBALANCE_TIMEOUT_MS) == []


def test_join_group_is_never_abandoned_by_the_member_the_host_times_it_out() -> None:
    """testJoinGroupRequestTimeout: a JoinGroup is not failed at request.timeout.ms (40 s) — it may
    wait for the rebalance timeout + 5 s. In kgroup the member keeps waiting (nothing due, nothing
    resent) and the host's timeout arrives as ``on_request_failed``, handled as Kafka's
    DisconnectException: coordinator unknown, JoinGroup again after rediscovery."""
    member = kafka_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    assert member.next_wakeup_ms() is None
    assert member.background(40_001) == [] and member.poll(40_001) == []
    assert member.phase is Phase.JOINING and member.coordinator == COORDINATOR
    timed_out = REBALANCE_TIMEOUT_MS + 5_000 + 1
    assert member.on_request_failed(timed_out, join.correlation_id) == []
    assert member.coordinator is None and member.phase is Phase.JOINING
    assert member.next_wakeup_ms() == timed_out + RETRY_BACKOFF_MS
    find = only(member.background(timed_out + RETRY_BACKOFF_MS), FindCoordinatorRequest)
    again = only(
        member.on_response(timed_out + 150, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, 7)),
        JoinGroupRequest,
    )
    assert again.node_id == 7 and body_of_join(again).member_id == ""


def test_member_id_required_then_unknown_member_id() -> None:
    """testJoinGroupRequestWithMemberIdRequired: MEMBER_ID_REQUIRED hands the member an id, keeps the
    generation unknown and asks for a rejoin, which goes out with that id; an UNKNOWN_MEMBER_ID answer
    to it drops the id again."""
    member = kafka_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    assert body_of_join(join).member_id == ""
    again = only(
        member.on_response(
            5, join.correlation_id, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=MEMBER_ID)
        ),
        JoinGroupRequest,
    )
    assert member.rejoin_needed and member.member_id == MEMBER_ID and member.generation == -1
    assert member.phase is Phase.JOINING
    assert body_of_join(again).member_id == MEMBER_ID
    third = only(
        member.on_response(6, again.correlation_id, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID)),
        JoinGroupRequest,
    )
    assert member.member_id == "" and member.generation == -1
    assert body_of_join(third).member_id == ""


def test_join_group_fenced_instance_id_is_fatal() -> None:
    """testJoinGroupRequestWithFencedInstanceIdException: FENCED_INSTANCE_ID to a JoinGroup is never
    retried, whatever the generation."""
    member = kafka_member(group_instance_id="instance-1")
    join = only(find_coordinator(member), JoinGroupRequest)
    assert body_of_join(join).group_instance_id == "instance-1"
    assert member.on_response(5, join.correlation_id, JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID)) == []
    assert of_type(member.drain_events(), Fenced) == [Fenced(-1, "", "instance-1")]
    assert member.next_wakeup_ms() is None and member.background(10_000) == []


@pytest.mark.parametrize(
    ("join_type", "sync_type", "sync_name", "fatal"),
    [
        (None, None, None, False),  # no protocol type in either answer
        ("consumer", "consumer", "range", False),  # both right
        ("consumer", "wrong-type", "range", True),  # SyncGroup names another protocol type
    ],
)
def test_join_group_protocol_type_and_name_checks(
    join_type: str | None, sync_type: str | None, sync_name: str | None, fatal: bool
) -> None:
    """testJoinGroupProtocolTypeAndName, the cases test_kafka_coordinator_cases.py does not cover: a
    missing protocol type or name is accepted, a SyncGroup answer with another protocol type is
    INCONSISTENT_GROUP_PROTOCOL."""
    member = kafka_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    assert body_of_join(join).protocol_type == "consumer"
    sync = only(
        member.on_response(1, join.correlation_id, join_ok(member, 1, protocol_type=join_type)),
        SyncGroupRequest,
    )
    member.on_response(
        2, sync.correlation_id, SyncGroupResponse(ErrorCode.NONE, assigned(), sync_type, sync_name)
    )
    errors = [e.error for e in of_type(member.drain_events(), FatalError)]
    if fatal:
        assert errors == [ErrorCode.INCONSISTENT_GROUP_PROTOCOL]
    else:
        assert errors == [] and member.state is MemberState.STABLE and member.generation == 1


def test_join_unknown_member_with_an_old_generation_keeps_the_new_generation() -> None:
    """testJoinGroupUnknownMemberResponseWithOldGeneration: the generation changed after the JoinGroup
    went out; its UNKNOWN_MEMBER_ID answer must not reset the new generation. The member joins again
    with the new member id."""
    member = joined(kafka_member())
    join, now = force_rejoin(member)
    assert body_of_join(join).member_id == MEMBER_ID
    newer = Generation(1, MEMBER_ID + "-new", "range")
    member._generation = newer  # Kafka's setNewGeneration
    out = member.on_response(now + 1, join.correlation_id, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    assert member._generation == newer
    assert body_of_join(only(out, JoinGroupRequest)).member_id == MEMBER_ID + "-new"


@pytest.mark.parametrize("error", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION])
def test_sync_error_with_an_old_generation_keeps_the_new_generation(error: ErrorCode) -> None:
    """testSyncGroupUnknownMemberResponseWithOldGeneration and
    testSyncGroupIllegalGenerationResponseWithOldGeneration: the generation changed after the
    SyncGroup went out; its error must not reset it. The rebalance restarts from JoinGroup (with the
    current member id) and nothing is lost."""
    member = joined(kafka_member(cooperative=True), partitions=[tp("t", 0)])
    join, now = force_rejoin(member)
    sync = only(member.on_response(now, join.correlation_id, join_ok(member, 1)), SyncGroupRequest)
    newer = Generation(1, MEMBER_ID + "-new", "cooperative-sticky")
    member._generation = newer
    out = member.on_response(now + 1, sync.correlation_id, SyncGroupResponse(error))
    assert member._generation == newer
    again = body_of_join(only(out, JoinGroupRequest))
    assert again.member_id == MEMBER_ID + "-new"
    assert of_type(member.drain_events(), PartitionsLost) == []
    assert member.assignment() == frozenset({tp("t", 0)})


def test_join_unknown_member_id_resets_the_generation() -> None:
    """testJoinGroupRequestWithGroupInstanceIdNotFound: UNKNOWN_MEMBER_ID to a JoinGroup sent with
    the current generation resets it to unknown and rejoins (a static member keeps its instance id)."""
    member = kafka_member(group_instance_id="instance-1")
    join = only(find_coordinator(member), JoinGroupRequest)
    out = member.on_response(5, join.correlation_id, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    assert member.rejoin_needed and member.generation == -1 and member.member_id == ""
    again = body_of_join(only(out, JoinGroupRequest))
    assert (again.member_id, again.group_instance_id) == ("", "instance-1")


def test_join_unknown_member_id_with_the_current_generation_loses_owned_partitions() -> None:
    """testJoinGroupRequestWithGroupInstanceIdNotFound, with owned partitions: the reset
    (``resetStateAndRejoin``) makes the next attempt run onJoinPrepare again, which now sees no
    generation: a cooperative member's partitions are lost, and the JoinGroup owns nothing."""
    member = joined(kafka_member(cooperative=True), partitions=[tp("t", 0), tp("t", 1)])
    join, now = force_rejoin(member)
    assert subscription(join).owned_partitions == (tp("t", 0), tp("t", 1))
    out = member.on_response(now + 1, join.correlation_id, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    assert of_type(member.drain_events(), PartitionsLost) == [PartitionsLost((tp("t", 0), tp("t", 1)), 1)]
    again = only(out, JoinGroupRequest)
    assert body_of_join(again).member_id == ""
    sub = subscription(again)
    assert (sub.owned_partitions, sub.generation_id) == ((), -1)


def test_join_rebalance_in_progress_retries_without_a_new_prepare() -> None:
    """testJoinGroupRequestWithRebalanceInProgress: REBALANCE_IN_PROGRESS to a JoinGroup rejoins
    at once; onJoinPrepare (revocation) and onJoinComplete (assignment) each run exactly once."""
    member = joined(kafka_member(), partitions=[tp("t", 0), tp("t", 1)])
    join, now = force_rejoin(member)
    again = only(
        member.on_response(now, join.correlation_id, JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS)),
        JoinGroupRequest,
    )
    assert body_of_join(again).member_id == MEMBER_ID and member.generation == 1
    sync = only(member.on_response(now, again.correlation_id, join_ok(member, 2)), SyncGroupRequest)
    member.on_response(now, sync.correlation_id, sync_ok(member, tp("t", 1)))
    events = member.drain_events()
    assert of_type(events, PartitionsRevoked) == [PartitionsRevoked((tp("t", 0), tp("t", 1)), 1)]
    assert of_type(events, PartitionsAssigned) == [PartitionsAssigned((tp("t", 1),), 2)]
    assert len(of_type(events, JoinedGroup)) == 1


# --- rejoin reasons ----------------------------------------------------------------------------------


def test_rejoin_reason_is_cleared_by_a_successful_sync() -> None:
    """testRejoinReason: the JoinGroup carries the reason of the rebalance, a successful SyncGroup
    clears it, and the next rebalance carries its own."""
    member = joined(kafka_member(), generation=5)
    join, now = force_rejoin(member)
    assert body_of_join(join).reason == "group is already rebalancing"
    sync = only(member.on_response(now, join.correlation_id, join_ok(member, 5)), SyncGroupRequest)
    member.on_response(now, sync.correlation_id, sync_ok(member))
    assert member.state is MemberState.STABLE and member._rejoin_reason == ""
    member.subscribe(["t", "u"])
    rejoin = only(member.poll(now + 1), JoinGroupRequest)
    assert body_of_join(rejoin).reason == "subscription has changed"


def test_first_join_group_carries_an_empty_reason() -> None:
    """testRejoinReason ("test initial reason"): the first JoinGroup's reason is the empty string."""
    member = kafka_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    assert body_of_join(join).reason == ""


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ErrorCode.REBALANCE_IN_PROGRESS, "rebalance failed due to RebalanceInProgressException"),
        (ErrorCode.UNKNOWN_MEMBER_ID, "rebalance failed due to UnknownMemberIdException"),
        (
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            "rebalance failed due to CoordinatorLoadInProgressException",
        ),
        (ErrorCode.NOT_COORDINATOR, "rebalance failed due to NotCoordinatorException"),
        (ErrorCode.MEMBER_ID_REQUIRED, "need to re-join with the given member-id: memberId"),
    ],
)
def test_retried_join_group_says_why_the_last_attempt_failed(error: ErrorCode, reason: str) -> None:
    """testRejoinReason ("next join group request should contain exception message"): after a failed
    JoinGroup, the next one's reason names the failure."""
    member = kafka_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    out = member.on_response(5, join.correlation_id, JoinGroupResponse(error, member_id=MEMBER_ID))
    assert body_of_join(next_join(member, out, 5)).reason == reason


def test_next_poll_after_group_max_size_reached_joins_again() -> None:
    """testRejoinReason ("max group size reached"): GROUP_MAX_SIZE_REACHED is thrown out of the
    application's poll(), but the member is not dead: the next poll() sends JoinGroup again, with the
    same member id and a reason naming the exception, and can complete the rebalance."""
    member = joined(kafka_member(), generation=5)
    join, now = force_rejoin(member)
    member.on_response(now, join.correlation_id, JoinGroupResponse(ErrorCode.GROUP_MAX_SIZE_REACHED))
    assert [e.error for e in of_type(member.drain_events(), FatalError)] == [ErrorCode.GROUP_MAX_SIZE_REACHED]
    again = only(member.poll(now + 100), JoinGroupRequest)
    body = body_of_join(again)
    assert body.member_id == MEMBER_ID
    assert body.reason == "rebalance failed due to GroupMaxSizeReachedException"
    sync = only(member.on_response(now + 101, again.correlation_id, join_ok(member, 5)), SyncGroupRequest)
    member.on_response(now + 102, sync.correlation_id, sync_ok(member))
    assert member.state is MemberState.STABLE and member.generation == 5


# --- SyncGroup ---------------------------------------------------------------------------------------


def test_no_generation_will_not_trigger_the_protocol_name_check() -> None:
    """testNoGenerationWillNotTriggerProtocolNameCheck: the heartbeat thread reset the generation
    while the SyncGroup was in flight; the SyncGroup answer — even naming another protocol — is not
    checked but treated as ILLEGAL_GENERATION: the member rejoins at once and completes."""
    member = kafka_member()
    sync = pending_sync(member)
    hb = only(member.background(HEARTBEAT_INTERVAL_MS), HeartbeatRequest)
    member.on_response(3001, hb.correlation_id, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    assert member.generation == -1 and member.member_id == ""
    out = member.on_response(
        3002, sync.correlation_id, SyncGroupResponse(ErrorCode.NONE, assigned(), "consumer", "wrong-name")
    )
    assert of_type(member.drain_events(), FatalError) == []
    join = only(out, JoinGroupRequest)
    assert body_of_join(join).member_id == "" and member.phase is Phase.JOINING
    sync = only(member.on_response(3003, join.correlation_id, join_ok(member, 1)), SyncGroupRequest)
    member.on_response(3004, sync.correlation_id, sync_ok(member))
    assert member.state is MemberState.STABLE and (member.generation, member.member_id) == (1, MEMBER_ID)


@pytest.mark.parametrize("instance", [None, "instance-1"])
def test_leaving_while_the_sync_group_is_in_flight_skips_the_protocol_name_check(
    instance: str | None,
) -> None:
    """testNoGenerationWillNotTriggerProtocolNameCheck, with Kafka's own trigger
    (``resetGenerationOnLeaveGroup``): max.poll.interval.ms expires while the SyncGroup is in flight
    (the heartbeat thread runs in COMPLETING_REBALANCE); a dynamic member sends LeaveGroup, a static
    one does not; the SyncGroup answer naming another protocol is not checked, and the next poll()
    joins again without a member id."""
    member = kafka_member(group_instance_id=instance)
    sync = pending_sync(member)
    now, out = heartbeat_until_something_else(member)
    assert now == REBALANCE_TIMEOUT_MS  # the poll timer restarted when the JoinGroup was answered
    if instance is None:
        leave = only(out, LeaveGroupRequest)
        assert isinstance(leave.body, LeaveGroupRequest)
        assert [(m.member_id, m.reason) for m in leave.body.members] == [
            (MEMBER_ID, "consumer poll timeout has expired.")
        ]
    else:
        assert out == []
    assert member.generation == -1 and member.member_id == ""
    member.on_response(
        now + 1, sync.correlation_id, SyncGroupResponse(ErrorCode.NONE, assigned(), "consumer", "wrong-name")
    )
    assert of_type(member.drain_events(), FatalError) == []
    join = body_of_join(only(member.poll(now + 2), JoinGroupRequest))
    assert (join.member_id, join.group_instance_id) == ("", instance)


def test_sync_group_fenced_instance_id_is_fatal() -> None:
    """testSyncGroupRequestWithFencedInstanceIdException: FENCED_INSTANCE_ID to a SyncGroup is fatal,
    whatever the generation: nothing is retried."""
    member = kafka_member()
    sync = pending_sync(member)
    assert member.on_response(5, sync.correlation_id, SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID)) == []
    assert of_type(member.drain_events(), Fenced) == [Fenced(1, MEMBER_ID, None)]
    assert member.next_wakeup_ms() is None and member.background(10_000) == []


def test_sync_illegal_generation_with_the_current_generation_keeps_the_member_id() -> None:
    """SyncGroupResponseHandler's ILLEGAL_GENERATION with the generation unchanged (the counterpart of
    testSyncGroupIllegalGenerationResponseWithOldGeneration): the generation is reset but the member
    id kept; the next onJoinPrepare sees no generation, so owned partitions are lost."""
    member = joined(kafka_member(cooperative=True), partitions=[tp("t", 0)])
    join, now = force_rejoin(member)
    sync = only(member.on_response(now, join.correlation_id, join_ok(member, 2)), SyncGroupRequest)
    out = member.on_response(now + 1, sync.correlation_id, SyncGroupResponse(ErrorCode.ILLEGAL_GENERATION))
    assert (member.generation, member.member_id) == (-1, MEMBER_ID)
    assert of_type(member.drain_events(), PartitionsLost) == [PartitionsLost((tp("t", 0),), 1)]
    again = only(out, JoinGroupRequest)
    assert body_of_join(again).member_id == MEMBER_ID
    assert subscription(again).generation_id == -1


@pytest.mark.parametrize("error", [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR])
def test_sync_coordinator_errors_rediscover_and_restart_from_join_group(error: ErrorCode) -> None:
    """SyncGroupResponseHandler's COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR (as
    testRetainMemberIdAfterSyncGroupDisconnect): the coordinator is marked unknown, and after the
    backoff and a new lookup the rebalance restarts from JoinGroup with the member id and generation
    it had."""
    member = kafka_member()
    sync = pending_sync(member, generation=4)
    assert member.on_response(10, sync.correlation_id, SyncGroupResponse(error)) == []
    assert member.coordinator is None and member.phase is Phase.JOINING
    assert member.next_wakeup_ms() == 10 + RETRY_BACKOFF_MS
    find = only(member.background(10 + RETRY_BACKOFF_MS), FindCoordinatorRequest)
    again = only(
        member.on_response(120, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR)),
        JoinGroupRequest,
    )
    assert body_of_join(again).member_id == MEMBER_ID and subscription(again).generation_id == 4


# --- heartbeats --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "newer"),
    [
        (ErrorCode.ILLEGAL_GENERATION, Generation(2, MEMBER_ID, "range")),
        (ErrorCode.UNKNOWN_MEMBER_ID, Generation(1, MEMBER_ID + "-new", "range")),
        (ErrorCode.FENCED_INSTANCE_ID, Generation(1, MEMBER_ID + "-new", "range")),
    ],
)
def test_heartbeat_error_for_an_old_generation_is_ignored(error: ErrorCode, newer: Generation) -> None:
    """testHeartbeatIllegalGenerationResponseWithOldGeneration,
    testHeartbeatUnknownMemberResponseWithOldGeneration and
    testHeartbeatInstanceFencedResponseWithOldGeneration: the generation changed after the heartbeat
    went out; its error (even FENCED_INSTANCE_ID) is ignored and the generation kept."""
    member = joined(kafka_member())
    hb = only(member.background(HEARTBEAT_INTERVAL_MS), HeartbeatRequest)
    member._generation = newer
    assert member.on_response(3001, hb.correlation_id, HeartbeatResponse(error)) == []
    assert member._generation == newer and member.state is MemberState.STABLE
    assert member.drain_events() == []
    assert kinds(member.background(6000)) == ["HeartbeatRequest"]


def test_ignored_heartbeat_error_still_counts_as_a_heartbeat_answer() -> None:
    """testHeartbeatIllegalGenerationResponseWithOldGeneration, the session side: the ignored answer
    completes the heartbeat (``future.complete(null)``), and the heartbeat thread's success listener
    restarts the session timer, so the coordinator is not given up at the old session deadline."""
    member = joined(kafka_member())
    for t in (3000, 6000):
        only(member.background(t), HeartbeatRequest)  # unanswered
    hb = only(member.background(9000), HeartbeatRequest)
    member._generation = Generation(2, MEMBER_ID, "range")
    member.on_response(9500, hb.correlation_id, HeartbeatResponse(ErrorCode.ILLEGAL_GENERATION))
    assert member.background(SESSION_TIMEOUT_MS) == []
    assert member.coordinator == COORDINATOR
    assert kinds(member.background(12_000)) == ["HeartbeatRequest"]


@pytest.mark.parametrize("syncing", [False, True], ids=["stable", "completing-rebalance"])
def test_heartbeat_rebalance_in_progress_keeps_the_session_alive(syncing: bool) -> None:
    """testHeartbeatRebalanceInProgressResponseDuringRebalancing, the session side: a
    REBALANCE_IN_PROGRESS answer counts as a heartbeat answer in every state (STABLE: the listener's
    ``receiveHeartbeat()``; COMPLETING_REBALANCE: the future completes), so the member does not give
    the coordinator up at the old session deadline; only in STABLE does it ask for a rejoin."""
    member = kafka_member()
    if syncing:
        pending_sync(member)
    else:
        joined(member)
    for t in (3000, 6000):
        only(member.background(t), HeartbeatRequest)  # unanswered
    hb = only(member.background(9000), HeartbeatRequest)
    member.on_response(9500, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    asked = of_type(member.drain_events(), RejoinRequested)
    assert asked == ([] if syncing else [RejoinRequested("group is already rebalancing")])
    assert member.phase is (Phase.SYNCING if syncing else Phase.STABLE)
    assert member.background(SESSION_TIMEOUT_MS) == [] and member.coordinator == COORDINATOR
    assert member.generation == 1 and member.member_id == MEMBER_ID
    assert kinds(member.background(12_000)) == ["HeartbeatRequest"]
    assert member.next_wakeup_ms() == 15_000
    only(member.background(15_000), HeartbeatRequest)
    only(member.background(18_000), HeartbeatRequest)
    assert member.next_wakeup_ms() == 19_500  # the session the REBALANCE_IN_PROGRESS answer restarted
    member.background(19_499)
    assert member.coordinator == COORDINATOR
    member.background(19_500)
    assert member.coordinator is None


def test_heartbeat_fenced_instance_id_is_fatal() -> None:
    """testHeartbeatRequestWithFencedInstanceIdException: FENCED_INSTANCE_ID to a heartbeat of the
    current generation fails the member (Kafka's next pollHeartbeat throws it); heartbeats stop."""
    member = joined(kafka_member())
    hb = only(member.background(HEARTBEAT_INTERVAL_MS), HeartbeatRequest)
    assert member.on_response(3001, hb.correlation_id, HeartbeatResponse(ErrorCode.FENCED_INSTANCE_ID)) == []
    assert of_type(member.drain_events(), Fenced) == [Fenced(1, MEMBER_ID, None)]
    assert member.next_wakeup_ms() is None
    assert member.background(6000) == [] and member.poll(6000) == []


@pytest.mark.parametrize("error", [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR])
def test_heartbeat_coordinator_errors_rediscover_and_keep_the_generation(error: ErrorCode) -> None:
    """AbstractCoordinator.HeartbeatResponseHandler's COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR
    (no AbstractCoordinatorTest case of its own): the coordinator is marked unknown, the heartbeat
    thread looks it up at once, and heartbeats resume after the backoff; membership is untouched."""
    member = joined(kafka_member())
    hb = only(member.background(HEARTBEAT_INTERVAL_MS), HeartbeatRequest)
    assert member.on_response(3010, hb.correlation_id, HeartbeatResponse(error)) == []
    assert member.coordinator is None and member.state is MemberState.STABLE
    assert (member.generation, member.member_id) == (1, MEMBER_ID)
    find = only(member.background(3010), FindCoordinatorRequest)
    member.on_response(3020, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))
    assert member.next_wakeup_ms() == 3010 + RETRY_BACKOFF_MS
    assert kinds(member.background(3010 + RETRY_BACKOFF_MS)) == ["HeartbeatRequest"]
    assert member.drain_events() == []


@pytest.mark.parametrize("error", [ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.GROUP_AUTHORIZATION_FAILED])
def test_unexpected_heartbeat_error_only_backs_off(error: ErrorCode) -> None:
    """AbstractCoordinator.HeartbeatResponseHandler + HeartbeatThread (the UNKNOWN_SERVER_ERROR
    answers the wakeup tests' ``prepareFirstHeartbeat`` give): an unexpected error (KafkaException)
    or GROUP_AUTHORIZATION_FAILED (GroupAuthorizationException) only fails the heartbeat future; the
    heartbeat thread's listener handles it with ``failHeartbeat()`` — retry after the backoff. Only
    exceptions *thrown* in the thread's loop stop it; nothing reaches the application here."""
    member = joined(kafka_member())
    hb = only(member.background(HEARTBEAT_INTERVAL_MS), HeartbeatRequest)
    member.on_response(3000, hb.correlation_id, HeartbeatResponse(error))
    assert of_type(member.drain_events(), FatalError) == []
    assert member.state is MemberState.STABLE
    assert kinds(member.background(3000 + RETRY_BACKOFF_MS)) == ["HeartbeatRequest"]


def test_poll_at_the_heartbeat_due_time_leaves_it_due_for_the_heartbeat_thread() -> None:
    """testPollHeartbeatAwakesHeartbeatThread: with a long retry backoff (10 s), a poll() when the
    heartbeat is due does not push it back; the heartbeat goes out then, not a backoff later."""
    member = joined(kafka_member(retry_backoff_ms=10_000))
    assert member.next_wakeup_ms() == HEARTBEAT_INTERVAL_MS
    assert member.poll(HEARTBEAT_INTERVAL_MS) == []
    assert member.next_wakeup_ms() == HEARTBEAT_INTERVAL_MS
    hb = only(member.background(HEARTBEAT_INTERVAL_MS), HeartbeatRequest)
    assert isinstance(hb.body, HeartbeatRequest)
    assert (hb.body.generation_id, hb.body.member_id) == (1, MEMBER_ID)


def test_no_heartbeat_until_the_join_group_is_answered() -> None:
    """testWakeupAfterJoinGroupSent (its heartbeat half): the heartbeat thread is idle while the
    JoinGroup is in flight — no heartbeat, no poll-timeout LeaveGroup even past max.poll.interval.ms —
    and the answer restarts its timers: the first heartbeat follows one interval later."""
    member = kafka_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    assert member.next_wakeup_ms() is None
    late = REBALANCE_TIMEOUT_MS + 10_000
    assert member.background(HEARTBEAT_INTERVAL_MS) == [] and member.background(late) == []
    sync = only(member.on_response(late, join.correlation_id, join_ok(member)), SyncGroupRequest)
    member.on_response(late, sync.correlation_id, sync_ok(member))
    assert member.next_wakeup_ms() == late + HEARTBEAT_INTERVAL_MS
    assert kinds(member.background(late + HEARTBEAT_INTERVAL_MS)) == ["HeartbeatRequest"]


def test_session_expiry_during_sync_group_restarts_from_join_group() -> None:
    """The heartbeat thread's session check (``markCoordinatorUnknown``) while COMPLETING_REBALANCE,
    as testRetainMemberIdAfterSyncGroupDisconnect: the unanswered SyncGroup is disconnected, and after
    rediscovery the member sends JoinGroup again with its member id and generation."""
    member = kafka_member()
    sync = pending_sync(member, generation=3)
    for t in (3000, 6000, 9000):
        only(member.background(t), HeartbeatRequest)
    out = member.background(SESSION_TIMEOUT_MS)
    assert member.coordinator is None
    assert member.on_response(SESSION_TIMEOUT_MS, sync.correlation_id, sync_ok(member)) == []  # abandoned
    join = next_join(member, out, SESSION_TIMEOUT_MS)
    assert body_of_join(join).member_id == MEMBER_ID and subscription(join).generation_id == 3
    assert member.drain_events() == [JoinedGroup(3, MEMBER_ID, False, "range")]


# --- leaving -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("instance", "leave_sent"), [(None, True), ("groupInstanceId", False)])
def test_leave_group_on_close_only_for_dynamic_members(instance: str | None, leave_sent: bool) -> None:
    """testLeaveGroupSentWithGroupInstanceIdUnSet: close() sends LeaveGroup for a dynamic member only;
    a static member leaves by session expiry."""
    member = joined(kafka_member(group_instance_id=instance))
    out = member.close(5000)
    if leave_sent:
        leave = only(out, LeaveGroupRequest)
        assert isinstance(leave.body, LeaveGroupRequest)
        assert [(m.member_id, m.reason) for m in leave.body.members] == [
            (MEMBER_ID, "the consumer is being closed")
        ]
    else:
        assert out == []
    assert member.drain_events()[-1] == LeftGroup("the consumer is being closed", leave_sent)


@pytest.mark.parametrize("situation", ["coordinator unknown", "generation reset", "join in flight"])
def test_leave_group_needs_a_coordinator_and_a_membership(situation: str) -> None:
    """AbstractCoordinator.maybeLeaveGroup's conditions (testLeaveGroupSentWithGroupInstanceIdUnSet
    covers the static one): a dynamic member sends LeaveGroup only with a known coordinator, a member
    id and a state other than UNJOINED — so also while its JoinGroup is in flight."""
    member = joined(kafka_member())
    hb = only(member.background(HEARTBEAT_INTERVAL_MS), HeartbeatRequest)
    if situation == "coordinator unknown":
        member.on_request_failed(3001, hb.correlation_id)
        expected: list[str] = []
    elif situation == "generation reset":  # ILLEGAL_GENERATION keeps the member id but leaves UNJOINED
        member.on_response(3001, hb.correlation_id, HeartbeatResponse(ErrorCode.ILLEGAL_GENERATION))
        assert member.member_id == MEMBER_ID and member.phase is Phase.UNJOINED
        expected = []
    else:
        member.on_response(3001, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
        only(member.poll(3002), JoinGroupRequest)
        expected = ["LeaveGroupRequest"]
    assert kinds(member.close(3003)) == expected


@pytest.mark.parametrize(
    "answer",
    [
        LeaveGroupResponse(ErrorCode.NONE, (LeaveGroupMemberResponse(MEMBER_ID, None, ErrorCode.NONE),)),
        LeaveGroupResponse(
            ErrorCode.NONE,
            (
                LeaveGroupMemberResponse(MEMBER_ID, None, ErrorCode.NONE),
                LeaveGroupMemberResponse(MEMBER_ID, None, ErrorCode.NONE),
            ),
        ),
        LeaveGroupResponse(ErrorCode.NONE, ()),
        LeaveGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID),
        LeaveGroupResponse(
            ErrorCode.NONE, (LeaveGroupMemberResponse(MEMBER_ID, None, ErrorCode.UNKNOWN_MEMBER_ID),)
        ),
    ],
    ids=["normal", "multiple-members", "empty-members", "error", "member-error"],
)
def test_leave_group_answers_change_nothing(answer: LeaveGroupResponse) -> None:
    """testHandleNormalLeaveGroupResponse, testHandleMultipleMembersLeaveGroupResponse,
    testHandleLeaveGroupResponseWithEmptyMemberResponse, testHandleLeaveGroupResponseWithException:
    maybeLeaveGroup sends LeaveGroup with the member id and reason and resets the member at once;
    whatever the answer (Kafka only completes or fails the returned future), the member's state is
    not touched, and the next poll() joins as a new member."""
    member = joined(kafka_member(max_poll_interval_ms=20_000))
    now, out = heartbeat_until_something_else(member)
    leave = only(out, LeaveGroupRequest)
    assert isinstance(leave.body, LeaveGroupRequest)
    assert [(m.member_id, m.reason) for m in leave.body.members] == [
        (MEMBER_ID, "consumer poll timeout has expired.")
    ]
    assert member.drain_events()[-1] == LeftGroup("consumer poll timeout has expired.", True)
    assert member.on_response(now + 1, leave.correlation_id, answer) == []
    assert member.drain_events() == []
    assert (member.phase, member.generation, member.member_id) == (Phase.UNJOINED, -1, "")
    assert member.next_wakeup_ms() is None
    assert body_of_join(only(member.poll(now + 2), JoinGroupRequest)).member_id == ""


def test_join_group_after_leaving_carries_the_leave_reset_reason() -> None:
    """testHandleNormalLeaveGroupResponse's maybeLeaveGroup, then the rejoin: ``maybeLeaveGroup``
    ends with ``resetGenerationOnLeaveGroup()``, i.e. ``requestRejoin("consumer pro-actively leaving
    the group")``, so that is the reason the next JoinGroup carries."""
    member = joined(kafka_member(max_poll_interval_ms=20_000))
    now, out = heartbeat_until_something_else(member)
    only(out, LeaveGroupRequest)
    join = only(member.poll(now + 1), JoinGroupRequest)
    assert body_of_join(join).reason == "consumer pro-actively leaving the group"
