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
from typing import Generic, TypeVar

from kgroup.model import (
    Assignment,
    KgroupError,
    Member,
    RebalanceProtocol,
    TopicMetadata,
    TopicPartition,
)

_T = TypeVar("_T")

__all__ = [
    "AssignmentRequest",
    "Assignor",
    "NamedRegistry",
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


class NamedRegistry(Generic[_T]):
    """Factories by name, plus plug-ins from an entry-point group: one mechanism for every kind of assignor.

    kgroup has two kinds: the consumer's (:class:`Assignor`, below) and the KIP-848 coordinator's
    (:mod:`kgroup.group.assignors`). Each kind is one instance; ``load_builtins`` imports the package
    that registers the built-ins, on first use.
    """

    def __init__(
        self,
        base: type,  # _T itself (abstract, so not a type[_T] to mypy): checked at run time
        base_name: str,
        entry_point_group: str,
        kind: str,
        load_builtins: Callable[[], None],
    ) -> None:
        self.base = base
        self.base_name = base_name  # as users import it, for the error message
        self.entry_point_group = entry_point_group
        self.kind = kind
        self.factories: dict[str, Callable[[], _T]] = {}
        self._load_builtins = load_builtins

    def register(self, name: str, factory: Callable[[], _T]) -> None:
        """Make ``factory`` available under ``name`` (a later registration replaces an earlier one)."""
        self.factories[name] = factory

    def _plugins(self) -> dict[str, Callable[[], _T]]:
        found: dict[str, Callable[[], _T]] = {}
        for ep in entry_points(group=self.entry_point_group):
            found[ep.name] = ep.load()
        return found

    def available(self) -> list[str]:
        """Every name: built-ins first (sorted), then plug-ins."""
        self._load_builtins()
        names = sorted(self.factories)
        names += sorted(n for n in self._plugins() if n not in self.factories)
        return names

    def create(self, name: str) -> _T:
        """A fresh instance by name; unknown names get a one-line error listing the known ones."""
        self._load_builtins()
        factory = self.factories.get(name) or self._plugins().get(name)
        if factory is None:
            known = ", ".join(self.available())
            raise KgroupError(f"unknown {self.kind} {name!r}; use one of: {known}")
        instance = factory()
        if not isinstance(instance, self.base):
            raise KgroupError(f"{self.kind} plug-in {name!r} did not return a {self.base_name}")
        return instance


def _load_builtins() -> None:
    # Importing the package registers the built-in assignors.
    import kgroup.assignors  # noqa: F401


AssignorFactory = Callable[[], Assignor]
_REGISTRY: NamedRegistry[Assignor] = NamedRegistry(
    Assignor, "kgroup.assignors.Assignor", "kgroup.assignors", "assignor", _load_builtins
)
_BUILTIN: dict[str, AssignorFactory] = _REGISTRY.factories


def register_assignor(name: str, factory: AssignorFactory) -> None:
    """Make ``factory`` available under ``name`` (a later registration replaces an earlier one)."""
    _REGISTRY.register(name, factory)


def available_assignors() -> list[str]:
    """Every assignor name: built-ins first (sorted), then plug-ins."""
    return _REGISTRY.available()


def create_assignor(name: str) -> Assignor:
    """A fresh assignor instance by name; unknown names get a one-line error listing the known ones."""
    return _REGISTRY.create(name)
