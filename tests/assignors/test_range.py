"""RangeAssignor: every Kafka vector, the KIP-881 rack-aware rules, and properties on random groups."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from assignors.reference import reference_range
from assignors.strategies import groups
from assignors.vectors_util import assert_vector_exact
from conftest import load_vectors
from kgroup.assignors import AssignmentRequest, create_assignor
from kgroup.assignors.invariants import check_all
from kgroup.assignors.range import RangeAssignor
from kgroup.model import KgroupError, Member, RebalanceProtocol, TopicMetadata, TopicPartition

VECTORS = load_vectors("range")


def test_all_range_vectors_are_present() -> None:
    assert len(VECTORS) == 295  # 95 from RangeAssignorTest + 200 random (FORMAT.md)


@pytest.mark.parametrize(("name", "data"), VECTORS, ids=[n for n, _ in VECTORS])
def test_range_vector(name: str, data: dict[str, Any]) -> None:
    assert_vector_exact(name, data)


def _names(assignment: dict[str, list[TopicPartition]]) -> dict[str, list[str]]:
    return {m: [str(tp) for tp in ps] for m, ps in assignment.items()}


def test_registry_name_and_protocols() -> None:
    assignor = create_assignor("range")
    assert isinstance(assignor, RangeAssignor)
    assert assignor.name == "range"
    assert assignor.protocols == (RebalanceProtocol.EAGER,)
    assert not assignor.supports(RebalanceProtocol.COOPERATIVE)


def test_static_members_come_first_ordered_by_instance_id() -> None:
    topics = {"t": TopicMetadata("t", 5)}
    members = [
        Member("a", ("t",)),
        Member("z", ("t",), group_instance_id="i2"),
        Member("b", ("t",), group_instance_id="i1"),
    ]
    result = _names(RangeAssignor().assign(AssignmentRequest(members, topics)))
    assert result == {"a": ["t-4"], "z": ["t-2", "t-3"], "b": ["t-0", "t-1"]}


def test_member_order_is_java_string_order_not_python_order() -> None:
    # Java compares UTF-16 code units: U+1F600 (surrogates D83D DE00) sorts before U+E000
    topics = {"t": TopicMetadata("t", 3)}
    members = [Member("\ue000", ("t",)), Member("\U0001f600", ("t",))]
    result = _names(RangeAssignor().assign(AssignmentRequest(members, topics)))
    assert result == {"\ue000": ["t-2"], "\U0001f600": ["t-0", "t-1"]}


def test_missing_and_empty_topics_are_skipped_and_every_member_is_present() -> None:
    topics = {"t1": TopicMetadata("t1", 2), "empty": TopicMetadata("empty", 0)}
    members = [Member("c1", ("t1", "ghost", "empty")), Member("c2", ("ghost",)), Member("c3", ())]
    result = _names(RangeAssignor().assign(AssignmentRequest(members, topics)))
    assert result == {"c1": ["t1-0", "t1-1"], "c2": [], "c3": []}


def test_a_topic_listed_twice_in_a_subscription_counts_once() -> None:
    topics = {"t": TopicMetadata("t", 4)}
    members = [Member("c1", ("t", "t")), Member("c2", ("t",))]
    assert _names(RangeAssignor().assign(AssignmentRequest(members, topics))) == {
        "c1": ["t-0", "t-1"],
        "c2": ["t-2", "t-3"],
    }


def test_duplicate_member_ids_are_rejected() -> None:
    topics = {"t": TopicMetadata("t", 1)}
    with pytest.raises(KgroupError, match="appears twice"):
        RangeAssignor().assign(AssignmentRequest([Member("c", ("t",)), Member("c", ("t",))], topics))


def test_rack_aware_extra_partition_goes_to_the_first_member_that_exceeds_its_share() -> None:
    # 3 partitions, 2 members: n = 1, one extra. c1 (rack b) matches only partition 2, c0 (rack a)
    # matches 0 and 1; in the rack pass c0 takes 0 and 1 (it may exceed n first), c1 takes 2.
    racks = (frozenset("a"), frozenset("a"), frozenset("b"))
    topics = {"t": TopicMetadata("t", 3, racks)}
    members = [Member("c0", ("t",), rack_id="a"), Member("c1", ("t",), rack_id="b")]
    result = _names(RangeAssignor().assign(AssignmentRequest(members, topics)))
    assert result == {"c0": ["t-0", "t-1"], "c1": ["t-2"]}
    # ... and with racks swapped, the plain split would give c0 {0,1}: rack-aware gives c1 the extra
    members = [Member("c0", ("t",), rack_id="b"), Member("c1", ("t",), rack_id="a")]
    result = _names(RangeAssignor().assign(AssignmentRequest(members, topics)))
    assert result == {"c0": ["t-2"], "c1": ["t-0", "t-1"]}


def test_all_racks_everywhere_means_plain_range_unless_preferred() -> None:
    everywhere = (frozenset("ab"),) * 4
    topics = {"t": TopicMetadata("t", 4, everywhere)}
    members = [Member("c0", ("t",), rack_id="b"), Member("c1", ("t",), rack_id="a")]
    plain = _names(RangeAssignor().assign(AssignmentRequest(members, topics)))
    assert plain == {"c0": ["t-0", "t-1"], "c1": ["t-2", "t-3"]}
    # every partition matches every rack, so even the forced rack pass yields the same split
    forced = _names(RangeAssignor().assign(AssignmentRequest(members, topics, prefer_rack_aware_logic=True)))
    assert forced == plain


def test_empty_rack_id_means_no_rack() -> None:
    racks = (frozenset("b"), frozenset("a"))
    topics = {"t": TopicMetadata("t", 2, racks)}
    with_empty = [Member("c0", ("t",), rack_id=""), Member("c1", ("t",), rack_id="")]
    result = _names(RangeAssignor().assign(AssignmentRequest(with_empty, topics)))
    assert result == {"c0": ["t-0"], "c1": ["t-1"]}


def test_co_partitioned_topics_keep_partition_indexes_together() -> None:
    # t1 and t2: same subscribers, same partition count -> partition p of both go to one member
    racks = (frozenset("b"), frozenset("a"))
    topics = {"t1": TopicMetadata("t1", 2, racks), "t2": TopicMetadata("t2", 2, racks)}
    members = [Member("c0", ("t1", "t2"), rack_id="a"), Member("c1", ("t1", "t2"), rack_id="b")]
    result = _names(RangeAssignor().assign(AssignmentRequest(members, topics)))
    assert result == {"c0": ["t1-1", "t2-1"], "c1": ["t1-0", "t2-0"]}


@settings(max_examples=300, deadline=None)
@given(groups())
def test_range_matches_the_literal_reference_and_keeps_the_invariants(request: AssignmentRequest) -> None:
    got = RangeAssignor().assign(request)
    want = reference_range(request)
    assert {m: sorted(ps, key=TopicPartition.java_key) for m, ps in got.items()} == {
        m: sorted(ps, key=TopicPartition.java_key) for m, ps in want.items()
    }
    assert list(got) == [m.member_id for m in request.members]
    assert check_all(request.members, request.topics, got, "range") == []


@settings(max_examples=200, deadline=None)
@given(groups(co_partitioned=True, equal_subscriptions=True, max_members=5))
def test_co_partitioned_groups_match_the_literal_reference(request: AssignmentRequest) -> None:
    got = RangeAssignor().assign(request)
    want = reference_range(request)
    assert {m: sorted(ps) for m, ps in got.items()} == {m: sorted(ps) for m, ps in want.items()}
    assert check_all(request.members, request.topics, got, "range") == []


@settings(max_examples=100, deadline=None)
@given(groups(racks=False))
def test_without_racks_lists_come_sorted(request: AssignmentRequest) -> None:
    got = RangeAssignor().assign(request)
    for partitions in got.values():
        assert partitions == sorted(partitions, key=TopicPartition.java_key)


@pytest.mark.parametrize(("partitions", "members"), [(17, 2), (100, 3), (1001, 7), (5, 7), (64, 8), (63, 8)])
def test_sliced_and_appended_splits_agree_with_the_reference(partitions: int, members: int) -> None:
    topics = {"t": TopicMetadata("t", partitions), "u": TopicMetadata("u", partitions + 3)}
    group = [Member(f"m{i}", ("t", "u")) for i in range(members)]
    request = AssignmentRequest(group, topics)
    got = RangeAssignor().assign(request)
    want = reference_range(request)  # its lists follow a set's (hash-seeded) topic order
    assert {m: sorted(ps) for m, ps in got.items()} == {m: sorted(ps) for m, ps in want.items()}
    assert all(ps == sorted(ps) for ps in got.values())  # kgroup's come sorted already


def test_python_order_shortcut_is_used_only_where_it_equals_java_order() -> None:
    from kgroup.assignors.common import python_order_is_java_order
    from kgroup.javacompat import java_string_key

    assert python_order_is_java_order(["t1", "t10", "t2", "é"])
    assert python_order_is_java_order(["\ue000", "z"])  # no supplementary character: same order
    assert python_order_is_java_order(["\U0001f600", "z"])  # no character at or above U+E000
    mixed = ["\ue000x", "\U0001f600x"]
    assert not python_order_is_java_order(mixed)
    assert sorted(mixed) != sorted(mixed, key=java_string_key)  # why the shortcut must not apply


def test_rack_aware_lists_are_sorted_in_java_topic_order() -> None:
    names = ("\ue000x", "\U0001f600x", "t")
    racks = (frozenset("a"), frozenset("b"))
    topics = {n: TopicMetadata(n, 2, racks) for n in names}
    members = [Member("c0", names, rack_id="b"), Member("c1", names, rack_id="a")]
    result = RangeAssignor().assign(AssignmentRequest(members, topics))
    for partitions in result.values():
        assert partitions == sorted(partitions, key=TopicPartition.java_key)
    assert [str(tp) for tp in result["c1"]] == ["t-0", "\U0001f600x-0", "\ue000x-0"]
