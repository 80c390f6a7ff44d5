"""The fast server assignors (``kgroup.group.assignors.fast``) answer exactly what the step-by-step
reference answers (``assign_reference``): the same members, topics and partitions, each in the same
order, on random groups over several rounds — each round starting from the previous answer, as the
coordinator does — and the same errors. The oracle tests (tests/apache_kafka/test_server_assignors.py)
hold both to Apache Kafka's own classes."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.group.assignors import (
    GroupAssignment,
    InvertedTarget,
    MemberSpec,
    PartitionAssignorError,
    RangeAssignor,
    SubscriptionType,
    TopicDescriber,
    TopicId,
    UniformAssignor,
    assignment_from_record,
    group_spec,
    subscription_type,
    topic_id_set,
)


def _ordered(result: GroupAssignment) -> list[tuple[str, list[tuple[TopicId, tuple[int, ...]]]]]:
    return [(m, list(a.items())) for m, a in result.items()]


def _answer(
    assign: object, spec: object, describer: TopicDescriber
) -> GroupAssignment | type[PartitionAssignorError]:
    try:
        return assign(spec, describer)  # type: ignore[operator,no-any-return]
    except PartitionAssignorError:
        return PartitionAssignorError


@dataclass(frozen=True)
class _Group:
    topics: dict[TopicId, int]
    members: list[tuple[str, tuple[TopicId, ...], str | None]]
    kind: SubscriptionType | None
    rounds: int
    churn: list[tuple[int, int]]  # per later round: members leaving (from the front), joining


@st.composite
def _groups(draw: st.DrawFn) -> _Group:
    topic_count = draw(st.integers(1, 12))
    ids = draw(
        st.lists(st.integers(0, (1 << 128) - 1), min_size=topic_count, max_size=topic_count, unique=True)
    )
    big = draw(st.booleans())
    topics = {TopicId.from_int(i): draw(st.integers(0, 300 if big else 20)) for i in ids}
    ghost = TopicId.from_int(draw(st.integers(0, (1 << 128) - 1)))  # a topic not in the metadata
    pool = [*topics, ghost] if draw(st.integers(0, 9)) == 0 else list(topics)
    homogeneous = draw(st.booleans())
    shared = tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True)))
    count = draw(st.integers(1, 40))
    static = draw(st.booleans())
    names = draw(
        st.lists(
            st.text("abcxyzAB-_09\u00e9\U0001f600", min_size=1, max_size=6),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    members = []
    for name in names:
        subscription = (
            shared
            if homogeneous
            else tuple(draw(st.lists(st.sampled_from(pool), min_size=0, max_size=len(pool), unique=True)))
        )
        instance = draw(st.one_of(st.none(), st.sampled_from(["i1", "i2", "i3"]))) if static else None
        members.append((name, subscription, instance))
    rounds = draw(st.integers(1, 3))
    churn = [(draw(st.integers(0, 3)), draw(st.integers(0, 3))) for _ in range(rounds)]
    kind = draw(st.sampled_from([None, None, SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS]))
    return _Group(topics, members, kind, rounds, churn)


@pytest.mark.parametrize("assignor", [UniformAssignor(), RangeAssignor()], ids=["uniform", "range"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group=_groups(), inverted=st.sampled_from([None, "dict", "kept"]))
def test_the_fast_path_answers_as_the_reference(
    assignor: UniformAssignor | RangeAssignor, group: _Group, inverted: str | None
) -> None:
    """``inverted``: no inverted target assignment, one as a plain dict, or the coordinator's
    :class:`InvertedTarget` kept move by move across the rounds (its bytes read by the fast path)."""
    describer = TopicDescriber(group.topics)
    members = list(group.members)
    current: dict[str, dict[TopicId, tuple[int, ...]]] = {}
    kept = InvertedTarget()
    for number in range(group.rounds):
        leave, join = group.churn[number]
        if number:
            members = members[leave:] + [(f"{m}-r{number}", s, i) for m, s, i in members[:join]]
        if not members:
            return
        specs = [
            (m, MemberSpec(topic_id_set(s), assignment_from_record(current.get(m, {}).items()), i))
            for m, s, i in members
        ]
        kind = group.kind or subscription_type(s for _, s, _ in members)
        assigned: dict[TopicId, dict[int, str]] = {}
        for m, record in current.items():
            for topic, partitions in record.items():
                for p in partitions:
                    assigned.setdefault(topic, {})[p] = m
        assert kept == assigned
        for topic, owners in kept.items():
            assert [p for p, bit in enumerate(kept.flags[topic]) if bit] == sorted(owners), topic
        handed = {None: None, "dict": assigned, "kept": kept}[inverted]
        spec = group_spec(specs, kind, handed)
        fast = _answer(assignor.assign, spec, describer)
        reference = _answer(assignor.assign_reference, spec, describer)
        if fast is PartitionAssignorError or reference is PartitionAssignorError:
            assert fast is reference
            return
        assert _ordered(fast) == _ordered(reference)  # type: ignore[arg-type]
        answer = {m: dict(a) for m, a in fast.items()}  # type: ignore[union-attr]
        # the coordinator's records: a departed member's target goes, every other one is replaced
        for m in current.keys() - answer.keys():
            kept.move(m, current[m], {})
        for m, record in answer.items():
            kept.move(m, current.get(m, {}), record)
        current = answer


def test_the_inverted_target_follows_moves_as_kafka_updates_it() -> None:
    """``updateInvertedTargetAssignment``: a partition a member loses is removed only if it is still
    that member's (another member's newer target may hold it already); a topic nobody holds goes."""
    a, b = TopicId.from_int(1), TopicId.from_int(2)
    kept = InvertedTarget()
    kept.move("m1", {}, {a: (0, 1, 5)})
    kept.move("m2", {}, {b: (2,)})
    assert kept == {a: {0: "m1", 1: "m1", 5: "m1"}, b: {2: "m2"}}
    assert bytes(kept.flags[a]) == bytes([1, 1, 0, 0, 0, 1]) and bytes(kept.flags[b]) == bytes([0, 0, 1])
    kept.move("m2", {b: (2,)}, {a: (5,)})  # m2 takes a-5 before m1's record drops it
    kept.move("m1", {a: (0, 1, 5)}, {a: (0,)})
    assert kept == {a: {0: "m1", 5: "m2"}}
    assert list(kept) == [a] and list(kept.flags) == [a]
    assert bytes(kept.flags[a]) == bytes([1, 0, 0, 0, 0, 1])
    kept.move("m1", {a: (0,)}, {})
    kept.move("m2", {a: (5,)}, {})
    assert kept == {} and not kept.flags
    # a negative partition (no assignor gives one) stays in the map and flags nothing
    kept.move("m1", {}, {a: (-1, 2)})
    assert kept == {a: {-1: "m1", 2: "m1"}} and bytes(kept.flags[a]) == bytes([0, 0, 1])
    kept.move("m1", {a: (-1, 2)}, {a: (2,)})
    assert kept == {a: {2: "m1"}} and bytes(kept.flags[a]) == bytes([0, 0, 1])


@pytest.mark.parametrize(
    ("counts", "members", "shared"),
    [
        ([3] * 5, 7, True),  # three members get (k,) of every topic, in one key order: built from a template
        ([3] * 80, 7, True),  # a table of 128 buckets (the class's put order)
        ([4, 4, 4, 3], 6, True),  # the last topic runs out first: a narrower map, built key by key
        ([2, 5, 2, 5], 3, True),  # equal widths, unequal ranges: key by key
        ([6] * 5, 2, False),  # heterogeneous: members listing the topics in other orders
    ],
)
def test_range_maps_of_one_range_over_shared_keys_are_the_references(
    counts: list[int], members: int, shared: bool
) -> None:
    """The range answer builds a map whose every topic got the same range, over the widest map's keys,
    from one template (``dict.fromkeys``); the maps are the reference's, order and all."""
    topics = {TopicId.from_int(7919 * (i + 1) << 64 | i): c for i, c in enumerate(counts)}
    names = list(topics)
    specs = []
    for m in range(members):
        listed = tuple(names) if shared or m % 2 == 0 else tuple(reversed(names))
        specs.append((f"member-{m:02d}", MemberSpec(topic_id_set(listed), {}, None)))
    kind = SubscriptionType.HOMOGENEOUS if shared else SubscriptionType.HETEROGENEOUS
    spec = group_spec(specs, kind, None)
    describer = TopicDescriber(topics)
    fast = RangeAssignor().assign(spec, describer)
    assert _ordered(fast) == _ordered(RangeAssignor().assign_reference(spec, describer))
    assert any(len(a) > 1 for a in fast.values())
