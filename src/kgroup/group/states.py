"""The five states of a classic group and the ONE table of transitions between them.

Kafka's ``ClassicGroupState`` lists, for every state, the states it may be entered from; every
``transitionTo`` asserts it. kgroup keeps exactly that table here: the coordinator calls
:func:`check_transition` before each change (in :meth:`GroupCoordinator.replay`, so a record log
that breaks the table cannot be replayed either), and the documentation's diagram is generated from
it by :func:`mermaid_diagram`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "ALLOWED_PREVIOUS_STATES",
    "GroupState",
    "IllegalStateTransition",
    "KafkaNamedState",
    "check_transition",
    "mermaid_diagram",
]


class KafkaNamedState(enum.Enum):
    """A group kind's state whose value is the name Kafka reports for it (DescribeGroups, ListGroups,
    the describe APIs): the base of every kind's state enum."""

    @property
    def kafka_name(self) -> str:
        return str(self.value)


class GroupState(KafkaNamedState):
    """``ClassicGroupState``; ``kafka_name`` is the name Kafka reports (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState

#: target state -> the states it may be entered from (Kafka's ``validPreviousStates``)
ALLOWED_PREVIOUS_STATES: Mapping[GroupState, frozenset[GroupState]] = MappingProxyType(
    {
        _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
        _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
        _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
        _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
        _S.DEAD: frozenset({_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}),
    }
)

# Why each edge exists: the label the diagram shows.
_EDGE_REASONS: Mapping[tuple[GroupState, GroupState], str] = MappingProxyType(
    {
        (_S.EMPTY, _S.PREPARING_REBALANCE): "first member joins",
        (_S.STABLE, _S.PREPARING_REBALANCE): "join / leave / member expired / sync timeout",
        (_S.COMPLETING_REBALANCE, _S.PREPARING_REBALANCE): "join with new metadata / leave / expiry",
        (_S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE): "join complete, members remain",
        (_S.PREPARING_REBALANCE, _S.EMPTY): "join complete, no member left",
        (_S.COMPLETING_REBALANCE, _S.STABLE): "leader's SyncGroup stored",
    }
)


class IllegalStateTransition(AssertionError):
    """A transition the table forbids. Always a bug in the coordinator (or a corrupt record log)."""


def check_transition(current: GroupState, target: GroupState) -> None:
    """Raise :class:`IllegalStateTransition` unless ``current -> target`` is in the table."""
    if current not in ALLOWED_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(
            f"group state {current.kafka_name} cannot transition to {target.kafka_name}; "
            f"{target.kafka_name} may only be entered from "
            + ", ".join(sorted(s.kafka_name for s in ALLOWED_PREVIOUS_STATES[target]))
        )


def mermaid_diagram() -> str:
    """A Mermaid ``stateDiagram-v2`` of the table (the docs embed it; a test keeps them equal).

    Every edge of :data:`ALLOWED_PREVIOUS_STATES` becomes one arrow, labelled with why it is taken.
    """
    lines = ["stateDiagram-v2", "    [*] --> Empty: group created"]
    for target in GroupState:
        for source in GroupState:
            if source in ALLOWED_PREVIOUS_STATES[target]:
                label = _EDGE_REASONS.get((source, target), "group deleted / coordinator unloaded")
                lines.append(f"    {source.kafka_name} --> {target.kafka_name}: {label}")
    lines.append("    Dead --> [*]")
    return "\n".join(lines) + "\n"
