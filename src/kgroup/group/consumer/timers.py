"""The consumer group's timers (Kafka's ``groupSessionTimeoutKey``, ``groupRebalanceTimeoutKey``,
``consumerGroupJoinKey``, ``consumerGroupSyncKey``, and the ``<group>-regex`` executor task)."""

from __future__ import annotations

from kgroup.group.timers import MemberTimerKey, TimerKey, timer_kind

__all__ = [
    "ClassicMemberJoinTimer",
    "ClassicMemberSyncTimer",
    "MemberTimer",
    "RebalanceTimer",
    "RegexTimer",
    "SessionTimer",
]


@timer_kind("consumer-session")
class SessionTimer(MemberTimerKey):
    """``groupSessionTimeoutKey``: the member is fenced when it fires."""


@timer_kind("consumer-rebalance")
class RebalanceTimer(MemberTimerKey):
    """``groupRebalanceTimeoutKey``, with the epoch the timer was armed for (Kafka's closure keeps it):
    the member is fenced when it fires only if it is still in that epoch."""

    member_epoch: int


@timer_kind("consumer-join")
class ClassicMemberJoinTimer(MemberTimerKey):
    """``consumerGroupJoinKey``: a classic member that must rejoin is fenced if it does not in time."""


@timer_kind("consumer-sync")
class ClassicMemberSyncTimer(MemberTimerKey):
    """``consumerGroupSyncKey``: a classic member that joined is fenced if it does not sync in time."""


@timer_kind("consumer-regex")
class RegexTimer(TimerKey):
    """The group's regex resolution (Kafka's ``<group>-regex`` executor task), due at once."""


#: the timers that fence a member when they fire
MemberTimer = SessionTimer | RebalanceTimer | ClassicMemberJoinTimer | ClassicMemberSyncTimer
