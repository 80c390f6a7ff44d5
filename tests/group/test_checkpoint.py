"""A checkpoint of the coordinator (the records a host compacts its log to) rebuilds it exactly, and
the records written after the checkpoint replay onto the rebuilt state as onto the original.

The coordinator log used to be compacted by key, keeping the last record of each (kind, group):
kgroup's records are deltas, so that lost members, timers and state transitions, and the compacted log
could not even be replayed ("Empty cannot transition to Stable"). Issue 17 replaced it by checkpoints.
"""

from __future__ import annotations

from random import Random

from hypothesis import settings
from hypothesis.stateful import invariant, rule

from group.context import GroupTestContext
from group.test_stateful import CoordinatorMachine
from kgroup.group import ClassicGroups, GroupCoordinator, Record
from kgroup.group.records.serde import decode_record, encode_record


def _through_the_wire(records: list[Record]) -> list[Record]:
    return [decode_record(*encode_record(record)) for record in records]


def _replayed(ctx: GroupTestContext, records: list[Record]) -> GroupCoordinator:
    fresh = GroupCoordinator(ctx.config, rng=Random(99))
    for record in records:
        fresh.replay(record)
    return fresh


class CheckpointMachine(CoordinatorMachine):
    """The stateful coordinator test, with checkpoints taken along the way."""

    def __init__(self) -> None:
        super().__init__()
        self.checkpoint: list[Record] | None = None
        self.taken_at = 0

    @rule()
    def take_checkpoint(self) -> None:
        self.checkpoint = _through_the_wire(list(self.ctx.coordinator.checkpoint()))
        self.taken_at = len(self.ctx.records)

    @invariant()
    def a_checkpoint_rebuilds_the_same_state(self) -> None:
        now = _replayed(self.ctx, _through_the_wire(list(self.ctx.coordinator.checkpoint())))
        assert now.snapshot() == self.ctx.coordinator.snapshot()

    @invariant()
    def records_after_a_checkpoint_replay_onto_it(self) -> None:
        if self.checkpoint is None:
            return
        later = self.checkpoint + _through_the_wire(self.ctx.records[self.taken_at :])
        assert _replayed(self.ctx, later).snapshot() == self.ctx.coordinator.snapshot()


CheckpointMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestCheckpointMachine = CheckpointMachine.TestCase


def test_a_checkpoint_of_a_stable_group_with_offsets_and_a_deleted_group() -> None:
    ctx = GroupTestContext()
    ctx.join_group_to_stable(3)
    ctx.sleep(1000)
    checkpoint = _through_the_wire(list(ctx.coordinator.checkpoint()))
    rebuilt = _replayed(ctx, checkpoint)
    assert rebuilt.snapshot() == ctx.coordinator.snapshot()
    assert len(rebuilt.kind(ClassicGroups).group("group-id").members) == 3
    # the old compaction by key kept one record per (kind, group): two of the three members were lost
    kinds = [type(r).__name__ for r in checkpoint]
    assert kinds[0] == "GroupRestored"
    assert kinds.count("TimerArmed") == len(ctx.coordinator.armed_timers())


def test_a_checkpoint_keeps_the_member_maps_grown_table() -> None:
    """20 members grow Java's table to 32 buckets; after 15 leave, 5 remain in a 32-bucket table,
    whose iteration order differs from a fresh map's: the checkpoint must keep the table size."""
    from kgroup.messages import LeaveGroupMember

    ctx = GroupTestContext()
    member_ids, _, _ = ctx.join_group_to_stable(20)
    ctx.leave(*(LeaveGroupMember(m) for m in member_ids[:15]))
    capacity, _ = ctx.coordinator.snapshot().of("classic")[0].member_order
    assert capacity == 32
    rebuilt = _replayed(ctx, _through_the_wire(list(ctx.coordinator.checkpoint())))
    assert rebuilt.snapshot() == ctx.coordinator.snapshot()
