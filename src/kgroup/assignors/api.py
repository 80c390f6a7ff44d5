"""The assignor interface and the registry of assignors by name.

An assignor is Kafka's ``ConsumerPartitionAssignor`` reduced to its pure part: given the group's
members and the topic metadata it returns member id -> partitions. Built-in assignors register
themselves here; third-party ones are found through the ``kgroup.assignors`` entry-point group
(see ``docs/assignors.md``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points

from kgroup.model import (
    Assignment,
    KgroupError,
    Member,
    RebalanceProtocol,
    TopicMetadata,
    TopicPartition,
)

__all__ = [
    "AssignmentRequest",
    "Assignor",
    "available_assignors",
    "create_assignor",
    "register_assignor",
]


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


AssignorFactory = Callable[[], Assignor]
_BUILTIN: dict[str, AssignorFactory] = {}
_ENTRY_POINT_GROUP = "kgroup.assignors"


def register_assignor(name: str, factory: AssignorFactory) -> None:
    """Make ``factory`` available under ``name`` (a later registration replaces an earlier one)."""
    _BUILTIN[name] = factory


def _load_builtins() -> None:
    # Importing the package registers the built-in assignors.
    import kgroup.assignors  # noqa: F401


def _plugins() -> dict[str, AssignorFactory]:
    found: dict[str, AssignorFactory] = {}
    for ep in entry_points(group=_ENTRY_POINT_GROUP):
        found[ep.name] = ep.load()
    return found


def available_assignors() -> list[str]:
    """Every assignor name: built-ins first (sorted), then plug-ins."""
    _load_builtins()
    names = sorted(_BUILTIN)
    names += sorted(n for n in _plugins() if n not in _BUILTIN)
    return names


def create_assignor(name: str) -> Assignor:
    """A fresh assignor instance by name; unknown names get a one-line error listing the known ones."""
    _load_builtins()
    factory = _BUILTIN.get(name) or _plugins().get(name)
    if factory is None:
        known = ", ".join(available_assignors())
        raise KgroupError(f"unknown assignor {name!r}; use one of: {known}")
    assignor = factory()
    if not isinstance(assignor, Assignor):
        raise KgroupError(f"assignor plug-in {name!r} did not return a kgroup.assignors.Assignor")
    return assignor
