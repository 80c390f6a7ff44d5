"""The benchmark cases have exactly the shapes PERFORMANCE.md describes (checked on small scales)."""

from __future__ import annotations

import pytest

from kgroup.assignors.api import AssignmentRequest
from kgroup.bench.cases import (
    CASES,
    CaseShape,
    Phase,
    SubscriptionKind,
    build_request,
    build_topics,
    case_by_name,
    consumer_names,
    initial_members,
    partition_racks,
    phases_for,
    reassign_members,
    topic_names,
)
from kgroup.model import KgroupError, TopicPartition


def test_full_size_shapes_match_the_performance_table() -> None:
    sizes = {name: (c.topics, c.partitions, c.consumers, c.subscription, c.consumer_racks)
             for name, c in CASES.items()}
    assert sizes == {
        "uniform": (500, 2000, 2000, SubscriptionKind.UNIFORM, False),
        "uniform-rack": (50, 2000, 2000, SubscriptionKind.UNIFORM, True),
        "nonequal": (500, 2000, 2000, SubscriptionKind.NONEQUAL, False),
        "nonequal-rack": (50, 2000, 2000, SubscriptionKind.NONEQUAL, True),
        "notimeout": (100, 200, 500, SubscriptionKind.HALVES, False),
        "notimeout-rack": (50, 200, 500, SubscriptionKind.HALVES, True),
    }
    assert CASES["uniform"].total_partitions == 1_000_000


def test_names_are_padded_to_the_digits_of_the_count() -> None:
    topics = topic_names(500)
    assert topics[0] == "t000" and topics[7] == "t007" and topics[-1] == "t499"
    consumers = consumer_names(2000)
    assert consumers[0] == "c0000" and consumers[42] == "c0042" and consumers[-1] == "c1999"
    assert consumer_names(500)[0] == "c000"
    assert topic_names(50)[-1] == "t49"


@pytest.mark.parametrize("topic_index", [0, 1, 2, 7, 499])
@pytest.mark.parametrize("partition", [0, 1, 5, 8, 1999])
def test_partition_racks_follow_the_replica_rule(topic_index: int, partition: int) -> None:
    brokers = [(partition + j + topic_index) % 9 for j in range(3)]
    assert partition_racks(topic_index, partition) == frozenset("abc"[b % 3] for b in brokers)
    # three consecutive brokers of nine sit on three different racks
    assert partition_racks(topic_index, partition) == frozenset("abc")


def test_topics_carry_racks_and_share_rack_sets() -> None:
    shape = CASES["notimeout"].scaled(0.1)
    topics = build_topics(shape)
    assert list(topics) == topic_names(shape.topics)
    for t in topics.values():
        assert t.partitions == shape.partitions
        assert t.racks is not None and len(t.racks) == shape.partitions
        assert len({id(r) for r in t.racks}) == 1  # interned: one shared frozenset


def test_scaling_shrinks_counts_and_rejects_bad_scales() -> None:
    small = CASES["uniform"].scaled(0.01)
    assert (small.topics, small.partitions, small.consumers) == (5, 20, 20)
    assert CASES["uniform"].scaled(1) is CASES["uniform"]
    for bad in (0, -1, 1.5):
        with pytest.raises(KgroupError, match="scale"):
            CASES["uniform"].scaled(bad)


def _small(name: str) -> CaseShape:
    return CASES[name].scaled(0.02)


def test_uniform_subscriptions_and_no_consumer_racks() -> None:
    shape = _small("uniform")
    members = initial_members(shape)
    assert [m.member_id for m in members] == consumer_names(shape.consumers)
    everything = tuple(topic_names(shape.topics))
    assert all(m.topics == everything for m in members)
    assert all(m.rack_id is None and not m.owned and m.generation == -1 for m in members)


def test_nonequal_last_consumer_takes_the_first_topic_only() -> None:
    shape = _small("nonequal-rack")
    members = initial_members(shape)
    everything = tuple(topic_names(shape.topics))
    assert all(m.topics == everything for m in members[:-1])
    assert members[-1].topics == everything[:1]
    assert [m.rack_id for m in members[:4]] == ["a", "b", "c", "a"]


def test_notimeout_halves() -> None:
    shape = CASES["notimeout"].scaled(0.04)  # 4 topics, 8 partitions, 20 consumers
    members = initial_members(shape)
    names = topic_names(shape.topics)
    first, second = tuple(names[: len(names) // 2]), tuple(names[len(names) // 2:])
    for i, m in enumerate(members):
        assert m.topics == (first if i % 4 == 0 else second)


def test_initial_request_prefers_rack_aware_logic_like_kafkas_tests() -> None:
    request = build_request(_small("uniform-rack"), "range", Phase.INITIAL)
    assert isinstance(request, AssignmentRequest)
    assert request.prefer_rack_aware_logic is True
    assert len(request.members) == _small("uniform-rack").consumers


def test_cooperative_reassign_reports_initial_result_as_owned_with_generation_1() -> None:
    shape = _small("uniform-rack")
    names = consumer_names(shape.consumers)
    initial = {n: [TopicPartition("t0", i)] for i, n in enumerate(names)}
    members = reassign_members(shape, "cooperative-sticky", initial)
    assert [m.member_id for m in members] == names
    assert members[0].owned == () and members[0].generation == -1
    for i, m in enumerate(members[1:], start=1):
        assert m.owned == (TopicPartition("t0", i),)
        assert m.generation == 1
        assert m.rack_id == "abc"[i % 3]
        assert m.user_data is None


def test_eager_sticky_reassign_puts_owned_partitions_in_user_data_without_rack() -> None:
    userdata = pytest.importorskip("kgroup.assignors.sticky.userdata")
    shape = _small("uniform-rack")
    names = consumer_names(shape.consumers)
    initial = {n: [TopicPartition("t0", i), TopicPartition("t1", i)] for i, n in enumerate(names)}
    members = reassign_members(shape, "sticky", initial)
    assert members[0].user_data is None and members[0].rack_id == "a"
    for m in members[1:]:
        assert m.rack_id is None
        assert m.generation == 1
        assert m.user_data == userdata.encode_sticky_user_data(tuple(initial[m.member_id]), 1)


def test_phases() -> None:
    assert phases_for("range") == (Phase.INITIAL,)
    assert phases_for("roundrobin") == (Phase.INITIAL,)
    assert phases_for("sticky") == (Phase.INITIAL, Phase.REASSIGN)
    assert phases_for("cooperative-sticky") == (Phase.INITIAL, Phase.REASSIGN)
    with pytest.raises(KgroupError, match="phase"):
        build_request(_small("uniform"), "range", Phase.REASSIGN)


def test_unknown_case_is_a_one_line_error() -> None:
    with pytest.raises(KgroupError, match="unknown case 'huge'"):
        case_by_name("huge")
