"""Driving one ConsumerProtocolMember by hand: answer its requests, check what it sends next."""

from __future__ import annotations

import random
from collections.abc import Sequence

from kgroup.member import ConsumerProtocolConfig, ConsumerProtocolMember, OutboundRequest
from kgroup.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetFetchRequest,
    Request,
    TopicPartitions,
)
from kgroup.model import ErrorCode, TopicId, TopicPartition

COORDINATOR = 2
T = TopicId(0, 11)
U = TopicId(0, 12)
NAMES = {T: "t", U: "u"}
INTERVAL = 5000


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def kinds(requests: Sequence[OutboundRequest]) -> list[str]:
    return [type(r.body).__name__ for r in requests]


def only(requests: Sequence[OutboundRequest], kind: type[Request]) -> OutboundRequest:
    assert kinds(requests) == [kind.__name__], kinds(requests)
    return requests[0]


def heartbeat(requests: Sequence[OutboundRequest]) -> tuple[int, ConsumerGroupHeartbeatRequest]:
    request = only(requests, ConsumerGroupHeartbeatRequest)
    assert isinstance(request.body, ConsumerGroupHeartbeatRequest)
    assert request.node_id == COORDINATOR
    return request.correlation_id, request.body


def assignment(*topics: tuple[TopicId, Sequence[int]]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(tid, tuple(parts)) for tid, parts in topics)


def ok(
    epoch: int, *topics: tuple[TopicId, Sequence[int]], interval: int = INTERVAL, empty: bool = False
) -> ConsumerGroupHeartbeatResponse:
    """A successful answer; with no topics the assignment is ``None`` (unchanged) unless ``empty``."""
    return ConsumerGroupHeartbeatResponse(
        ErrorCode.NONE,
        member_epoch=epoch,
        heartbeat_interval_ms=interval,
        assignment=assignment(*topics) if topics or empty else None,
    )


def failed(error: ErrorCode, message: str | None = None) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error, error_message=message, member_epoch=-1)


def config(**overrides: object) -> ConsumerProtocolConfig:
    values: dict[str, object] = {"group_id": "g", "enable_auto_commit": False}
    values.update(overrides)
    return ConsumerProtocolConfig(**values)  # type: ignore[arg-type]


class Driver:
    """A member with a clock; ``find`` answers its FindCoordinator. OffsetFetch requests (sent for
    newly assigned partitions) are set aside in ``fetches``; the driving calls return the rest."""

    def __init__(self, topics: Sequence[str] = ("t", "u"), seed: int = 7, **overrides: object) -> None:
        self.member = ConsumerProtocolMember(config(**overrides), rng=random.Random(seed))
        self.member.update_metadata(NAMES)
        self.now = 1000
        self.fetches: list[OutboundRequest] = []
        if topics:
            self.member.subscribe(topics)

    def _split(self, requests: list[OutboundRequest]) -> list[OutboundRequest]:
        self.fetches += [r for r in requests if isinstance(r.body, OffsetFetchRequest)]
        return [r for r in requests if not isinstance(r.body, OffsetFetchRequest)]

    def poll(self) -> list[OutboundRequest]:
        return self._split(self.member.poll(self.now))

    def background(self) -> list[OutboundRequest]:
        return self._split(self.member.background(self.now))

    def answer(self, cid: int, response: object) -> list[OutboundRequest]:
        return self._split(self.member.on_response(self.now, cid, response))  # type: ignore[arg-type]

    def find(self, requests: Sequence[OutboundRequest]) -> list[OutboundRequest]:
        request = requests[0]
        assert isinstance(request.body, FindCoordinatorRequest) and request.node_id is None
        out = self.answer(
            request.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, COORDINATOR, "h", 1)
        )
        return list(requests[1:]) + out

    def advance(self, ms: int) -> None:
        self.now += ms

    def join(self, epoch: int = 1, *topics: tuple[TopicId, Sequence[int]]) -> list[OutboundRequest]:
        """Subscribe-poll-find-heartbeat; answers the joining heartbeat with ``epoch`` and ``topics``."""
        cid, body = heartbeat(self.find(self.poll()))
        assert body.member_epoch == 0
        return self.answer(cid, ok(epoch, *topics, empty=True))

    def stable_with(self, epoch: int, *topics: tuple[TopicId, Sequence[int]]) -> None:
        """Join, reconcile at the next poll and acknowledge: STABLE owning ``topics``."""
        self.join(epoch, *topics)
        cid, ack = heartbeat(self.poll())
        assert ack.topic_partitions == assignment(*topics)
        self.answer(cid, ok(epoch))
