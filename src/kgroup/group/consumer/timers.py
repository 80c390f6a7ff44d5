"""The consumer group's timers (Kafka's ``groupSessionTimeoutKey``, ``groupRebalanceTimeoutKey``,
``consumerGroupJoinKey``, ``consumerGroupSyncKey``, and the ``<group>-regex`` executor task)."""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.group.timers import TimerKey, timer_kind
from kgroup.valuetypes import fast_init

__all__ = [
    "ClassicMemberJoinTimer",
    "ClassicMemberSyncTimer",
    "MemberTimer",
    "RebalanceTimer",
    "RegexTimer",
    "SessionTimer",
]


@timer_kind("consumer-session")
@fast_init
@dataclass(frozen=True, slots=True)
class SessionTimer(TimerKey):
    """``groupSessionTimeoutKey``: the member is fenced when it fires."""

    member_id: str


@timer_kind("consumer-rebalance")
@fast_init
@dataclass(frozen=True, slots=True)
class RebalanceTimer(TimerKey):
    """``groupRebalanceTimeoutKey``, with the epoch the timer was armed for (Kafka's closure keeps it):
    the member is fenced when it fires only if it is still in that epoch."""

    member_id: str
    member_epoch: int


@timer_kind("consumer-join")
@fast_init
@dataclass(frozen=True, slots=True)
class ClassicMemberJoinTimer(TimerKey):
    """``consumerGroupJoinKey``: a classic member that must rejoin is fenced if it does not in time."""

    member_id: str


@timer_kind("consumer-sync")
@fast_init
@dataclass(frozen=True, slots=True)
class ClassicMemberSyncTimer(TimerKey):
    """``consumerGroupSyncKey``: a classic member that joined is fenced if it does not sync in time."""

    member_id: str


@timer_kind("consumer-regex")
@fast_init
@dataclass(frozen=True, slots=True)
class RegexTimer(TimerKey):
    """The group's regex resolution (Kafka's ``<group>-regex`` executor task), due at once."""


#: the timers that fence a member when they fire
MemberTimer = SessionTimer | RebalanceTimer | ClassicMemberJoinTimer | ClassicMemberSyncTimer
