"""The classic group's timers (Kafka's ``heartbeatKey``, ``joinKey``, ``syncKey``)."""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.group.timers import TimerKey, timer_kind
from kgroup.valuetypes import fast_init

__all__ = ["HeartbeatTimer", "JoinTimer", "SyncTimer"]


@timer_kind("heartbeat")
@fast_init
@dataclass(frozen=True, slots=True)
class HeartbeatTimer(TimerKey):
    """A member's session (and a pending or new member's join) expiry."""

    member_id: str


@timer_kind("join")
@fast_init
@dataclass(frozen=True, slots=True)
class JoinTimer(TimerKey):
    """The end of a group's join phase: initial delay, or rebalance timeout."""


@timer_kind("sync")
@fast_init
@dataclass(frozen=True, slots=True)
class SyncTimer(TimerKey):
    """The deadline for every member of ``generation`` to send SyncGroup."""

    generation: int
