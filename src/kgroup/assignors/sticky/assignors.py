"""``StickyAssignor`` (eager) and ``CooperativeStickyAssignor``, exact to Kafka 4.0.

Both run ``AbstractStickyAssignor``: the members are visited in Java ``HashMap`` iteration order (as
Kafka's ``ConsumerCoordinator`` puts them into its map, i.e. the order of ``request.members``), the
owned partitions are validated (:mod:`.owned`), then the constrained builder (all subscriptions
equal, :mod:`.constrained`) or the general one (:mod:`.general`) runs. The cooperative assignor then
withholds every partition that changes owner, for a follow-up rebalance.

Where each reads a member's previous state (Kafka's ``memberData``):

* ``sticky`` — owned partitions **and** generation only from its user data (V1; V0 has no
  generation; no user data: nothing owned, no generation; unreadable: nothing owned, generation -1);
  ``Member.owned`` is ignored.
* ``cooperative-sticky`` — ``Member.owned`` and ``Member.generation``; the generation in its user
  data only when ``Member.generation`` is absent (-1).
"""

from __future__ import annotations

import contextlib
from abc import abstractmethod
from collections.abc import Mapping, Sequence

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.sticky._tp import topic_order
from kgroup.assignors.sticky.constrained import ConstrainedBuilder
from kgroup.assignors.sticky.general import GeneralBuilder
from kgroup.assignors.sticky.owned import (
    DEFAULT_GENERATION,
    MemberData,
    subscription_generation,
    validate_owned_partitions,
)
from kgroup.assignors.sticky.racks import build_rack_info
from kgroup.assignors.sticky.userdata import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from kgroup.javacompat import hashmap_iteration_order
from kgroup.model import (
    Assignment,
    KgroupError,
    Member,
    RebalanceProtocol,
    TopicMetadata,
    TopicPartition,
)

__all__ = ["AbstractStickyAssignor", "CooperativeStickyAssignor", "StickyAssignor"]


class AbstractStickyAssignor(Assignor):
    """What both sticky assignors share, including Kafka's instance state ``maxGeneration``.

    ``maxGeneration`` only ever rises across :meth:`assign` calls, as in Kafka, where a group leader
    reuses its assignor instance; it decides which claims count as "previous owners" in the general
    path.
    """

    def __init__(self) -> None:
        self._max_generation = DEFAULT_GENERATION
        self._generation = DEFAULT_GENERATION  # the member's own generation, from on_assignment
        self._assigned = False

    @property
    def max_generation(self) -> int:
        return self._max_generation

    def set_prior_max_generation(self, generation: int) -> None:
        """Start from a carried-over ``maxGeneration`` (vectors' ``priorMaxGeneration``)."""
        self._max_generation = generation

    @abstractmethod
    def member_data(self, member: Member) -> MemberData:
        """The member's claimed partitions and generation, read as this assignor reads them."""

    def assign(self, request: AssignmentRequest) -> Assignment:
        raw, _ = self.assign_with_transfers(request)
        return {m.member_id: sorted(raw[m.member_id], key=topic_order) for m in request.members}

    def assign_with_transfers(
        self, request: AssignmentRequest
    ) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str] | None]:
        """Kafka's ``assignPartitions``: the assignment (unsorted lists) and, on the constrained path,
        the partitions it hands to a new owner (``None`` on the general path)."""
        members = _members_by_id(request.members)
        if not members:
            return {}, None  # Kafka divides by zero here; a group always has its leader
        assignable = _assignable_topics(request.members, request.topics)
        partitions_per_topic = {name: metadata.partitions for name, metadata in assignable.items()}
        order = hashmap_iteration_order(m.member_id for m in request.members)
        member_data = {member_id: self.member_data(members[member_id]) for member_id in order}
        rack_info = build_rack_info(order, members, assignable, request.prefer_rack_aware_logic)

        validated = validate_owned_partitions(
            order, members, member_data, partitions_per_topic.keys(), self._max_generation
        )
        self._max_generation = validated.max_generation
        if validated.all_subscriptions_equal:
            return ConstrainedBuilder(
                partitions_per_topic, rack_info, validated.owned, validated.multiply_claimed
            ).build()
        assignment = GeneralBuilder(
            partitions_per_topic,
            rack_info,
            validated.owned,
            order,
            members,
            member_data,
            self._max_generation,
        ).build()
        return assignment, None

    def on_assignment(
        self,
        user_data: bytes | None,
        generation: int,
        partitions: Sequence[TopicPartition] | None = None,
    ) -> None:
        """Kafka's ``onAssignment``: remember the generation (and, for eager sticky, the partitions)."""
        self._assigned = True
        self._generation = generation


class StickyAssignor(AbstractStickyAssignor):
    """Kafka's ``StickyAssignor`` (``sticky``, eager only)."""

    name = "sticky"
    protocols = (RebalanceProtocol.EAGER,)

    def __init__(self) -> None:
        super().__init__()
        self._last_assignment: tuple[TopicPartition, ...] | None = None

    def member_data(self, member: Member) -> MemberData:
        if not member.user_data:
            return MemberData((), None)
        try:
            partitions, generation = decode_sticky_user_data(member.user_data)
        except ValueError:
            return MemberData((), DEFAULT_GENERATION)
        return MemberData(tuple(partitions), generation)

    def on_assignment(
        self,
        user_data: bytes | None,
        generation: int,
        partitions: Sequence[TopicPartition] | None = None,
    ) -> None:
        super().on_assignment(user_data, generation, partitions)
        if partitions is not None:
            self._last_assignment = tuple(partitions)

    def subscription_user_data(self, owned: Sequence[TopicPartition], generation: int) -> bytes | None:
        """V1 user data with the last assignment and generation.

        After :meth:`on_assignment` the remembered generation (and partitions, if it was given them)
        are sent, as Kafka does; before it, ``owned`` and ``generation`` are, and nothing (``None``)
        when there is nothing to tell — Kafka sends no user data before its first assignment.
        """
        if self._assigned:
            remembered = self._last_assignment if self._last_assignment is not None else tuple(owned)
            return encode_sticky_user_data(remembered, self._generation)
        if not owned and generation < 0:
            return None
        return encode_sticky_user_data(owned, generation)


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """Kafka's ``CooperativeStickyAssignor`` (``cooperative-sticky``, eager and cooperative)."""

    name = "cooperative-sticky"
    protocols = (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)

    def member_data(self, member: Member) -> MemberData:
        generation = subscription_generation(member)
        if generation is None and member.user_data is not None:
            try:
                generation = decode_cooperative_user_data(member.user_data)
            except ValueError:
                generation = DEFAULT_GENERATION
        return MemberData(member.owned, generation)

    def assign_with_transfers(
        self, request: AssignmentRequest
    ) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str] | None]:
        assignment, transferring = super().assign_with_transfers(request)
        if transferring is None:
            transferring = _partitions_transferring_ownership(request.members, assignment)
        for tp, consumer in transferring.items():
            _remove_first(assignment[consumer], tp)
        return assignment, transferring

    def subscription_user_data(self, owned: Sequence[TopicPartition], generation: int) -> bytes | None:
        """The generation, as one int32: the remembered one after :meth:`on_assignment`."""
        return encode_cooperative_user_data(self._generation if self._assigned else generation)


def _partitions_transferring_ownership(
    members: Sequence[Member], assignment: Mapping[str, list[TopicPartition]]
) -> dict[TopicPartition, str]:
    """General path: partitions newly given to someone that some member owned and now loses."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member in members:
        assigned = assignment.get(member.member_id, [])
        owned = set(member.owned)
        assigned_set = set(assigned)
        for tp in assigned:
            if tp not in owned:
                added[tp] = member.member_id
        revoked.update(tp for tp in member.owned if tp not in assigned_set)
    return {tp: consumer for tp, consumer in added.items() if tp in revoked}


def _remove_first(partitions: list[TopicPartition], tp: TopicPartition) -> None:
    with contextlib.suppress(ValueError):
        partitions.remove(tp)


def _members_by_id(members: Sequence[Member]) -> dict[str, Member]:
    by_id: dict[str, Member] = {}
    for member in members:
        if member.member_id in by_id:
            raise KgroupError(
                f"members: member id {member.member_id!r} appears twice; "
                "give every member a unique 'memberId'"
            )
        by_id[member.member_id] = member
    return by_id


def _assignable_topics(
    members: Sequence[Member], topics: Mapping[str, TopicMetadata]
) -> dict[str, TopicMetadata]:
    """``AbstractPartitionAssignor``: subscribed topics that have partitions in the metadata."""
    out: dict[str, TopicMetadata] = {}
    # members often share one subscription tuple: look each distinct one up once
    distinct = {id(m.topics): m.topics for m in members}
    for subscription in distinct.values():
        for name in subscription:
            metadata = topics.get(name)
            if metadata is not None and metadata.partitions > 0:
                out[name] = metadata
    return out
