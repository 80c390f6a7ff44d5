"""kgroup's exact assignors as aiokafka (0.14) partition assignors.

::

    from aiokafka import AIOKafkaConsumer
    from kgroup.integrations.aiokafka import Sticky

    consumer = AIOKafkaConsumer("orders", group_id="billing",
                                partition_assignment_strategy=[Sticky()])   # an instance, not the class

aiokafka's coordinator is eager (every member revokes everything before it joins) and hands an
assignor less than Java's does: ``metadata(topics)`` and ``on_assignment(assignment)`` carry no
generation, and the leader's ``assign(cluster, members)`` sees each member only as aiokafka's
version-0 ``ConsumerProtocolMemberMetadata`` (topics and user data: no owned partitions, generation,
rack or ``group.instance.id``). What that costs, assignor by assignor, is in ``docs/integrations.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from kgroup.model import KgroupError, TopicPartition

try:
    from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
except ImportError as exc:  # pragma: no cover - exercised only without the extra installed
    raise KgroupError("kgroup.integrations.aiokafka needs aiokafka; pip install 'kgroup[aiokafka]'") from exc

from kgroup.integrations._plugin import ClusterView, Joined, PluginCore
from kgroup.messages import ConsumerSubscription

__all__ = ["CooperativeSticky", "KgroupAssignor", "Range", "RoundRobin", "Sticky"]


class KgroupAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """An aiokafka assignor backed by one of kgroup's exact assignors; use an instance per consumer."""

    #: the protocol name members announce, also kgroup's registry name
    name: ClassVar[str] = ""
    #: the subscription version this member sends
    _version: ClassVar[int] = 3

    def __init__(self, rack_id: str | None = None) -> None:
        """``rack_id``: this consumer's ``client.rack``, sent in the subscription (version 3)."""
        self._core = PluginCore(
            self.name,
            rack_id=rack_id if self._version >= 3 else None,
            send_owned=False,  # eager: aiokafka revoked everything before this JoinGroup
            generation_known=False,
            hold_on_missing=False,  # aiokafka's leader waits for the group's metadata itself
            subscription_version=self._version,
        )

    def metadata(self, topics: Iterable[str]) -> bytes:
        """The JoinGroup metadata: Java's ``ConsumerProtocolSubscription`` bytes."""
        return self._core.subscription_bytes(topics)

    def assign(self, cluster: Any, members: Mapping[str, Any]) -> dict[str, bytes]:
        """Run kgroup's assignor on the leader; every member's ``ConsumerProtocolAssignment`` bytes."""
        joined = [_joined(member_id, metadata) for member_id, metadata in members.items()]
        self._check_leader(joined)
        return self._core.assign(joined, _cluster_view(cluster))

    def on_assignment(self, assignment: Any) -> None:
        partitions = [TopicPartition(tp.topic, tp.partition) for tp in assignment.partitions()]
        self._core.on_assignment(partitions, assignment.user_data, -1)

    def _check_leader(self, joined: list[Joined]) -> None:
        """Refuse to lead where the result could be unsafe (only cooperative-sticky needs to)."""


class Range(KgroupAssignor):
    """Kafka's ``RangeAssignor`` (``range``); without ``group.instance.id`` or racks on aiokafka's leader."""

    name = "range"


class RoundRobin(KgroupAssignor):
    """Kafka's ``RoundRobinAssignor`` (``roundrobin``)."""

    name = "roundrobin"


class Sticky(KgroupAssignor):
    """Kafka's ``StickyAssignor`` (``sticky``): stickiness travels in the user data (V0 here)."""

    name = "sticky"


class CooperativeSticky(KgroupAssignor):
    """Kafka's ``CooperativeStickyAssignor``, as far as aiokafka's eager coordinator allows.

    As a member it is safe in any cooperative-sticky group: it owns nothing when it joins (aiokafka
    revoked everything), so it never holds a partition another member is given, and it says so by
    sending a version-0 subscription (no owned partitions, no generation). As the leader it can only
    be exact and safe if no member can own partitions across the rebalance: aiokafka hides the owned
    partitions of version 1+ subscriptions from the assignor, so it refuses (``KgroupError``) when any
    member sent one, rather than hand a partition to a member while another may still own it.
    """

    name = "cooperative-sticky"
    _version = 0

    def _check_leader(self, joined: list[Joined]) -> None:
        hidden = sorted(j.member_id for j in joined if j.version >= 1)
        if hidden:
            raise KgroupError(
                f"cooperative-sticky: members {', '.join(hidden[:3])}{' …' if len(hidden) > 3 else ''} "
                f"sent subscriptions of version 1+, whose owned partitions aiokafka does not pass to its "
                f"assignors, so this aiokafka leader cannot assign safely; give aiokafka members "
                f"kgroup.integrations.aiokafka.Sticky, or let only version-0 members join this group"
            )


def _joined(member_id: str, metadata: Any) -> Joined:
    """aiokafka's decoded ``ConsumerProtocolMemberMetadata`` (version-0 fields only) as the leader's input."""
    user_data = metadata.user_data
    subscription = ConsumerSubscription(
        topics=tuple(metadata.subscription),
        user_data=None if user_data is None else bytes(user_data),
    )
    return Joined(
        member_id=member_id, group_instance_id=None, subscription=subscription, version=int(metadata.version)
    )


def _cluster_view(cluster: Any) -> ClusterView:
    def partitions(topic: str) -> int | None:
        found = cluster.partitions_for_topic(topic)
        return None if found is None else len(found)

    def racks(topic: str, count: int) -> tuple[frozenset[str], ...] | None:
        return None  # aiokafka's leader never sees a member's rack, so rack-aware logic cannot apply

    return ClusterView(partitions, racks)
