"""Timer effects: the coordinator asks its host to call :meth:`GroupCoordinator.on_timer` later.

The host (simulator or broker) owns the timer queue. Scheduling a key that is already scheduled
replaces its deadline (Kafka's ``CoordinatorTimer.schedule``); cancelling an unknown key is harmless.
The coordinator also remembers what it armed, so a stale or unexpected firing does nothing.

A key is typed: one :class:`TimerKey` subclass per kind of timer, declared by the group kind that
arms it (``kgroup.group.classic.timers``, ``kgroup.group.consumer.timers``) and registered with
:func:`timer_kind` under the name its records carry (``TimerArmed`` writes ``key.parts()``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, dataclass_transform

from kgroup.valuetypes import value_type

__all__ = [
    "CancelTimer",
    "MemberTimerKey",
    "ScheduleTimer",
    "TimerEffect",
    "TimerKey",
    "timer_kind",
]

K = TypeVar("K", bound="TimerKey")


@dataclass(frozen=True, slots=True)
class TimerKey:
    """One armed timer of one group: a subclass per kind of timer, its fields what the timer is for.
    Keys order by :meth:`parts` (their kind's name, then their fields)."""

    group_id: str

    #: the kind's name in the records (set by :func:`timer_kind`)
    kind: ClassVar[str] = ""
    _fields: ClassVar[tuple[str, ...]] = ()
    _ints: ClassVar[frozenset[str]] = frozenset()
    _registered: ClassVar[dict[str, type[TimerKey]]] = {}

    def parts(self) -> tuple[str, ...]:
        """The key as its records write it: ``(kind, group_id, …)``, every field as a string."""
        return (self.kind, *[str(getattr(self, name)) for name in self._fields])

    @staticmethod
    def from_parts(parts: Sequence[str]) -> TimerKey | None:
        """The key :meth:`parts` wrote, or ``None`` if no registered kind has that name and shape."""
        cls = TimerKey._registered.get(parts[0]) if parts else None
        if cls is None or len(parts) != len(cls._fields) + 1:
            return None
        values: list[Any] = []
        for name, value in zip(cls._fields, parts[1:], strict=True):
            if name in cls._ints:
                try:
                    values.append(int(value))
                except ValueError:
                    return None
            else:
                values.append(value)
        return cls(*values)

    def __lt__(self, other: TimerKey) -> bool:
        return self.parts() < other.parts()


@dataclass(frozen=True, slots=True)
class MemberTimerKey(TimerKey):
    """A timer of one member of the group (its session, its rebalance, …)."""

    member_id: str


@dataclass_transform(frozen_default=True)
def timer_kind(name: str) -> Callable[[type[K]], type[K]]:
    """Declare a kind of timer: the :class:`TimerKey` subclass becomes a value type
    (:func:`kgroup.valuetypes.value_type`), registered under ``name``."""

    def register(cls: type[K]) -> type[K]:
        cls = value_type(cls)
        if name in TimerKey._registered:
            raise AssertionError(f"timer kind {name!r} is registered twice")
        fields = dataclasses.fields(cls)
        cls.kind = name
        cls._fields = tuple(f.name for f in fields)
        cls._ints = frozenset(f.name for f in fields if f.type in ("int", int))
        TimerKey._registered[name] = cls
        return cls

    return register


@value_type
class ScheduleTimer:
    """Call ``on_timer(now, key)`` once the clock reaches ``deadline_ms`` (replacing an earlier one)."""

    key: TimerKey
    deadline_ms: int


@value_type
class CancelTimer:
    """Forget ``key``: it must not fire."""

    key: TimerKey


TimerEffect = ScheduleTimer | CancelTimer
