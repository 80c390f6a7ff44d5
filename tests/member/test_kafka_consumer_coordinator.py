"""The member against Kafka 4.0's ``ConsumerCoordinatorTest`` (classic protocol).

Each test names, in its docstring, the Kafka test whose scenario it follows; Kafka runs that class
once per rebalance protocol (EAGER and COOPERATIVE), and where the two differ the test here is
parametrised over both. Kafka's test mostly drives one follower or a one-member leader with auto-commit
off; the helpers below do the same with kgroup's own messages. The code and assertions are kgroup's;
the behaviour asserted is Kafka's (``ConsumerCoordinator`` / ``AbstractCoordinator``). Where kgroup
does not do what Kafka does, the test still asserts Kafka's behaviour and is marked ``xfail`` with the
difference in one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict, Unpack

import pytest

from kgroup.member import (
    CommitFailed,
    ConsumerMember,
    FatalError,
    Fenced,
    LeftGroup,
    MemberEvent,
    MemberState,
    OffsetsCommitted,
    OffsetsFetched,
    OutboundRequest,
    PartitionsAssigned,
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
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, KgroupError, RebalanceProtocol, TopicMetadata, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment

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
    subscription,
    tp,
)


class Settings(TypedDict, total=False):
    """The MemberConfig fields these tests set."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    retry_backoff_ms: int
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    group_instance_id: str | None


EAGER = RebalanceProtocol.EAGER
COOPERATIVE = RebalanceProtocol.COOPERATIVE
BOTH_PROTOCOLS = pytest.mark.parametrize("protocol", [EAGER, COOPERATIVE], ids=["eager", "cooperative"])


# --- driving helpers ------------------------------------------------------------------------------


def assignor_for(
    protocol: RebalanceProtocol,
    name: str | None = None,
    answer: Mapping[str, list[TopicPartition]] | None = None,
) -> FixedAssignor:
    """Kafka's ``MockPartitionAssignor`` for one protocol: an EAGER-only assignor, or one that also
    supports COOPERATIVE (so the member's protocol is COOPERATIVE)."""
    if protocol is EAGER:
        return FixedAssignor(name or "range", dict(answer or {}), (EAGER,))
    return FixedAssignor(name or "cooperative-sticky", dict(answer or {}), (EAGER, COOPERATIVE))


def member_for(
    protocol: RebalanceProtocol,
    topics: Sequence[str] = ("t",),
    *,
    assignor: FixedAssignor | None = None,
    **config: object,
) -> ConsumerMember:
    """A member of group ``g`` with one test assignor; auto-commit off unless asked (Kafka's default
    coordinator in ``ConsumerCoordinatorTest`` is built with auto-commit disabled)."""
    config.setdefault("enable_auto_commit", False)
    member = new_member(topics, assignors=[assignor or assignor_for(protocol)], **config)
    assert member.protocol is protocol
    return member


def stable(
    member: ConsumerMember,
    partitions: Sequence[TopicPartition],
    *,
    now: int = 1000,
    generation: int = 1,
    member_id: str = "m-1",
    committed: int = 10,
) -> ConsumerMember:
    """Join as follower ``member_id`` of ``generation`` owning ``partitions``; positions fetched."""
    out = join_as_follower(member, partitions, now=now, generation=generation, member_id=member_id)
    if partitions:
        answer_fetch(member, only(out, OffsetFetchRequest), {p: committed for p in partitions}, now=now)
    else:
        assert out == []
    member.drain_events()
    return member


def join_response(
    member: ConsumerMember,
    generation: int,
    member_id: str,
    leader: str,
    members: Sequence[JoinGroupMember] = (),
    *,
    skip_assignment: bool = False,
) -> JoinGroupResponse:
    return JoinGroupResponse(
        ErrorCode.NONE,
        generation,
        "consumer",
        member.assignor_names[0],
        leader,
        skip_assignment=skip_assignment,
        member_id=member_id,
        members=tuple(members),
    )


def answer_join(
    member: ConsumerMember, join: OutboundRequest, response: JoinGroupResponse, now: int = 0
) -> OutboundRequest:
    """Answer ``join``; returns the SyncGroup that follows (and checks nothing else was sent)."""
    assert isinstance(join.body, JoinGroupRequest)
    return only(member.on_response(now, join.correlation_id, response), SyncGroupRequest)


def answer_sync(
    member: ConsumerMember,
    sync: OutboundRequest,
    partitions: Sequence[TopicPartition],
    now: int = 0,
    error: ErrorCode = ErrorCode.NONE,
) -> list[OutboundRequest]:
    assert isinstance(sync.body, SyncGroupRequest)
    body = assigned(*partitions) if error is ErrorCode.NONE else b""
    return member.on_response(now, sync.correlation_id, SyncGroupResponse(error, body))


def lead(
    member: ConsumerMember,
    join: OutboundRequest,
    members: Sequence[JoinGroupMember],
    partitions: Sequence[TopicPartition],
    *,
    now: int = 0,
    generation: int = 1,
    member_id: str = "leader",
    skip_assignment: bool = False,
) -> tuple[SyncGroupRequest, list[OutboundRequest]]:
    """Answer ``join`` making the member leader, then its SyncGroup with ``partitions``; returns the
    SyncGroup it sent and what it sent after the SyncGroup answer."""
    resp = join_response(member, generation, member_id, member_id, members, skip_assignment=skip_assignment)
    sync = answer_join(member, join, resp, now)
    assert isinstance(sync.body, SyncGroupRequest)
    return sync.body, answer_sync(member, sync, partitions, now)


def sent_assignments(sync: SyncGroupRequest) -> dict[str, tuple[TopicPartition, ...]]:
    return {a.member_id: decode_assignment(a.assignment).partitions for a in sync.assignments}


def the(requests: Sequence[OutboundRequest], kind: type) -> OutboundRequest:
    """The one request of type ``kind`` among ``requests`` (others may be there too)."""
    found = [r for r in requests if isinstance(r.body, kind)]
    assert len(found) == 1, kinds(requests)
    return found[0]


def commit_answer(request: OutboundRequest, error: ErrorCode = ErrorCode.NONE) -> OffsetCommitResponse:
    assert isinstance(request.body, OffsetCommitRequest)
    return OffsetCommitResponse(tuple((p.partition, error) for p in request.body.offsets))


def committed_offsets(request: OutboundRequest) -> dict[TopicPartition, int]:
    assert isinstance(request.body, OffsetCommitRequest)
    return {p.partition: p.committed_offset for p in request.body.offsets}


def callbacks(events: Sequence[MemberEvent]) -> list[MemberEvent]:
    """The rebalance-listener calls among ``events`` (Kafka's ``MockRebalanceListener`` counts)."""
    return [e for e in events if isinstance(e, (PartitionsAssigned, PartitionsRevoked, PartitionsLost))]


def rebalance_in_progress(member: ConsumerMember, now: int) -> None:
    """A heartbeat answered REBALANCE_IN_PROGRESS: the member will rejoin at its next poll()."""
    hb = only(member.background(now), HeartbeatRequest)
    member.on_response(now, hb.correlation_id, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    assert member.rejoin_needed
    member.drain_events()


def heartbeat_until(member: ConsumerMember, until: int) -> None:
    """Run the heartbeat thread up to ``until``, answering every heartbeat NONE at once; nothing else
    may be sent meanwhile."""
    while (due := member.next_wakeup_ms()) is not None and due <= until:
        for request in member.background(due):
            assert isinstance(request.body, HeartbeatRequest), kinds([request])
            member.on_response(due, request.correlation_id, HeartbeatResponse(ErrorCode.NONE))


def heartbeat_error(member: ConsumerMember, now: int, error: ErrorCode) -> list[OutboundRequest]:
    hb = only(member.background(now), HeartbeatRequest)
    return member.on_response(now, hb.correlation_id, HeartbeatResponse(error))


T0, T1, T2, T3 = tp("t", 0), tp("t", 1), tp("t", 2), tp("t", 3)
U0, U1 = tp("u", 0), tp("u", 1)


# --- the leader's assignment and the rebalance protocol -------------------------------------------


def test_select_rebalance_protocol() -> None:
    """testSelectRebalanceProtocol: assignors with no protocol in common are refused; when every
    assignor supports EAGER and COOPERATIVE, the higher one (COOPERATIVE) is used."""
    with pytest.raises(KgroupError, match="no rebalance protocol in common"):
        new_member(
            assignors=[FixedAssignor("a", protocols=(EAGER,)), FixedAssignor("b", protocols=(COOPERATIVE,))]
        )
    both = (EAGER, COOPERATIVE)
    member = new_member(assignors=[FixedAssignor("a", protocols=both), FixedAssignor("b", protocols=both)])
    assert member.protocol is COOPERATIVE


@BOTH_PROTOCOLS
def test_normal_join_group_leader(protocol: RebalanceProtocol) -> None:
    """testNormalJoinGroupLeader: the leader runs the assignor over the members of the JoinGroup answer,
    sends SyncGroup with its generation, member id and everyone's assignment, and then owns what it
    got: nothing revoked, one onPartitionsAssigned with the new partitions."""
    assignor = assignor_for(protocol, answer={"leader": [T0]})
    member = member_for(protocol, assignor=assignor)
    join = only(find_coordinator(member), JoinGroupRequest)
    sync, out = lead(member, join, [join_member("leader", ["t"])], [T0], now=10)
    assert (sync.generation_id, sync.member_id) == (1, "leader")
    assert sent_assignments(sync) == {"leader": (T0,)}
    assert [m.member_id for m in assignor.requests[0].members] == ["leader"]
    assert member.is_leader and not member.rejoin_needed and member.state is MemberState.STABLE
    assert member.assignment() == {T0}
    assert callbacks(member.drain_events()) == [PartitionsAssigned((T0,), 1)]
    assert kinds(out) == ["OffsetFetchRequest"]


@BOTH_PROTOCOLS
def test_normal_join_group_follower(protocol: RebalanceProtocol) -> None:
    """testNormalJoinGroupFollower: a follower's SyncGroup carries its generation and member id and no
    assignments; it then owns what the SyncGroup answer gave it (nothing revoked)."""
    member = member_for(protocol)
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = answer_join(member, join, join_response(member, 1, "consumer", "leader"))
    assert isinstance(sync.body, SyncGroupRequest)
    assert (sync.body.generation_id, sync.body.member_id, sync.body.assignments) == (1, "consumer", ())
    out = answer_sync(member, sync, [T0])
    assert not member.is_leader and not member.rejoin_needed
    assert member.assignment() == {T0}
    assert callbacks(member.drain_events()) == [PartitionsAssigned((T0,), 1)]
    assert kinds(out) == ["OffsetFetchRequest"]


def claiming_members() -> list[JoinGroupMember]:
    """Kafka's validateCooperativeAssignmentTestSetup: ``consumer`` owns t-0 and t-1, ``consumer2``
    owns nothing."""
    return [join_member("consumer", ["t"], [T0, T1], 1), join_member("consumer2", ["t"], [], 1)]


@BOTH_PROTOCOLS
def test_perform_assignment_validates_cooperative_assignment(protocol: RebalanceProtocol) -> None:
    """testPerformAssignmentShouldValidateCooperativeAssignment: a custom assignor that hands t-1, still
    owned by ``consumer``, straight to ``consumer2`` violates COOPERATIVE's rule (fatal for the leader);
    under EAGER nothing is validated and the assignment is sent."""
    moved = {"consumer": [T0], "consumer2": [T1]}
    member = member_for(protocol, assignor=assignor_for(protocol, "mock", moved))
    join = only(find_coordinator(member), JoinGroupRequest)
    out = member.on_response(
        1, join.correlation_id, join_response(member, 1, "consumer", "consumer", claiming_members())
    )
    if protocol is COOPERATIVE:
        # validateCooperativeAssignment's IllegalStateException fails the join (thrown from poll())
        assert out == [] and member.state is MemberState.REBALANCING
        [fatal] = [e for e in member.drain_events() if isinstance(e, FatalError)]
        assert "COOPERATIVE" in fatal.reason
    else:
        sync = only(out, SyncGroupRequest).body
        assert isinstance(sync, SyncGroupRequest)
        assert sent_assignments(sync) == {"consumer": (T0,), "consumer2": (T1,)}
        assert member.state is MemberState.REBALANCING


def test_builtin_cooperative_sticky_assignor_is_not_validated() -> None:
    """testPerformAssignmentShouldSkipValidateCooperativeAssignmentForBuiltInCooperativeStickyAssignor:
    the same out-of-date move by an assignor named ``cooperative-sticky`` is not checked (Kafka trusts
    its own assignor, which reasons about the owners' generations itself)."""
    moved = {"consumer": [T0], "consumer2": [T1]}
    member = member_for(COOPERATIVE, assignor=assignor_for(COOPERATIVE, "cooperative-sticky", moved))
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = answer_join(member, join, join_response(member, 1, "consumer", "consumer", claiming_members()))
    assert isinstance(sync.body, SyncGroupRequest)
    assert sent_assignments(sync.body) == {"consumer": (T0,), "consumer2": (T1,)}
    assert member.state is MemberState.REBALANCING


@BOTH_PROTOCOLS
def test_on_leader_elected_should_skip_assignment(protocol: RebalanceProtocol) -> None:
    """testOnLeaderElectedShouldSkipAssignment: told ``skip_assignment`` the leader runs no assignor,
    sends an empty SyncGroup, and is still the leader."""
    assignor = assignor_for(protocol, "mock-assignor")
    member = member_for(protocol, assignor=assignor, group_instance_id="test-instance")
    join = only(find_coordinator(member), JoinGroupRequest)
    sync, out = lead(member, join, [join_member("leader", ["t"])], [T0], skip_assignment=True)
    assert assignor.requests == []
    assert sync.assignments == () and member.is_leader
    assert member.assignment() == {T0} and kinds(out) == ["OffsetFetchRequest"]


def test_leader_watches_topics_its_custom_assignor_added() -> None:
    """testPerformAssignmentShouldUpdateGroupSubscriptionAfterAssignmentIfNeeded: when a custom
    (non built-in) assignor assigns a topic no member subscribes to, Kafka's leader adds it to the
    group subscription (``maybeUpdateGroupSubscription``), so the metadata snapshot it assigned from
    covers it and a later partition change of that topic makes the leader rejoin."""
    assignor = assignor_for(EAGER, "mock", {"leader": [T0], "other": [U0]})
    member = member_for(EAGER, assignor=assignor)
    join = only(find_coordinator(member), JoinGroupRequest)
    lead(member, join, [join_member("leader", ["t"]), join_member("other", ["t"])], [T0])
    assert member.poll(100) == [] and not member.rejoin_needed
    member.update_metadata({**TOPICS, "u": TopicMetadata("u", 3)})
    assert kinds(member.poll(200)) == ["JoinGroupRequest"]


def test_subscription_rack_id() -> None:
    """testSubscriptionRackId: the member's rack goes into its subscription, and the leader's assignor
    sees the rack of every member."""
    assignor = assignor_for(EAGER, answer={"consumer": [T0]})
    member = member_for(EAGER, assignor=assignor, rack_id="rack-a")
    join = only(find_coordinator(member), JoinGroupRequest)
    assert subscription(join).rack_id == "rack-a"
    assert isinstance(join.body, JoinGroupRequest)
    members = [JoinGroupMember("consumer", join.body.protocols[0].metadata)]
    lead(member, join, members, [T0], member_id="consumer")
    assert [m.rack_id for m in assignor.requests[0].members] == ["rack-a"]
    assert member.assignment() == {T0}


# --- the leader's metadata snapshot ---------------------------------------------------------------


def stable_leader(
    member: ConsumerMember,
    members: Sequence[JoinGroupMember],
    partitions: Sequence[TopicPartition],
    *,
    now: int = 0,
    skip_assignment: bool = False,
) -> ConsumerMember:
    join = only(find_coordinator(member, now), JoinGroupRequest)
    _, out = lead(member, join, members, partitions, now=now, skip_assignment=skip_assignment)
    if partitions:
        answer_fetch(member, only(out, OffsetFetchRequest), {}, now=now)
    member.drain_events()
    assert not member.rejoin_needed
    return member


def test_metadata_change_triggers_rebalance() -> None:
    """testMetadataChangeTriggersRebalance: the leader rejoins when a partition is added to a topic it
    assigned (its assignment snapshot no longer matches the metadata)."""
    member = member_for(EAGER, assignor=assignor_for(EAGER, answer={"leader": [T0]}))
    stable_leader(member, [join_member("leader", ["t"])], [T0])
    assert member.poll(100) == []
    member.update_metadata({**TOPICS, "t": TopicMetadata("t", 5)})
    out = member.poll(200)
    assert kinds(out) == ["JoinGroupRequest"]
    assert RejoinRequested("cached metadata has changed") in member.drain_events()


@BOTH_PROTOCOLS
def test_rebalance_with_metadata_change(protocol: RebalanceProtocol) -> None:
    """testRebalanceWithMetadataChange (verifyRebalanceWithMetadataChange): a subscribed topic
    disappears, so the leader rejoins; the JoinGroup fails (NOT_COORDINATOR) and the metadata goes back
    to what it was — the member still rejoins, with its member id, and nothing is lost. EAGER revokes
    everything before the JoinGroup and gets it all back; COOPERATIVE keeps it (an empty
    onPartitionsAssigned)."""
    before = {"t": TopicMetadata("t", 1), "u": TopicMetadata("u", 1)}
    both = [T0, U0]
    assignor = assignor_for(protocol, answer={"leader": both})
    member = member_for(protocol, ("t", "u"), assignor=assignor)
    member.update_metadata(before)
    stable_leader(member, [join_member("leader", ["t", "u"])], both)
    assert member.assignment() == set(both)

    member.update_metadata({"t": TopicMetadata("t", 1)})
    join = only(member.poll(1000), JoinGroupRequest)
    member.update_metadata(before)
    assert member.on_response(1001, join.correlation_id, JoinGroupResponse(ErrorCode.NOT_COORDINATOR)) == []
    assert member.coordinator is None and member.rejoin_needed
    find = only(member.poll(1001), FindCoordinatorRequest)
    member.on_response(1002, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))
    again = the(member.background(1200), JoinGroupRequest)
    assert isinstance(again.body, JoinGroupRequest) and again.body.member_id == "leader"
    resp = join_response(member, 2, "leader", "leader", [join_member("leader", ["t", "u"])])
    answer_sync(member, answer_join(member, again, resp, 1300), both, 1300)
    assert not member.rejoin_needed and member.assignment() == set(both)
    if protocol is EAGER:
        expected: list[MemberEvent] = [PartitionsRevoked((T0, U0), 1), PartitionsAssigned((T0, U0), 2)]
    else:
        expected = [PartitionsAssigned((), 2)]
    assert callbacks(member.drain_events()) == expected


RACKS = ("rack-a", "rack-b", "rack-c")


def rack_metadata(replicas: Sequence[Sequence[int]]) -> dict[str, TopicMetadata]:
    """Kafka's rackAwareMetadata: six brokers, broker ``i`` on rack ``RACKS[i % 3]``; one topic ``t``
    whose partition ``p`` has replicas on ``replicas[p]``."""
    racks = tuple(frozenset(RACKS[b % len(RACKS)] for b in brokers) for brokers in replicas)
    return {"t": TopicMetadata("t", len(replicas), racks)}


ORIGINAL = ((0, 1), (1, 2), (2, 0))


@pytest.mark.parametrize(
    ("rack_aware", "changed", "rebalance"),
    [
        pytest.param(
            True, ((0, 2), (1, 2), (2, 0)), True, id="testRackAwareConsumerRebalanceWithDifferentRacks"
        ),
        pytest.param(
            False, ((0, 2), (1, 2), (2, 0)), False, id="testNonRackAwareConsumerRebalanceWithDifferentRacks"
        ),
        pytest.param(
            True, ((0, 1, 2), (1, 2), (2, 0)), True, id="testRackAwareConsumerRebalanceWithAdditionalRacks"
        ),
        pytest.param(True, ((0, 1), (1, 2), (2,)), True, id="testRackAwareConsumerRebalanceWithLessRacks"),
        pytest.param(
            True, ((0, 1), (1, 2), (2, 0), (0, 1)), True, id="testRackAwareConsumerRebalanceWithNewPartitions"
        ),
        pytest.param(True, ORIGINAL, False, id="testRackAwareConsumerRebalanceWithNoMetadataChange"),
        pytest.param(
            True, ((3, 4), (4, 5), (5, 3)), False, id="testRackAwareConsumerRebalanceWithNoRackChange"
        ),
        pytest.param(
            True,
            ((0, 1, 3), (1, 2, 5), (2, 0, 3)),
            False,
            id="testRackAwareConsumerRebalanceWithNewReplicasOnSameRacks",
        ),
    ],
)
def test_rack_aware_consumer_rebalance(
    rack_aware: bool, changed: Sequence[Sequence[int]], rebalance: bool
) -> None:
    """testRackAwareConsumerRebalance* (verifyRackAwareConsumerRebalance): a leader with a rack also
    watches the set of racks of every partition it assigned (not the brokers: moving replicas to other
    brokers on the same racks changes nothing); a leader without a rack watches partition counts only."""
    partitions = [tp("t", p) for p in range(len(ORIGINAL))]
    rack = "rack-a" if rack_aware else None
    member = member_for(
        EAGER, ("t", "u"), assignor=assignor_for(EAGER, answer={"leader": partitions}), rack_id=rack
    )
    member.update_metadata(rack_metadata(ORIGINAL))
    stable_leader(member, [join_member("leader", ["t", "u"])], partitions)
    member.update_metadata(rack_metadata(changed))
    out = member.poll(1000)
    assert kinds(out) == (["JoinGroupRequest"] if rebalance else [])


def test_static_leader_rejoins_group_and_can_trigger_rebalance() -> None:
    """testStaticLeaderRejoinsGroupAndCanTriggersRebalance: a returning leader told to skip the
    assignment still takes the metadata snapshot, so a partition added later makes it rejoin."""
    assignor = assignor_for(EAGER, "mock")
    member = member_for(EAGER, assignor=assignor, group_instance_id="test-instance")
    stable_leader(member, [join_member("leader", ["t"])], [T0], skip_assignment=True)
    assert assignor.requests == [] and member.poll(100) == []
    member.update_metadata({**TOPICS, "t": TopicMetadata("t", 5)})
    assert kinds(member.poll(200)) == ["JoinGroupRequest"]


def test_static_leader_detects_metadata_changes_for_other_members() -> None:
    """testStaticLeaderRejoinsGroupAndCanDetectMetadataChangesForOtherMembers: the skipping leader
    watches every member's topics, so a partition added to a topic only another member subscribes to
    makes it rejoin."""
    member = member_for(EAGER, assignor=assignor_for(EAGER, "mock"), group_instance_id="test-instance")
    stable_leader(
        member, [join_member("leader", ["t"]), join_member("other", ["u"])], [T0], skip_assignment=True
    )
    assert member.poll(100) == []
    member.update_metadata({**TOPICS, "u": TopicMetadata("u", 3)})
    assert kinds(member.poll(200)) == ["JoinGroupRequest"]


def test_update_metadata_during_rebalance() -> None:
    """testUpdateMetadataDuringRebalance: the leader assigned with metadata for only one of its two
    topics; the other topic appears while the SyncGroup is in flight, so a second rebalance follows
    (by the next poll) and hands out both topics."""
    members = [join_member("leader", ["t", "u"])]
    assignor = assignor_for(EAGER, answer={"leader": [T0]})
    member = member_for(EAGER, ("t", "u"), assignor=assignor)
    member.update_metadata({"t": TopicMetadata("t", 1)})
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = answer_join(member, join, join_response(member, 1, "leader", "leader", members), 10)
    member.update_metadata({"t": TopicMetadata("t", 1), "u": TopicMetadata("u", 1)})
    out = answer_sync(member, sync, [T0], 20)
    rejoin = [r for r in out if isinstance(r.body, JoinGroupRequest)] or member.poll(30)
    join2 = only(rejoin, JoinGroupRequest)
    assignor.answer = {"leader": [T0, U0]}
    answer_sync(
        member,
        answer_join(member, join2, join_response(member, 2, "leader", "leader", members), 40),
        [T0, U0],
        40,
    )
    assert not member.rejoin_needed and member.assignment() == {T0, U0}
    assert member.poll(50) == []


def test_rebalance_after_topic_unavailable_with_subscribe() -> None:
    """testRebalanceAfterTopicUnavailableWithSubscribe: the subscribed topic is missing from the
    metadata, so the leader assigns nothing (an empty onPartitionsAssigned) and does not rejoin; once
    the topic appears the leader rejoins and gets its partition."""
    members = [join_member("leader", ["t"])]
    assignor = assignor_for(EAGER, answer={})
    member = member_for(EAGER, assignor=assignor)
    member.update_metadata({})
    join = only(find_coordinator(member), JoinGroupRequest)
    _, out = lead(member, join, members, [])
    assert out == [] and not member.rejoin_needed
    assert callbacks(member.drain_events()) == [PartitionsAssigned((), 1)]
    assert member.poll(100) == []
    member.update_metadata({"t": TopicMetadata("t", 1)})
    join2 = only(member.poll(200), JoinGroupRequest)
    assignor.answer = {"leader": [T0]}
    lead(member, join2, members, [T0], now=300, generation=2)
    assert not member.rejoin_needed
    assert callbacks(member.drain_events()) == [PartitionsRevoked((), 1), PartitionsAssigned((T0,), 2)]


def test_metadata_change_during_rebalance_rejoins_at_the_next_poll() -> None:
    """testUpdateMetadataDuringRebalance / testMetadataRefreshDuringRebalance ("rejoin will only be set
    in the next poll call"): Kafka compares the assignment snapshot with ``metadataSnapshot``, which only
    ``poll()`` refreshes (``maybeUpdateSubscriptionMetadata``), so metadata that changed while the
    SyncGroup was in flight does not restart the rebalance when the SyncGroup is answered; the member
    first completes it (and keeps its partitions) and rejoins at the next poll."""
    members = [join_member("leader", ["t", "u"])]
    member = member_for(EAGER, ("t", "u"), assignor=assignor_for(EAGER, answer={"leader": [T0]}))
    member.update_metadata({"t": TopicMetadata("t", 1)})
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = answer_join(member, join, join_response(member, 1, "leader", "leader", members), 10)
    member.update_metadata({"t": TopicMetadata("t", 1), "u": TopicMetadata("u", 1)})
    out = answer_sync(member, sync, [T0], 20)
    assert kinds(out) == ["OffsetFetchRequest"]
    assert not member.rejoin_needed and member.assignment() == {T0}
    assert callbacks(member.drain_events()) == [PartitionsAssigned((T0,), 1)]
    assert kinds(member.poll(30)) == ["JoinGroupRequest"]


# --- subscription changes, rejoins and the callbacks' generation ----------------------------------


@BOTH_PROTOCOLS
def test_outdated_coordinator_assignment(protocol: RebalanceProtocol) -> None:
    """testOutdatedCoordinatorAssignment: the subscription changes while the SyncGroup is in flight and
    the answer assigns a topic no longer subscribed; the member does not take it but rejoins at once
    with the new subscription. EAGER's second onJoinPrepare revokes (the empty set) once; COOPERATIVE
    revokes nothing; onPartitionsAssigned runs once, for the final assignment."""
    members_old = [join_member("outdated_assignment", ["u"])]
    assignor = assignor_for(protocol, answer={"outdated_assignment": [T0]})
    member = member_for(protocol, ("u",), assignor=assignor)
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = answer_join(
        member, join, join_response(member, 1, "outdated_assignment", "outdated_assignment", members_old)
    )
    member.subscribe(["t"])
    rejoin = only(answer_sync(member, sync, [U0], 10), JoinGroupRequest)
    assert subscription(rejoin).topics == ("t",)
    assert member.assignment() == frozenset()
    members_new = [join_member("outdated_assignment", ["t"])]
    resp = join_response(member, 1, "outdated_assignment", "outdated_assignment", members_new)
    answer_sync(member, answer_join(member, rejoin, resp, 20), [T0], 20)
    assert not member.rejoin_needed and member.assignment() == {T0}
    revoked: list[MemberEvent] = [PartitionsRevoked((), 1)] if protocol is EAGER else []
    assert callbacks(member.drain_events()) == [*revoked, PartitionsAssigned((T0,), 1)]


@BOTH_PROTOCOLS
def test_metadata_topics_during_subscription_change(protocol: RebalanceProtocol) -> None:
    """testMetadataTopicsDuringSubscriptionChange: a leader switching its subscription from t to u
    rejoins at the next poll with the new topics and ends up owning only u's partition. Both protocols
    revoke t-0 before the JoinGroup (COOPERATIVE because its topic is no longer subscribed)."""
    assignor = assignor_for(protocol, answer={"subscription_change": [T0]})
    member = member_for(protocol, assignor=assignor)
    join = only(find_coordinator(member), JoinGroupRequest)
    lead(member, join, [join_member("subscription_change", ["t"])], [T0], member_id="subscription_change")
    member.subscribe(["u"])
    join2 = only(member.poll(100), JoinGroupRequest)
    assert subscription(join2).topics == ("u",)
    assignor.answer = {"subscription_change": [U0]}
    lead(
        member,
        join2,
        [join_member("subscription_change", ["u"])],
        [U0],
        generation=2,
        member_id="subscription_change",
    )
    assert not member.rejoin_needed and member.assignment() == {U0}
    assert callbacks(member.drain_events()) == [
        PartitionsAssigned((T0,), 1),
        PartitionsRevoked((T0,), 1),
        PartitionsAssigned((U0,), 2),
    ]


@BOTH_PROTOCOLS
def test_rejoin_group(protocol: RebalanceProtocol) -> None:
    """testRejoinGroup: subscribing to one more topic makes the follower rejoin; it gets the same
    partition back. EAGER revokes and re-assigns it; COOPERATIVE keeps it (no revoke, an empty
    onPartitionsAssigned)."""
    member = stable(member_for(protocol), [T0])
    member.subscribe(["t", "otherTopic"])
    join = only(member.poll(2000), JoinGroupRequest)
    assert set(subscription(join).topics) == {"t", "otherTopic"}
    answer_sync(
        member, answer_join(member, join, join_response(member, 2, "m-1", "leader"), 2100), [T0], 2100
    )
    assert not member.rejoin_needed and member.assignment() == {T0}
    if protocol is EAGER:
        expected: list[MemberEvent] = [PartitionsRevoked((T0,), 1), PartitionsAssigned((T0,), 2)]
    else:
        expected = [PartitionsAssigned((), 2)]
    assert callbacks(member.drain_events()) == expected


@BOTH_PROTOCOLS
def test_callbacks_see_the_new_generation(protocol: RebalanceProtocol) -> None:
    """shouldUpdateConsumerGroupMetadataBeforeCallbacks: the revocation that follows a SyncGroup
    (COOPERATIVE) already carries the new generation; EAGER revokes nothing there (it revoked before
    the JoinGroup, in the old generation)."""
    member = stable(member_for(protocol), [T0])
    rebalance_in_progress(member, 4000)
    join = only(member.poll(4100), JoinGroupRequest)
    before = callbacks(member.drain_events())
    answer_sync(member, answer_join(member, join, join_response(member, 2, "m-1", "leader"), 4200), [], 4200)
    after = callbacks(member.drain_events())
    if protocol is COOPERATIVE:
        assert before == []
        assert after == [PartitionsRevoked((T0,), 2), PartitionsAssigned((), 2)]
    else:
        assert before == [PartitionsRevoked((T0,), 1)]
        assert after == [PartitionsAssigned((), 2)]
    assert member.generation == 2


@BOTH_PROTOCOLS
def test_assignment_notifies_assignor_and_listener_once(protocol: RebalanceProtocol) -> None:
    """testOnPartitionsAssignExceptionThrownWhenNoPreviousThrownCallbacks and the other
    verifyOnCallbackExceptions cases, without the throwing callbacks (kgroup's callbacks are events,
    they cannot throw): the member owns u-0 and is assigned t-0. COOPERATIVE revokes u-0 after the
    SyncGroup (EAGER had revoked it before the JoinGroup); the assignor's onAssignment runs once with
    the new generation, and onPartitionsAssigned once; nothing is lost."""
    assignor = assignor_for(protocol)
    member = stable(member_for(protocol, ("t", "u"), assignor=assignor), [U0], member_id="memberId")
    assignor.on_assignment_calls.clear()
    rebalance_in_progress(member, 4000)
    join = only(member.poll(4100), JoinGroupRequest)
    sync = answer_join(member, join, join_response(member, 2, "memberId", "leader"), 4200)
    answer_sync(member, sync, [T0], 4300)
    assert assignor.on_assignment_calls == [(None, 2)]
    events = callbacks(member.drain_events())
    revoked = PartitionsRevoked((U0,), 1 if protocol is EAGER else 2)
    assert events == [revoked, PartitionsAssigned((T0,), 2)]
    assert member.assignment() == {T0}


def test_disconnect_in_join() -> None:
    """testDisconnectInJoin: a JoinGroup lost to a disconnect makes the member rediscover the
    coordinator and join again; it then gets its assignment (nothing revoked)."""
    member = member_for(EAGER)
    join = only(find_coordinator(member, 10), JoinGroupRequest)
    assert member.on_request_failed(20, join.correlation_id) == []
    assert member.coordinator is None
    find = only(member.background(member.next_wakeup_ms() or 0), FindCoordinatorRequest)
    again = only(
        member.on_response(200, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, 3)),
        JoinGroupRequest,
    )
    answer_sync(
        member, answer_join(member, again, join_response(member, 1, "consumer", "leader"), 210), [T0], 210
    )
    assert not member.rejoin_needed and member.assignment() == {T0}
    assert callbacks(member.drain_events()) == [PartitionsAssigned((T0,), 1)]


def test_get_group_metadata() -> None:
    """testGetGroupMetadata: before joining, no generation and no member id; after the join, the
    generation, member id and group instance id of the group (used for transactional commits)."""
    member = member_for(EAGER, group_instance_id="test-instance")
    assert (member.generation, member.member_id) == (-1, "")
    stable(member, [T0], member_id="consumer")
    assert (member.generation, member.member_id, member.config.group_instance_id) == (
        1,
        "consumer",
        "test-instance",
    )


# --- heartbeats -----------------------------------------------------------------------------------

KAFKA_TIMEOUTS: Settings = {"session_timeout_ms": 10000, "heartbeat_interval_ms": 5000}


def test_normal_heartbeat() -> None:
    """testNormalHeartbeat: a heartbeat goes out with the member's generation and id; its NONE answer
    keeps the session alive (the coordinator is not dropped when the first session would have ended)."""
    member = stable(member_for(EAGER, **KAFKA_TIMEOUTS), [T0])  # joined at 1000
    hb = only(member.background(6000), HeartbeatRequest)
    assert isinstance(hb.body, HeartbeatRequest)
    assert (hb.body.generation_id, hb.body.member_id) == (1, "m-1")
    assert member.on_response(6000, hb.correlation_id, HeartbeatResponse(ErrorCode.NONE)) == []
    assert kinds(member.background(11000)) == ["HeartbeatRequest"]
    assert member.coordinator == COORDINATOR and member.state is MemberState.STABLE


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ErrorCode.COORDINATOR_NOT_AVAILABLE, id="testCoordinatorNotAvailable"),
        pytest.param(ErrorCode.NOT_COORDINATOR, id="testNotCoordinator"),
        pytest.param(None, id="testCoordinatorDisconnect"),
    ],
)
def test_heartbeat_coordinator_error_marks_coordinator_unknown(error: ErrorCode | None) -> None:
    """testCoordinatorNotAvailable / testNotCoordinator / testCoordinatorDisconnect: the heartbeat fails
    and the coordinator is marked unknown (and looked up again); the membership is untouched."""
    member = stable(member_for(EAGER, **KAFKA_TIMEOUTS), [T0])
    hb = only(member.background(6000), HeartbeatRequest)
    if error is None:
        member.on_request_failed(6000, hb.correlation_id)
    else:
        member.on_response(6000, hb.correlation_id, HeartbeatResponse(error))
    assert member.coordinator is None
    assert (member.generation, member.member_id, member.assignment()) == (1, "m-1", frozenset({T0}))
    assert kinds(member.background(member.next_wakeup_ms() or 0)) == ["FindCoordinatorRequest"]


@BOTH_PROTOCOLS
@pytest.mark.parametrize(
    ("error", "member_id"),
    [
        pytest.param(ErrorCode.ILLEGAL_GENERATION, "m-1", id="testIllegalGeneration"),
        pytest.param(ErrorCode.UNKNOWN_MEMBER_ID, "", id="testUnknownMemberId"),
    ],
)
def test_heartbeat_generation_error_loses_partitions(
    protocol: RebalanceProtocol, error: ErrorCode, member_id: str
) -> None:
    """testIllegalGeneration / testUnknownMemberId: the heartbeat error asks for a rejoin; the next poll
    gives the partitions up as lost (onPartitionsLost, no revoke, no commit) and rejoins."""
    member = stable(member_for(protocol, enable_auto_commit=True), [T0])
    heartbeat_error(member, 4000, error)
    assert member.rejoin_needed and member.generation == -1
    out = member.poll(4100)
    join = only(out, JoinGroupRequest)
    assert isinstance(join.body, JoinGroupRequest) and join.body.member_id == member_id
    assert callbacks(member.drain_events()) == [PartitionsLost((T0,), 1)]
    assert member.assignment() == frozenset()


def test_update_last_heartbeat_poll_when_coordinator_unknown() -> None:
    """testUpdateLastHeartbeatPollWhenCoordinatorUnknown: a poll() that cannot find the coordinator
    still counts as a poll, so the member does not leave for max.poll.interval.ms measured from an
    earlier poll."""
    member = stable(member_for(EAGER, max_poll_interval_ms=60000), [T0])  # joined (and polled) at 1000
    heartbeat_error(member, 4000, ErrorCode.NOT_COORDINATOR)
    assert member.coordinator is None
    find = only(member.poll(5000), FindCoordinatorRequest)
    member.on_response(5001, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))
    heartbeat_until(member, 64_999)
    assert member.state is MemberState.STABLE
    assert kinds(member.background(65_000)) == ["LeaveGroupRequest"]


# --- JoinGroup / SyncGroup errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ErrorCode.GROUP_AUTHORIZATION_FAILED, id="testGroupReadUnauthorized"),
        pytest.param(ErrorCode.INVALID_GROUP_ID, id="testJoinGroupInvalidGroupId"),
        pytest.param(ErrorCode.INVALID_SESSION_TIMEOUT, id="testInvalidSessionTimeout"),
    ],
)
def test_fatal_join_group_errors(error: ErrorCode) -> None:
    """testGroupReadUnauthorized / testJoinGroupInvalidGroupId / testInvalidSessionTimeout: these
    JoinGroup errors are thrown to the application (kgroup: a FatalError event, nothing sent); the
    consumer stays usable: the next poll() joins again."""
    member = member_for(EAGER)
    join = only(find_coordinator(member), JoinGroupRequest)
    assert member.on_response(1, join.correlation_id, JoinGroupResponse(error)) == []
    assert member.state is MemberState.REBALANCING
    assert [e.error for e in member.drain_events() if isinstance(e, FatalError)] == [error]
    the(member.poll(100), JoinGroupRequest)


def test_group_describe_unauthorized() -> None:
    """testGroupDescribeUnauthorized: GROUP_AUTHORIZATION_FAILED to FindCoordinator is thrown to the
    application (ensureCoordinatorReady), not retried by that poll(); the next poll() looks the
    coordinator up again."""
    member = member_for(EAGER)
    find = only(member.poll(0), FindCoordinatorRequest)
    member.on_response(1, find.correlation_id, FindCoordinatorResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    assert member.state is MemberState.UNJOINED and member.coordinator is None
    assert [e.error for e in member.drain_events() if isinstance(e, FatalError)] == [
        ErrorCode.GROUP_AUTHORIZATION_FAILED
    ]
    assert member.next_wakeup_ms() is None
    only(member.poll(200), FindCoordinatorRequest)


def test_subscription_change_with_authorization_failure() -> None:
    """testSubscriptionChangeWithAuthorizationFailure: GROUP_AUTHORIZATION_FAILED to JoinGroup is thrown
    from that poll() (``joinGroupIfNeeded`` rethrows the non-retriable failure after requesting a
    rejoin) but does not end the consumer: after the application changes its subscription, the next
    poll() sends a new JoinGroup with it (onJoinPrepare is not run again) and the join completes."""
    members = [join_member("consumer", ["t"])]
    member = member_for(EAGER, ("t", "u"), assignor=assignor_for(EAGER, answer={"consumer": [T0]}))
    join = only(find_coordinator(member), JoinGroupRequest)
    member.on_response(1, join.correlation_id, JoinGroupResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    assert [e.error for e in member.drain_events() if isinstance(e, FatalError)] == [
        ErrorCode.GROUP_AUTHORIZATION_FAILED
    ]
    member.subscribe(["t"])
    again = the(member.poll(100), JoinGroupRequest)
    assert subscription(again).topics == ("t",)
    lead(member, again, members, [T0], now=200, member_id="consumer")
    assert member.assignment() == {T0} and member.subscription == ("t",)


@pytest.mark.parametrize(
    ("error", "exception"),
    [
        (ErrorCode.UNKNOWN_SERVER_ERROR, "KafkaException"),
        (ErrorCode.GROUP_AUTHORIZATION_FAILED, "GroupAuthorizationException"),
    ],
)
def test_unexpected_error_on_sync_group(error: ErrorCode, exception: str) -> None:
    """testUnexpectedErrorOnSyncGroup: an unexpected SyncGroup error (and GROUP_AUTHORIZATION_FAILED)
    is thrown to the application. The member stays in COMPLETING_REBALANCE, heartbeating, and the
    next poll() sends JoinGroup again with the reason naming the exception."""
    member = member_for(EAGER)
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = answer_join(member, join, join_response(member, 1, "consumer", "leader"))
    assert member.error_pending is False
    assert answer_sync(member, sync, [], 10, error) == []
    assert member.error_pending is True
    assert [e.error for e in member.drain_events() if isinstance(e, FatalError)] == [error]
    assert member.error_pending is False
    assert member.phase is Phase.SYNCING and member.next_wakeup_ms() == 3000
    only(member.background(3000), HeartbeatRequest)
    again = only(member.poll(3001), JoinGroupRequest)
    assert isinstance(again.body, JoinGroupRequest)
    assert (again.body.member_id, again.body.reason) == ("consumer", f"rebalance failed due to {exception}")


@pytest.mark.parametrize(
    ("error", "rejoin_member_id"),
    [
        pytest.param(ErrorCode.UNKNOWN_MEMBER_ID, "", id="testUnknownMemberIdOnSyncGroup"),
        pytest.param(ErrorCode.REBALANCE_IN_PROGRESS, "consumer", id="testRebalanceInProgressOnSyncGroup"),
        pytest.param(ErrorCode.ILLEGAL_GENERATION, "consumer", id="testIllegalGenerationOnSyncGroup"),
    ],
)
def test_sync_group_error_rejoins(error: ErrorCode, rejoin_member_id: str) -> None:
    """testUnknownMemberIdOnSyncGroup / testRebalanceInProgressOnSyncGroup /
    testIllegalGenerationOnSyncGroup: the member joins again at once — with an empty member id after
    UNKNOWN_MEMBER_ID, keeping it otherwise — and the second join completes with its assignment."""
    member = member_for(EAGER)
    join = only(find_coordinator(member), JoinGroupRequest)
    sync = answer_join(member, join, join_response(member, 1, "consumer", "leader"))
    again = only(answer_sync(member, sync, [], 10, error), JoinGroupRequest)
    assert isinstance(again.body, JoinGroupRequest) and again.body.member_id == rejoin_member_id
    answer_sync(
        member, answer_join(member, again, join_response(member, 2, "consumer", "leader"), 20), [T0], 20
    )
    assert not member.rejoin_needed and member.assignment() == {T0}
    assert member.state is MemberState.STABLE and member.generation == 2


def rejoin_after_commit_rebalance_in_progress(member: ConsumerMember, now: int) -> OutboundRequest:
    """Kafka's setup for the next tests: a commit answered REBALANCE_IN_PROGRESS asks for a rejoin;
    the next poll sends the JoinGroup (returned)."""
    commit = only(member.commit(now, {T0: 100}), OffsetCommitRequest)
    member.on_response(now, commit.correlation_id, commit_answer(commit, ErrorCode.REBALANCE_IN_PROGRESS))
    assert member.rejoin_needed and member.generation == 1
    return the(member.poll(now + 100), JoinGroupRequest)


@BOTH_PROTOCOLS
@pytest.mark.parametrize(
    ("error", "member_id"),
    [
        pytest.param(
            ErrorCode.UNKNOWN_MEMBER_ID,
            "",
            id="shouldLoseAllOwnedPartitionsBeforeRejoiningAfterDroppingOutOfTheGroup",
        ),
        pytest.param(
            ErrorCode.ILLEGAL_GENERATION,
            "consumer-42",
            id="shouldLoseAllOwnedPartitionsBeforeRejoiningAfterResettingGenerationId",
        ),
    ],
)
def test_lose_owned_partitions_before_rejoining(
    protocol: RebalanceProtocol, error: ErrorCode, member_id: str
) -> None:
    """shouldLoseAllOwnedPartitionsBeforeRejoining*: the SyncGroup of a rejoin fails with
    UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION, resetting the generation (and the member id only for
    UNKNOWN_MEMBER_ID). The member rejoins, and what it still owned is lost first: EAGER owned nothing
    any more (it revoked before the JoinGroup), COOPERATIVE loses the partitions it had kept."""
    member = stable(member_for(protocol, group_instance_id="group-id"), [T0], member_id="consumer")
    join = rejoin_after_commit_rebalance_in_progress(member, 2000)
    member.drain_events()
    sync = answer_join(member, join, join_response(member, 42, "consumer-42", "leader"), 2200)
    out = answer_sync(member, sync, [], 2300, error)
    assert (member.generation, member.member_id) == (-1, member_id)
    again = only(out, JoinGroupRequest)  # Kafka's joinGroupIfNeeded: ``continue``, at once
    assert isinstance(again.body, JoinGroupRequest) and again.body.member_id == member_id
    lost: list[MemberEvent] = [PartitionsLost((T0,), 1)] if protocol is COOPERATIVE else []
    assert callbacks(member.drain_events()) == lost
    assert member.assignment() == frozenset()


@BOTH_PROTOCOLS
def test_prepare_join_and_rejoin_after_failed_rebalance(protocol: RebalanceProtocol) -> None:
    """testPrepareJoinAndRejoinAfterFailedRebalance: while the SyncGroup is in flight the heartbeat
    thread drops the generation (max.poll.interval.ms: a static member leaves without LeaveGroup); the
    SyncGroup's answer is then not applied, the member joins again (losing what COOPERATIVE had kept,
    EAGER having revoked it already) and this time the rebalance completes."""
    config: Settings = {"group_instance_id": "group-id", "max_poll_interval_ms": 10_000}
    member = stable(member_for(protocol, **config), [T0], member_id="consumer")
    join = rejoin_after_commit_rebalance_in_progress(member, 2000)
    sync = answer_join(member, join, join_response(member, 42, "consumer-42", "leader"), 2200)
    assert (member.generation, member.member_id) == (42, "consumer-42")
    heartbeat_until(member, 12_199)
    assert member.background(12_200) == []  # static: no LeaveGroup
    assert (member.generation, member.member_id) == (-1, "")
    events = member.drain_events()
    assert [e for e in events if isinstance(e, LeftGroup)] == [
        LeftGroup("consumer poll timeout has expired.", False)
    ]
    assert answer_sync(member, sync, [T0], 12_300) == []  # the generation is gone: not applied
    assert member.assignment() == ({T0} if protocol is COOPERATIVE else frozenset())
    rejoin = only(member.poll(12_400), JoinGroupRequest)
    assert isinstance(rejoin.body, JoinGroupRequest) and rejoin.body.member_id == ""
    sync2 = answer_join(member, rejoin, join_response(member, 42, "consumer-42", "leader"), 12_500)
    answer_sync(member, sync2, [T0], 12_600)
    assert member.state is MemberState.STABLE and member.assignment() == {T0}
    if protocol is EAGER:
        expected: list[MemberEvent] = [PartitionsRevoked((T0,), 1), PartitionsAssigned((T0,), 42)]
    else:
        expected = [PartitionsLost((T0,), 1), PartitionsAssigned((T0,), 42)]
    assert callbacks(events + member.drain_events()) == expected


# --- onJoinPrepare: the pre-join commit -----------------------------------------------------------


def auto_committing(protocol: RebalanceProtocol, **config: Unpack[Settings]) -> ConsumerMember:
    """Kafka's prepareCoordinatorForCloseTest(group management, auto-commit): a follower owning t-0
    (generation 1, member ``consumer``) whose position is 100, with a rebalance asked for."""
    config.setdefault("auto_commit_interval_ms", 2000)
    member = stable(member_for(protocol, enable_auto_commit=True, **config), [T0], member_id="consumer")
    member.seek(T0, 100)
    rebalance_in_progress(member, 4000)
    return member


@BOTH_PROTOCOLS
def test_join_prepare_with_auto_commit_disabled(protocol: RebalanceProtocol) -> None:
    """testJoinPrepareWithDisableAutoCommit: without auto-commit onJoinPrepare commits nothing and the
    JoinGroup goes out at once (EAGER revoking first)."""
    member = stable(member_for(protocol), [T0], member_id="consumer")
    member.seek(T0, 100)
    rebalance_in_progress(member, 4000)
    join = only(member.poll(4100), JoinGroupRequest)
    assert isinstance(join.body, JoinGroupRequest) and join.body.member_id == "consumer"
    revoked: list[MemberEvent] = [PartitionsRevoked((T0,), 1)] if protocol is EAGER else []
    assert callbacks(member.drain_events()) == revoked


@BOTH_PROTOCOLS
def test_join_prepare_and_commit_completed(protocol: RebalanceProtocol) -> None:
    """testJoinPrepareAndCommitCompleted: onJoinPrepare commits every position with the current
    generation and waits; EAGER stops fetching the partitions meanwhile (pending revocation). Once the
    commit succeeds the prepare completes (EAGER revokes) and the JoinGroup goes out."""
    member = auto_committing(protocol)
    commit = only(member.poll(4100), OffsetCommitRequest)
    assert isinstance(commit.body, OffsetCommitRequest)
    assert (commit.body.generation_id, commit.body.member_id) == (1, "consumer")
    assert committed_offsets(commit) == {T0: 100}
    assert member.phase is Phase.PREPARING and member.drain_events() == []
    assert member.pending_revocation() == ({T0} if protocol is EAGER else frozenset())
    out = member.on_response(4110, commit.correlation_id, commit_answer(commit))
    assert kinds(out) == ["JoinGroupRequest"] and member.coordinator == COORDINATOR
    revoked: list[MemberEvent] = [PartitionsRevoked((T0,), 1)] if protocol is EAGER else []
    assert callbacks(member.drain_events()) == revoked
    assert member.committed()[T0] == 100


def test_join_prepare_commit_succeeds_after_retry() -> None:
    """testOnJoinPrepareWithOffsetCommitShouldSuccessAfterRetry: a retriable commit error
    (UNKNOWN_TOPIC_OR_PARTITION) keeps onJoinPrepare waiting; the commit is sent again after the
    backoff and, once it succeeds, the JoinGroup goes out."""
    member = auto_committing(EAGER, retry_backoff_ms=100)
    commit = only(member.poll(4100), OffsetCommitRequest)
    out = member.on_response(
        4110, commit.correlation_id, commit_answer(commit, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    )
    assert out == [] and member.phase is Phase.PREPARING
    assert member.next_wakeup_ms() == 4210
    again = only(member.background(4210), OffsetCommitRequest)
    assert committed_offsets(again) == {T0: 100}
    assert kinds(member.on_response(4220, again.correlation_id, commit_answer(again))) == ["JoinGroupRequest"]
    assert member.coordinator == COORDINATOR


def test_join_prepare_and_commit_with_coordinator_not_available() -> None:
    """testJoinPrepareAndCommitWithCoordinatorNotAvailable: COORDINATOR_NOT_AVAILABLE to the pre-join
    commit marks the coordinator unknown and onJoinPrepare does not complete; once the coordinator is
    found again the commit is retried, and only then does the member join."""
    member = auto_committing(EAGER, retry_backoff_ms=100)
    commit = only(member.poll(4100), OffsetCommitRequest)
    out = member.on_response(
        4110, commit.correlation_id, commit_answer(commit, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    )
    assert out == [] and member.coordinator is None and member.phase is Phase.PREPARING
    assert callbacks(member.drain_events()) == []
    find = only(member.background(member.next_wakeup_ms() or 0), FindCoordinatorRequest)
    out = member.on_response(4300, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))
    again = only(out or member.background(member.next_wakeup_ms() or 0), OffsetCommitRequest)
    assert kinds(member.on_response(4400, again.correlation_id, commit_answer(again))) == ["JoinGroupRequest"]
    assert callbacks(member.drain_events()) == [PartitionsRevoked((T0,), 1)]


@BOTH_PROTOCOLS
def test_join_prepare_goes_on_after_non_retriable_commit_error(protocol: RebalanceProtocol) -> None:
    """testOnJoinPrepareWithOffsetCommitShouldKeepJoinAfterNonRetryableException /
    testJoinPrepareAndCommitWithUnknownMemberId: a non-retriable error (UNKNOWN_MEMBER_ID) to the
    pre-join commit does not hold the join up: the JoinGroup goes out at once, to the same (still
    known) coordinator."""
    member = auto_committing(protocol)
    commit = only(member.poll(4100), OffsetCommitRequest)
    out = member.on_response(4110, commit.correlation_id, commit_answer(commit, ErrorCode.UNKNOWN_MEMBER_ID))
    assert kinds(out) == ["JoinGroupRequest"]
    assert member.coordinator == COORDINATOR and member.phase is Phase.JOINING
    assert [e.error for e in member.drain_events() if isinstance(e, CommitFailed)] == [
        ErrorCode.UNKNOWN_MEMBER_ID
    ]


@BOTH_PROTOCOLS
def test_join_prepare_decides_from_the_generation_when_the_commit_is_answered(
    protocol: RebalanceProtocol,
) -> None:
    """testJoinPrepareAndCommitWithUnknownMemberId, as Kafka's consumer runs it. The test calls
    ``onJoinPrepare(timer, generation, memberId)`` directly with a long timer, so its commit is
    answered inside that call and revoke-or-lose is decided from the arguments. ``KafkaConsumer.poll``
    never does that: ``ClassicKafkaConsumer.poll`` calls ``updateAssignmentMetadataIfNeeded(timer,
    false)``, and ``ConsumerCoordinator.poll`` then runs ``ensureActiveGroup`` with a zero timer
    (``waitForJoinGroup ? timer : time.timer(0L)``), so ``onJoinPrepare`` returns false while its commit
    is in flight, and the call after the answer passes the generation current then — which the
    commit's UNKNOWN_MEMBER_ID has reset. The partitions are lost in both protocols, and the
    JoinGroup goes out with no member id and nothing owned."""
    member = auto_committing(protocol)
    commit = only(member.poll(4100), OffsetCommitRequest)
    join = only(
        member.on_response(4110, commit.correlation_id, commit_answer(commit, ErrorCode.UNKNOWN_MEMBER_ID)),
        JoinGroupRequest,
    )
    assert isinstance(join.body, JoinGroupRequest) and join.body.member_id == ""
    assert callbacks(member.drain_events()) == [PartitionsLost((T0,), 1)]
    assert member.assignment() == frozenset()
    assert (subscription(join).owned_partitions, subscription(join).generation_id) == ((), -1)


@BOTH_PROTOCOLS
def test_join_prepare_goes_on_after_rebalance_timeout(protocol: RebalanceProtocol) -> None:
    """testOnJoinPrepareWithOffsetCommitShouldKeepJoinAfterRebalanceTimeout: the pre-join commit is not
    answered within the rebalance timeout (max.poll.interval.ms); onJoinPrepare then gives up waiting
    and the member joins. The late (retriable) answer changes nothing."""
    member = auto_committing(protocol, max_poll_interval_ms=60_000)
    commit = only(member.poll(4100), OffsetCommitRequest)
    heartbeat_until(member, 64_099)
    phases = [member.phase]
    join = the(member.background(64_100), JoinGroupRequest)
    phases.append(member.phase)
    assert phases == [Phase.PREPARING, Phase.JOINING]
    revoked: list[MemberEvent] = [PartitionsRevoked((T0,), 1)] if protocol is EAGER else []
    assert callbacks(member.drain_events()) == revoked
    late = member.on_response(
        64_200, commit.correlation_id, commit_answer(commit, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    )
    assert late == [] and member.phase is Phase.JOINING and member.coordinator == COORDINATOR
    assert isinstance(join.body, JoinGroupRequest) and join.body.member_id == "consumer"


# --- auto-commit ----------------------------------------------------------------------------------


def auto_commit_member(**config: Unpack[Settings]) -> ConsumerMember:
    """A follower with auto-commit every 2 s (Kafka's autoCommitIntervalMs), synced at 1000 owning t-0."""
    config.setdefault("auto_commit_interval_ms", 2000)
    return stable(member_for(EAGER, enable_auto_commit=True, **config), [T0], member_id="consumer")


def test_auto_commit_dynamic_assignment() -> None:
    """testAutoCommitDynamicAssignment: once the interval has passed, poll() commits the positions of the
    assigned partitions with the member's generation."""
    member = auto_commit_member()
    member.seek(T0, 100)
    commit = only(member.poll(3000), OffsetCommitRequest)
    assert isinstance(commit.body, OffsetCommitRequest)
    assert (commit.body.generation_id, commit.body.member_id, committed_offsets(commit)) == (
        1,
        "consumer",
        {T0: 100},
    )
    member.on_response(3001, commit.correlation_id, commit_answer(commit))
    assert member.drain_events() == [OffsetsCommitted(((T0, 100),), 1)]


def test_auto_commit_retry_backoff() -> None:
    """testAutoCommitRetryBackoff: NOT_COORDINATOR to an auto-commit marks the coordinator unknown; it is
    found again, and the commit is retried — with the then current positions — only once the retry
    backoff has passed."""
    member = auto_commit_member(retry_backoff_ms=100)
    member.seek(T0, 100)
    commit = only(member.poll(3000), OffsetCommitRequest)
    member.on_response(3000, commit.correlation_id, commit_answer(commit, ErrorCode.NOT_COORDINATOR))
    assert member.coordinator is None
    find = only(member.poll(3000), FindCoordinatorRequest)
    assert (
        member.on_response(3000, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))
        == []
    )
    member.seek(T0, 200)
    assert member.poll(3050) == []
    retry = only(member.poll(3100), OffsetCommitRequest)
    assert committed_offsets(retry) == {T0: 200}


def test_auto_commit_awaits_interval() -> None:
    """testAutoCommitAwaitsInterval: no second auto-commit before the interval has passed since the
    previous one was sent, whether or not that one was answered."""
    member = auto_commit_member()
    member.seek(T0, 100)
    commit = only(member.poll(3000), OffsetCommitRequest)
    assert member.poll(4000) == []
    member.on_response(4000, commit.correlation_id, commit_answer(commit))
    member.seek(T0, 200)
    assert member.poll(4999) == []
    assert committed_offsets(only(member.poll(5000), OffsetCommitRequest)) == {T0: 200}


def test_auto_commit_dynamic_assignment_rebalance() -> None:
    """testAutoCommitDynamicAssignmentRebalance: a member that has not joined yet does not auto-commit,
    however long it polls; once it has an assignment the interval runs from the assignment."""
    member = member_for(EAGER, enable_auto_commit=True, auto_commit_interval_ms=2000)
    join = only(find_coordinator(member, 0), JoinGroupRequest)
    assert member.poll(2000) == [] and member.poll(5000) == []
    sync = answer_join(member, join, join_response(member, 1, "consumer", "leader"), 5000)
    assert member.poll(7500) == []  # waiting for the SyncGroup: rebalancing, no commit
    answer_fetch(member, only(answer_sync(member, sync, [T0], 8000), OffsetFetchRequest), {}, 8000)
    member.seek(T0, 100)
    assert member.poll(9999) == []
    assert committed_offsets(only(member.poll(10_000), OffsetCommitRequest)) == {T0: 100}


def test_retry_commit_unknown_topic_or_partition() -> None:
    """testRetryCommitUnknownTopicOrPartition: UNKNOWN_TOPIC_OR_PARTITION is retriable; the auto-commit
    is sent again after the backoff and then succeeds."""
    member = auto_commit_member(retry_backoff_ms=100)
    member.seek(T0, 100)
    commit = only(member.poll(3000), OffsetCommitRequest)
    member.on_response(
        3001, commit.correlation_id, commit_answer(commit, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    )
    assert member.drain_events() == [CommitFailed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, (T0,))]
    assert member.coordinator == COORDINATOR and member.poll(3050) == []
    retry = only(member.poll(3101), OffsetCommitRequest)
    member.on_response(3102, retry.correlation_id, commit_answer(retry))
    assert member.drain_events() == [OffsetsCommitted(((T0, 100),), 1)]


# --- commits and their errors ---------------------------------------------------------------------


def test_commit_offset_async_with_default_callback() -> None:
    """testCommitOffsetAsyncWithDefaultCallback: a commit the coordinator accepts completes without an
    error (kgroup: OffsetsCommitted with the generation it was sent in) and is remembered."""
    member = stable(member_for(EAGER), [T0], member_id="consumer")
    commit = only(member.commit(2000, {T0: 100}), OffsetCommitRequest)
    assert isinstance(commit.body, OffsetCommitRequest)
    assert (commit.body.group_id, commit.body.generation_id, commit.body.member_id) == ("g", 1, "consumer")
    member.on_response(2001, commit.correlation_id, commit_answer(commit))
    assert member.drain_events() == [OffsetsCommitted(((T0, 100),), 1)]
    assert member.committed()[T0] == 100


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ErrorCode.COORDINATOR_NOT_AVAILABLE, id="testCommitOffsetAsyncCoordinatorNotAvailable"),
        pytest.param(ErrorCode.NOT_COORDINATOR, id="testCommitOffsetAsyncNotCoordinator"),
        pytest.param(None, id="testCommitOffsetAsyncDisconnected"),
    ],
)
def test_commit_offset_async_coordinator_failure(error: ErrorCode | None) -> None:
    """testCommitOffsetAsyncCoordinatorNotAvailable / testCommitOffsetAsyncNotCoordinator /
    testCommitOffsetAsyncDisconnected (and testCommitOffsetAsyncFailedWithDefaultCallback): the commit
    fails with a retriable error and the coordinator is marked unknown; the membership is untouched."""
    member = stable(member_for(EAGER), [T0], member_id="consumer")
    commit = only(member.commit(2000, {T0: 100}), OffsetCommitRequest)
    if error is None:
        member.on_request_failed(2001, commit.correlation_id)
    else:
        member.on_response(2001, commit.correlation_id, commit_answer(commit, error))
    assert member.drain_events() == [CommitFailed(error or ErrorCode.NETWORK_EXCEPTION, (T0,))]
    assert member.coordinator is None and member.committed()[T0] == 10  # the fetched one, not 100
    assert (member.generation, member.member_id, member.rejoin_needed) == (1, "consumer", False)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ErrorCode.NOT_COORDINATOR, id="testCoordinatorDisconnectAfterNotCoordinatorError"),
        pytest.param(
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            id="testCoordinatorDisconnectAfterCoordinatorNotAvailableError",
        ),
    ],
)
def test_in_flight_commits_fail_after_coordinator_marked_dead(error: ErrorCode) -> None:
    """testCoordinatorDisconnectAfter*Error: two commits in flight; the first one's coordinator error
    marks the coordinator dead, which fails the second (as a disconnect) too — both retriable."""
    member = stable(member_for(EAGER), [T0], member_id="consumer")
    first = only(member.commit(2000, {T0: 100}), OffsetCommitRequest)
    second = only(member.commit(2000, {T0: 100}), OffsetCommitRequest)
    member.on_response(2001, first.correlation_id, commit_answer(first, error))
    assert member.coordinator is None
    assert member.drain_events() == [
        CommitFailed(error, (T0,)),
        CommitFailed(ErrorCode.NETWORK_EXCEPTION, (T0,)),
    ]
    assert member.on_response(2002, second.correlation_id, commit_answer(second)) == []
    assert member.drain_events() == []  # the second commit already failed: its late answer is dropped


def test_many_in_flight_async_commits_with_coordinator_disconnect() -> None:
    """testManyInFlightAsyncCommitsWithCoordinatorDisconnect / testCoordinatorUnknownInUnsentCallbacks-
    AfterCoordinatorDead: when the coordinator is marked dead every commit in flight fails as a
    disconnect, and nothing is retried to the old coordinator: the next request is a FindCoordinator."""
    member = stable(member_for(EAGER, **KAFKA_TIMEOUTS), [T0], member_id="consumer")
    commits = [only(member.commit(2000, {T0: offset}), OffsetCommitRequest) for offset in range(10)]
    assert heartbeat_error(member, 6000, ErrorCode.NOT_COORDINATOR) == []
    failed = [e for e in member.drain_events() if isinstance(e, CommitFailed)]
    assert failed == [CommitFailed(ErrorCode.NETWORK_EXCEPTION, (T0,))] * len(commits)
    assert member.coordinator is None
    assert kinds(member.background(member.next_wakeup_ms() or 0)) == ["FindCoordinatorRequest"]


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ErrorCode.OFFSET_METADATA_TOO_LARGE, id="testCommitOffsetMetadataTooLarge"),
        pytest.param(ErrorCode.INVALID_COMMIT_OFFSET_SIZE, id="testCommitOffsetMetadataTooLarge-size"),
        pytest.param(
            ErrorCode.UNKNOWN_SERVER_ERROR, id="testCommitOffsetSyncCallbackWithNonRetriableException"
        ),
    ],
)
def test_non_retriable_commit_error(error: ErrorCode) -> None:
    """testCommitOffsetMetadataTooLarge / testCommitOffsetSyncCallbackWithNonRetriableException: a
    non-retriable commit error goes to the application and changes nothing else — no rejoin, no reset,
    the coordinator kept; an auto-commit is not retried after the backoff but at the next interval."""
    member = auto_commit_member(retry_backoff_ms=100)
    member.seek(T0, 100)
    commit = only(member.poll(3000), OffsetCommitRequest)
    assert member.on_response(3001, commit.correlation_id, commit_answer(commit, error)) == []
    assert member.drain_events() == [CommitFailed(error, (T0,))]
    assert (member.generation, member.member_id, member.coordinator) == (1, "consumer", COORDINATOR)
    assert not member.rejoin_needed and member.state is MemberState.STABLE
    assert member.poll(3101) == [] and member.poll(4999) == []
    assert kinds(member.poll(5000)) == ["OffsetCommitRequest"]


def cooperative_rejoin_with_commit_in_flight(
    **config: Unpack[Settings],
) -> tuple[ConsumerMember, OutboundRequest]:
    """A COOPERATIVE member of generation 1 sends a commit; before it is answered the group rebalances
    to generation 2, which takes t-1 away, so the member is joining again (follow-up rebalance) — Kafka's
    PREPARING_REBALANCE with a generation newer than the commit's."""
    member = stable(member_for(COOPERATIVE, **config), [T0, T1], member_id="memberId")
    commit = only(member.commit(2000, {T0: 100}), OffsetCommitRequest)
    rebalance_in_progress(member, 4000)
    join = only(member.poll(4100), JoinGroupRequest)
    sync = answer_join(member, join, join_response(member, 2, "memberId-new", "leader"), 4200)
    the(answer_sync(member, sync, [T0], 4300), JoinGroupRequest)
    assert (member.phase, member.generation, member.member_id) == (Phase.JOINING, 2, "memberId-new")
    member.drain_events()
    return member, commit


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ErrorCode.ILLEGAL_GENERATION, id="testCommitOffsetIllegalGenerationWithNewGeneration"),
        pytest.param(ErrorCode.UNKNOWN_MEMBER_ID, id="testCommitOffsetUnknownMemberWithNewGeneration"),
    ],
)
def test_commit_generation_error_with_new_generation(error: ErrorCode) -> None:
    """testCommitOffset{IllegalGeneration,UnknownMember}WithNewGeneration: the old generation's commit is
    refused while the member is already rejoining with a newer generation; the commit fails (Kafka:
    RebalanceInProgressException) but the new generation is not reset and nothing is lost."""
    member, commit = cooperative_rejoin_with_commit_in_flight()
    member.on_response(4400, commit.correlation_id, commit_answer(commit, error))
    assert member.drain_events() == [CommitFailed(error, (T0,))]
    assert (member.phase, member.generation, member.member_id) == (Phase.JOINING, 2, "memberId-new")
    assert member.assignment() == {T0}


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ErrorCode.ILLEGAL_GENERATION, id="testCommitOffsetIllegalGenerationWithResetGeneration"),
        pytest.param(ErrorCode.UNKNOWN_MEMBER_ID, id="testCommitOffsetUnknownMemberWithResetGeneration"),
    ],
)
def test_commit_generation_error_with_reset_generation(error: ErrorCode) -> None:
    """testCommitOffset{IllegalGeneration,UnknownMember}WithResetGeneration: the generation was reset
    (here by a heartbeat's UNKNOWN_MEMBER_ID) while the commit was in flight; its generation error then
    fails the commit (CommitFailedException) and the generation stays reset."""
    member = stable(member_for(EAGER), [T0], member_id="memberId")
    commit = only(member.commit(2000, {T0: 100}), OffsetCommitRequest)
    heartbeat_error(member, 4000, ErrorCode.UNKNOWN_MEMBER_ID)
    member.drain_events()
    member.on_response(4001, commit.correlation_id, commit_answer(commit, error))
    assert member.drain_events() == [CommitFailed(error, (T0,))]
    assert (member.generation, member.member_id) == (-1, "")


def test_commit_unknown_member_after_generation_reset_resets_the_member_id() -> None:
    """testCommitOffsetUnknownMemberWithResetGeneration (with the member id kept by the earlier reset):
    Kafka's OffsetCommitResponseHandler resets on UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION unless the
    generation changed *and* the member is PREPARING_REBALANCE; after a heartbeat's ILLEGAL_GENERATION
    the member is UNJOINED with generation -1 but its member id, so the stale commit's UNKNOWN_MEMBER_ID
    resets again, this time dropping the member id — the next JoinGroup has none."""
    member = stable(member_for(EAGER), [T0], member_id="memberId")
    commit = only(member.commit(2000, {T0: 100}), OffsetCommitRequest)
    heartbeat_error(member, 4000, ErrorCode.ILLEGAL_GENERATION)
    assert (member.generation, member.member_id) == (-1, "memberId")
    member.on_response(4001, commit.correlation_id, commit_answer(commit, ErrorCode.UNKNOWN_MEMBER_ID))
    assert (member.generation, member.member_id) == (-1, "")
    join = the(member.poll(4100), JoinGroupRequest)
    assert isinstance(join.body, JoinGroupRequest) and join.body.member_id == ""


def test_commit_fenced_instance_with_rebalancing_generation() -> None:
    """testCommitOffsetFencedInstanceWithRebalancingGeneration: FENCED_INSTANCE_ID to an old
    generation's commit while the member is rejoining with a newer one is not fatal (Kafka:
    RebalanceInProgressException); the new generation is kept."""
    member, commit = cooperative_rejoin_with_commit_in_flight(group_instance_id="test-instance")
    member.on_response(4400, commit.correlation_id, commit_answer(commit, ErrorCode.FENCED_INSTANCE_ID))
    assert member.drain_events() == [CommitFailed(ErrorCode.FENCED_INSTANCE_ID, (T0,))]
    assert member.state is MemberState.REBALANCING
    assert (member.generation, member.member_id) == (2, "memberId-new")


@BOTH_PROTOCOLS
def test_commit_fenced_instance_with_new_generation(protocol: RebalanceProtocol) -> None:
    """testCommitOffsetFencedInstanceWithNewGeneration: the same once the member is stable in the newer
    generation — the old commit fails (CommitFailedException), nothing fatal, nothing reset."""
    member = stable(member_for(protocol, group_instance_id="test-instance"), [T0], member_id="memberId")
    commit = only(member.commit(2000, {T0: 100}), OffsetCommitRequest)
    rebalance_in_progress(member, 4000)
    join = only(member.poll(4100), JoinGroupRequest)
    sync = answer_join(member, join, join_response(member, 2, "memberId-new", "leader"), 4200)
    answer_sync(member, sync, [T0], 4300)
    member.drain_events()
    member.on_response(4400, commit.correlation_id, commit_answer(commit, ErrorCode.FENCED_INSTANCE_ID))
    assert member.drain_events() == [CommitFailed(ErrorCode.FENCED_INSTANCE_ID, (T0,))]
    assert member.state is MemberState.STABLE and member.assignment() == {T0}
    assert (member.generation, member.member_id) == (2, "memberId-new")


def fenced_by_commit() -> ConsumerMember:
    member = stable(member_for(EAGER, group_instance_id="test-instance"), [T0], member_id="consumer")
    commit = only(member.commit(2000, {T0: 100}), OffsetCommitRequest)
    assert (
        member.on_response(2001, commit.correlation_id, commit_answer(commit, ErrorCode.FENCED_INSTANCE_ID))
        == []
    )
    return member


def test_commit_offset_request_with_fenced_instance_id_exception() -> None:
    """testCommitOffsetRequestSyncWithFencedInstanceIdException /
    testCommitOffsetRequestAsyncWithFencedInstanceIdException: FENCED_INSTANCE_ID to a commit of the
    current generation is fatal (FencedInstanceIdException to the application)."""
    member = fenced_by_commit()
    events = member.drain_events()
    assert Fenced(1, "consumer", "test-instance") in events
    assert CommitFailed(ErrorCode.FENCED_INSTANCE_ID, (T0,)) in events
    assert member.state is MemberState.FAILED


def test_commit_offset_request_always_receives_fenced_exception() -> None:
    """testCommitOffsetRequestAsyncAlwaysReceiveFencedException: once fenced, every later commit fails
    (nothing is sent any more)."""
    member = fenced_by_commit()
    member.drain_events()
    assert member.commit(3000, {}) == [] and member.commit(3000, {T0: 100}) == []
    assert member.poll(3001) == [] and member.background(10_000) == []


def test_commit_offset_rebalance_in_progress_before_the_first_join() -> None:
    """testCommitOffsetRebalanceInProgress (first half; the second is in test_kafka_coordinator_cases):
    while the first JoinGroup is in flight the member has no stable generation, so a commit fails at
    once without a request."""
    member = member_for(EAGER)
    only(find_coordinator(member), JoinGroupRequest)
    assert member.rejoin_needed and member.state is MemberState.REBALANCING
    assert member.commit(10, {T0: 100}) == []


@pytest.mark.parametrize("phase", [Phase.JOINING, Phase.SYNCING])
def test_commit_offset_rebalance_in_progress_during_a_rejoin(phase: Phase) -> None:
    """testCommitOffsetRebalanceInProgress: Kafka commits only with ``generationIfStable()``, which is
    null unless the state is STABLE — also during a rejoin (PREPARING_REBALANCE or COMPLETING_REBALANCE)
    of a member that still has its old generation; the commit then fails locally with
    RebalanceInProgressException and no request is sent."""
    member = stable(member_for(COOPERATIVE), [T0], member_id="consumer")
    rebalance_in_progress(member, 4000)
    join = only(member.poll(4100), JoinGroupRequest)
    if phase is Phase.SYNCING:
        answer_join(member, join, join_response(member, 2, "consumer", "leader"), 4200)
    assert member.phase is phase and member.generation in (1, 2)
    assert member.commit(4300, {T0: 100}) == []


def test_commit_after_leave_group() -> None:
    """testCommitAfterLeaveGroup: after leaving the group (LeaveGroup on max.poll.interval.ms) the
    member does not commit with its old generation and member id."""
    member = stable(
        member_for(EAGER, max_poll_interval_ms=10_000, **KAFKA_TIMEOUTS), [T0], member_id="consumer"
    )
    heartbeat_until(member, 10_999)
    leave = only(member.background(11_000), LeaveGroupRequest)
    assert isinstance(leave.body, LeaveGroupRequest) and leave.body.members[0].member_id == "consumer"
    assert (member.generation, member.member_id) == (-1, "")
    assert member.commit(11_001, {T0: 100}) == []


def test_commit_offset_should_not_set_instance_id_if_member_id_is_unknown() -> None:
    """testCommitOffsetShouldNotSetInstanceIdIfMemberIdIsUnknown: a static member sends its group
    instance id with a commit only together with a member id — before it has joined, no commit carries
    one (kgroup sends none at all); once joined, its commits carry both."""
    member = member_for(EAGER, group_instance_id="test-instance")
    only(find_coordinator(member), JoinGroupRequest)
    assert member.commit(10, {T0: 100}) == []
    member = stable(member_for(EAGER, group_instance_id="test-instance"), [T0], member_id="consumer")
    commit = only(member.commit(2000, {T0: 100}), OffsetCommitRequest)
    assert isinstance(commit.body, OffsetCommitRequest)
    assert (commit.body.member_id, commit.body.group_instance_id) == ("consumer", "test-instance")


# --- OffsetFetch for newly assigned partitions ----------------------------------------------------


def fetching(**config: Unpack[Settings]) -> tuple[ConsumerMember, OutboundRequest]:
    """A follower just assigned t-0 (at 1000): its OffsetFetch is returned, unanswered."""
    member = member_for(EAGER, **config)
    fetch = only(join_as_follower(member, [T0], now=1000, member_id="consumer"), OffsetFetchRequest)
    assert isinstance(fetch.body, OffsetFetchRequest) and fetch.body.partitions == (T0,)
    assert member.positions() == {}
    return member, fetch


def fetch_answer(*partitions: OffsetFetchPartition, error: ErrorCode = ErrorCode.NONE) -> OffsetFetchResponse:
    return OffsetFetchResponse(error, partitions)


def test_refresh_offset() -> None:
    """testRefreshOffset: the committed offset fetched for a new partition becomes its position."""
    member, fetch = fetching()
    member.on_response(1001, fetch.correlation_id, fetch_answer(OffsetFetchPartition(T0, 100)))
    assert member.positions() == {T0: 100}
    assert OffsetsFetched(((T0, 100),)) in member.drain_events()


def test_fetch_committed_offsets() -> None:
    """testFetchCommittedOffsets: the committed offset (with its metadata and leader epoch) is what
    the member then knows as committed."""
    member, fetch = fetching()
    answer = OffsetFetchPartition(T0, 500, "blahblah", ErrorCode.NONE, 15)
    member.on_response(1001, fetch.correlation_id, fetch_answer(answer))
    assert member.committed() == {T0: 500} and member.positions() == {T0: 500}


def test_refresh_offset_with_no_fetchable_offsets() -> None:
    """testRefreshOffsetWithNoFetchableOffsets: nothing committed (-1): the position is not set from
    a committed offset — the host's reset policy decides (kgroup: position -1)."""
    member, fetch = fetching()
    member.on_response(1001, fetch.correlation_id, fetch_answer(OffsetFetchPartition(T0, -1)))
    assert member.positions() == {T0: -1} and member.committed() == {}


def test_refresh_offset_with_pending_transactions() -> None:
    """testRefreshOffsetWithPendingTransactions: UNSTABLE_OFFSET_COMMIT (a transactional commit not yet
    settled) leaves the partition initializing; the fetch is retried and then sets the position."""
    member, fetch = fetching(retry_backoff_ms=100)
    unstable = OffsetFetchPartition(T0, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
    assert member.on_response(1001, fetch.correlation_id, fetch_answer(unstable)) == []
    assert member.positions() == {} and member.state is MemberState.STABLE
    assert member.next_wakeup_ms() == 1101
    again = only(member.background(1101), OffsetFetchRequest)
    member.on_response(1102, again.correlation_id, fetch_answer(OffsetFetchPartition(T0, 100)))
    assert member.positions() == {T0: 100}


@pytest.mark.parametrize(
    ("error", "relookup"),
    [
        pytest.param(ErrorCode.NOT_COORDINATOR, True, id="NOT_COORDINATOR"),
        pytest.param(ErrorCode.COORDINATOR_NOT_AVAILABLE, True, id="COORDINATOR_NOT_AVAILABLE"),
        pytest.param(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, False, id="COORDINATOR_LOAD_IN_PROGRESS"),
        pytest.param(ErrorCode.NETWORK_EXCEPTION, False, id="NETWORK_EXCEPTION"),
    ],
)
def test_refresh_offset_retriable_error_coordinator_lookup(error: ErrorCode, relookup: bool) -> None:
    """testRefreshOffsetRetriableErrorCoordinatorLookup: a retriable group-level OffsetFetch error is
    retried; NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE first make the member look the coordinator up
    again, the others (COORDINATOR_LOAD_IN_PROGRESS, NETWORK_EXCEPTION) retry against the same one."""
    member, fetch = fetching(retry_backoff_ms=100)
    member.on_response(1001, fetch.correlation_id, fetch_answer(error=error))
    assert member.state is MemberState.STABLE and member.positions() == {}
    assert (member.coordinator is None) is relookup
    out: list[OutboundRequest] = []
    if relookup:
        find = only(member.background(member.next_wakeup_ms() or 0), FindCoordinatorRequest)
        out = member.on_response(
            1050, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR)
        )
    again = only(out or member.background(member.next_wakeup_ms() or 0), OffsetFetchRequest)
    member.on_response(1200, again.correlation_id, fetch_answer(OffsetFetchPartition(T0, 100)))
    assert member.positions() == {T0: 100}


@pytest.mark.parametrize(
    ("partition_error", "group_error"),
    [
        pytest.param(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.NONE,
            id="testRefreshOffsetUnknownTopicOrPartition",
        ),
        pytest.param(
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            ErrorCode.NONE,
            id="testTopicAuthorizationFailedInOffsetFetch",
        ),
        pytest.param(
            ErrorCode.NONE, ErrorCode.GROUP_AUTHORIZATION_FAILED, id="testRefreshOffsetsGroupNotAuthorized"
        ),
    ],
)
def test_offset_fetch_errors_thrown_to_the_application(
    partition_error: ErrorCode, group_error: ErrorCode
) -> None:
    """testRefreshOffsetUnknownTopicOrPartition / testTopicAuthorizationFailedInOffsetFetch /
    testRefreshOffsetsGroupNotAuthorized: these OffsetFetch errors (per partition or for the group) are
    thrown to the application; no position is set."""
    member, fetch = fetching()
    parts = () if group_error is not ErrorCode.NONE else (OffsetFetchPartition(T0, -1, "", partition_error),)
    member.on_response(1001, fetch.correlation_id, fetch_answer(*parts, error=group_error))
    assert [e.error for e in member.drain_events() if isinstance(e, FatalError)] == [
        partition_error if group_error is ErrorCode.NONE else group_error
    ]
    assert member.positions() == {}
    # fetchCommittedOffsets threw out of that poll(); the partition still waits for its offset, and
    # the next poll() fetches it again (nothing before: the heartbeat thread does not fetch)
    assert member.next_wakeup_ms() == 4000  # the next heartbeat, no fetch
    assert kinds(member.background(4000)) == ["HeartbeatRequest"]
    again = only(member.poll(5000), OffsetFetchRequest)
    member.on_response(5001, again.correlation_id, fetch_answer(OffsetFetchPartition(T0, 100)))
    assert member.positions() == {T0: 100}


# --- close and leaving ----------------------------------------------------------------------------


@BOTH_PROTOCOLS
def test_close_dynamic_assignment(protocol: RebalanceProtocol) -> None:
    """testCloseDynamicAssignment (gracefulCloseTest): close() commits the positions, revokes the
    partitions (onPartitionsRevoked once) and sends LeaveGroup."""
    member = stable(member_for(protocol, enable_auto_commit=True), [T0], member_id="consumer")
    member.seek(T0, 100)
    out = member.close(2000)
    assert kinds(out) == ["OffsetCommitRequest", "LeaveGroupRequest"]
    assert committed_offsets(out[0]) == {T0: 100}
    events = member.drain_events()
    assert callbacks(events) == [PartitionsRevoked((T0,), 1)]
    assert [e.leave_group_sent for e in events if isinstance(e, LeftGroup)] == [True]
    assert member.state is MemberState.CLOSED


def test_leave_group_on_close() -> None:
    """testLeaveGroupOnClose / testCloseNoResponseForLeaveGroup: without auto-commit, close() sends only
    the LeaveGroup — for this group and this member id."""
    member = stable(member_for(EAGER), [T0], member_id="consumer")
    leave = only(member.close(2000), LeaveGroupRequest)
    assert isinstance(leave.body, LeaveGroupRequest) and leave.node_id == COORDINATOR
    assert leave.body.group_id == "g" and [m.member_id for m in leave.body.members] == ["consumer"]


def test_maybe_leave_group() -> None:
    """testMaybeLeaveGroup: leaving the group (here: max.poll.interval.ms) sends LeaveGroup with the
    member id and drops the generation."""
    member = stable(
        member_for(EAGER, max_poll_interval_ms=10_000, **KAFKA_TIMEOUTS), [T0], member_id="consumer"
    )
    heartbeat_until(member, 10_999)
    leave = only(member.background(11_000), LeaveGroupRequest)
    assert isinstance(leave.body, LeaveGroupRequest)
    assert leave.body.group_id == "g" and [m.member_id for m in leave.body.members] == ["consumer"]
    assert (member.generation, member.member_id, member.state) == (-1, "", MemberState.UNJOINED)
    assert [e.leave_group_sent for e in member.drain_events() if isinstance(e, LeftGroup)] == [True]


def test_pending_member_should_leave_group() -> None:
    """testPendingMemberShouldLeaveGroup: a member that only has the member id MEMBER_ID_REQUIRED gave it
    (no generation yet) still sends LeaveGroup with that id when it goes."""
    member = member_for(EAGER)
    join = only(find_coordinator(member), JoinGroupRequest)
    required = JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, -1, member_id="consumer-id")
    only(member.on_response(1, join.correlation_id, required), JoinGroupRequest)
    assert (member.generation, member.member_id) == (-1, "consumer-id")
    leave = the(member.close(2), LeaveGroupRequest)
    assert isinstance(leave.body, LeaveGroupRequest)
    assert [m.member_id for m in leave.body.members] == ["consumer-id"]


@BOTH_PROTOCOLS
def test_unsubscribe_with_valid_generation(protocol: RebalanceProtocol) -> None:
    """testUnsubscribeWithValidGeneration (onLeavePrepare): leaving with a valid generation outside a
    rebalance revokes the partitions; they are not lost. (Kafka's test itself observes a loss only
    because it never sets the generation: onJoinComplete alone leaves it at NO_GENERATION.)"""
    member = stable(member_for(protocol), [T0], member_id="memberId")
    member.close(2000)
    assert callbacks(member.drain_events()) == [PartitionsRevoked((T0,), 1)]
    assert member.assignment() == frozenset()


@BOTH_PROTOCOLS
@pytest.mark.parametrize("error", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION])
def test_unsubscribe_with_invalid_generation(protocol: RebalanceProtocol, error: ErrorCode) -> None:
    """testUnsubscribeWithInvalidGeneration: leaving once the generation is gone loses the partitions
    (onPartitionsLost, not revoked), commits nothing and sends no LeaveGroup (the member is UNJOINED)."""
    member = stable(member_for(protocol, enable_auto_commit=True), [T0], member_id="memberId")
    member.seek(T0, 100)
    heartbeat_error(member, 4000, error)
    assert member.close(4001) == []
    events = member.drain_events()
    assert callbacks(events) == [PartitionsLost((T0,), 1)]
    assert [e.leave_group_sent for e in events if isinstance(e, LeftGroup)] == [False]


def coordinator_lost(member: ConsumerMember, error: ErrorCode) -> ConsumerMember:
    """Kafka's makeCoordinatorUnknown: a heartbeat answered with a coordinator error."""
    heartbeat_error(member, 6000, error)
    assert member.coordinator is None
    member.drain_events()
    return member


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ErrorCode.NOT_COORDINATOR, id="testCloseCoordinatorNotKnownNoCommits"),
        pytest.param(ErrorCode.COORDINATOR_NOT_AVAILABLE, id="testCloseCoordinatorUnavailableNoCommits"),
    ],
)
def test_close_coordinator_unknown_without_commits(error: ErrorCode) -> None:
    """testCloseCoordinatorNotKnownNoCommits / testCloseCoordinatorUnavailableNoCommits: with nothing to
    commit and no coordinator, close() does not wait for one: no lookup, no LeaveGroup; the partitions
    are revoked (the generation is still valid)."""
    member = coordinator_lost(stable(member_for(EAGER, **KAFKA_TIMEOUTS), [T0], member_id="consumer"), error)
    assert member.close(6001) == []
    events = member.drain_events()
    assert callbacks(events) == [PartitionsRevoked((T0,), 1)]
    assert [e.leave_group_sent for e in events if isinstance(e, LeftGroup)] == [False]
    assert member.state is MemberState.CLOSED


@pytest.mark.xfail(
    reason="close() with auto-commit and no known coordinator drops the commit, sends no FindCoordinator",
    strict=True,
)
@pytest.mark.parametrize(
    ("error", "instance"),
    [
        pytest.param(ErrorCode.NOT_COORDINATOR, None, id="testCloseCoordinatorNotKnownWithCommits"),
        pytest.param(
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            "test-instance",
            id="testCloseTimeoutCoordinatorUnavailableForCommit",
        ),
    ],
)
def test_close_coordinator_unknown_with_commits(error: ErrorCode, instance: str | None) -> None:
    """testCloseCoordinatorNotKnownWithCommits / testCloseTimeoutCoordinatorUnavailableForCommit /
    testCloseMaxWaitCoordinatorUnavailableForCommit: with auto-commit and positions to commit, Kafka's
    close() runs ``maybeAutoCommitOffsetsSync``, whose ``commitOffsetsSync`` first looks the unknown
    coordinator up (``ensureCoordinatorReady``: FindCoordinator) and waits for it up to the close
    timeout, so close() sends a FindCoordinator."""
    config: Settings = {"enable_auto_commit": True, "group_instance_id": instance, **KAFKA_TIMEOUTS}
    member = coordinator_lost(stable(member_for(EAGER, **config), [T0], member_id="consumer"), error)
    member.seek(T0, 100)
    assert "FindCoordinatorRequest" in kinds(member.close(6001))


def test_close_static_member_commits_without_leave_group() -> None:
    """testCloseNoResponseForCommit (static member, auto-commit): close() commits the positions and
    revokes, but a static member sends no LeaveGroup."""
    member = stable(
        member_for(EAGER, enable_auto_commit=True, group_instance_id="test-instance"),
        [T0],
        member_id="consumer",
    )
    member.seek(T0, 100)
    commit = only(member.close(2000), OffsetCommitRequest)
    assert isinstance(commit.body, OffsetCommitRequest) and commit.body.group_instance_id == "test-instance"
    assert committed_offsets(commit) == {T0: 100}
    events = member.drain_events()
    assert callbacks(events) == [PartitionsRevoked((T0,), 1)]
    assert [e.leave_group_sent for e in events if isinstance(e, LeftGroup)] == [False]


def test_heartbeat_thread_close() -> None:
    """testHeartbeatThreadClose: after close() the heartbeat thread is gone: nothing is due and nothing
    is sent, whatever the time."""
    member = stable(
        member_for(EAGER, enable_auto_commit=True, group_instance_id="test-instance"),
        [T0],
        member_id="consumer",
    )
    member.close(5100)
    assert member.next_wakeup_ms() is None
    assert member.background(5100) == [] and member.background(1_000_000) == []
    with pytest.raises(KgroupError, match="closed"):
        member.poll(5200)
