"""What the group leader does between JoinGroup and SyncGroup (Kafka's ``onLeaderElected``).

The leader turns the JoinGroup members (in response order) into :class:`~kgroup.model.Member` values,
runs the selected assignor over its cluster metadata and serialises the result for SyncGroup. Kafka
puts the subscriptions into a ``HashMap`` in response order and the assignors iterate it; kgroup hands
the assignor the response order and the assignors derive the ``HashMap`` order themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.leader_path import encode_assignments, members_from_subscriptions
from kgroup.javacompat import hashmap_iteration_order
from kgroup.messages import JoinGroupMember, SyncGroupAssignment
from kgroup.model import ErrorCode, Member, PeerError, RebalanceProtocol, TopicMetadata, TopicPartition

__all__ = [
    "ASSIGN_FROM_SUBSCRIBED",
    "COOPERATIVE_STICKY",
    "CooperativeViolation",
    "MetadataSnapshot",
    "group_members",
    "metadata_snapshot",
    "run_assignment",
]

#: Kafka skips the cooperative validation for its own cooperative-sticky assignor
COOPERATIVE_STICKY = "cooperative-sticky"

#: ``ConsumerConfig.ASSIGN_FROM_SUBSCRIBED_ASSIGNORS``: the built-in assignors, which assign only
#: subscribed topics (the leader's ``maybeUpdateGroupSubscription`` skips them)
ASSIGN_FROM_SUBSCRIBED = frozenset({"range", "roundrobin", "sticky", COOPERATIVE_STICKY})

#: topic -> partition count, or (with a client rack) the racks of every partition, as Kafka's
#: ``MetadataSnapshot`` compares them
MetadataSnapshot = dict[str, int | tuple[frozenset[str], ...]]


class CooperativeViolation(Exception):
    """A COOPERATIVE assignor moved a still-owned partition straight to another member."""


def group_members(members: Sequence[JoinGroupMember]) -> list[Member]:
    """The JoinGroup members as the assignor sees them, in JoinGroup response order; each member's
    metadata bytes are decoded as a consumer subscription (:class:`PeerError` if they are not one);
    equal bytes are decoded once (:func:`~kgroup.assignors.leader_path.members_from_subscriptions`)."""
    for m in members:
        if not m.member_id:
            raise PeerError(
                "JoinGroup response: a member has an empty member id; the coordinator is broken",
                ErrorCode.INVALID_REQUEST,
            )
    return members_from_subscriptions(
        ((m.member_id, m.metadata) for m in members),
        {m.member_id: m.group_instance_id for m in members},
    )


def metadata_snapshot(
    topics: Mapping[str, TopicMetadata], watched: frozenset[str], rack_id: str | None
) -> MetadataSnapshot:
    """What the leader remembers of the metadata it assigned from (partition counts; racks if it has one)."""
    snap: MetadataSnapshot = {}
    for name in watched:
        meta = topics.get(name)
        if meta is None:
            continue
        if rack_id is not None and meta.racks is not None:
            snap[name] = meta.racks
        else:
            snap[name] = meta.partitions
    return snap


def _validate_cooperative(members: Sequence[Member], result: Mapping[str, Sequence[TopicPartition]]) -> None:
    """Kafka's ``validateCooperativeAssignment``: nothing owned may be given to someone else at once."""
    owned = {m.member_id: set(m.owned) for m in members}
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member_id, partitions in result.items():
        mine = owned.get(member_id, set())
        added |= set(partitions) - mine
        revoked |= mine - set(partitions)
    moved = added & revoked
    if moved:
        shown = ", ".join(sorted(str(tp) for tp in moved)[:5])
        raise CooperativeViolation(
            f"assignor supporting the COOPERATIVE protocol reassigned still-owned partitions ({shown})"
        )


def run_assignment(
    assignor: Assignor,
    members: Sequence[Member],
    topics: Mapping[str, TopicMetadata],
    protocol: RebalanceProtocol,
) -> tuple[tuple[SyncGroupAssignment, ...], frozenset[str]]:
    """Run ``assignor``; the SyncGroup assignments in Kafka's ``HashMap`` order, and — for a custom
    assignor only (:data:`ASSIGN_FROM_SUBSCRIBED` assign subscribed topics alone) — the topics it
    assigned that no member subscribes to (Kafka's ``maybeUpdateGroupSubscription``)."""
    result = assignor.assign(AssignmentRequest(members=members, topics=topics))
    if protocol is RebalanceProtocol.COOPERATIVE and assignor.name != COOPERATIVE_STICKY:
        _validate_cooperative(members, result)
    order = hashmap_iteration_order(result.keys())
    # a fast assignor's unread answers are encoded from their partition numbers, without objects
    assignments = tuple(
        SyncGroupAssignment(member_id, data)
        for member_id, data in zip(order, encode_assignments(result, order), strict=True)
    )
    unsubscribed: frozenset[str] = frozenset()
    if assignor.name not in ASSIGN_FROM_SUBSCRIBED:
        subscribed = set().union(*(m.topics for m in members))
        unsubscribed = frozenset(
            tp.topic for partitions in result.values() for tp in partitions if tp.topic not in subscribed
        )
    return assignments, unsubscribed
