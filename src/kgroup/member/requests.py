"""The member's bookkeeping of requests: what it sends, what it waits for, and Kafka's error groups.

Internal to :mod:`kgroup.member` except :class:`OutboundRequest`, which the host receives.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kgroup.member.states import Phase
from kgroup.messages import (
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    Request,
    SyncGroupResponse,
)
from kgroup.model import (
    ErrorCode,
    TopicPartition,
)
from kgroup.valuetypes import value_type

__all__ = [
    "COORDINATOR_MOVED",
    "FATAL_JOIN",
    "HEARTBEAT_PHASES",
    "NO_GENERATION",
    "PROTOCOL_TYPE",
    "RESPONSE_OF",
    "RETRIABLE_COMMIT",
    "TERMINAL",
    "CommitPurpose",
    "Fatal",
    "Generation",
    "InFlight",
    "JoinFailed",
    "Kind",
    "OutboundRequest",
]

PROTOCOL_TYPE = "consumer"
NO_GENERATION = -1


@value_type
class OutboundRequest:
    """A request for the host to send.

    ``node_id`` is ``None`` for FindCoordinator (any broker: Kafka picks the least-loaded node) and
    the coordinator's node id for every other request.
    """

    correlation_id: int
    body: Request
    node_id: int | None = None


@value_type
class Generation:
    """Kafka's ``Generation``: compared whole to decide whether a response is stale."""

    generation_id: int = NO_GENERATION
    member_id: str = ""
    protocol: str | None = None

    @property
    def is_reset(self) -> bool:
        return self.generation_id == NO_GENERATION or not self.member_id


class Kind(enum.Enum):
    FIND = "FindCoordinator"
    JOIN = "JoinGroup"
    SYNC = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    COMMIT = "OffsetCommit"
    FETCH = "OffsetFetch"
    LEAVE = "LeaveGroup"


RESPONSE_OF: dict[Kind, type] = {
    Kind.FIND: FindCoordinatorResponse,
    Kind.JOIN: JoinGroupResponse,
    Kind.SYNC: SyncGroupResponse,
    Kind.HEARTBEAT: HeartbeatResponse,
    Kind.COMMIT: OffsetCommitResponse,
    Kind.FETCH: OffsetFetchResponse,
    Kind.LEAVE: LeaveGroupResponse,
}


class CommitPurpose(enum.Enum):
    AUTO = "auto"  # periodic auto-commit from poll()
    PREPARE = "prepare"  # onJoinPrepare's commit; JoinGroup waits for it
    REVOKE = "revoke"  # commit_on_revoke: the application's onPartitionsRevoked commit
    CLOSE = "close"
    USER = "user"  # the application's own commit (commit())


@dataclass(slots=True)
class InFlight:
    kind: Kind
    generation: Generation
    attempt: int = 0
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    purpose: CommitPurpose | None = None
    partitions: tuple[TopicPartition, ...] = ()


class Fatal(Exception):
    """An error after which Kafka's consumer cannot go on (every later ``poll()`` throws it again):
    the member reports it and stops (FAILED)."""

    def __init__(self, error: ErrorCode, reason: str) -> None:
        super().__init__(reason)
        self.error = error
        self.reason = reason


class JoinFailed(Exception):
    """A join that failed with an exception Kafka's ``joinGroupIfNeeded`` throws out of ``poll()``
    (not retriable): the member reports it (``FatalError``) and sends JoinGroup again at the next
    ``poll()``. ``exception`` is the simple name of Kafka's exception (the next JoinGroup's reason)."""

    def __init__(self, error: ErrorCode, reason: str, exception: str) -> None:
        super().__init__(reason)
        self.error = error
        self.reason = reason
        self.exception = exception


# Errors of a commit after which Kafka retries (RetriableException subclasses).
RETRIABLE_COMMIT = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
FATAL_JOIN = frozenset(
    {
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode.INVALID_SESSION_TIMEOUT,
        ErrorCode.INVALID_GROUP_ID,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
    }
)
# Kafka's heartbeat thread runs while the member is STABLE or COMPLETING_REBALANCE; PREPARING is
# still Kafka's STABLE (the state changes only when JoinGroup is sent).
HEARTBEAT_PHASES = frozenset({Phase.PREPARING, Phase.SYNCING, Phase.STABLE})
TERMINAL = frozenset({Phase.FAILED, Phase.CLOSED})
