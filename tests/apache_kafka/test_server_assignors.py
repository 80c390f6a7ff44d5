"""kgroup's server assignors against Apache Kafka's own ``UniformAssignor`` / ``RangeAssignor`` classes.

Kafka answers through the run's shared oracle JVM (``kafka_oracle``, :meth:`KafkaOracle.server_assign`).
Every comparison is exact: the member order (``memberIds()``), the subscription type, every member's
topics and partitions *in the order Kafka's collections iterate them* (which is what the next round
starts from), and errors.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.group.server_assignors.vectors import all_paths

from kgroup.group.assignors import (
    PartitionAssignorError,
    SubscriptionType,
    TopicDescriber,
    TopicId,
    create_server_assignor,
    subscription_type,
)
from kgroup.javacompat import JavaHashSet, java_integer_hash
from kgroup.testing.apache_kafka import (
    KafkaOracle,
    ServerAnswer,
    ServerMember,
    kgroup_group_spec,
    server_vector_group,
)

ASSIGNORS = ("uniform", "range")


def _kgroup(
    assignor: str, topics: dict[TopicId, int], members: Sequence[ServerMember], kind: SubscriptionType
) -> tuple[tuple[str, ...], dict[str, tuple[tuple[TopicId, tuple[int, ...]], ...]] | None]:
    spec = kgroup_group_spec(members, kind)
    try:
        result = create_server_assignor(assignor).assign(spec, TopicDescriber(topics))
    except PartitionAssignorError:
        return tuple(spec.members), None
    return tuple(spec.members), {m: tuple(a.items()) for m, a in result.items()}


def _assert_same(
    answer: ServerAnswer,
    assignor: str,
    topics: dict[TopicId, int],
    members: Sequence[ServerMember],
    kind: SubscriptionType,
) -> None:
    order, mine = _kgroup(assignor, topics, members, kind)
    assert order == answer.member_ids
    assert kind.value == answer.subscription_type
    if answer.error is not None:
        assert mine is None, f"Kafka failed ({answer.error}), kgroup answered"
        return
    assert mine is not None, "kgroup raised PartitionAssignorError, Kafka answered"
    assert mine == answer.assignment


# --- the recorded vectors, against 4.4.0 itself ------------------------------------------------------


@pytest.mark.parametrize("path", all_paths(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_vector_input_against_kafka(kafka_oracle: KafkaOracle, path: Path) -> None:
    """Every vector's input, answered by Kafka 4.4.0 (including the ten whose old-trunk answer changed).
    Kafka's side derives the subscription type itself here (no vector subscribes to a missing topic)."""
    raw = json.loads(path.read_text())
    group = server_vector_group(raw["input"], raw["expected"]["topicIds"])
    kind = subscription_type(set(m["topics"]) for m in raw["input"]["members"])
    assignor = raw["assignor"].removeprefix("server-")
    answer = kafka_oracle.server_assign(assignor, group.topics, group.members)
    _assert_same(answer, assignor, group.topics, group.members, kind)


# --- random groups over several rounds ---------------------------------------------------------------


@dataclass(frozen=True)
class _Member:
    member_id: str
    topics: tuple[str, ...]  # subscribed names, some maybe not created yet
    instance_id: str | None


@dataclass(frozen=True)
class _Round:
    """What changes before the next assignment."""

    leave: frozenset[int]  # indices into the current member list
    join: tuple[_Member, ...]
    new_topics: tuple[tuple[str, int, int], ...]  # name, id bits, partitions
    grow: tuple[tuple[int, int], ...]  # topic index, extra partitions
    resubscribe: tuple[tuple[int, tuple[str, ...]], ...]


_NAMES = [f"t{i}" for i in range(12)] + ["orders", "payments", "a.b_c", "Z"]


def _member_ids() -> st.SearchStrategy[str]:
    return st.one_of(
        st.from_regex(r"c[0-9]{1,3}", fullmatch=True),
        st.from_regex(r"consumer-g-[0-9]-[0-9a-f]{8}", fullmatch=True),
        st.text("abcxyzABC_-", min_size=1, max_size=6),
    )


@st.composite
def _scenario(draw: st.DrawFn) -> tuple[bool, dict[str, tuple[int, int]], list[_Member], list[_Round]]:
    homogeneous = draw(st.booleans())
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=8, unique=True))
    big = draw(st.booleans())
    topics = {
        n: (draw(st.integers(0, (1 << 128) - 1)), draw(st.integers(1, 300 if big else 24))) for n in names
    }
    pool = names + draw(st.lists(st.sampled_from(_NAMES), max_size=2))  # some not created yet

    def subscription() -> tuple[str, ...]:
        return tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True)))

    shared = subscription()
    ids = draw(st.lists(_member_ids(), min_size=1, max_size=25, unique=True))
    static = draw(st.booleans())

    def member(member_id: str) -> _Member:
        instance = (
            draw(st.one_of(st.none(), st.from_regex(r"i[0-9]{1,2}", fullmatch=True))) if static else None
        )
        return _Member(member_id, shared if homogeneous else subscription(), instance)

    members = [member(m) for m in ids]
    rounds = []
    for number in range(draw(st.integers(1, 3))):
        joiners = draw(st.lists(_member_ids(), max_size=4, unique=True))
        rounds.append(
            _Round(
                leave=frozenset(draw(st.lists(st.integers(0, 40), max_size=3))),
                join=tuple(member(f"{j}-r{number}") for j in joiners),
                new_topics=tuple(
                    (f"new{number}-{i}", draw(st.integers(0, (1 << 128) - 1)), draw(st.integers(1, 30)))
                    for i in range(draw(st.integers(0, 2)))
                ),
                grow=tuple(draw(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 10)), max_size=2))),
                resubscribe=()
                if homogeneous
                else tuple(
                    draw(st.lists(st.tuples(st.integers(0, 40), st.just(subscription())), max_size=2))
                ),
            )
        )
    return homogeneous, topics, members, rounds


def _rows(
    members: list[_Member],
    ids: dict[str, TopicId],
    records: dict[str, tuple[tuple[TopicId, tuple[int, ...]], ...]],
) -> list[ServerMember]:
    return [
        ServerMember(
            m.member_id,
            tuple(ids[n] for n in m.topics if n in ids),
            records.get(m.member_id, ()),
            m.instance_id,
        )
        for m in members
    ]


def _run_rounds(
    oracle: KafkaOracle,
    assignor: str,
    scenario: tuple[bool, dict[str, tuple[int, int]], list[_Member], list[_Round]],
) -> None:
    _, topic_spec, members, rounds = scenario
    ids = {n: TopicId.from_int(bits) for n, (bits, _) in topic_spec.items()}
    counts = {ids[n]: p for n, (_, p) in topic_spec.items()}
    records: dict[str, tuple[tuple[TopicId, tuple[int, ...]], ...]] = {}
    for change in [None, *rounds]:
        if change is not None:
            members = [m for i, m in enumerate(members) if i not in change.leave]
            taken = {m.member_id for m in members}
            members += [m for m in change.join if m.member_id not in taken]
            for name, bits, partitions in change.new_topics:
                ids[name] = TopicId.from_int(bits)
                counts[ids[name]] = partitions
            ordered = list(counts)
            for index, extra in change.grow:
                if index < len(ordered):
                    counts[ordered[index]] += extra
            for index, topics in change.resubscribe:
                if index < len(members):
                    members[index] = replace(members[index], topics=topics)
            if not members:
                return
        kind = subscription_type(set(m.topics) for m in members)
        rows = _rows(members, ids, records)
        answer = oracle.server_assign(assignor, dict(counts), rows, kind)
        _assert_same(answer, assignor, dict(counts), rows, kind)
        if answer.error is not None:
            return
        # the coordinator's next round starts from the target it recorded (topics in Kafka's order)
        records = dict(answer.assignment)


@pytest.mark.parametrize("assignor", ASSIGNORS)
@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(scenario=_scenario())
def test_random_groups_over_rounds_match_kafka(
    kafka_oracle: KafkaOracle,
    assignor: str,
    scenario: tuple[bool, dict[str, tuple[int, int]], list[_Member], list[_Round]],
) -> None:
    _run_rounds(kafka_oracle, assignor, scenario)


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_a_current_assignment_beyond_the_topic_fails_as_kafka_fails(
    kafka_oracle: KafkaOracle, assignor: str
) -> None:
    """Found by the random rounds in CI: a new topic drawn with t0's id shrinks it from 2 partitions
    to 1 while c0's current assignment still names t0-1. Kafka's heterogeneous uniform builder fails
    (its owner array is one partition long); kgroup's raised IndexError instead of the assignor's
    error. Both now fail the same way (range answers, on both)."""
    scenario = (
        False,
        {"t0": (1, 2), "t1": (0, 1)},
        [_Member("c0", ("t0",), None)],
        [
            _Round(
                leave=frozenset(),
                join=(_Member("c0-r0", ("t0", "t1"), None),),
                new_topics=(("new0-0", 1, 1),),
                grow=(),
                resubscribe=(),
            )
        ],
    )
    _run_rounds(kafka_oracle, assignor, scenario)


def test_members_joining_a_big_topic_one_by_one_match_kafka(kafka_oracle: KafkaOracle) -> None:
    """Found by the join-by-join differential run on 5,000 partitions: from about 15 members on, a
    member's target is a ``HashSet`` of 512 buckets over partitions up to 4,999, so up to 10 partitions
    share a bucket, and a chain of 9 in a table of 64+ buckets becomes a tree, which orders its bucket
    its own way (root first, each new node after its tree parent). kgroup took tree buckets for plain
    chains: the 20th join iterated a member's partitions in another order than Kafka, the 29th gave
    two members each other's partition. Each round starts from the target Kafka recorded, as the
    coordinator's next one does; the fast path and the reference must both agree."""
    topic = TopicId.from_int(0x1234567890ABCDEF0FEDCBA987654321)
    counts = {topic: 5000}
    topics = (topic,)
    ids = [f"member-{i:03d}" for i in range(30)]
    records: dict[str, tuple[tuple[TopicId, tuple[int, ...]], ...]] = {}
    trees = 0
    for joined in range(1, len(ids) + 1):
        rows = [ServerMember(m, topics, records.get(m, ())) for m in ids[:joined]]
        answer = kafka_oracle.server_assign("uniform", counts, rows, SubscriptionType.HOMOGENEOUS)
        _assert_same(answer, "uniform", counts, rows, SubscriptionType.HOMOGENEOUS)
        spec = kgroup_group_spec(rows, SubscriptionType.HOMOGENEOUS)
        reference = create_server_assignor("uniform").assign_reference(spec, TopicDescriber(counts))  # type: ignore[attr-defined]
        assert {m: tuple(a.items()) for m, a in reference.items()} == answer.assignment, joined
        records = dict(answer.assignment)
        trees += sum(
            JavaHashSet.copy_of(java_integer_hash, parts).treeified
            for record in records.values()
            for _, parts in record
        )
    assert trees  # the targets Kafka recorded do have tree buckets
