"""kgroup's ``SimpleAssignor`` (share groups) against Apache Kafka 4.4.0's own class, in the oracle JVM.

Random share groups over several rounds, from fixed seeds: members join and leave (more members than
partitions as often as fewer), subscriptions differ or not, partitions become initialised (only those
are assignable), topics grow. Each round starts from the target Kafka answered the round before, as
the coordinator's next assignment does. Every comparison is exact: the member order, each member's
topics and partitions in the order Kafka's collections iterate them, and errors.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from kgroup.group.assignors import (
    PartitionAssignorError,
    SimpleAssignor,
    SubscriptionType,
    TopicDescriber,
    TopicId,
    subscription_type,
)
from kgroup.group.assignors.simple import desired_assignment_counts
from kgroup.testing.apache_kafka import KafkaOracle, ServerAnswer, ServerMember, kgroup_group_spec

_Record = tuple[tuple[TopicId, tuple[int, ...]], ...]


def _kgroup(
    topics: dict[TopicId, int],
    members: Sequence[ServerMember],
    kind: SubscriptionType,
    assignable: dict[TopicId, list[int]] | None,
) -> tuple[tuple[str, ...], dict[str, _Record] | None]:
    spec = kgroup_group_spec(members, kind, assignable)
    try:
        result = SimpleAssignor().assign(spec, TopicDescriber(topics))
    except PartitionAssignorError:
        return tuple(spec.members), None
    return tuple(spec.members), {m: tuple(a.items()) for m, a in result.items()}


def _assert_same(
    answer: ServerAnswer,
    topics: dict[TopicId, int],
    members: Sequence[ServerMember],
    kind: SubscriptionType,
    assignable: dict[TopicId, list[int]] | None,
) -> None:
    order, mine = _kgroup(topics, members, kind, assignable)
    assert order == answer.member_ids
    if answer.error is not None:
        assert mine is None, f"Kafka failed ({answer.error}), kgroup answered"
        return
    assert mine is not None, "kgroup raised PartitionAssignorError, Kafka answered"
    assert mine == answer.assignment


def _member_id(rng: random.Random) -> str:
    """A share consumer's id is its own ``Uuid.randomUuid().toString()`` (22 base64 characters)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    if rng.random() < 0.8:
        return "".join(rng.choice(alphabet) for _ in range(22))
    return f"c{rng.randrange(1000)}"


def _run(oracle: KafkaOracle, seed: int) -> int:
    """One random group over up to six rounds; returns how many rounds Kafka answered."""
    rng = random.Random(seed)
    homogeneous = rng.random() < 0.5
    names = [f"t{i}" for i in range(rng.randint(1, 4))]
    ids = {n: TopicId.from_int(rng.getrandbits(128)) for n in names}
    counts = {ids[n]: rng.randint(1, 12 if rng.random() < 0.7 else 60) for n in names}
    initialised: dict[TopicId, set[int]] = {
        t: {p for p in range(n) if rng.random() < 0.8} for t, n in counts.items()
    }
    use_assignable = rng.random() < 0.8

    def subscription() -> tuple[TopicId, ...]:
        return tuple(rng.sample(list(ids.values()), rng.randint(1, len(ids))))

    shared = subscription()
    members: list[tuple[str, tuple[TopicId, ...]]] = []
    for _ in range(rng.randint(1, 30)):
        members.append((_member_id(rng), shared if homogeneous else subscription()))
    records: dict[str, _Record] = {}
    answered = 0
    for round_number in range(rng.randint(1, 6)):
        if round_number:
            for _ in range(rng.randint(0, 4)):
                if members and rng.random() < 0.5:
                    members.pop(rng.randrange(len(members)))
            for _ in range(rng.randint(0, 5)):
                members.append((_member_id(rng), shared if homogeneous else subscription()))
            for topic, partitions in counts.items():  # more partitions initialised, some topics grow
                initialised[topic] |= {p for p in range(partitions) if rng.random() < 0.5}
                if initialised[topic] and rng.random() < 0.1:  # a partition's share state deleted
                    initialised[topic].discard(rng.choice(sorted(initialised[topic])))
                if rng.random() < 0.1:
                    counts[topic] = partitions + rng.randint(1, 5)
            if not homogeneous and members and rng.random() < 0.3:
                at = rng.randrange(len(members))
                members[at] = (members[at][0], subscription())
        unique: dict[str, tuple[TopicId, ...]] = dict(members)
        if not unique:
            return answered
        rows = [ServerMember(m, topics, records.get(m, ())) for m, topics in unique.items()]
        kind = subscription_type(set(r.topics) for r in rows)
        assignable = {t: sorted(ps) for t, ps in initialised.items()} if use_assignable else None
        answer = oracle.server_assign("simple", dict(counts), rows, kind, assignable=assignable)
        _assert_same(answer, dict(counts), rows, kind, assignable)
        if answer.error is not None:
            return answered
        answered += 1
        records = dict(answer.assignment)
    return answered


@pytest.mark.parametrize("block", range(4))
def test_random_share_groups_over_rounds_match_kafka(kafka_oracle: KafkaOracle, block: int) -> None:
    answered = sum(_run(kafka_oracle, seed) for seed in range(block * 60, (block + 1) * 60))
    assert answered > 60  # most groups are assigned, round after round


def test_a_member_filled_by_a_partition_outside_the_targets_fails_as_kafka_fails(
    kafka_oracle: KafkaOracle,
) -> None:
    """Two members, one initialised partition of two: a keeps partition 1 (no longer assignable, and
    the builders revoke only unsubscribed topics), which fills its quota of one; partition 0 wants two
    sharers, b takes it and leaves the unfilled set empty, and Kafka's restarted iterator throws
    NoSuchElementException. kgroup fails the same way."""
    topic = TopicId.from_int(0xABCDEF)
    counts = {topic: 2}
    rows = [ServerMember("a", (topic,), ((topic, (1,)),)), ServerMember("b", (topic,))]
    assignable = {topic: [0]}
    answer = kafka_oracle.server_assign(
        "simple", counts, rows, SubscriptionType.HOMOGENEOUS, assignable=assignable
    )
    assert answer.error is not None and "NoSuchElementException" in answer.error
    _assert_same(answer, counts, rows, SubscriptionType.HOMOGENEOUS, assignable)


def test_more_members_than_partitions_share_each_partition(kafka_oracle: KafkaOracle) -> None:
    """Seven members on three partitions: each partition has ceil(7/3) = 3 members, the quotas are
    Kafka's [2, 1, 1, 2, 1, 1, 1] in member order, and members one by one more match Kafka at each step."""
    topic = TopicId.from_int(0x0F1E2D3C4B5A69788796A5B4C3D2E1F0)
    counts = {topic: 3}
    records: dict[str, _Record] = {}
    ids = [f"member-{i}" for i in range(7)]
    for joined in range(1, len(ids) + 1):
        rows = [ServerMember(m, (topic,), records.get(m, ())) for m in ids[:joined]]
        answer = kafka_oracle.server_assign("simple", counts, rows, SubscriptionType.HOMOGENEOUS)
        _assert_same(answer, counts, rows, SubscriptionType.HOMOGENEOUS, None)
        records = dict(answer.assignment)
    sharing, quotas = desired_assignment_counts(7, 3)
    assert sharing == 3 and quotas == [2, 1, 1, 2, 1, 1, 1]
    holders: dict[int, int] = {}
    for record in records.values():
        for _, partitions in record:
            for p in partitions:
                holders[p] = holders.get(p, 0) + 1
    assert holders == {0: 3, 1: 3, 2: 3}


def test_only_initialised_partitions_are_assigned(kafka_oracle: KafkaOracle) -> None:
    topic = TopicId.from_int(0x1234)
    counts = {topic: 6}
    rows = [ServerMember(m, (topic,)) for m in ("a", "b")]
    assignable = {topic: [1, 4]}
    answer = kafka_oracle.server_assign(
        "simple", counts, rows, SubscriptionType.HOMOGENEOUS, assignable=assignable
    )
    _assert_same(answer, counts, rows, SubscriptionType.HOMOGENEOUS, assignable)
    given = sorted(p for record in answer.assignment.values() for _, ps in record for p in ps)
    assert given == [1, 4]
