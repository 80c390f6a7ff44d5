"""The consumer member's states and every allowed transition, in one table.

Kafka's ``AbstractCoordinator`` has four member states (UNJOINED, PREPARING_REBALANCE,
COMPLETING_REBALANCE, STABLE) plus the ``needsJoinPrepare`` / ``rejoinNeeded`` flags and the
pending offset commit of ``onJoinPrepare``. kgroup names the fine-grained steps :class:`Phase` and
groups them into the three states the seeds talk about (:class:`MemberState`). The member moves only
through :func:`next_phase`; a move not in :data:`TRANSITIONS` is a bug and raises.
"""

from __future__ import annotations

import enum

__all__ = ["TRANSITIONS", "MemberState", "Phase", "Step", "next_phase", "transition_diagram"]


class MemberState(enum.Enum):
    """The member as the seeds describe it (plus the two terminal states)."""

    UNJOINED = "unjoined"
    REBALANCING = "rebalancing"
    STABLE = "stable"
    FAILED = "failed"  # a fatal error (e.g. FENCED_INSTANCE_ID): the member stopped
    CLOSED = "closed"


class Phase(enum.Enum):
    """Fine-grained member phases (what Kafka keeps in its state plus flags)."""

    UNJOINED = "unjoined"  # no generation; waiting for the application's poll() to (re)join
    PREPARING = "preparing"  # onJoinPrepare: waiting for the pre-join auto-commit, then the callbacks
    JOINING = "joining"  # JoinGroup sent or about to be (Kafka's PREPARING_REBALANCE)
    SYNCING = "syncing"  # JoinGroup answered, SyncGroup sent (Kafka's COMPLETING_REBALANCE)
    STABLE = "stable"  # assignment received; heartbeating
    FAILED = "failed"
    CLOSED = "closed"

    @property
    def state(self) -> MemberState:
        return _STATE_OF[self]


_STATE_OF = {
    Phase.UNJOINED: MemberState.UNJOINED,
    Phase.PREPARING: MemberState.REBALANCING,
    Phase.JOINING: MemberState.REBALANCING,
    Phase.SYNCING: MemberState.REBALANCING,
    Phase.STABLE: MemberState.STABLE,
    Phase.FAILED: MemberState.FAILED,
    Phase.CLOSED: MemberState.CLOSED,
}


class Step(enum.Enum):
    """What makes the member move."""

    BEGIN_REBALANCE = "begin rebalance"  # poll() (or an immediate rejoin) runs onJoinPrepare
    PREPARED = "prepared"  # pre-join commit done, callbacks fired; JoinGroup goes out
    JOINED = "joined"  # JoinGroup answered NONE
    JOIN_RETRY = "join retry"  # MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, retriable errors
    SYNCED = "synced"  # SyncGroup answered NONE: the assignment arrives
    SYNC_RETRY = "sync retry"  # SyncGroup failed (REBALANCE_IN_PROGRESS, coordinator moved …)
    RESET = "reset generation"  # ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID: owned partitions become lost
    LEFT = "left"  # max.poll.interval.ms expired: LeaveGroup (dynamic members) and reset
    FATAL = "fatal"  # FENCED_INSTANCE_ID, or an assignment onJoinComplete cannot take
    CLOSE = "close"


_LIVE = (Phase.UNJOINED, Phase.PREPARING, Phase.JOINING, Phase.SYNCING, Phase.STABLE)

#: (phase, step) -> next phase; the only moves the member can make
TRANSITIONS: dict[tuple[Phase, Step], Phase] = {
    (Phase.UNJOINED, Step.BEGIN_REBALANCE): Phase.PREPARING,
    (Phase.STABLE, Step.BEGIN_REBALANCE): Phase.PREPARING,
    (Phase.PREPARING, Step.PREPARED): Phase.JOINING,
    (Phase.JOINING, Step.JOINED): Phase.SYNCING,
    (Phase.JOINING, Step.JOIN_RETRY): Phase.JOINING,
    (Phase.SYNCING, Step.SYNCED): Phase.STABLE,
    (Phase.SYNCING, Step.SYNC_RETRY): Phase.JOINING,
    # A reset while onJoinPrepare waits for its commit does not stop the prepare; when the prepare
    # goes on, Kafka decides revoke-or-lose from the generation current then (so: lost).
    (Phase.UNJOINED, Step.RESET): Phase.UNJOINED,
    (Phase.PREPARING, Step.RESET): Phase.PREPARING,
    (Phase.JOINING, Step.RESET): Phase.UNJOINED,
    (Phase.SYNCING, Step.RESET): Phase.UNJOINED,
    (Phase.STABLE, Step.RESET): Phase.UNJOINED,
    # Only the heartbeat thread notices max.poll.interval.ms, and it runs only while the member is
    # (Kafka-)STABLE or COMPLETING_REBALANCE.
    (Phase.PREPARING, Step.LEFT): Phase.UNJOINED,
    (Phase.SYNCING, Step.LEFT): Phase.UNJOINED,
    (Phase.STABLE, Step.LEFT): Phase.UNJOINED,
    **{(phase, Step.FATAL): Phase.FAILED for phase in _LIVE},
    **{(phase, Step.CLOSE): Phase.CLOSED for phase in (*_LIVE, Phase.FAILED)},
}


def next_phase(phase: Phase, step: Step) -> Phase:
    """The phase after ``step``; a step the table does not allow is a bug in the member."""
    try:
        return TRANSITIONS[(phase, step)]
    except KeyError:
        raise AssertionError(f"member transition not allowed: {phase.name} --{step.value}-->") from None


def transition_diagram() -> str:
    """The transition table as a Mermaid state diagram (``docs/member.md`` embeds this text)."""
    lines = ["stateDiagram-v2", "    [*] --> UNJOINED"]
    edges: dict[tuple[Phase, Phase], list[str]] = {}
    for (source, step), target in TRANSITIONS.items():
        edges.setdefault((source, target), []).append(step.value)
    for (source, target), steps in edges.items():
        lines.append(f"    {source.name} --> {target.name}: {', '.join(steps)}")
    lines.append("    CLOSED --> [*]")
    return "\n".join(lines)
