"""The assignor interface (the registry of assignors by name is :mod:`kgroup.assignors.registry`).

An assignor is Kafka's ``ConsumerPartitionAssignor`` reduced to its pure part: given the group's
members and the topic metadata it returns member id -> partitions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgroup.model import (
    Assignment,
    Member,
    RebalanceProtocol,
    TopicMetadata,
    TopicPartition,
)

__all__ = ["AssignmentRequest", "Assignor"]


@dataclass(frozen=True, slots=True)
class AssignmentRequest:
    """Everything an assignor is told about one rebalance.

    ``members`` is in the order Kafka's ``ConsumerCoordinator`` would ``put`` them into its
    ``HashMap`` (the JoinGroup response order); assignors that depend on ``HashMap`` iteration order
    derive it with :func:`kgroup.javacompat.hashmap_iteration_order`. ``topics`` maps every known
    topic name to its metadata; subscribed topics missing from it are skipped, as in Kafka.
    ``prefer_rack_aware_logic`` is Kafka's test-only switch that forces rack-aware logic.
    """

    members: Sequence[Member]
    topics: Mapping[str, TopicMetadata]
    prefer_rack_aware_logic: bool = False


class Assignor(ABC):
    """One partition-assignment strategy.

    Instances may keep state between calls where Kafka's do (the sticky assignors' carried-over
    maximum generation): a group leader reuses its assignor instance, so does kgroup's member.
    """

    #: the name members announce in JoinGroup (``partition.assignment.strategy``'s protocol name)
    name: str = ""
    #: the rebalance protocols this assignor supports, in Kafka's order (EAGER first)
    protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)

    @abstractmethod
    def assign(self, request: AssignmentRequest) -> Assignment:
        """Return member id -> assigned partitions for every member of ``request`` (lists may be empty)."""

    def subscription_user_data(self, owned: Sequence[TopicPartition], generation: int) -> bytes | None:
        """The user data a member using this assignor puts in its subscription (``None`` by default)."""
        return None

    def on_assignment(self, user_data: bytes | None, generation: int) -> None:  # noqa: B027
        """Called on a member when it receives its assignment (Kafka's ``onAssignment``)."""

    def supports(self, protocol: RebalanceProtocol) -> bool:
        return protocol in self.protocols
