"""The one registration of group kinds: what one coordinator routes to, in order.

A new kind is a package under ``kgroup.group`` with a class that declares what
:class:`~kgroup.group.kind.GroupKind` asks, and one line here. The order is the order of a
checkpoint and of the kinds asked about a group id; a kind built on another (the consumer kind
upgrades classic groups) is given it.
"""

from __future__ import annotations

from kgroup.group.classic.kind import ClassicGroups
from kgroup.group.consumer.kind import ConsumerGroups
from kgroup.group.kind import GroupKind
from kgroup.group.share.kind import ShareGroups

__all__ = ["registered_kinds"]


def registered_kinds() -> tuple[GroupKind, ...]:
    """Fresh kinds for one coordinator (each holds that coordinator's groups of its kind)."""
    classic = ClassicGroups()
    shares: list[ShareGroups] = []  # the share kind, made below: the consumer kind asks it by id
    consumer = ConsumerGroups(classic, lambda group_id: any(s.owns(group_id) for s in shares))
    share = ShareGroups(lambda group_id: classic.owns(group_id) or consumer.owns(group_id))
    shares.append(share)
    return (classic, consumer, share)
