"""A pure observer of the coordinator's records: the group as the simulator (or any host) sees it.

The coordinator's records say everything a host needs to follow a group — its state, generation,
protocol and members — so the host never has to build a view after every request. The same records
are what a broker persists and replays, so the observer works on a live broker's log too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kgroup.group.records import (
    GenerationStarted,
    GroupDeleted,
    GroupStateChanged,
    MemberRemoved,
    MemberUpserted,
    Record,
    StaticMemberReplaced,
)
from kgroup.group.states import GroupState

__all__ = ["FOLLOWED", "GroupObserver", "Observation"]

#: the records that change what the observer follows (offsets, timers, pending members do not)
FOLLOWED = frozenset(
    {GroupStateChanged, GenerationStarted, MemberUpserted, MemberRemoved, StaticMemberReplaced, GroupDeleted}
)


@dataclass(slots=True)
class Observation:
    """What one batch of records changed, in order."""

    #: the group's new states, in the order it entered them, each with the generation it had then
    states: list[tuple[GroupState, int]] = field(default_factory=list)
    #: the generation or the member set changed (every member's standing may have changed)
    membership_changed: bool = False
    #: the generation went back (``(from, to)``): an invariant violation
    generation_went_back: list[tuple[int, int]] = field(default_factory=list)


class GroupObserver:
    """One group followed through its records (the host feeds it every record of that group)."""

    __slots__ = ("generation", "members", "protocol", "state")

    def __init__(self) -> None:
        self.state = GroupState.EMPTY
        self.generation = 0
        self.members: frozenset[str] = frozenset()
        self.protocol: str | None = None

    def is_current(self, generation: int, member_id: str) -> bool:
        """Whether a member of ``generation`` with ``member_id`` is in the group's current generation."""
        return generation == self.generation and member_id in self.members

    def observe(self, records: Iterable[Record]) -> Observation:
        seen = Observation()
        for record in records:
            if type(record) not in FOLLOWED:
                continue
            if isinstance(record, GroupStateChanged):
                self.state = record.state
                seen.states.append((record.state, self.generation))
            elif isinstance(record, GenerationStarted):
                if record.generation < self.generation:
                    seen.generation_went_back.append((self.generation, record.generation))
                self.generation = record.generation
                self.protocol = record.protocol_name
                seen.membership_changed = True
            elif isinstance(record, MemberUpserted):
                if record.member.member_id not in self.members:
                    self.members = self.members | {record.member.member_id}
                    seen.membership_changed = True
            elif isinstance(record, MemberRemoved):
                if record.member_id in self.members:
                    self.members = self.members - {record.member_id}
                    seen.membership_changed = True
            elif isinstance(record, StaticMemberReplaced):
                self.members = (self.members - {record.old_member_id}) | {record.member.member_id}
                seen.membership_changed = True
            elif isinstance(record, GroupDeleted):
                self.members = frozenset()
                seen.membership_changed = True
        return seen
