"""The share group's timer: a member's session (Kafka's ``groupSessionTimeoutKey``)."""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.group.timers import TimerKey, timer_kind
from kgroup.valuetypes import fast_init

__all__ = ["ShareSessionTimer"]


@timer_kind("share-session")
@fast_init
@dataclass(frozen=True, slots=True)
class ShareSessionTimer(TimerKey):
    """``groupSessionTimeoutKey``: the share member is fenced when it fires."""

    member_id: str
