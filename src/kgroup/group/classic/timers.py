"""The classic group's timers (Kafka's ``heartbeatKey``, ``joinKey``, ``syncKey``)."""

from __future__ import annotations

from kgroup.group.timers import MemberTimerKey, TimerKey, timer_kind

__all__ = ["HeartbeatTimer", "JoinTimer", "SyncTimer"]


@timer_kind("heartbeat")
class HeartbeatTimer(MemberTimerKey):
    """A member's session (and a pending or new member's join) expiry."""


@timer_kind("join")
class JoinTimer(TimerKey):
    """The end of a group's join phase: initial delay, or rebalance timeout."""


@timer_kind("sync")
class SyncTimer(TimerKey):
    """The deadline for every member of ``generation`` to send SyncGroup."""

    generation: int
