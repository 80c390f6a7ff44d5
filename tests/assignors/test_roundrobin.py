"""RoundRobinAssignor: every Kafka vector, the shared circular iterator, properties on random groups."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from assignors.reference import reference_roundrobin
from assignors.strategies import groups
from assignors.vectors_util import assert_vector_exact
from conftest import load_vectors
from kgroup.assignors import AssignmentRequest, create_assignor
from kgroup.assignors.invariants import check_all, check_balance_within_one
from kgroup.assignors.roundrobin import RoundRobinAssignor
from kgroup.model import Member, RebalanceProtocol, TopicMetadata, TopicPartition

VECTORS = load_vectors("roundrobin")


def test_all_roundrobin_vectors_are_present() -> None:
    assert len(VECTORS) == 215  # 15 from RoundRobinAssignorTest + 200 random (FORMAT.md)


@pytest.mark.parametrize(("name", "data"), VECTORS, ids=[n for n, _ in VECTORS])
def test_roundrobin_vector(name: str, data: dict[str, Any]) -> None:
    assert_vector_exact(name, data)


def _names(assignment: dict[str, list[TopicPartition]]) -> dict[str, list[str]]:
    return {m: [str(tp) for tp in ps] for m, ps in assignment.items()}


def test_registry_name_and_protocols() -> None:
    assignor = create_assignor("roundrobin")
    assert isinstance(assignor, RoundRobinAssignor)
    assert assignor.protocols == (RebalanceProtocol.EAGER,)


def test_kafka_javadoc_example_with_unequal_subscriptions() -> None:
    # RoundRobinAssignor's javadoc: C0 {t0}, C1 {t0, t1}, C2 {t0, t1, t2}; t0..t2 with 1, 2, 3 partitions
    topics = {"t0": TopicMetadata("t0", 1), "t1": TopicMetadata("t1", 2), "t2": TopicMetadata("t2", 3)}
    members = [Member("C0", ("t0",)), Member("C1", ("t0", "t1")), Member("C2", ("t0", "t1", "t2"))]
    assert _names(RoundRobinAssignor().assign(AssignmentRequest(members, topics))) == {
        "C0": ["t0-0"],
        "C1": ["t1-0"],
        "C2": ["t1-1", "t2-0", "t2-1", "t2-2"],
    }


def test_iterator_is_shared_across_topics_not_reset() -> None:
    # t1 has 1 partition -> c0; t2 then starts at c1, not at c0
    topics = {"t1": TopicMetadata("t1", 1), "t2": TopicMetadata("t2", 1)}
    members = [Member("c0", ("t1", "t2")), Member("c1", ("t1", "t2"))]
    assert _names(RoundRobinAssignor().assign(AssignmentRequest(members, topics))) == {
        "c0": ["t1-0"],
        "c1": ["t2-0"],
    }


def test_static_members_order_the_ring() -> None:
    topics = {"t": TopicMetadata("t", 3)}
    members = [Member("a", ("t",)), Member("b", ("t",), group_instance_id="x"), Member("c", ("t",))]
    assert _names(RoundRobinAssignor().assign(AssignmentRequest(members, topics))) == {
        "a": ["t-1"],
        "b": ["t-0"],
        "c": ["t-2"],
    }


def test_topic_order_is_java_string_order() -> None:
    # Java: "\U0001f600x" (D83D...) < "\ue000x"; Python orders them the other way round
    topics = {"\ue000x": TopicMetadata("\ue000x", 1), "\U0001f600x": TopicMetadata("\U0001f600x", 1)}
    members = [Member("c0", tuple(topics)), Member("c1", tuple(topics))]
    assert _names(RoundRobinAssignor().assign(AssignmentRequest(members, topics))) == {
        "c0": ["\U0001f600x-0"],
        "c1": ["\ue000x-0"],
    }


@settings(max_examples=300, deadline=None)
@given(groups())
def test_roundrobin_matches_the_literal_iterator(request: AssignmentRequest) -> None:
    got = RoundRobinAssignor().assign(request)
    assert got == reference_roundrobin(request)  # same lists in the same order
    assert list(got) == [m.member_id for m in request.members]
    assert check_all(request.members, request.topics, got, "roundrobin") == []


@settings(max_examples=100, deadline=None)
@given(groups(equal_subscriptions=True))
def test_equal_subscriptions_are_balanced_within_one(request: AssignmentRequest) -> None:
    got = RoundRobinAssignor().assign(request)
    assert check_balance_within_one(request.members, got) == []


@pytest.mark.parametrize(("partitions", "members"), [(17, 2), (100, 3), (1001, 7), (5, 7), (64, 8), (63, 8)])
def test_strided_and_appended_dealing_agree_with_the_reference(partitions: int, members: int) -> None:
    topics = {"t": TopicMetadata("t", partitions), "u": TopicMetadata("u", partitions + 3)}
    group = [Member(f"m{i}", ("t", "u") if i % 3 else ("u",)) for i in range(members)]
    request = AssignmentRequest(group, topics)
    assert RoundRobinAssignor().assign(request) == reference_roundrobin(request)
