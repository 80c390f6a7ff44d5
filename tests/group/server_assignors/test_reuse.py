"""The homogeneous ``uniform`` fast path remembers the current maps of its instance's last calls as
arrays (:mod:`kgroup.group.assignors.fast.reuse`) and reads again only the maps it has not seen. The
answers stay the reference's: over rounds kept as the coordinator keeps them (a member the assignor
left alone hands the next call the same map object, a changed member a new one built from its
record), and when a map it saw is another object now, or has another number of topics."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.group.assignors import (
    GroupAssignment,
    GroupSpec,
    MemberSpec,
    SubscriptionType,
    TopicDescriber,
    TopicId,
    UniformAssignor,
    assignment_from_record,
    group_spec,
    topic_id_set,
)
from kgroup.group.assignors.fast.reuse import (
    CALLS,
    LOOKAHEAD,
    MAX_EDITS,
    Seen,
    SeenMaps,
    aligned_rows,
    seen_rows,
)
from kgroup.object_ids import object_ids

HOMOGENEOUS = SubscriptionType.HOMOGENEOUS


def _ordered(result: GroupAssignment) -> list[tuple[str, list[tuple[TopicId, tuple[int, ...]]]]]:
    return [(m, list(a.items())) for m, a in result.items()]


def _inverted(spec: GroupSpec) -> dict[TopicId, dict[int, str]]:
    found: dict[TopicId, dict[int, str]] = {}
    for member_id, member in spec.members.items():
        for topic, partitions in member.assignment.items():
            for p in partitions:
                found.setdefault(topic, {})[p] = member_id
    return found


def _seen_rows(assignor: UniformAssignor, spec: GroupSpec) -> dict[str, int]:
    """Each member's row in the remembered call the next ``assign`` of ``spec`` would use (-1: read)."""
    maps = [m.assignment for m in spec.members.values()]
    sizes = np.fromiter(map(len, maps), np.int64, len(maps))
    found = assignor.seen_maps.rows(maps, sizes)
    if found is None:
        return dict.fromkeys(spec.members, -1)
    seen, rows = found
    # a row is only ever the very map's, seen with as many topics
    for m, row in enumerate(rows.tolist()):
        assert row == -1 or (seen.maps[row] is maps[m] and len(seen.maps[row]) == sizes[m])
    # every map the call saw is found, lined up by position or searched by id: the same rows
    ids = np.fromiter(map(id, maps), np.int64, len(maps))
    by_id = seen_rows(*_sorted(seen), seen.entry_start, ids, np.argsort(ids, kind="stable"), sizes)
    assert rows.tolist() == by_id.tolist()
    return dict(zip(spec.members, rows.tolist(), strict=True))


def _sorted(seen: Seen) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(seen.ids, kind="stable")
    return seen.ids[order], order


@dataclass(frozen=True)
class _Group:
    topics: dict[TopicId, int]
    subscription: tuple[TopicId, ...]
    members: list[str]
    churn: list[tuple[int, int]]  # per later round: members leaving (from the front), joining


@st.composite
def _groups(draw: st.DrawFn) -> _Group:
    count = draw(st.integers(1, 8))
    ids = draw(st.lists(st.integers(0, (1 << 128) - 1), min_size=count, max_size=count, unique=True))
    big = draw(st.booleans())
    topics = {TopicId.from_int(i): draw(st.integers(0, 300 if big else 20)) for i in ids}
    subscription = tuple(draw(st.lists(st.sampled_from(list(topics)), min_size=1, unique=True)))
    members = [f"m{i}" for i in range(draw(st.integers(1, 30)))]
    churn = [(draw(st.integers(0, 3)), draw(st.integers(0, 3))) for _ in range(draw(st.integers(2, 5)))]
    return _Group(topics, subscription, members, churn)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group=_groups(), with_inverted=st.booleans())
def test_rounds_kept_as_the_coordinator_keeps_them_answer_as_the_reference(
    group: _Group, with_inverted: bool
) -> None:
    describer = TopicDescriber(group.topics)
    subscription = topic_id_set(group.subscription)
    assignor = UniformAssignor()  # one instance over every round, as a coordinator's
    members = list(group.members)
    # the coordinator's target maps: replaced (a new object) only when a member's target changed
    targets: dict[str, dict[TopicId, tuple[int, ...]]] = {}
    for number, (leave, join) in enumerate(group.churn):
        if number:
            members = members[leave:] + [f"j{number}-{k}" for k in range(join)]
        if not members:
            return
        spec = group_spec([(m, MemberSpec(subscription, targets.get(m, {}))) for m in members], HOMOGENEOUS)
        if with_inverted:
            spec = GroupSpec(spec.members, spec.subscription_type, _inverted(spec))
        fast = assignor.assign(spec, describer)
        assert _ordered(fast) == _ordered(assignor.assign_reference(spec, describer))
        assert _ordered(fast) == _ordered(UniformAssignor().assign(spec, describer))  # nothing seen
        for member_id in members:
            new = fast.get(member_id, {})
            if new is not spec.members[member_id].assignment:
                targets[member_id] = assignment_from_record(new.items())


def _stable_group(count: int = 12) -> tuple[GroupSpec, TopicDescriber]:
    topics = {TopicId(7, i): 6 + i for i in range(5)}
    describer = TopicDescriber(topics)
    subscription = topic_id_set(topics)
    first = UniformAssignor().assign(
        group_spec([(f"m{i}", MemberSpec(subscription)) for i in range(count)], HOMOGENEOUS), describer
    )
    stable = group_spec(
        [(m, MemberSpec(subscription, assignment_from_record(a.items()))) for m, a in first.items()],
        HOMOGENEOUS,
    )
    return stable, describer


def _with(spec: GroupSpec, changes: dict[str, MemberSpec]) -> GroupSpec:
    return group_spec([(m, changes.get(m, s)) for m, s in spec.members.items()], HOMOGENEOUS)


def test_a_map_seen_before_is_not_read_again_and_one_joining_answers_as_the_reference() -> None:
    stable, describer = _stable_group()
    assignor = UniformAssignor()
    assert set(_seen_rows(assignor, stable).values()) == {-1}  # a fresh instance has seen nothing
    answer = assignor.assign(stable, describer)
    assert all(answer[m] is s.assignment for m, s in stable.members.items())  # a stable group: kept
    rows = _seen_rows(assignor, stable)
    assert all(r >= 0 for r in rows.values())  # every map of the last call is remembered
    subscription = next(iter(stable.members.values())).subscribed_topic_ids
    joined = group_spec([*stable.members.items(), ("new", MemberSpec(subscription))], HOMOGENEOUS)
    joined = GroupSpec(joined.members, HOMOGENEOUS, _inverted(joined))
    seen_rows = _seen_rows(assignor, joined)
    assert all(seen_rows[m] >= 0 for m in stable.members) and seen_rows["new"] == -1
    answer = assignor.assign(joined, describer)
    assert _ordered(answer) == _ordered(assignor.assign_reference(joined, describer))
    assert _ordered(answer) == _ordered(UniformAssignor().assign(joined, describer))


@pytest.mark.parametrize("how", ["another object", "changed in place"])
def test_a_map_that_changed_since_is_read_again(how: str) -> None:
    stable, describer = _stable_group()
    assignor = UniformAssignor()
    assignor.assign(stable, describer)
    # m0 and m1 trade maps (another object each), or m0's map is emptied in place: the group stays a
    # valid one, but those maps now say something else than what the assignor read
    ids = list(stable.members)
    a, b = stable.members[ids[0]], stable.members[ids[1]]
    if how == "another object":
        traded = _with(
            stable,
            {
                ids[0]: MemberSpec(a.subscribed_topic_ids, dict(b.assignment)),
                ids[1]: MemberSpec(b.subscribed_topic_ids, dict(a.assignment)),
            },
        )
        rows = _seen_rows(assignor, traded)
        assert rows[ids[0]] == rows[ids[1]] == -1
        assert all(rows[m] >= 0 for m in ids[2:])
    else:
        # a map changed in place: the number of its topics tells the remembered arrays are stale
        mutable = dict(a.assignment)
        grown = _with(stable, {ids[0]: MemberSpec(a.subscribed_topic_ids, mutable)})
        assignor.assign(grown, describer)
        assert _seen_rows(assignor, grown)[ids[0]] >= 0
        mutable.clear()  # m0 gave everything back
        traded = grown
        assert _seen_rows(assignor, traded)[ids[0]] == -1
    answer = assignor.assign(traded, describer)
    assert _ordered(answer) == _ordered(assignor.assign_reference(traded, describer))
    assert _ordered(answer) == _ordered(UniformAssignor().assign(traded, describer))


def test_only_plain_maps_are_remembered_and_only_the_last_calls() -> None:
    stable, describer = _stable_group()
    assignor = UniformAssignor()
    as_lists = _with(
        stable,
        {
            m: MemberSpec(s.subscribed_topic_ids, {t: list(p) for t, p in s.assignment.items()})
            for m, s in stable.members.items()
        },
    )
    answer = assignor.assign(as_lists, describer)
    assert _ordered(answer) == _ordered(assignor.assign_reference(as_lists, describer))
    assert set(_seen_rows(assignor, as_lists).values()) == {-1}  # not dicts of tuples: not kept
    assignor.assign(stable, describer)
    assert all(r >= 0 for r in _seen_rows(assignor, stable).values())
    for _ in range(CALLS):  # other groups' calls push it out
        other, _ = _stable_group(3)
        assignor.assign(other, describer)
    assert set(_seen_rows(assignor, stable).values()) == {-1}
    assert isinstance(assignor.seen_maps, SeenMaps)


def test_remembered_maps_are_read_in_this_call_s_topic_numbering() -> None:
    """The next call's subscription lists a new topic before the others (its topic table numbers
    them otherwise than the remembered call's): the remembered entries are renumbered, and the
    answer is the reference's."""
    stable, describer = _stable_group()
    assignor = UniformAssignor()
    assignor.assign(stable, describer)
    old = next(iter(stable.members.values())).subscribed_topic_ids
    topics = {**describer_topics(stable, describer), TopicId(7, 99): 9}
    wider = topic_id_set(topics)
    assert wider.index(TopicId(7, 99)) < len(old)  # the table's numbering differs from the last call's
    grown = group_spec([(m, MemberSpec(wider, s.assignment)) for m, s in stable.members.items()], HOMOGENEOUS)
    grown = GroupSpec(grown.members, HOMOGENEOUS, _inverted(grown))
    assert all(r >= 0 for r in _seen_rows(assignor, grown).values())  # read from the remembered call
    wider_describer = TopicDescriber(topics)
    answer = assignor.assign(grown, wider_describer)
    assert _ordered(answer) == _ordered(assignor.assign_reference(grown, wider_describer))


def describer_topics(spec: GroupSpec, describer: TopicDescriber) -> dict[TopicId, int]:
    subscription = next(iter(spec.members.values())).subscribed_topic_ids
    return {t: describer.num_partitions(t) for t in subscription}


def _members_as(spec: GroupSpec, order: list[tuple[str, MemberSpec]]) -> GroupSpec:
    joined = group_spec(order, HOMOGENEOUS)
    return GroupSpec(joined.members, HOMOGENEOUS, _inverted(joined))


@pytest.mark.parametrize(
    "change", ["join in the middle", "leave in the middle", "replaced", "three join", "reversed"]
)
def test_maps_are_found_by_position_or_by_id_whatever_the_member_order(change: str) -> None:
    """The coordinator hands members in its member table's order (a joining member lands anywhere):
    the remembered maps are lined up by position past members in, out or replaced, and found by id
    when the order changed wholesale; either way every map seen is found and the answer is the
    reference's."""
    stable, describer = _stable_group(40)
    assignor = UniformAssignor()
    assignor.assign(stable, describer)
    items = list(stable.members.items())
    subscription = items[0][1].subscribed_topic_ids
    if change == "join in the middle":
        items.insert(17, ("new", MemberSpec(subscription)))
    elif change == "leave in the middle":
        del items[20]
    elif change == "replaced":
        member, spec = items[9]
        items[9] = (member, MemberSpec(spec.subscribed_topic_ids, dict(spec.assignment)))
    elif change == "three join":
        items[5:5] = [(f"new{k}", MemberSpec(subscription)) for k in range(3)]
    changed = _members_as(stable, items)
    if change == "reversed":  # handed in another order wholesale (group_spec would restore Kafka's)
        changed = GroupSpec(dict(reversed(items)), HOMOGENEOUS, changed.assigned)
    maps = [m.assignment for m in changed.members.values()]
    sizes = np.fromiter(map(len, maps), np.int64, len(maps))
    seen = assignor.seen_maps.rows(maps, sizes)
    assert seen is not None
    lined_up = aligned_rows(object_ids(maps), seen[0].ids, seen[0].entry_start, sizes, MAX_EDITS)[1]
    assert lined_up == (change != "reversed")
    rows = _seen_rows(assignor, changed)
    kept = {m for m, s in changed.members.items() if s is stable.members.get(m)}
    assert {m for m, r in rows.items() if r >= 0} == kept  # every map seen, and only those
    answer = assignor.assign(changed, describer)
    assert _ordered(answer) == _ordered(assignor.assign_reference(changed, describer))
    assert _ordered(answer) == _ordered(UniformAssignor().assign(changed, describer))


@st.composite
def _edited(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], list[int]]:
    """Seen ids and their sizes, then ids made from them by a few edits, and their sizes."""
    seen = draw(st.lists(st.integers(1, 10**6), min_size=1, max_size=60, unique=True))
    seen_sizes = draw(st.lists(st.integers(0, 3), min_size=len(seen), max_size=len(seen)))
    ids, sizes = list(seen), list(seen_sizes)
    fresh = iter(range(10**7, 10**7 + 1000))
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(ids)))
        how = draw(st.sampled_from(["in", "out", "replace", "resize"]))
        if how == "in" or not ids:
            run = draw(st.integers(1, LOOKAHEAD + 2))
            ids[at:at] = [next(fresh) for _ in range(run)]
            sizes[at:at] = [1] * run
        elif at < len(ids):
            if how == "out":
                del ids[at], sizes[at]
            elif how == "replace":
                ids[at] = next(fresh)
            else:
                sizes[at] += 1
    return seen, seen_sizes, ids, sizes


@settings(max_examples=300, deadline=None)
@given(case=_edited(), max_edits=st.integers(0, 40))
def test_lining_up_gives_only_the_very_ids_row_and_finds_them_all_as_the_search_does(
    case: tuple[list[int], list[int], list[int], list[int]], max_edits: int
) -> None:
    seen, seen_sizes, ids, sizes = (np.array(x, np.int64) for x in case)
    starts = np.zeros(len(seen) + 1, np.int64)
    np.cumsum(seen_sizes, out=starts[1:])
    rows, lined_up = aligned_rows(ids, seen, starts, sizes, max_edits)
    if case[2] == case[0]:
        assert lined_up  # the same ids in the same order: no edit
    if not lined_up:
        return  # the caller searches instead
    for i, row in enumerate(rows.tolist()):  # never a wrong row
        assert row == -1 or (seen[row] == ids[i] and seen_sizes[row] == sizes[i])
    # what the search finds, lining up finds too
    order = np.argsort(seen, kind="stable")
    searched = seen_rows(seen[order], order, starts, ids, np.argsort(ids, kind="stable"), sizes)
    assert rows.tolist() == searched.tolist()
