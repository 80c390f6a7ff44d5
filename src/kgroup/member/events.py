"""What a consumer member tells its host: Kafka's rebalance callbacks and the errors it saw.

The member never calls back into the host; it queues these small frozen values and the host drains
them (``ClassicConsumerMember.drain_events``). ``generation`` is always the member's generation at the
moment the event happened (for a cooperative revocation that is already the new generation, because
Kafka revokes after SyncGroup) — except for :class:`PartitionsLost`, which carries the generation the
lost partitions were assigned in (the member's own generation is already reset then).
"""

from __future__ import annotations

from kgroup.model import ErrorCode, TopicPartition
from kgroup.valuetypes import value_type

__all__ = [
    "CommitFailed",
    "FatalError",
    "Fenced",
    "JoinedGroup",
    "LeftGroup",
    "MemberEvent",
    "OffsetsCommitted",
    "OffsetsFetched",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
    "RejoinRequested",
]


@value_type
class PartitionsRevoked:
    """``onPartitionsRevoked``: the member gives these up cleanly (its generation was still valid)."""

    partitions: tuple[TopicPartition, ...]
    generation: int


@value_type
class PartitionsAssigned:
    """``onPartitionsAssigned``: partitions newly added by this rebalance (may be empty, as in Kafka)."""

    partitions: tuple[TopicPartition, ...]
    generation: int


@value_type
class PartitionsLost:
    """``onPartitionsLost``: the member's generation was reset or fenced; others may own these already.

    ``generation`` is the generation these partitions were assigned in.
    """

    partitions: tuple[TopicPartition, ...]
    generation: int


@value_type
class JoinedGroup:
    """A JoinGroup succeeded: the member is in ``generation`` and will now SyncGroup."""

    generation: int
    member_id: str
    leader: bool
    protocol: str


@value_type
class LeftGroup:
    """The member left the group (close, or ``max.poll.interval.ms`` expired).

    ``leave_group_sent`` is False for static members (they never send LeaveGroup) and when there was
    no membership or coordinator to leave.
    """

    reason: str
    leave_group_sent: bool = True


@value_type
class RejoinRequested:
    """The member decided it must rejoin (heartbeat said REBALANCE_IN_PROGRESS, subscription changed …)."""

    reason: str


@value_type
class OffsetsCommitted:
    """An OffsetCommit succeeded for these offsets."""

    offsets: tuple[tuple[TopicPartition, int], ...]
    generation: int


@value_type
class CommitFailed:
    """An OffsetCommit failed with ``error`` (the offsets were not stored)."""

    error: ErrorCode
    partitions: tuple[TopicPartition, ...]


@value_type
class OffsetsFetched:
    """Committed offsets fetched for newly assigned partitions (``-1``: nothing committed)."""

    offsets: tuple[tuple[TopicPartition, int], ...]


@value_type
class Fenced:
    """FENCED_INSTANCE_ID: another instance with the same ``group.instance.id`` replaced this one.

    Fatal for this member, as in Kafka: it stops (state FAILED) and should be closed.
    """

    generation: int
    member_id: str
    group_instance_id: str | None


@value_type
class FatalError:
    """An error Kafka's consumer would throw from ``poll()``.

    The member goes on as Kafka's consumer does when the application catches it (a failed join is
    sent again at the next ``poll()``, a failed OffsetFetch is fetched again); only when Kafka would
    throw it again from every later ``poll()`` (an assignment ``onJoinComplete`` cannot take) does
    the member stop (state FAILED).
    """

    error: ErrorCode
    reason: str


MemberEvent = (
    PartitionsRevoked
    | PartitionsAssigned
    | PartitionsLost
    | JoinedGroup
    | LeftGroup
    | RejoinRequested
    | OffsetsCommitted
    | CommitFailed
    | OffsetsFetched
    | Fenced
    | FatalError
)
