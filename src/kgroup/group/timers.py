"""Timer effects: the coordinator asks its host to call :meth:`GroupCoordinator.on_timer` later.

The host (simulator or broker) owns the timer queue. Scheduling a key that is already scheduled
replaces its deadline (Kafka's ``CoordinatorTimer.schedule``); cancelling an unknown key is harmless.
The coordinator also remembers what it armed, so a stale or unexpected firing does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.valuetypes import fast_init

__all__ = [
    "CancelTimer",
    "ScheduleTimer",
    "TimerEffect",
    "TimerKey",
    "heartbeat_key",
    "join_key",
    "sync_key",
]

#: ``("heartbeat", group_id, member_id)``, ``("join", group_id)``, ``("sync", group_id, generation)``
TimerKey = tuple[str, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class ScheduleTimer:
    """Call ``on_timer(now, key)`` once the clock reaches ``deadline_ms`` (replacing an earlier one)."""

    key: TimerKey
    deadline_ms: int


@fast_init
@dataclass(frozen=True, slots=True)
class CancelTimer:
    """Forget ``key``: it must not fire."""

    key: TimerKey


TimerEffect = ScheduleTimer | CancelTimer


def heartbeat_key(group_id: str, member_id: str) -> TimerKey:
    """A member's session (and a pending or new member's join) expiry: Kafka's heartbeat key."""
    return ("heartbeat", group_id, member_id)


def join_key(group_id: str) -> TimerKey:
    """The end of a group's join phase: initial delay, or rebalance timeout."""
    return ("join", group_id)


def sync_key(group_id: str, generation: int) -> TimerKey:
    """The deadline for every member of ``generation`` to send SyncGroup."""
    return ("sync", group_id, str(generation))
