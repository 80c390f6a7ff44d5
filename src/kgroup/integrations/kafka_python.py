"""kgroup's exact assignors as kafka-python (3.0.x) partition assignors.

::

    from kafka import KafkaConsumer
    from kgroup.integrations.kafka_python import CooperativeSticky

    consumer = KafkaConsumer("orders", group_id="billing",
                             partition_assignment_strategy=[CooperativeSticky(rack_id="eu-1a")])

kafka-python calls ``metadata(topics)`` on every JoinGroup, ``assign(cluster, members)`` on the
leader (``members``: ``JoinGroupResponseMember`` objects whose ``metadata`` it already decoded into a
``ConsumerProtocolSubscription``) and ``on_assignment(assignment, generation)`` on every member.
``metadata`` and ``assign`` return bytes, which kafka-python sends as they are: Java's
``ConsumerProtocol`` layout (see :mod:`kgroup.integrations._plugin`). See ``docs/integrations.md``
for what kafka-python's coordinator lets an assignor do and what it does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from kgroup.model import KgroupError, TopicPartition

try:
    from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
except ImportError as exc:  # pragma: no cover - exercised only without the extra installed
    raise KgroupError(
        "kgroup.integrations.kafka_python needs kafka-python; pip install 'kgroup[kafka-python]'"
    ) from exc

from kgroup.assignors.sticky._tp import new_partition
from kgroup.integrations._plugin import ClusterView, Hold, Joined, PluginCore
from kgroup.messages import NO_GENERATION, ConsumerSubscription

__all__ = ["CooperativeSticky", "KgroupAssignor", "Range", "RoundRobin", "Sticky"]


class KgroupAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """A kafka-python assignor backed by one of kgroup's exact assignors (subclasses name which)."""

    #: the protocol name members announce, also kgroup's registry name
    name: ClassVar[str] = ""
    _protocols: ClassVar[tuple[Any, ...]] = (RebalanceProtocol.EAGER,)

    def __init__(self, rack_id: str | None = None) -> None:
        """``rack_id``: this consumer's ``client.rack``, sent in the subscription (version 3) as Java does."""
        cooperative = RebalanceProtocol.COOPERATIVE in self._protocols
        self._core = PluginCore(
            self.name,
            rack_id=rack_id,
            send_owned=cooperative,
            generation_known=True,
            hold_on_missing=True,
        )

    def supported_protocols(self) -> list[Any]:
        return list(self._protocols)

    def metadata(self, topics: Iterable[str]) -> bytes:
        """The JoinGroup metadata: Java's ``ConsumerProtocolSubscription`` v3 bytes."""
        return self._core.subscription_bytes(topics)

    def assign(self, cluster: Any, members: Sequence[Any]) -> dict[str, bytes]:
        """Run kgroup's assignor on the leader; every member's ``ConsumerProtocolAssignment`` bytes."""
        joined = [_joined(member) for member in members]
        return self._core.assign(joined, _cluster_view(cluster))

    def on_assignment(self, assignment: Any, generation: int) -> None:
        partitions = [TopicPartition(tp.topic, tp.partition) for tp in assignment.partitions()]
        self._core.on_assignment(partitions, assignment.user_data, generation)

    # --- for tests and operators -----------------------------------------------------------------

    @property
    def last_hold(self) -> Hold | None:
        """The hold this leader last handed out for lack of topic metadata (``None``: it did not)."""
        return self._core.last_hold

    def set_prior_max_generation(self, generation: int) -> None:
        """The sticky assignors' carried-over ``maxGeneration`` (a leader instance's state in Java)."""
        hook = getattr(self._core.assignor, "set_prior_max_generation", None)
        if callable(hook):
            hook(generation)


class Range(KgroupAssignor):
    """Kafka's ``RangeAssignor`` (``range``), rack-aware (KIP-881), static members first."""

    name = "range"


class RoundRobin(KgroupAssignor):
    """Kafka's ``RoundRobinAssignor`` (``roundrobin``)."""

    name = "roundrobin"


class Sticky(KgroupAssignor):
    """Kafka's ``StickyAssignor`` (``sticky``, eager), with Java's V1 user data."""

    name = "sticky"


class CooperativeSticky(KgroupAssignor):
    """Kafka's ``CooperativeStickyAssignor`` (``cooperative-sticky``), kafka-python's cooperative protocol.

    Only ``COOPERATIVE`` is offered: kafka-python runs one protocol for all the assignors of a
    consumer and rejects a mix, and in its eager mode it would not rejoin after giving up a partition
    the cooperative leader withheld from its next owner.
    """

    name = "cooperative-sticky"
    _protocols = (RebalanceProtocol.COOPERATIVE,)


def _joined(member: Any) -> Joined:
    """kafka-python's ``JoinGroupResponseMember`` (metadata decoded) as the leader's input."""
    metadata = member.metadata
    owned = tuple(
        new_partition((entry.topic, int(p)))
        for entry in (getattr(metadata, "owned_partitions", None) or ())
        for p in entry.partitions
    )
    generation = getattr(metadata, "generation_id", None)
    user_data = metadata.user_data
    subscription = ConsumerSubscription(
        topics=tuple(metadata.topics),
        user_data=None if user_data is None else bytes(user_data),
        owned_partitions=owned,
        generation_id=NO_GENERATION if generation is None else int(generation),
        rack_id=getattr(metadata, "rack_id", None) or None,
    )
    version = getattr(metadata, "version", None)
    return Joined(
        member_id=member.member_id,
        group_instance_id=getattr(member, "group_instance_id", None),
        subscription=subscription,
        version=3 if version is None else int(version),
    )


def _cluster_view(cluster: Any) -> ClusterView:
    def partitions(topic: str) -> int | None:
        found = cluster.partitions_for_topic(topic)
        return None if found is None else len(found)

    def racks(topic: str, count: int) -> tuple[frozenset[str], ...] | None:
        # kafka-python keeps each partition's replica ids only in ClusterMetadata._partitions; its
        # public is_replica_node() would ask once per partition and broker.
        table = getattr(cluster, "_partitions", {}).get(topic)
        if table is None:
            return None
        out: list[frozenset[str]] = []
        for p in range(count):
            info = table.get(p)
            replicas = (getattr(info, "replica_nodes", None) or ()) if info is not None else ()
            found: set[str] = set()
            for node in replicas:
                broker = cluster.broker_metadata(node)
                rack = getattr(broker, "rack", None) if broker is not None else None
                if rack is not None:
                    found.add(rack)
            out.append(frozenset(found))
        return tuple(out)

    return ClusterView(partitions, racks)
