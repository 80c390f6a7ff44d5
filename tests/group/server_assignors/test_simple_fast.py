"""The ``simple`` assignor's fast path (``kgroup.group.assignors.fast.simple_fast``) answers exactly what
its step-by-step reference answers: the same members, topics and partitions, each in the same order,
and the same errors — on random share groups whose current assignments are anything a coordinator
could hand it (unbalanced, shared past ``desiredSharing``, naming topics nobody subscribes to or
partitions no longer assignable), over several rounds each starting from the previous answer. The
oracle tests (tests/apache_kafka/test_simple_assignor.py) hold the reference to Kafka's own class."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kgroup.group.assignors import (
    GroupAssignment,
    MemberSpec,
    PartitionAssignorError,
    SimpleAssignor,
    SubscriptionType,
    TopicDescriber,
    TopicId,
    group_spec,
    topic_id_set,
)


def _ordered(result: GroupAssignment) -> list[tuple[str, list[tuple[TopicId, tuple[int, ...]]]]]:
    return [(m, [(t, tuple(p)) for t, p in a.items()]) for m, a in result.items()]


def _answer(assign: object, spec: object, describer: TopicDescriber) -> object:
    try:
        return _ordered(assign(spec, describer))  # type: ignore[operator]
    except PartitionAssignorError as error:
        return ("error", str(error))


@dataclass(frozen=True)
class _Group:
    topics: dict[TopicId, int]
    subscription: tuple[TopicId, ...]
    members: list[str]
    current: dict[str, dict[TopicId, tuple[int, ...]]]
    assignable: dict[TopicId, frozenset[int]] | None
    rounds: list[tuple[int, int]]  # per later round: members leaving (from the front), joining
    as_sets: bool


@st.composite
def _groups(draw: st.DrawFn) -> _Group:
    ids = draw(st.lists(st.integers(0, (1 << 128) - 1), min_size=1, max_size=6, unique=True))
    big = draw(st.booleans())
    topics = {TopicId.from_int(i): draw(st.integers(0, 300 if big else 12)) for i in ids}
    names = list(topics)
    subscription = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True)))
    if draw(st.integers(0, 19)) == 0:  # a topic the metadata lacks: both throw
        subscription += (TopicId.from_int(draw(st.integers(0, (1 << 128) - 1))),)
    members = [f"m{i}" for i in range(draw(st.integers(1, 60)))]
    current: dict[str, dict[TopicId, tuple[int, ...]]] = {}
    if draw(st.booleans()):
        for member in draw(st.lists(st.sampled_from(members), unique=True)):
            held: dict[TopicId, tuple[int, ...]] = {}
            for topic in draw(st.lists(st.sampled_from(names), max_size=3, unique=True)):
                top = topics[topic] + (2 if draw(st.integers(0, 9)) == 0 else 0)  # now and then stale
                if top:
                    held[topic] = tuple(
                        draw(st.lists(st.integers(0, top - 1), min_size=0, max_size=12, unique=True))
                    )
            current[member] = held
    assignable = None
    if draw(st.integers(0, 3)) == 0:  # a share group's initialised partitions only
        assignable = {
            topic: frozenset(p for p in range(topics[topic]) if draw(st.integers(0, 3)))
            for topic in draw(st.lists(st.sampled_from(names), unique=True))
        }
    rounds = [(draw(st.integers(0, 4)), draw(st.integers(0, 4))) for _ in range(draw(st.integers(1, 3)))]
    return _Group(topics, subscription, members, current, assignable, rounds, draw(st.booleans()))


_T = TopicId(0, 0)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group=_groups())
# a member is handed the same partition twice: the handing out does not add a member to the
# partition's members, so a second pass over the unfilled members can reach it again (its set, and
# the count that decides when it is filled, do not change)
@example(
    group=_Group(
        {_T: 2},
        (_T,),
        [f"m{i}" for i in range(9)],
        {
            "m0": {_T: ()},
            "m2": {_T: (1,)},
            "m3": {_T: (0, 1)},
            "m4": {_T: (1,)},
            "m6": {_T: (1,)},
            "m7": {_T: (0, 1)},
        },
        None,
        [(0, 0)],
        False,
    )
)
# the partition map grows past its threshold: partitions no longer assignable that members still hold
# are keys too, beyond the targets the map was sized for (it doubles before the next computeIfAbsent)
@example(
    group=_Group(
        {TopicId(0, 1): 11, TopicId(0, 2): 11},
        (TopicId(0, 1), TopicId(0, 2)),
        [f"m{i}" for i in range(4)],
        {"m2": {TopicId(0, 1): (0, 1, 6, 7, 9, 10), TopicId(0, 2): (2, 3, 7, 8, 9, 10)}},
        {TopicId(0, 1): frozenset({3, 7}), TopicId(0, 2): frozenset({6})},
        [(0, 0)],
        False,
    )
)
# fourteen topics whose single partition hashes to one bucket of the partition map (31 * hash + 0,
# hashes 64, 128, ...): the chain becomes a tree in its table of 64, and the kernel steps aside
@example(
    group=_Group(
        {**{TopicId(0, 64 * j): 1 for j in range(1, 15)}, TopicId(0, 1): 26},
        (*(TopicId(0, 64 * j) for j in range(1, 15)), TopicId(0, 1)),
        [f"m{i}" for i in range(51)],
        {},
        None,
        [(0, 0)],
        False,
    )
)
def test_the_fast_path_answers_as_the_reference(group: _Group) -> None:
    assignor = SimpleAssignor()
    describer = TopicDescriber(group.topics)
    members = list(group.members)
    current = dict(group.current)
    subscribed = topic_id_set(group.subscription)
    for number, (leave, join) in enumerate(group.rounds):
        if number:
            members = members[leave:] + [f"{m}-r{number}" for m in members[:join]]
        if not members:
            return
        maps = {
            m: {t: (set(p) if group.as_sets else tuple(p)) for t, p in current.get(m, {}).items()}
            for m in members
        }
        spec = group_spec(
            ((m, MemberSpec(subscribed, maps[m])) for m in members),
            SubscriptionType.HOMOGENEOUS,
            assignable=group.assignable,
        )
        fast = _answer(assignor.assign, spec, describer)
        reference = _answer(assignor.assign_reference, spec, describer)
        assert fast == reference
        if isinstance(fast, tuple):
            return
        current = {m: dict(a) for m, a in fast}  # type: ignore[attr-defined]


def test_the_fast_path_answers_a_share_group_itself() -> None:
    """The property above is not vacuous: a new group and one member joining it are answered by the
    kernel (not handed back to the reference)."""
    topics = {TopicId(0, i): 5 + i for i in range(4)}
    describer = TopicDescriber(topics)
    subscribed = topic_id_set(topics)
    members = [f"m{i}" for i in range(30)]
    spec = group_spec(((m, MemberSpec(subscribed)) for m in members), SubscriptionType.HOMOGENEOUS)
    fresh = SimpleAssignor().assign_fast(spec, describer)
    assert fresh is not None
    assert _ordered(fresh) == _ordered(SimpleAssignor().assign_reference(spec, describer))
    joined = group_spec(
        [*((m, MemberSpec(subscribed, dict(fresh[m]))) for m in members), ("late", MemberSpec(subscribed))],
        SubscriptionType.HOMOGENEOUS,
    )
    after = SimpleAssignor().assign_fast(joined, describer)
    assert after is not None
    assert _ordered(after) == _ordered(SimpleAssignor().assign_reference(joined, describer))
