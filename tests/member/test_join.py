"""First join: FindCoordinator, JoinGroup with MEMBER_ID_REQUIRED, SyncGroup as follower and leader."""

from __future__ import annotations

import pytest

from kgroup.assignors import create_assignor
from kgroup.assignors.api import AssignmentRequest
from kgroup.javacompat import hashmap_iteration_order
from kgroup.member import (
    FatalError,
    Fenced,
    JoinedGroup,
    MemberState,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    Phase,
)
from kgroup.member.leader import group_members
from kgroup.messages import (
    ConsumerAssignment,
    ConsumerSubscription,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetFetchRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, KgroupError, RebalanceProtocol, TopicMetadata
from kgroup.wire.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

from .helpers import (
    COORDINATOR,
    TOPICS,
    FixedAssignor,
    answer_fetch,
    assigned,
    find_coordinator,
    join_as_follower,
    join_member,
    kinds,
    new_member,
    only,
    tp,
)


def test_first_join_with_member_id_required_as_follower() -> None:
    member = new_member(("t", "u"), rack_id="r1", client_id="app")
    assert member.state is MemberState.UNJOINED
    join = only(find_coordinator(member, 10), JoinGroupRequest)
    assert member.coordinator == COORDINATOR and join.node_id == COORDINATOR
    body = join.body
    assert isinstance(body, JoinGroupRequest)
    assert (body.group_id, body.member_id, body.group_instance_id) == ("g", "", None)
    assert (body.session_timeout_ms, body.rebalance_timeout_ms, body.protocol_type) == (
        45000,
        300000,
        "consumer",
    )
    [protocol] = body.protocols
    sub = decode_subscription(protocol.metadata)
    assert protocol.name == "range"
    # subscription v3: topics (Java HashSet order), owned partitions, generation, rack
    assert sub.topics == tuple(hashmap_iteration_order(["t", "u"]))
    assert (sub.owned_partitions, sub.generation_id, sub.rack_id) == ((), -1, "r1")
    assert member.state is MemberState.REBALANCING

    again = only(
        member.on_response(
            11, join.correlation_id, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id="m-1")
        ),
        JoinGroupRequest,
    )
    assert isinstance(again.body, JoinGroupRequest) and again.body.member_id == "m-1"
    assert member.member_id == "m-1" and member.generation == -1

    after_sync = join_as_follower(member, [tp("t", 1), tp("u", 0)], now=20, generation=5, join=again)
    fetch = only(after_sync, OffsetFetchRequest)
    assert isinstance(fetch.body, OffsetFetchRequest)
    assert fetch.body.partitions == (tp("t", 1), tp("u", 0))
    assert member.state is MemberState.STABLE and member.generation == 5 and not member.is_leader
    assert member.assignment() == {tp("t", 1), tp("u", 0)}
    assert member.positions() == {}  # unknown until OffsetFetch answers

    assert answer_fetch(member, fetch, {tp("t", 1): 42}, now=21) == []
    assert member.positions() == {tp("t", 1): 42, tp("u", 0): -1}
    assert member.committed() == {tp("t", 1): 42}
    events = member.drain_events()
    assert events == [
        JoinedGroup(5, "m-1", False, "range"),
        PartitionsAssigned((tp("t", 1), tp("u", 0)), 5),
        OffsetsFetched(((tp("t", 1), 42), (tp("u", 0), -1))),
    ]


def test_follower_sync_carries_no_assignments() -> None:
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = only(
        member.on_response(
            1,
            join.correlation_id,
            JoinGroupResponse(ErrorCode.NONE, 3, "consumer", "range", "x", member_id="m"),
        ),
        SyncGroupRequest,
    )
    assert isinstance(sync.body, SyncGroupRequest)
    assert (sync.body.generation_id, sync.body.member_id, sync.body.assignments) == (3, "m", ())
    assert (sync.body.protocol_type, sync.body.protocol_name) == ("consumer", "range")
    assert member.phase is Phase.SYNCING


def test_leader_runs_the_assignor_in_join_response_order() -> None:
    recorder = FixedAssignor("range", {"b": [tp("t", 0)], "a": [tp("t", 1), tp("t", 2)], "z": [tp("t", 3)]})
    member = new_member(assignors=[recorder])
    join = only(find_coordinator(member), JoinGroupRequest)
    members = (join_member("z", ["t"]), join_member("a", ["t"], [tp("t", 1)], 4), join_member("b", ["t"]))
    resp = JoinGroupResponse(
        ErrorCode.NONE, 5, "consumer", "range", leader="a", member_id="a", members=members
    )
    sync = only(member.on_response(1, join.correlation_id, resp), SyncGroupRequest)
    assert member.is_leader
    [request] = recorder.requests
    assert [m.member_id for m in request.members] == ["z", "a", "b"]
    assert request.members[1].owned == (tp("t", 1),) and request.members[1].generation == 4
    assert request.topics == TOPICS
    assert isinstance(sync.body, SyncGroupRequest)
    sent = {a.member_id: decode_assignment(a.assignment).partitions for a in sync.body.assignments}
    assert sent == {"z": (tp("t", 3),), "a": (tp("t", 1), tp("t", 2)), "b": (tp("t", 0),)}
    assert [a.member_id for a in sync.body.assignments] == hashmap_iteration_order(["z", "a", "b"])


def test_leader_with_real_range_matches_the_assignor_called_directly() -> None:
    member = new_member(("t", "u"), assignors=[create_assignor("range")])
    join = only(find_coordinator(member), JoinGroupRequest)
    members = tuple(join_member(m, ["t", "u"]) for m in ("c-2", "c-0", "c-1"))
    resp = JoinGroupResponse(
        ErrorCode.NONE, 1, "consumer", "range", leader="c-0", member_id="c-0", members=members
    )
    sync = only(member.on_response(1, join.correlation_id, resp), SyncGroupRequest)
    expected = create_assignor("range").assign(AssignmentRequest(group_members(members), TOPICS))
    assert isinstance(sync.body, SyncGroupRequest)
    assert {
        a.member_id: list(decode_assignment(a.assignment).partitions) for a in sync.body.assignments
    } == expected


def test_static_leader_skipping_assignment_sends_empty_sync() -> None:
    recorder = FixedAssignor("range")
    member = new_member(assignors=[recorder], group_instance_id="i-1")
    join = only(find_coordinator(member), JoinGroupRequest)
    assert isinstance(join.body, JoinGroupRequest) and join.body.group_instance_id == "i-1"
    resp = JoinGroupResponse(
        ErrorCode.NONE,
        7,
        "consumer",
        "range",
        leader="a",
        skip_assignment=True,
        member_id="a",
        members=(join_member("a", ["t"]),),
    )
    sync = only(member.on_response(1, join.correlation_id, resp), SyncGroupRequest)
    assert isinstance(sync.body, SyncGroupRequest) and sync.body.assignments == ()
    assert recorder.requests == [] and member.is_leader


def test_skip_assignment_leader_watches_metadata_and_rejoins_on_a_partition_change() -> None:
    """Kafka 4.0's onLeaderElected with skipAssignment: no assignor call, but the leader keeps the
    metadata snapshot, so a later partition count change makes it rejoin from poll() (issue 9 defect 2)."""
    recorder = FixedAssignor("range")
    member = new_member(assignors=[recorder], group_instance_id="i-1")
    join = only(find_coordinator(member), JoinGroupRequest)
    resp = JoinGroupResponse(
        ErrorCode.NONE, 7, "consumer", "range", leader="a", skip_assignment=True, member_id="a",
        members=(join_member("a", ["t"]), join_member("b", ["t"])),
    )  # fmt: skip
    sync = only(member.on_response(1, join.correlation_id, resp), SyncGroupRequest)
    after = member.on_response(
        2, sync.correlation_id, SyncGroupResponse(ErrorCode.NONE, assigned(tp("t", 0)), "consumer", "range")
    )
    assert member.state is MemberState.STABLE and member.assignment() == {tp("t", 0)}
    assert kinds(after) == ["OffsetFetchRequest"]
    assert kinds(member.poll(3)) == []  # same metadata: nothing to do
    member.update_metadata({**TOPICS, "t": TopicMetadata("t", 6)})
    out = member.poll(4)
    assert "JoinGroupRequest" in kinds(out) and recorder.requests == []


def test_malformed_assignment_bytes_stop_the_member_without_raising() -> None:
    """A SyncGroup answer whose bytes are not a consumer assignment: Kafka's onJoinComplete throws the
    SchemaException out of poll() to the application; the member reports it and stops."""
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    resp = JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", leader="x", member_id="m")
    sync = only(member.on_response(1, join.correlation_id, resp), SyncGroupRequest)
    out = member.on_response(2, sync.correlation_id, SyncGroupResponse(ErrorCode.NONE, b"\x00\x03\xff"))
    assert out == [] and member.state is MemberState.FAILED
    [fatal] = [e for e in member.drain_events() if isinstance(e, FatalError)]
    assert fatal.error is ErrorCode.CORRUPT_MESSAGE and "SyncGroup response" in fatal.reason


def test_malformed_member_metadata_at_the_leader_fails_that_join() -> None:
    """The leader cannot decode a member's subscription bytes: onLeaderElected's SchemaException fails
    the join, which Kafka throws out of that poll() only; the next poll() joins again."""
    recorder = FixedAssignor("range")
    member = new_member(assignors=[recorder])
    join = only(find_coordinator(member), JoinGroupRequest)
    resp = JoinGroupResponse(
        ErrorCode.NONE, 1, "consumer", "range", leader="a", member_id="a",
        members=(join_member("a", ["t"]), JoinGroupMember("b", b"\x00")),
    )  # fmt: skip
    assert member.on_response(1, join.correlation_id, resp) == []
    assert member.phase is Phase.SYNCING and recorder.requests == []
    [fatal] = [e for e in member.drain_events() if isinstance(e, FatalError)]
    assert fatal.error is ErrorCode.CORRUPT_MESSAGE
    again = only(member.poll(2), JoinGroupRequest)
    assert isinstance(again.body, JoinGroupRequest)
    assert (again.body.member_id, again.body.reason) == ("a", "rebalance failed due to SchemaException")


def test_join_group_carries_the_exact_subscription_bytes() -> None:
    """The member's metadata is the consumer protocol's v3 Subscription, byte for byte."""
    member = new_member(("u", "t"), rack_id="r1")
    join = only(find_coordinator(member), JoinGroupRequest)
    assert isinstance(join.body, JoinGroupRequest)
    expected = encode_subscription(ConsumerSubscription(("t", "u"), None, (), -1, "r1"))
    assert join.body.protocols[0].metadata == expected


def test_cooperative_violation_by_a_custom_assignor_is_fatal() -> None:
    coop = (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)
    mover = FixedAssignor("custom", {"a": [], "b": [tp("t", 0)]}, protocols=coop)
    member = new_member(assignors=[mover])
    join = only(find_coordinator(member), JoinGroupRequest)
    members = (join_member("a", ["t"], [tp("t", 0)], 1), join_member("b", ["t"], [], 1))
    resp = JoinGroupResponse(
        ErrorCode.NONE, 2, "consumer", "custom", leader="a", member_id="a", members=members
    )
    assert member.on_response(1, join.correlation_id, resp) == []
    assert member.state is MemberState.REBALANCING  # thrown out of poll(); the member goes on
    [event] = [e for e in member.drain_events() if isinstance(e, FatalError)]
    assert "COOPERATIVE" in event.reason
    again = only(member.poll(2), JoinGroupRequest)
    assert isinstance(again.body, JoinGroupRequest)
    assert again.body.reason == "rebalance failed due to IllegalStateException"


@pytest.mark.parametrize("error", [ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.MEMBER_ID_REQUIRED])
def test_join_errors_that_rejoin_at_once(error: ErrorCode) -> None:
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    again = only(
        member.on_response(5, join.correlation_id, JoinGroupResponse(error, member_id="m-9")),
        JoinGroupRequest,
    )
    assert again.correlation_id != join.correlation_id and member.phase is Phase.JOINING


def test_join_coordinator_moved_retries_after_rediscovery_and_backoff() -> None:
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    assert member.on_response(5, join.correlation_id, JoinGroupResponse(ErrorCode.NOT_COORDINATOR)) == []
    assert member.coordinator is None
    assert member.next_wakeup_ms() == 105  # Kafka sleeps retry.backoff.ms, then looks the coordinator up
    find = only(member.background(105), FindCoordinatorRequest)
    rejoin = only(
        member.on_response(106, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, 4)),
        JoinGroupRequest,
    )
    assert rejoin.node_id == 4


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.INVALID_SESSION_TIMEOUT,
    ],
)
def test_fatal_join_errors_are_thrown_and_the_next_poll_joins_again(error: ErrorCode) -> None:
    """Kafka's joinGroupIfNeeded throws these out of poll() after requesting a rejoin; nothing is
    retried by itself, and the next poll() sends JoinGroup again."""
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    assert member.on_response(5, join.correlation_id, JoinGroupResponse(error)) == []
    assert member.state is MemberState.REBALANCING and member.next_wakeup_ms() is None
    assert member.drain_events()[-1] == FatalError(error, f"JoinGroup failed: {error.name}")
    assert member.background(10_000) == []
    again = only(member.poll(10_001), JoinGroupRequest)
    assert isinstance(again.body, JoinGroupRequest) and again.body.reason.startswith(
        "rebalance failed due to "
    )


def test_fenced_in_sync_loses_partitions_and_stops() -> None:
    member = new_member(group_instance_id="i")
    join_as_follower(member, [tp("t", 0)])
    member.drain_events()
    # a new rebalance: the heartbeat says REBALANCE_IN_PROGRESS, the next poll rejoins
    hb = only(member.background(3000), HeartbeatRequest)
    assert (
        member.on_response(3000, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS)) == []
    )
    out = member.poll(3001)
    join = next(r for r in out if isinstance(r.body, JoinGroupRequest))
    sync = only(
        member.on_response(
            3002,
            join.correlation_id,
            JoinGroupResponse(ErrorCode.NONE, 2, "consumer", "range", "x", member_id="m-1"),
        ),
        SyncGroupRequest,
    )
    assert (
        member.on_response(3003, sync.correlation_id, SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID)) == []
    )
    events = member.drain_events()
    assert Fenced(2, "m-1", "i") in events
    assert member.state is MemberState.FAILED and member.assignment() == frozenset()


def test_sync_rebalance_in_progress_rejoins_without_a_new_prepare() -> None:
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = only(
        member.on_response(
            1,
            join.correlation_id,
            JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", "x", member_id="m"),
        ),
        SyncGroupRequest,
    )
    rejoin = only(
        member.on_response(2, sync.correlation_id, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS)),
        JoinGroupRequest,
    )
    assert isinstance(rejoin.body, JoinGroupRequest) and rejoin.body.member_id == "m"
    assert decode_subscription(rejoin.body.protocols[0].metadata).generation_id == 1


def test_sync_unknown_member_resets_and_rejoins_with_empty_id() -> None:
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = only(
        member.on_response(
            1,
            join.correlation_id,
            JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", "x", member_id="m"),
        ),
        SyncGroupRequest,
    )
    rejoin = only(
        member.on_response(2, sync.correlation_id, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID)),
        JoinGroupRequest,
    )
    assert isinstance(rejoin.body, JoinGroupRequest)
    assert (rejoin.body.member_id, decode_subscription(rejoin.body.protocols[0].metadata).generation_id) == (
        "",
        -1,
    )


def test_assignment_outside_the_subscription_triggers_a_rejoin() -> None:
    member = new_member(("t",))
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = only(
        member.on_response(
            1,
            join.correlation_id,
            JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", "x", member_id="m"),
        ),
        SyncGroupRequest,
    )
    out = member.on_response(
        2,
        sync.correlation_id,
        SyncGroupResponse(ErrorCode.NONE, encode_assignment(ConsumerAssignment((tp("u", 0),)))),
    )
    assert kinds(out) == ["JoinGroupRequest"]
    assert member.assignment() == frozenset()


def test_responses_are_checked_and_stale_ones_dropped() -> None:
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    with pytest.raises(KgroupError, match="HeartbeatResponse for a JoinGroup request"):
        member.on_response(1, join.correlation_id, HeartbeatResponse(ErrorCode.NONE))
    assert member.on_response(1, 999, HeartbeatResponse(ErrorCode.NONE)) == []


def test_a_lost_join_is_retried() -> None:
    member = new_member()
    join = only(find_coordinator(member), JoinGroupRequest)
    assert member.on_request_failed(30, join.correlation_id) == []
    assert member.coordinator is None and member.next_wakeup_ms() == 130
    find = only(member.background(130), FindCoordinatorRequest)
    out = member.on_response(131, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))
    assert kinds(out) == ["JoinGroupRequest"]
    assert not [e for e in member.drain_events() if isinstance(e, PartitionsLost)]


def test_coordinator_lookup_started_by_poll_is_retried_until_found() -> None:
    member = new_member()
    find = only(member.poll(0), FindCoordinatorRequest)
    out = member.on_response(
        5, find.correlation_id, FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    )
    assert out == [] and member.next_wakeup_ms() == 105
    again = only(member.background(105), FindCoordinatorRequest)
    # found: the join the application asked for goes out without another poll()
    out = member.on_response(110, again.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))
    assert kinds(out) == ["JoinGroupRequest"]
