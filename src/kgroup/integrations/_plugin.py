"""What the kafka-python and aiokafka plug-ins share, with no client imported.

A plug-in instance plays both of Kafka's roles, like Java's ``ConsumerPartitionAssignor``:

* on every member it builds the JoinGroup metadata (Java's ``ConsumerCoordinator.metadata()``: a
  ``ConsumerProtocolSubscription`` with the assignor's user data, the owned partitions, the generation
  and the rack) and remembers the assignment it receives (``onAssignment``);
* on the leader it turns the members' subscriptions and the client's cluster view into a kgroup
  :class:`~kgroup.assignors.api.AssignmentRequest`, runs kgroup's exact assignor and encodes each
  member's ``ConsumerProtocolAssignment`` as Java's leader does (the highest version, 3).

The bytes come from :mod:`kgroup.wire.consumer_protocol` and :mod:`kgroup.assignors.sticky.userdata`,
so a Java or librdkafka member reads them as its own. The client adapters only translate their
objects to :class:`Joined` members and a :class:`ClusterView`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.registry import create_assignor
from kgroup.assignors.sticky.assignors import AbstractStickyAssignor
from kgroup.assignors.sticky.owned import MemberData, validate_owned_partitions
from kgroup.assignors.sticky.userdata import encode_sticky_user_data
from kgroup.javacompat import hashmap_iteration_order, java_string_key
from kgroup.messages import NO_GENERATION, ConsumerAssignment, ConsumerSubscription
from kgroup.model import Assignment, Member, TopicMetadata, TopicPartition
from kgroup.wire.consumer_protocol import encode_assignment, encode_subscription

__all__ = ["ClusterView", "Hold", "Joined", "PluginCore", "encode_all"]


@dataclass(frozen=True, slots=True)
class Joined:
    """One member of a JoinGroup response as the leader's client hands it over.

    ``version`` is the subscription's version header: aiokafka decodes only the version-0 fields, so
    a higher version tells the leader that fields it cannot see (owned partitions) may be there.
    """

    member_id: str
    group_instance_id: str | None
    subscription: ConsumerSubscription
    version: int

    def member(self) -> Member:
        sub = self.subscription
        return Member(
            member_id=self.member_id,
            topics=tuple(sub.topics),
            owned=tuple(sub.owned_partitions),
            generation=sub.generation_id,
            group_instance_id=self.group_instance_id,
            rack_id=sub.rack_id or None,
            user_data=sub.user_data,
        )


@dataclass(frozen=True, slots=True)
class ClusterView:
    """The two questions the leader asks of its client's cluster metadata.

    ``partitions(topic)`` is the partition count, ``None`` when the client holds no metadata for the
    topic; ``racks(topic, count)`` is each partition's set of replica racks (Java's
    ``PartitionInfo.replicas()`` nodes that have a rack), ``None`` when the client does not know them.
    """

    partitions: Callable[[str], int | None]
    racks: Callable[[str, int], tuple[frozenset[str], ...] | None]


@dataclass(frozen=True, slots=True)
class Hold:
    """An assignment the leader handed out because its metadata lacked subscribed topics."""

    missing_topics: frozenset[str]
    assignment: Assignment


class PluginCore:
    """kgroup's assignor ``name`` with the member-side state a Java consumer keeps for it.

    ``send_owned``: put the owned partitions in the subscription (the cooperative protocol; an eager
    member has revoked everything before it joins, so Java sends none). ``generation_known``: the
    client passes the generation to ``on_assignment`` (kafka-python does, aiokafka does not; without
    it the sticky user data is V0 and the subscription carries no generation). ``hold_on_missing``:
    see :meth:`assign`.
    """

    def __init__(
        self,
        name: str,
        *,
        rack_id: str | None,
        send_owned: bool,
        generation_known: bool,
        hold_on_missing: bool,
        subscription_version: int = 3,
    ) -> None:
        self.assignor: Assignor = create_assignor(name)
        self.name = name
        self.rack_id = rack_id or None
        self.send_owned = send_owned
        self.generation_known = generation_known
        self.hold_on_missing = hold_on_missing
        self.subscription_version = subscription_version
        self.owned: tuple[TopicPartition, ...] = ()
        self.generation = NO_GENERATION
        self._assigned = False
        self._held_for: frozenset[str] = frozenset()
        #: the last hold this leader handed out (``None`` after an assignment on full metadata)
        self.last_hold: Hold | None = None

    # --- member side -----------------------------------------------------------------------------

    def subscription(self, topics: Iterable[str]) -> ConsumerSubscription:
        """Java's ``ConsumerCoordinator.metadata()`` for this assignor."""
        subscribed = tuple(sorted(set(topics), key=java_string_key))
        wanted = set(subscribed)
        owned = tuple(tp for tp in self.owned if tp.topic in wanted) if self.send_owned else ()
        generation = self.generation if self.generation_known else NO_GENERATION
        return ConsumerSubscription(
            topics=subscribed,
            user_data=self._user_data(owned),
            owned_partitions=owned,
            generation_id=generation,
            rack_id=self.rack_id,
        )

    def subscription_bytes(self, topics: Iterable[str]) -> bytes:
        return encode_subscription(self.subscription(topics), self.subscription_version)

    def _user_data(self, owned: tuple[TopicPartition, ...]) -> bytes | None:
        if self.generation_known:
            return self.assignor.subscription_user_data(owned, self.generation)
        # Without the generation Java's formats have one honest form each: the sticky assignor's V0
        # (its previous assignment, no generation) and, for cooperative-sticky, no user data at all.
        if self.name == "sticky":
            return encode_sticky_user_data(self.owned, None) if self._assigned else None
        return None

    def on_assignment(
        self, partitions: Sequence[TopicPartition], user_data: bytes | None, generation: int
    ) -> None:
        """Java's ``onAssignment``: remember the partitions and the generation."""
        self._assigned = True
        self.owned = tuple(partitions)
        if self.generation_known:
            self.generation = generation
        if isinstance(self.assignor, AbstractStickyAssignor):
            self.assignor.on_assignment(user_data, self.generation, list(partitions))
        else:
            self.assignor.on_assignment(user_data, self.generation)

    # --- leader side -----------------------------------------------------------------------------

    def request(
        self, joined: Sequence[Joined], cluster: ClusterView
    ) -> tuple[AssignmentRequest, frozenset[str]]:
        """The kgroup request and the subscribed topics the client holds no metadata for."""
        members = [j.member() for j in joined]
        subscribed: set[str] = {t for m in members for t in m.topics}
        want_racks = any(m.rack_id for m in members)
        topics: dict[str, TopicMetadata] = {}
        missing: set[str] = set()
        for topic in subscribed:
            count = cluster.partitions(topic)
            if count is None:
                missing.add(topic)
                continue
            racks = cluster.racks(topic, count) if want_racks else None
            topics[topic] = TopicMetadata(topic, count, racks)
        return AssignmentRequest(members, topics), frozenset(missing)

    def assign(self, joined: Sequence[Joined], cluster: ClusterView) -> dict[str, bytes]:
        """Every member's encoded assignment.

        With ``hold_on_missing`` (kafka-python) a leader whose metadata lacks a subscribed topic does
        not assign on it — Java's leader would have waited for that metadata — but hands every member
        the partitions it validly owns (:meth:`hold`), once per set of missing topics; the client's
        metadata refresh then makes it rejoin, and the next assignment runs on full metadata from the
        same owned partitions, so the group lands where Java's leader would have put it. A topic still
        missing after a hold does not exist for the leader and is skipped, as in Java.
        """
        request, missing = self.request(joined, cluster)
        if self.hold_on_missing and missing and not missing <= self._held_for:
            self._held_for = missing
            held = self.hold(request, missing)
            self.last_hold = Hold(missing, held)
            return encode_all(held)
        if not missing:
            self._held_for = frozenset()
        self.last_hold = None
        return encode_all(self.assignor.assign(request))

    def hold(self, request: AssignmentRequest, missing: frozenset[str]) -> Assignment:
        """Each member keeps the partitions it validly claims; nothing moves, nothing new is handed out.

        Claims are read as the assignor reads them (the eager sticky assignor from its user data, the
        others from the owned partitions and generation) and resolved by Kafka's rule: of two
        claimants the higher generation keeps the partition, equal generations lose it. A claim on a
        topic the leader has no metadata for is kept (it existed when it was assigned); a claim on a
        topic the member no longer subscribes to, or beyond a known topic's partition count, is not.
        """
        members = {m.member_id: m for m in request.members}
        order = hashmap_iteration_order(m.member_id for m in request.members)
        member_data = {mid: self._claims(members[mid]) for mid in order}
        assignable = set(request.topics) | set(missing)
        validated = validate_owned_partitions(order, members, member_data, assignable, NO_GENERATION)
        result: Assignment = {}
        for member in request.members:
            kept = []
            for tp in validated.owned.get(member.member_id, []):
                if tp.topic not in member.topics or tp in validated.multiply_claimed:
                    continue
                known = request.topics.get(tp.topic)
                if known is not None and tp.partition >= known.partitions:
                    continue
                kept.append(tp)
            result[member.member_id] = sorted(kept, key=TopicPartition.java_key)
        return result

    def _claims(self, member: Member) -> MemberData:
        reader = getattr(self.assignor, "member_data", None)
        if callable(reader):
            data = reader(member)
            if isinstance(data, MemberData):
                return data
        return MemberData(member.owned, None if member.generation < 0 else member.generation)


def encode_all(assignment: Mapping[str, Sequence[TopicPartition]]) -> dict[str, bytes]:
    """Java's leader: ``ConsumerProtocol.serializeAssignment`` (version 3) for every member."""
    return {
        member_id: encode_assignment(ConsumerAssignment(partitions=tuple(partitions)))
        for member_id, partitions in assignment.items()
    }
