"""Driving one ConsumerMember by hand: find the request it sent, answer it, check what comes next."""

from __future__ import annotations

from collections.abc import Sequence

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.member import ConsumerMember, MemberConfig, OutboundRequest
from kgroup.messages import (
    ConsumerAssignment,
    ConsumerSubscription,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Request,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import Assignment, ErrorCode, RebalanceProtocol, TopicMetadata, TopicPartition
from kgroup.wire.consumer_protocol import decode_subscription, encode_assignment, encode_subscription


def assigned(*partitions: TopicPartition) -> bytes:
    """A SyncGroup assignment as the coordinator forwards it: the consumer protocol's bytes."""
    return encode_assignment(ConsumerAssignment(tuple(partitions)))


def subscription(request: OutboundRequest, index: int = 0) -> ConsumerSubscription:
    """The decoded subscription of a JoinGroup request's ``index``-th protocol."""
    assert isinstance(request.body, JoinGroupRequest)
    return decode_subscription(request.body.protocols[index].metadata)


COORDINATOR = 3
TOPICS = {"t": TopicMetadata("t", 4), "u": TopicMetadata("u", 2)}


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def only(requests: Sequence[OutboundRequest], kind: type[Request]) -> OutboundRequest:
    """The single request of type ``kind`` (and nothing else was sent)."""
    assert [type(r.body) for r in requests] == [kind], [type(r.body).__name__ for r in requests]
    return requests[0]


def kinds(requests: Sequence[OutboundRequest]) -> list[str]:
    return [type(r.body).__name__ for r in requests]


class FixedAssignor(Assignor):
    """A test assignor that records what it was asked and hands out a fixed answer."""

    def __init__(
        self,
        name: str,
        answer: Assignment | None = None,
        protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,),
    ) -> None:
        self.name = name
        self.protocols = protocols
        self.answer = answer or {}
        self.requests: list[AssignmentRequest] = []
        self.on_assignment_calls: list[tuple[bytes | None, int]] = []

    def assign(self, request: AssignmentRequest) -> Assignment:
        self.requests.append(request)
        return {m.member_id: list(self.answer.get(m.member_id, [])) for m in request.members}

    def on_assignment(self, user_data: bytes | None, generation: int) -> None:
        self.on_assignment_calls.append((user_data, generation))


def new_member(
    topics: Sequence[str] = ("t",),
    *,
    assignors: Sequence[Assignor] | None = None,
    **config: object,
) -> ConsumerMember:
    cfg = MemberConfig(group_id="g", **config)  # type: ignore[arg-type]
    member = ConsumerMember(cfg, topics, assignors=assignors or [FixedAssignor("range")])
    member.update_metadata(TOPICS)
    return member


def find_coordinator(member: ConsumerMember, now: int = 0) -> list[OutboundRequest]:
    """poll() → FindCoordinator → answer it; returns what the member sends next (its JoinGroup)."""
    req = only(member.poll(now), FindCoordinatorRequest)
    assert req.node_id is None
    return member.on_response(now, req.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR))


def join_as_follower(
    member: ConsumerMember,
    partitions: Sequence[TopicPartition],
    *,
    now: int = 0,
    generation: int = 1,
    member_id: str = "m-1",
    leader: str = "m-0",
    protocol: str | None = None,
    join: OutboundRequest | None = None,
) -> list[OutboundRequest]:
    """Answer the pending JoinGroup and SyncGroup; returns what the member sends after SyncGroup."""
    protocol = protocol or member.assignor_names[0]
    if join is None:
        join = only(find_coordinator(member, now), JoinGroupRequest)
    assert isinstance(join.body, JoinGroupRequest)
    sync = only(
        member.on_response(
            now,
            join.correlation_id,
            JoinGroupResponse(ErrorCode.NONE, generation, "consumer", protocol, leader, member_id=member_id),
        ),
        SyncGroupRequest,
    )
    return member.on_response(
        now,
        sync.correlation_id,
        SyncGroupResponse(ErrorCode.NONE, assigned(*partitions), "consumer", protocol),
    )


def answer_fetch(
    member: ConsumerMember, request: OutboundRequest, committed: dict[TopicPartition, int], now: int = 0
) -> list[OutboundRequest]:
    assert isinstance(request.body, OffsetFetchRequest)
    parts = request.body.partitions or ()
    return member.on_response(
        now,
        request.correlation_id,
        OffsetFetchResponse(
            ErrorCode.NONE, tuple(OffsetFetchPartition(p, committed.get(p, -1)) for p in parts)
        ),
    )


def join_member(
    member_id: str, topics: Sequence[str], owned: Sequence[TopicPartition] = (), generation: int = -1
) -> JoinGroupMember:

    return JoinGroupMember(
        member_id, encode_subscription(ConsumerSubscription(tuple(topics), None, tuple(owned), generation))
    )
