"""What a group kind declares to the coordinator: :class:`GroupKind`.

A kind (classic, consumer, …) is one package under ``kgroup.group`` holding its groups, and one class
that tells the router (:class:`~kgroup.group.coordinator.GroupCoordinator`) what it serves: the
request types it answers, the records it replays, the timers it arms, the tasks it hands out, and how
it loads, unloads, checkpoints, lists and describes its groups. ``kgroup.group.kinds`` lists the kinds.
The router knows none of them: it routes by the types they declare and by who owns a group id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

from kgroup.group.admin import not_described
from kgroup.group.metadata import MetadataImage
from kgroup.group.records import OffsetAndMetadata, Record
from kgroup.group.timers import TimerKey
from kgroup.group.txn import CoordinatorTask, Txn
from kgroup.messages import DescribedGroup, Envelope, ListedGroup
from kgroup.model import ErrorCode, KgroupError, TopicPartition

__all__ = ["GroupKind", "GroupsById", "Handler", "UnknownGroupError"]

#: a request handler: answers through the operation's replies, changes state only by its records
Handler = Callable[[Txn, Envelope, Any], None]


class UnknownGroupError(KgroupError, KeyError):
    """The coordinator has no such group: a :class:`KgroupError` that ``except KeyError`` also catches."""

    def __str__(self) -> str:
        return self.message


class GroupKind(Protocol):
    """One kind of group on the coordinator. A group id belongs to at most one kind at a time."""

    #: the kind's name in ListGroups' ``types_filter`` and answers (Kafka's ``Group.GroupType``)
    name: str
    #: request type -> handler, for a request whose group no kind owns through ``owned_handlers``
    #: (each request type is served so by one kind)
    handlers: Mapping[type, Handler]
    #: request type -> handler, for a request whose group this kind owns (before ``handlers``)
    owned_handlers: Mapping[type, Handler]
    #: the record types this kind replays (a type two kinds replay goes to the group's owner); with
    #: TimerArmed and TimerDisarmed it also replays those of its own timers (after the router)
    records: frozenset[type]
    #: the timer key types this kind arms (its timers fire into ``on_timer``)
    timer_kinds: frozenset[type[TimerKey]]
    #: the task types whose outcome ``complete`` takes
    task_types: frozenset[type]

    def owns(self, group_id: str) -> bool: ...

    def group_ids(self) -> Iterable[str]: ...

    def replay(self, record: Record) -> None:
        """Apply one of ``records``."""

    def on_timer(self, txn: Txn, key: TimerKey) -> None: ...

    def complete(self, txn: Txn, task: CoordinatorTask, outcome: object) -> None: ...

    def load(self, txn: Txn, group_id: str) -> None:
        """The coordinator took over this kind's ``group_id``: restart its members' sessions."""

    def unload(self, txn: Txn) -> None:
        """The coordinator loses its groups: answer what is parked (the router then cancels every timer)."""

    def delete_group(self, txn: Txn, group_id: str) -> ErrorCode:
        """DeleteGroups for a group this kind owns."""

    def checkpoint(self) -> Iterator[Record]:
        """Records that rebuild this kind's groups when replayed into an empty coordinator."""

    def snapshot(self) -> tuple[object, ...]:
        """This kind's groups as comparable values, by group id."""

    def listed(self, states: set[str]) -> Iterable[ListedGroup]:
        """ListGroups' entries for the groups in one of ``states`` (lower case; all if empty)."""

    def described(self, group_id: str, api_version: int) -> DescribedGroup:
        """DescribeGroups' answer for a group this kind owns."""

    def committed_offsets(self, group_id: str) -> Mapping[TopicPartition, OffsetAndMetadata]:
        """The offsets committed in a group this kind owns."""

    def set_metadata(self, image: MetadataImage) -> None:
        """The cluster's topics changed (``onMetadataUpdate``)."""


class _State(Protocol):
    @property
    def kafka_name(self) -> str: ...


class _Group(Protocol):
    """What :class:`GroupsById` reads of a group."""

    @property
    def group_id(self) -> str: ...

    @property
    def state(self) -> _State: ...

    def checkpoint_records(self) -> Iterable[Record]: ...

    def snapshot(self) -> object: ...


_G = TypeVar("_G", bound=_Group)


class GroupsById(Generic[_G]):
    """What a kind whose groups live in ``self.groups`` by id (consumer, share) does alike: it owns
    the ids there, rebuilds its groups from their own checkpoint records, lists each as
    (``protocol_type``, its state, ``name``), and is not what DescribeGroups describes (classic groups
    only, ``GroupMetadataManager.classicGroup``). Each kind names itself and keeps the rest."""

    name: str
    #: the protocol type ListGroups answers for its groups (``ConsumerGroup``/``ShareGroup.PROTOCOL_TYPE``)
    protocol_type: str
    #: the kind's groups by id (its context's ``groups``)
    groups: dict[str, _G]

    def owns(self, group_id: str) -> bool:
        return group_id in self.groups

    def group_ids(self) -> Iterable[str]:
        return self.groups

    def unload(self, txn: Txn) -> None:
        """Nothing is parked in such a group."""

    def checkpoint(self) -> Iterator[Record]:
        for group in self.groups.values():
            yield from group.checkpoint_records()

    def snapshot(self) -> tuple[object, ...]:
        groups = self.groups
        return tuple(groups[g].snapshot() for g in sorted(groups))

    def listed(self, states: set[str]) -> Iterable[ListedGroup]:
        return [
            ListedGroup(g.group_id, self.protocol_type, g.state.kafka_name, self.name)
            for g in self.groups.values()
            if not states or g.state.kafka_name.lower() in states
        ]

    def described(self, group_id: str, api_version: int) -> DescribedGroup:
        """DescribeGroups describes classic groups only."""
        return not_described(group_id, api_version, f"Group {group_id} is not a classic group.")

    def _owned_group(self, group_id: str) -> _G:
        """The group (:class:`UnknownGroupError` if this kind has none by that id)."""
        group = self.groups.get(group_id)
        if group is None:
            raise UnknownGroupError(f"group_id: no {self.name} group {group_id!r} on this coordinator")
        return group
