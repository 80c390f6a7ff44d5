"""The share groups' ``SimpleAssignor``: balance and sharing on fresh groups (Kafka's own class is the
reference in tests/apache_kafka/test_simple_assignor.py; these hold without a JVM)."""

from __future__ import annotations

import random

import pytest

from kgroup.group.assignors import (
    MemberSpec,
    SimpleAssignor,
    TopicDescriber,
    TopicId,
    group_spec,
    topic_id_set,
)
from kgroup.group.assignors.simple import desired_assignment_counts

_QUOTAS = [
    (3, 7, 3, [2, 1, 1, 2, 1, 1, 1]),
    (4, 6, 2, [2, 1, 1, 2, 1, 1]),
    (10, 3, 1, [4, 3, 3]),
    (1, 5, 5, [1] * 5),
]


@pytest.mark.parametrize(("partitions", "members", "sharing", "quotas"), _QUOTAS)
def test_quotas_as_kafka_computes_them(
    partitions: int, members: int, sharing: int, quotas: list[int]
) -> None:
    assert desired_assignment_counts(members, partitions) == (sharing, quotas)


@pytest.mark.parametrize("seed", range(20))
def test_a_fresh_homogeneous_group_is_balanced_and_shared(seed: int) -> None:
    """No member over its quota, no partition over its sharing, every partition held; when members do
    not outnumber partitions, exactly balanced. (With sharing above one Kafka tolerates a member short
    of its quota when every partition left already has it: its builder's comment says so.)"""
    rng = random.Random(seed)
    topics = {TopicId.from_int(rng.getrandbits(128)): rng.randint(1, 20) for _ in range(rng.randint(1, 3))}
    subscribed = topic_id_set(topics)
    members = [f"m{i}" for i in range(rng.randint(1, 40))]
    spec = group_spec((m, MemberSpec(subscribed)) for m in members)
    result = SimpleAssignor().assign(spec, TopicDescriber(topics))
    total = sum(topics.values())
    sharing, quotas = desired_assignment_counts(len(members), total)
    holders: dict[tuple[TopicId, int], int] = {}
    for index, member in enumerate(spec.members):
        held = [(t, p) for t, ps in result[member].items() for p in ps]
        assert len(held) <= quotas[index]
        if sharing == 1:
            assert len(held) == quotas[index]
        for tp in held:
            holders[tp] = holders.get(tp, 0) + 1
    assert holders.keys() == {(t, p) for t, n in topics.items() for p in range(n)}
    assert max(holders.values()) <= sharing
