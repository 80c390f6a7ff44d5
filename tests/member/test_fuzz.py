"""The member against a chaotic peer: any answer, any error, any order, any timing.

Hypothesis drives one member with random, well-typed answers to whatever it has in flight (errors
included), request failures, clock jumps, polls, processing, subscription and metadata changes.
After every step the member must still make sense:

* its assignment is exactly what its events say (assigned − revoked − lost), and no callback
  revokes or loses a partition it did not hold, or assigns one it already held;
* positions exist only for assigned partitions; commits carry only assigned partitions and a live
  generation; JoinGroup announces exactly the partitions it owns;
* FindCoordinator goes to any node, everything else to the coordinator it knows;
* ``background(now)`` leaves nothing due at ``now`` (a host looping on ``next_wakeup_ms`` never spins).
"""

from __future__ import annotations

from hypothesis import event as note_event
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.member import (
    ConsumerMember,
    MemberConfig,
    OutboundRequest,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Phase,
)
from kgroup.messages import (
    ConsumerAssignment,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, RebalanceProtocol, TopicMetadata, TopicPartition
from kgroup.wire.consumer_protocol import decode_subscription, encode_assignment

from .helpers import FixedAssignor, join_member

E = ErrorCode
OK = [E.NONE] * 12  # answers are mostly fine; fatal errors rare enough for long runs
ALL_TOPICS = ("t", "u", "v")
JOIN_ERRORS = [
    *OK,
    E.NONE,
    E.NONE,
    E.NONE,
    E.NONE,
    E.NONE,
    E.MEMBER_ID_REQUIRED,
    E.UNKNOWN_MEMBER_ID,
    E.REBALANCE_IN_PROGRESS,
    E.NOT_COORDINATOR,
    E.COORDINATOR_LOAD_IN_PROGRESS,
    E.FENCED_INSTANCE_ID,
    E.GROUP_MAX_SIZE_REACHED,
    E.UNKNOWN_SERVER_ERROR,
]
SYNC_ERRORS = [
    *OK,
    E.NONE,
    E.NONE,
    E.NONE,
    E.NONE,
    E.NONE,
    E.NONE,
    E.REBALANCE_IN_PROGRESS,
    E.UNKNOWN_MEMBER_ID,
    E.ILLEGAL_GENERATION,
    E.COORDINATOR_NOT_AVAILABLE,
    E.FENCED_INSTANCE_ID,
    E.GROUP_AUTHORIZATION_FAILED,
]
HEARTBEAT_ERRORS = [
    *OK,
    E.NONE,
    E.NONE,
    E.NONE,
    E.NONE,
    E.NONE,
    E.REBALANCE_IN_PROGRESS,
    E.ILLEGAL_GENERATION,
    E.UNKNOWN_MEMBER_ID,
    E.NOT_COORDINATOR,
    E.FENCED_INSTANCE_ID,
    E.UNKNOWN_SERVER_ERROR,
]
COMMIT_ERRORS = [
    *OK,
    E.NONE,
    E.NONE,
    E.REBALANCE_IN_PROGRESS,
    E.ILLEGAL_GENERATION,
    E.UNKNOWN_MEMBER_ID,
    E.COORDINATOR_LOAD_IN_PROGRESS,
    E.NOT_COORDINATOR,
    E.FENCED_INSTANCE_ID,
    E.OFFSET_METADATA_TOO_LARGE,
]
FETCH_ERRORS = [
    *OK,
    E.NONE,
    E.NONE,
    E.NONE,
    E.COORDINATOR_LOAD_IN_PROGRESS,
    E.NOT_COORDINATOR,
    E.COORDINATOR_NOT_AVAILABLE,
    E.GROUP_AUTHORIZATION_FAILED,
]


# weights: mostly answers, some time and polls, rarely a close
ACTIONS = (
    ["answer"] * 12
    + ["advance"] * 4
    + ["poll"] * 3
    + ["process"] * 2
    + ["fail", "subscribe", "metadata", "close"]
)


class Peer:
    """Holds what the member sent and checks every request as it goes out."""

    def __init__(self, member: ConsumerMember, partitions: dict[str, int]) -> None:
        self.member = member
        self.partitions = partitions
        self.in_flight: dict[int, OutboundRequest] = {}
        self.owned: set[TopicPartition] = set()
        self.released: set[TopicPartition] = set()  # what the member held before the current step
        self.last_cid = 0

    def take(self, requests: list[OutboundRequest]) -> None:
        m = self.member
        for req in requests:
            assert req.correlation_id > self.last_cid
            self.last_cid = req.correlation_id
            body = req.body
            if isinstance(body, FindCoordinatorRequest):
                assert req.node_id is None
            else:
                assert req.node_id is not None and req.node_id == m.coordinator
            if isinstance(body, OffsetCommitRequest):
                assert body.generation_id >= 0 and body.member_id
                # commit_on_revoke and close commit partitions in the very call that releases them
                assert {p.partition for p in body.offsets} <= m.assignment() | self.released
                assert all(p.committed_offset >= 0 for p in body.offsets)
            if isinstance(body, JoinGroupRequest):
                for protocol in body.protocols:
                    assert set(decode_subscription(protocol.metadata).owned_partitions) == m.assignment()
            self.in_flight[req.correlation_id] = req
        self.check_events()

    def check_events(self) -> None:
        m = self.member
        for event in m.drain_events():
            if isinstance(event, PartitionsAssigned):
                assert not set(event.partitions) & self.owned, event
                self.owned |= set(event.partitions)
            elif isinstance(event, (PartitionsRevoked, PartitionsLost)):
                assert set(event.partitions) <= self.owned, event
                self.owned -= set(event.partitions)
        assert m.assignment() == self.owned
        assert set(m.positions()) <= m.assignment()

    def answer(self, req: OutboundRequest, data: st.DataObject) -> Response:
        body = req.body
        if isinstance(body, FindCoordinatorRequest):
            error = data.draw(st.sampled_from([E.NONE, E.NONE, E.COORDINATOR_NOT_AVAILABLE]))
            return FindCoordinatorResponse(error, data.draw(st.sampled_from([1, 2])))
        if isinstance(body, JoinGroupRequest):
            error = data.draw(st.sampled_from(JOIN_ERRORS))
            member_id = body.member_id or f"m-{data.draw(st.integers(0, 3))}"
            generation = data.draw(st.integers(1, 6))
            if error is not E.NONE:
                return JoinGroupResponse(error, member_id=member_id)
            leader = data.draw(st.booleans())
            members = (
                (
                    join_member(member_id, list(decode_subscription(body.protocols[0].metadata).topics)),
                    join_member("other", ["t"]),
                )
                if leader
                else ()
            )
            return JoinGroupResponse(
                E.NONE,
                generation,
                "consumer",
                body.protocols[0].name,
                member_id if leader else "other",
                member_id=member_id,
                members=members,
            )
        if isinstance(body, SyncGroupRequest):
            error = data.draw(st.sampled_from(SYNC_ERRORS))
            candidates = sorted(
                TopicPartition(t, p) for t in self.partitions for p in range(self.partitions[t])
            )
            chosen = data.draw(st.lists(st.sampled_from(candidates), unique=True, max_size=5))
            return SyncGroupResponse(error, encode_assignment(ConsumerAssignment(tuple(chosen))))
        if isinstance(body, HeartbeatRequest):
            return HeartbeatResponse(data.draw(st.sampled_from(HEARTBEAT_ERRORS)))
        if isinstance(body, OffsetCommitRequest):
            error = data.draw(st.sampled_from(COMMIT_ERRORS))
            return OffsetCommitResponse(tuple((p.partition, error) for p in body.offsets))
        if isinstance(body, OffsetFetchRequest):
            error = data.draw(st.sampled_from(FETCH_ERRORS))
            parts = body.partitions or ()
            offsets = [data.draw(st.integers(-1, 50)) for _ in parts]
            return OffsetFetchResponse(
                error, tuple(OffsetFetchPartition(p, o) for p, o in zip(parts, offsets, strict=True))
            )
        assert isinstance(body, LeaveGroupRequest)
        return LeaveGroupResponse(E.NONE)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    cooperative=st.booleans(),
    static=st.booleans(),
    auto_commit=st.booleans(),
    commit_on_revoke=st.booleans(),
)
def test_member_survives_a_chaotic_peer(
    data: st.DataObject, cooperative: bool, static: bool, auto_commit: bool, commit_on_revoke: bool
) -> None:
    protocols = (
        (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)
        if cooperative
        else (RebalanceProtocol.EAGER,)
    )
    config = MemberConfig(
        "g",
        group_instance_id="i" if static else None,
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=8000,
        enable_auto_commit=auto_commit,
        auto_commit_interval_ms=700,
        commit_on_revoke=commit_on_revoke,
    )
    member = ConsumerMember(config, ["t", "u"], assignors=[FixedAssignor("x", protocols=protocols)])
    partitions = {"t": 3, "u": 2, "v": 2}
    member.update_metadata({t: TopicMetadata(t, n) for t, n in partitions.items()})
    peer = Peer(member, partitions)
    now = 0
    peer.take(member.poll(now))
    for _ in range(data.draw(st.integers(20, 120), label="steps")):
        if member.phase is Phase.CLOSED:
            break
        action = data.draw(st.sampled_from(ACTIONS))
        peer.released = set(member.assignment())
        if action == "answer" and peer.in_flight:
            cid = data.draw(st.sampled_from(sorted(peer.in_flight)))
            req = peer.in_flight.pop(cid)
            peer.take(member.on_response(now, cid, peer.answer(req, data)))
        elif action == "fail" and peer.in_flight:
            cid = data.draw(st.sampled_from(sorted(peer.in_flight)))
            peer.in_flight.pop(cid)
            peer.take(member.on_request_failed(now, cid))
        elif action == "advance":
            now += data.draw(st.integers(1, 4000))
            wake = member.next_wakeup_ms()
            if wake is not None and wake <= now:
                peer.take(member.background(now))
                after = member.next_wakeup_ms()
                assert after is None or after > now, (member.phase, after, now)
        elif action == "poll":
            peer.take(member.poll(now))
        elif action == "process" and member.positions():
            tp = data.draw(st.sampled_from(sorted(member.positions())))
            member.record_processed(tp, data.draw(st.integers(0, 100)))
        elif action == "subscribe" and member.phase is not Phase.CLOSED:
            member.subscribe(data.draw(st.lists(st.sampled_from(ALL_TOPICS), min_size=1, unique=True)))
        elif action == "metadata":
            partitions[data.draw(st.sampled_from(ALL_TOPICS))] += 1
            member.update_metadata({t: TopicMetadata(t, n) for t, n in partitions.items()})
        elif action == "close":
            peer.take(member.close(now))
            assert member.assignment() == frozenset()
        peer.check_events()
        assert member.state is member.phase.state
        note_event(f"reached {member.phase.name}")
        if member.assignment():
            note_event("owned partitions")
