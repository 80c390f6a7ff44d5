"""The share group's timer: a member's session (Kafka's ``groupSessionTimeoutKey``)."""

from __future__ import annotations

from kgroup.group.timers import MemberTimerKey, timer_kind

__all__ = ["ShareSessionTimer"]


@timer_kind("share-session")
class ShareSessionTimer(MemberTimerKey):
    """``groupSessionTimeoutKey``: the share member is fenced when it fires."""
