"""A coordinator taking groups over (``GroupCoordinator.load``): every member's session restarts, as
Kafka's ``GroupMetadataManager.onLoaded`` reschedules each loaded classic member's heartbeat."""

from __future__ import annotations

from group.context import GROUP, GroupTestContext
from kgroup.group import GroupState, TimerTable
from kgroup.group.classic.timers import HeartbeatTimer

S = GroupState


def test_loaded_members_get_a_whole_session_from_the_load() -> None:
    ctx = GroupTestContext()
    member_ids, _, generation = ctx.join_group_to_stable(2, session_timeout_ms=10_000)
    ctx.sleep(8000)  # no heartbeats: both sessions end at 10 000 ms on the old coordinator
    loaded_at = ctx.time_ms
    fresh = ctx.rebuilt()
    result = fresh.load(loaded_at, [GROUP])
    assert {t.key: t.deadline_ms for t in result.timers} == {
        HeartbeatTimer(GROUP, m): loaded_at + 10_000 for m in member_ids
    }
    # what load armed is persisted: a coordinator replaying the records arms the same deadlines
    replayed = GroupTestContext()
    replayed.records = [*ctx.records, *result.records]
    assert replayed.rebuilt().armed_timers() == fresh.armed_timers()

    ctx.coordinator, ctx.timers = fresh, TimerTable.from_armed(fresh.armed_timers())
    ctx.sleep(10_000 - 1)  # past the old deadline, a millisecond before the new one
    assert ctx.state() is S.STABLE and ctx.generation() == generation
    ctx.sleep(1)
    assert ctx.state() is S.EMPTY


def test_load_leaves_other_groups_and_unknown_groups_alone() -> None:
    ctx = GroupTestContext()
    ctx.join_group_to_stable(1, session_timeout_ms=10_000)
    (other,), _, _ = ctx.join_group_to_stable(1, session_timeout_ms=10_000, group_id="other")
    before = dict((t.key, t.deadline_ms) for t in ctx.coordinator.armed_timers())
    ctx.sleep(4000)
    result = ctx.coordinator.load(ctx.time_ms, [GROUP, "no-such-group"])
    assert [t.key.group_id for t in result.timers] == [GROUP]
    after = dict((t.key, t.deadline_ms) for t in ctx.coordinator.armed_timers())
    assert after[HeartbeatTimer("other", other)] == before[HeartbeatTimer("other", other)]


def test_load_does_not_arm_a_session_that_was_not_armed() -> None:
    ctx = GroupTestContext()
    (member,), _, _ = ctx.join_group_to_stable(1, session_timeout_ms=10_000)
    ctx.coordinator._armed.pop(HeartbeatTimer(GROUP, member))  # e.g. a member whose session was cancelled
    assert ctx.coordinator.load(ctx.time_ms, [GROUP]).timers == ()
