"""The consumer-protocol member's states (KIP-848) and every allowed transition, in one table.

Kafka 4.x's client keeps them in ``MemberState``, each state listing the states it may be entered
from; :data:`CONSUMER_TRANSITIONS` is the same table written as edges. The member moves only through
:func:`next_consumer_state`; a move not in the table is a bug and raises, as Kafka's ``transitionTo``
throws ``IllegalStateException``.
"""

from __future__ import annotations

import enum

__all__ = [
    "CONSUMER_TRANSITIONS",
    "ConsumerMemberState",
    "consumer_transition_diagram",
    "next_consumer_state",
]


class ConsumerMemberState(enum.Enum):
    """Kafka's ``MemberState`` of the consumer group protocol."""

    UNSUBSCRIBED = "unsubscribed"  # no subscription (or left): commits only, no heartbeats
    JOINING = "joining"  # heartbeating with epoch 0 until an epoch > 0 comes back
    RECONCILING = "reconciling"  # a target assignment differs from the current one
    ACKNOWLEDGING = "acknowledging"  # reconciled; the next heartbeat (sent at once) acknowledges it
    STABLE = "stable"  # in the group, nothing to reconcile
    FENCED = "fenced"  # FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: partitions lost, then rejoin
    PREPARE_LEAVING = "prepare leaving"  # releasing the assignment (callbacks) before the leave heartbeat
    LEAVING = "leaving"  # the next heartbeat (sent at once) carries epoch -1 or -2
    FATAL = "fatal"  # an unrecoverable error: no more requests
    STALE = "stale"  # left because max.poll.interval.ms expired; rejoins at the next poll()

    @property
    def in_group(self) -> bool:
        """Not ``isNotInGroup()``: the member is (or is becoming) part of the group."""
        return self not in _NOT_IN_GROUP

    @property
    def can_handle_new_assignment(self) -> bool:
        """Kafka's ``canHandleNewAssignment``: the states RECONCILING may be entered from."""
        return (self, ConsumerMemberState.RECONCILING) in _EDGES


_NOT_IN_GROUP = frozenset(
    {
        ConsumerMemberState.UNSUBSCRIBED,
        ConsumerMemberState.FENCED,
        ConsumerMemberState.FATAL,
        ConsumerMemberState.STALE,
    }
)

S = ConsumerMemberState

#: target state -> the states it may be entered from (Kafka's ``previousValidStates``)
_ENTERED_FROM: dict[ConsumerMemberState, tuple[ConsumerMemberState, ...]] = {
    S.STABLE: (S.JOINING, S.ACKNOWLEDGING, S.RECONCILING),
    S.RECONCILING: (S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING),
    S.ACKNOWLEDGING: (S.RECONCILING,),
    S.FATAL: (
        S.JOINING,
        S.STABLE,
        S.RECONCILING,
        S.ACKNOWLEDGING,
        S.PREPARE_LEAVING,
        S.LEAVING,
        S.UNSUBSCRIBED,
    ),
    S.FENCED: (S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING),
    S.JOINING: (S.FENCED, S.UNSUBSCRIBED, S.STALE),
    S.PREPARE_LEAVING: (S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.UNSUBSCRIBED),
    S.LEAVING: (S.PREPARE_LEAVING,),
    S.UNSUBSCRIBED: (S.PREPARE_LEAVING, S.LEAVING, S.FENCED),
    S.STALE: (S.LEAVING,),
}

_EDGES = frozenset((source, target) for target, sources in _ENTERED_FROM.items() for source in sources)

#: every allowed (from, to) move; staying in the same state is always allowed, as in Kafka
CONSUMER_TRANSITIONS: frozenset[tuple[ConsumerMemberState, ConsumerMemberState]] = _EDGES


def next_consumer_state(current: ConsumerMemberState, target: ConsumerMemberState) -> ConsumerMemberState:
    """``target``, if the table allows moving there from ``current``; a bug in the member otherwise."""
    if current is not target and (current, target) not in _EDGES:
        raise AssertionError(f"consumer member transition not allowed: {current.name} --> {target.name}")
    return target


def consumer_transition_diagram() -> str:
    """The table as a Mermaid state diagram (``docs/consumer-protocol-member.md`` embeds it)."""
    lines = ["stateDiagram-v2", "    [*] --> UNSUBSCRIBED"]
    for target in ConsumerMemberState:
        for source in _ENTERED_FROM.get(target, ()):
            lines.append(f"    {source.name} --> {target.name}")
    return "\n".join(lines)
