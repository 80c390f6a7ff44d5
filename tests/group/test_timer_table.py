"""The coordinator timer table every host drives the coordinator through."""

from __future__ import annotations

from random import Random

from hypothesis import given
from hypothesis import strategies as st

from kgroup.group import CancelTimer, CoordinatorResult, ScheduleTimer, TimerTable


def test_schedule_replaces_cancel_forgets_and_pop_due_goes_in_deadline_order() -> None:
    table = TimerTable()
    table.apply(
        CoordinatorResult(
            timers=(
                ScheduleTimer(("join", "g"), 500),
                ScheduleTimer(("heartbeat", "g", "a"), 300),
                ScheduleTimer(("heartbeat", "g", "b"), 300),
                ScheduleTimer(("join", "g"), 200),  # replaces 500
                CancelTimer(("heartbeat", "g", "c")),  # not armed: harmless
            )
        ).timers
    )
    assert len(table) == 3 and table.deadline(("join", "g")) == 200
    assert table.next_deadline() == 200
    assert table.pop_due(199) is None
    assert table.pop_due(1000) == ("join", "g")
    # a tie goes in scheduling order
    assert table.pop_due(1000) == ("heartbeat", "g", "a")
    table.cancel(("heartbeat", "g", "b"))
    assert table.pop_due(1000) is None and table.next_deadline() is None and len(table) == 0


def test_a_replaced_deadline_fires_once_at_its_new_time() -> None:
    table = TimerTable()
    table.schedule(("sync", "g", "1"), 100)
    table.schedule(("sync", "g", "1"), 400)
    assert table.pop_due(300) is None
    assert table.pop_due(400) == ("sync", "g", "1")
    assert table.pop_due(10_000) is None


def test_shared_sequence_orders_ties_with_the_hosts_queue() -> None:
    counter = iter(range(1, 100))
    table = TimerTable(sequence=lambda: next(counter))
    table.schedule(("join", "g"), 50)
    assert table.peek() == (50, 1)


def test_rebuilt_from_armed_timers() -> None:
    armed = (ScheduleTimer(("join", "g"), 70), ScheduleTimer(("heartbeat", "g", "a"), 70))
    table = TimerTable.from_armed(armed)
    assert table.armed() == {("join", "g"): 70, ("heartbeat", "g", "a"): 70}
    assert [table.pop_due(70), table.pop_due(70)] == [("heartbeat", "g", "a"), ("join", "g")]  # by key


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 4), st.integers(0, 1000)), max_size=60))
def test_matches_a_plain_dict_model(ops: list[tuple[bool, int, int]]) -> None:
    """Against the simplest model: a dict of key -> (deadline, order), the minimum popped."""
    table = TimerTable()
    model: dict[tuple[str, ...], tuple[int, int]] = {}
    order = 0
    for schedule, k, deadline in ops:
        key = ("heartbeat", "g", str(k))
        if schedule:
            order += 1
            table.schedule(key, deadline)
            model[key] = (deadline, order)
        else:
            table.cancel(key)
            model.pop(key, None)
    now = Random(len(ops)).randint(0, 1000)
    popped = []
    while (key := table.pop_due(now)) is not None:
        popped.append(key)
    expected = [k for k, (d, _) in sorted(model.items(), key=lambda kv: kv[1]) if d <= now]
    assert popped == expected
    assert table.armed() == {k: d for k, (d, _) in model.items() if d > now}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["schedule", "cancel", "pop", "head"]), st.integers(0, 4), st.integers(0, 300)
        ),
        max_size=120,
    )
)
def test_matches_the_model_with_pops_between_re_armings(ops: list[tuple[str, int, int]]) -> None:
    """Keys re-armed earlier and later (a session timer at every heartbeat), cancelled and re-armed,
    with pops and looks at the head in between as the clock moves on: the same as the model."""
    table = TimerTable()
    model: dict[tuple[str, ...], tuple[int, int]] = {}
    order = now = 0
    for op, k, value in ops:
        key = ("heartbeat", "g", str(k))
        if op == "schedule":
            order += 1
            table.schedule(key, now + value)
            model[key] = (now + value, order)
        elif op == "cancel":
            table.cancel(key)
            model.pop(key, None)
        elif op == "pop":
            now += value // 10
            due = [k for k, (d, _) in sorted(model.items(), key=lambda kv: kv[1]) if d <= now]
            expected = due[0] if due else None
            assert table.pop_due(now) == expected
            if expected is not None:
                del model[expected]
        else:
            first = min(model.items(), key=lambda kv: kv[1], default=None)
            head = table.head()
            if first is None:
                assert head is None
            else:
                assert head is not None and (head[0], head[2]) == (first[1][0], first[0])
        assert table.armed() == {k: d for k, (d, _) in model.items()}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["schedule", "cancel", "pop", "head"]), st.integers(0, 4), st.integers(0, 30)
        ),
        max_size=120,
    )
)
def test_a_constant_tie_orders_a_milliseconds_keys_by_key_with_pops_between(
    ops: list[tuple[str, int, int]],
) -> None:
    """The same with a constant tie (keys due at one millisecond come out in key order), where a key
    re-armed for the same deadline makes an entry equal to the one already queued."""
    table = TimerTable(sequence=lambda: 0)
    model: dict[tuple[str, ...], int] = {}
    now = 0
    for op, k, value in ops:
        key = ("heartbeat", "g", str(k))
        if op == "schedule":
            table.schedule(key, now + value)
            model[key] = now + value
        elif op == "cancel":
            table.cancel(key)
            model.pop(key, None)
        elif op == "pop":
            now += value // 3
            due = sorted((d, k) for k, d in model.items() if d <= now)
            expected = due[0][1] if due else None
            assert table.pop_due(now) == expected
            if expected is not None:
                del model[expected]
        else:
            first = min(((d, k) for k, d in model.items()), default=None)
            head = table.head()
            if first is None:
                assert head is None
            else:
                assert head is not None and (head[0], head[2]) == first
        assert table.armed() == model
