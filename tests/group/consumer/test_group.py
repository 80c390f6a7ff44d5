"""Kafka's ``ConsumerGroupTest``: partition epochs, the group state, the subscription type and the
preferred server assignor, as :class:`ConsumerGroupData` keeps them while it replays records."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.group.assignors.api import SubscriptionType
from kgroup.group.consumer.group import (
    ConsumerGroupData,
    ConsumerGroupState,
    TopicCounts,
    subscription_type_of,
)
from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.records.consumer import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    MemberAssignmentState,
    TargetAssignmentMetadataValue,
)
from kgroup.model import TopicId

S = MemberAssignmentState
FOO, BAR, ZAR = TopicId.from_int(1), TopicId.from_int(2), TopicId.from_int(3)
HOMOGENEOUS, HETEROGENEOUS = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS


def at(epoch: int, topic: TopicId, *partitions: int) -> dict[TopicId, dict[int, int]]:
    return {topic: dict.fromkeys(partitions, epoch)}


def update(group: ConsumerGroupData, m: ConsumerGroupMember) -> None:
    """``ConsumerGroup.updateMember``: both of the member's records."""
    group.apply(ConsumerGroupMemberMetadata(group.group_id, m.member_id, m.metadata_value()))
    group.apply(ConsumerGroupCurrentMemberAssignment(group.group_id, m.member_id, m.assignment_value()))


def remove(group: ConsumerGroupData, member_id: str) -> None:
    """``ConsumerGroup.removeMember``: the tombstones, in Kafka's order."""
    group.apply(ConsumerGroupCurrentMemberAssignment(group.group_id, member_id, None))
    group.apply(ConsumerGroupTargetAssignmentMember(group.group_id, member_id, None))
    group.apply(ConsumerGroupMemberMetadata(group.group_id, member_id, None))


def test_updating_member_updates_partition_epoch() -> None:
    """testUpdatingMemberUpdatesPartitionEpoch"""
    group = ConsumerGroupData("foo")
    m = ConsumerGroupMember(
        "member",
        member_epoch=10,
        assigned_partitions=at(5, FOO, 1, 2, 3),
        partitions_pending_revocation=at(6, BAR, 4, 5, 6),
    )
    update(group, m)
    assert [group.current_partition_epoch(FOO, p) for p in (1, 2, 3)] == [10, 10, 10]
    assert [group.current_partition_epoch(BAR, p) for p in (4, 5, 6)] == [10, 10, 10]
    assert [group.current_partition_epoch(ZAR, p) for p in (7, 8, 9)] == [-1, -1, -1]
    m = ConsumerGroupMember(
        "member",
        member_epoch=11,
        assigned_partitions=at(7, BAR, 1, 2, 3),
        partitions_pending_revocation=at(8, ZAR, 4, 5, 6),
    )
    update(group, m)
    assert [group.current_partition_epoch(BAR, p) for p in (1, 2, 3)] == [11, 11, 11]
    assert [group.current_partition_epoch(ZAR, p) for p in (4, 5, 6)] == [11, 11, 11]
    assert [group.current_partition_epoch(FOO, p) for p in (1, 2, 3, 7, 8, 9)] == [-1] * 6


def test_updating_member_updates_partition_epoch_when_partition_is_reassigned_before_being_revoked() -> None:
    """testUpdatingMemberUpdatesPartitionEpochWhenPartitionIsReassignedBeforeBeingRevoked"""
    group = ConsumerGroupData("foo")
    update(group, ConsumerGroupMember("member", member_epoch=10, partitions_pending_revocation=at(5, FOO, 1)))
    assert group.current_partition_epoch(FOO, 1) == 10
    update(group, ConsumerGroupMember("member", member_epoch=11, assigned_partitions=at(7, FOO, 1)))
    assert group.current_partition_epoch(FOO, 1) == 11


def test_updating_member_updates_partition_epoch_when_partition_is_not_released() -> None:
    """testUpdatingMemberUpdatesPartitionEpochWhenPartitionIsNotReleased: a greater epoch may take a
    partition still held at a smaller one; a smaller epoch may not."""
    group = ConsumerGroupData("foo")
    update(group, ConsumerGroupMember("m1", member_epoch=10, assigned_partitions=at(5, FOO, 1)))
    update(group, ConsumerGroupMember("m2", member_epoch=11, assigned_partitions=at(7, FOO, 1)))
    assert group.current_partition_epoch(FOO, 1) == 11
    with pytest.raises(AssertionError, match="owned at epoch 11"):
        update(group, ConsumerGroupMember("m3", member_epoch=10, assigned_partitions=at(7, FOO, 1)))


def test_removing_a_stale_holder_keeps_the_newer_epoch() -> None:
    """testRemovePartitionEpochs: removing with another epoch than the partition's does nothing."""
    group = ConsumerGroupData("foo")
    update(group, ConsumerGroupMember("m1", member_epoch=10, assigned_partitions=at(5, FOO, 1)))
    update(group, ConsumerGroupMember("m2", member_epoch=11, assigned_partitions=at(7, FOO, 1)))
    remove(group, "m1")
    assert group.current_partition_epoch(FOO, 1) == 11


def test_deleting_member_removes_partition_epoch() -> None:
    """testDeletingMemberRemovesPartitionEpoch"""
    group = ConsumerGroupData("foo")
    update(
        group,
        ConsumerGroupMember(
            "member",
            member_epoch=10,
            assigned_partitions=at(5, FOO, 1, 2, 3),
            partitions_pending_revocation=at(6, BAR, 4, 5, 6),
        ),
    )
    assert group.current_partition_epoch(BAR, 4) == 10
    remove(group, "member")
    assert group.partition_epochs == {}
    assert [group.current_partition_epoch(t, p) for t in (FOO, BAR) for p in range(1, 7)] == [-1] * 12


def test_group_state() -> None:
    """testGroupState"""
    group = ConsumerGroupData("foo")
    assert group.state is ConsumerGroupState.EMPTY
    update(group, ConsumerGroupMember("member1", member_epoch=2, previous_member_epoch=0))
    group.apply(ConsumerGroupMetadata("foo", (2, 0)))
    assert group.state is ConsumerGroupState.ASSIGNING
    update(group, ConsumerGroupMember("member2", member_epoch=2, previous_member_epoch=0))
    group.apply(ConsumerGroupMetadata("foo", (3, 0)))
    assert group.state is ConsumerGroupState.ASSIGNING
    group.apply(ConsumerGroupTargetAssignmentMetadata("foo", TargetAssignmentMetadataValue(3, 12345)))
    assert group.state is ConsumerGroupState.RECONCILING
    update(group, ConsumerGroupMember("member1", member_epoch=3, previous_member_epoch=2))
    assert group.state is ConsumerGroupState.RECONCILING
    # member two is not stable: the group stays reconciling
    update(
        group,
        ConsumerGroupMember("member2", member_epoch=3, previous_member_epoch=2, state=S.UNREVOKED_PARTITIONS),
    )
    assert group.state is ConsumerGroupState.RECONCILING
    update(group, ConsumerGroupMember("member2", member_epoch=3, previous_member_epoch=2))
    assert group.state is ConsumerGroupState.STABLE
    remove(group, "member1")
    remove(group, "member2")
    assert group.state is ConsumerGroupState.EMPTY


@pytest.mark.parametrize(
    ("regexes", "names", "members", "expected"),
    [
        ({}, {}, 0, HOMOGENEOUS),
        ({}, {"foo": (5, 0)}, 5, HOMOGENEOUS),
        ({}, {"foo": (4, 0), "bar": (1, 0)}, 5, HETEROGENEOUS),
        ({"foo*": 5}, {"foo": (0, 1)}, 5, HOMOGENEOUS),
        ({"foo*": 5}, {"foo": (0, 1), "food": (0, 1)}, 5, HOMOGENEOUS),
        ({"foo*": 5}, {"foo": (1, 1)}, 5, HETEROGENEOUS),
        ({"foo*": 5}, {"foo": (0, 1), "bar": (1, 0)}, 5, HETEROGENEOUS),
        ({"foo*": 4, "bar*": 1}, {"foo": (0, 1), "bar": (0, 1)}, 5, HETEROGENEOUS),
    ],
)
def test_subscription_type(
    regexes: dict[str, int], names: dict[str, tuple[int, int]], members: int, expected: SubscriptionType
) -> None:
    """testSubscriptionType"""
    counts = TopicCounts(
        {name: by_name for name, (by_name, _) in names.items() if by_name},
        {name: by_regex for name, (_, by_regex) in names.items() if by_regex},
    )
    assert subscription_type_of(regexes, counts, members) is expected


def test_update_subscribed_topic_names_and_subscription_type() -> None:
    """testUpdateSubscribedTopicNamesAndSubscriptionType (the counts and the type as members come and go)."""
    group = ConsumerGroupData("foo")
    update(group, ConsumerGroupMember("member1", subscribed_topic_names=frozenset({"foo"})))
    assert (group.subscribed_topic_names.names(), group.subscription_type) == ({"foo"}, HOMOGENEOUS)
    update(group, ConsumerGroupMember("member2", subscribed_topic_names=frozenset({"bar", "foo"})))
    assert (group.subscribed_topic_names.names(), group.subscription_type) == ({"foo", "bar"}, HETEROGENEOUS)
    update(group, ConsumerGroupMember("member1", subscribed_topic_names=frozenset({"bar", "foo"})))
    assert group.subscription_type is HOMOGENEOUS
    remove(group, "member2")
    assert (group.subscribed_topic_names.names(), group.subscription_type) == ({"foo", "bar"}, HOMOGENEOUS)
    remove(group, "member1")
    assert (group.subscribed_topic_names.names(), group.subscription_type) == (set(), HOMOGENEOUS)


def test_preferred_server_assignor() -> None:
    """testPreferredServerAssignor"""
    group = ConsumerGroupData("foo")
    m1 = ConsumerGroupMember("member1", server_assignor="range")
    m2 = ConsumerGroupMember("member2", server_assignor="range")
    m3 = ConsumerGroupMember("member3", server_assignor="uniform")
    assert group.preferred_server_assignor() is None
    assert group.preferred_server_assignor(None, m1) == "range"
    update(group, m1)
    assert group.preferred_server_assignor() == "range"
    assert group.preferred_server_assignor(m1, None) is None
    assert group.preferred_server_assignor(None, m2) == "range"
    update(group, m2)
    update(group, m3)
    assert group.preferred_server_assignor() == "range"
    u1, u2, u3 = (ConsumerGroupMember(m.member_id) for m in (m1, m2, m3))
    assert group.preferred_server_assignor(m1, u1) in ("range", "uniform")
    update(group, u1)
    assert group.preferred_server_assignor(m2, u2) == "uniform"
    update(group, u2)
    assert group.preferred_server_assignor() == "uniform"
    assert group.preferred_server_assignor(m3, u3) is None
    update(group, u3)
    assert group.preferred_server_assignor() is None


def test_static_members_by_instance_id() -> None:
    """testGetStaticMemberByInstanceId / testRemoveStaticMember"""
    group = ConsumerGroupData("foo")
    assert group.static_member("instance") is None
    update(group, ConsumerGroupMember("member", instance_id="instance"))
    assert group.static_member("instance") == group.members["member"]
    remove(group, "member")
    assert group.static_member("instance") is None
    assert not group.has_static_member("instance")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.frozensets(st.sampled_from("abcdefgh"), max_size=6)), max_size=30
    )
)
def test_topic_counts_follow_members_subscriptions(changes: list[tuple[int, frozenset[str]]]) -> None:
    """TopicCounts.change_names, in bulk or name by name, counts what members subscribe to: the
    same counts as counting every member's names afresh, and ``shared`` the names counted twice."""
    counts = TopicCounts()
    members: dict[int, frozenset[str]] = {}
    for member, names in changes:
        counts.change_names(members.get(member, frozenset()), names)
        members[member] = names
        expected = Counter(name for subscribed in members.values() for name in subscribed)
        assert counts.by_name == dict(expected)
        assert counts.shared == {name for name, n in expected.items() if n > 1}


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["update", "remove", "target"]),
            st.sampled_from(["m1", "m2", "m3", "m4"]),
            st.integers(1, 4),
            st.sampled_from(list(S)),
        ),
        max_size=40,
    )
)
def test_group_state_counted_is_the_walk_over_members(steps: list[tuple[str, str, int, S]]) -> None:
    """The state kept from a count of the members STABLE at each epoch is what
    ``maybeUpdateGroupState`` finds walking every member (``isReconciledTo``), after any sequence of
    member updates, removals and new target assignments."""
    group = ConsumerGroupData("g")
    for action, member_id, epoch, state in steps:
        if action == "update":
            update(group, ConsumerGroupMember(member_id, member_epoch=epoch, state=state))
        elif action == "remove" and member_id in group.members:
            remove(group, member_id)
        elif action == "target":
            group.apply(ConsumerGroupMetadata("g", (max(epoch, group.assignment_epoch), 0)))
            group.apply(ConsumerGroupTargetAssignmentMetadata("g", TargetAssignmentMetadataValue(epoch, 0)))
        if not group.members:
            walked = ConsumerGroupState.EMPTY
        elif group.group_epoch > group.assignment_epoch:
            walked = ConsumerGroupState.ASSIGNING
        elif all(m.is_reconciled_to(group.assignment_epoch) for m in group.members.values()):
            walked = ConsumerGroupState.STABLE
        else:
            walked = ConsumerGroupState.RECONCILING
        assert group.state is walked
