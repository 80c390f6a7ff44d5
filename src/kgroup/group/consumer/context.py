"""What every consumer-group handler shares: the context it reads (groups, metadata image,
assignors, armed rebalance timers), the timer keys, one operation's pending effects (:class:`Op`:
Kafka writes an operation's records only when it succeeds), and :class:`ApiError`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kgroup.group.assignors import create_server_assignor
from kgroup.group.assignors.api import (
    ServerAssignor,
)
from kgroup.group.classic.kind import ClassicGroups
from kgroup.group.consumer.group import ConsumerGroupData
from kgroup.group.consumer.timers import (
    ClassicMemberJoinTimer,
    ClassicMemberSyncTimer,
    RebalanceTimer,
    SessionTimer,
)
from kgroup.group.metadata import MetadataImage
from kgroup.group.records.consumer import (
    ConsumerGroupRecord,
)
from kgroup.group.txn import Operation, Txn
from kgroup.model import TopicId


@dataclass(slots=True)
class ConsumerContext:
    """What consumer-group handlers read besides the groups: the classic groups (a classic group
    upgrades to a consumer group and back), the metadata image, the assignors, and the armed
    rebalance timers by member (an index the kind keeps from its timer records)."""

    groups: dict[str, ConsumerGroupData]
    classic: ClassicGroups
    image: MetadataImage
    #: the version of the last image that created topics (``lastMetadataImageWithNewTopics``)
    last_image_with_new_topics: int
    rebalance_timers: dict[tuple[str, str], RebalanceTimer]
    assignors: dict[str, ServerAssignor] = field(default_factory=dict)
    #: groups whose regex resolution is running (``executor.isScheduled(groupId + "-regex")``): not
    #: state of the log, as Kafka's executor keeps none across a reload
    resolving: set[str] = field(default_factory=set)
    #: whose heartbeat scheduled each group's next resolution (principal, client host): Kafka resolves
    #: in that request's context, keeping only the topics it may describe
    regex_requesters: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    #: whether a kind that is neither this one nor the classic one owns a group id (a share group):
    #: its ConsumerGroupDescribe answers "Group … is not a consumer group."
    owned_elsewhere: Callable[[str], bool] = field(default=lambda group_id: False)

    def assignor(self, name: str) -> ServerAssignor:
        found = self.assignors.get(name)
        if found is None:
            found = self.assignors[name] = create_server_assignor(name)
        return found


class Op(Operation[ConsumerGroupRecord]):
    """One consumer-group operation's records and timer effects (:class:`~kgroup.group.txn.Operation`)."""

    __slots__ = ()


def random_uuid(txn: Txn) -> str:
    """``Uuid.randomUuid().toString()``: 16 random bytes, URL-safe base64 without padding."""
    return str(TopicId.from_int(txn.rng.getrandbits(128)))


def cancel_rebalance(txn: Txn, ctx: ConsumerContext, group_id: str, member_id: str) -> None:
    key = ctx.rebalance_timers.get((group_id, member_id))
    if key is not None:
        txn.cancel(key)


def cancel_timers(txn: Txn, ctx: ConsumerContext, group_id: str, member_id: str) -> None:
    """``cancelTimers``: session, rebalance, and a classic member's join and sync timeouts."""
    txn.cancel(SessionTimer(group_id, member_id))
    cancel_rebalance(txn, ctx, group_id, member_id)
    txn.cancel(ClassicMemberJoinTimer(group_id, member_id))
    txn.cancel(ClassicMemberSyncTimer(group_id, member_id))
