"""Issue 12 item 4: kafka-python's leader assigns with metadata only for the topics it subscribes to itself.

Java's leader waits for metadata covering every member's topics before it assigns
(``ConsumerCoordinator.updateGroupSubscription`` → ``ensureFreshMetadata``); kafka-python 3.0's does
not. The plug-in then holds (every member keeps what it validly owns, nothing new is handed out),
kafka-python's metadata refresh makes the leader rejoin, and the next assignment — now on full
metadata, from the same owned partitions — must be the one Java's leader would have made.
These tests drive a group of plug-in members through kafka-python's own member and cluster objects,
with a leader that does not subscribe to every topic.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.registry import create_assignor
from kgroup.integrations._plugin import Joined
from kgroup.model import Assignment, TopicMetadata, TopicPartition
from kgroup.wire.consumer_protocol import decode_subscription

pytest.importorskip("kafka")

from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from kgroup.integrations import kafka_python as kp

from .callshape import kafka_python_cluster
from .vectors import normal

CLASSES = {
    "range": kp.Range,
    "roundrobin": kp.RoundRobin,
    "sticky": kp.Sticky,
    "cooperative-sticky": kp.CooperativeSticky,
}
TOPICS = {"t1": TopicMetadata("t1", 4), "t2": TopicMetadata("t2", 7), "t3": TopicMetadata("t3", 3)}


class Group:
    """Plug-in members taking turns through JoinGroup/SyncGroup as kafka-python's coordinator drives them."""

    def __init__(self, assignor: str, subscriptions: Mapping[str, set[str]]) -> None:
        self.assignor = assignor
        self.subscriptions = dict(subscriptions)
        self.members = {mid: CLASSES[assignor]() for mid in subscriptions}
        self.generation = 0
        self.last_join: list[Joined] = []

    def add(self, member_id: str, topics: set[str]) -> None:
        self.subscriptions[member_id] = topics
        self.members[member_id] = CLASSES[self.assignor]()

    def rebalance(self, leader: str, leader_topics: set[str]) -> Assignment:
        """One generation: everyone joins, ``leader`` assigns seeing only ``leader_topics``'s metadata."""
        self.generation += 1
        sent = {mid: plugin.metadata(self.subscriptions[mid]) for mid, plugin in self.members.items()}
        self.last_join = [Joined(mid, None, decode_subscription(raw), 3) for mid, raw in sent.items()]
        join = [
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=mid, group_instance_id=None, metadata=ConsumerProtocolSubscription.decode(raw)
            )
            for mid, raw in sent.items()
        ]
        cluster = kafka_python_cluster({t: TOPICS[t] for t in leader_topics})
        raw = self.members[leader].assign(cluster, join)
        out: Assignment = {}
        for mid, plugin in self.members.items():
            assignment = ConsumerProtocolAssignment.decode(raw[mid])
            plugin.on_assignment(assignment, self.generation)
            out[mid] = [TopicPartition(tp.topic, tp.partition) for tp in assignment.partitions()]
        return out

    def java_answer(self, joined: list[Joined]) -> Assignment:
        """What Java's leader assigns on that JoinGroup, with metadata for every subscribed topic."""
        request = AssignmentRequest([j.member() for j in joined], TOPICS)
        return create_assignor(self.assignor).assign(request)


def _owned_once(assignment: Assignment) -> None:
    seen = [tp for ps in assignment.values() for tp in ps]
    assert len(seen) == len(set(seen)), "a partition assigned twice"


@pytest.mark.parametrize("assignor", list(CLASSES))
def test_a_new_group_whose_leader_lacks_topics_converges_to_javas_answer(assignor: str) -> None:
    group = Group(assignor, {"leader": {"t1"}, "c1": {"t1", "t2"}, "c2": {"t2", "t3"}, "c3": {"t3"}})
    first = group.rebalance("leader", {"t1"})
    leader = group.members["leader"]
    assert leader.last_hold is not None and leader.last_hold.missing_topics == {"t2", "t3"}
    assert first == {m: [] for m in group.members}  # nothing owned yet, so nothing to keep
    java = group.java_answer(group.last_join)
    # kafka-python's metadata refresh (now covering t2, t3) makes the leader rejoin
    second = group.rebalance("leader", {"t1", "t2", "t3"})
    assert leader.last_hold is None
    assert normal(second) == normal(java)
    _owned_once(second)


@pytest.mark.parametrize("assignor", list(CLASSES))
def test_an_established_group_keeps_its_partitions_while_a_partial_leader_holds(assignor: str) -> None:
    group = Group(assignor, {"a": {"t1", "t2", "t3"}, "b": {"t1", "t2"}, "c": {"t2", "t3"}})
    settled = group.rebalance("a", {"t1", "t2", "t3"})  # a leader with full metadata
    if assignor == "cooperative-sticky":
        settled = group.rebalance("a", {"t1", "t2", "t3"})
    group.add("leader", {"t1"})  # joins first after a restart of the group's coordinator: leads
    held = group.rebalance("leader", {"t1"})
    hold = group.members["leader"].last_hold
    assert hold is not None and hold.missing_topics == {"t2", "t3"}
    _owned_once(held)
    if assignor in ("sticky", "cooperative-sticky"):
        # the sticky members told the leader what they own: each keeps exactly that
        assert normal({m: held[m] for m in settled}) == normal(settled)
    assert held["leader"] == []
    java = group.java_answer(group.last_join)
    converged = group.rebalance("leader", {"t1", "t2", "t3"})
    assert group.members["leader"].last_hold is None
    assert normal(converged) == normal(java)
    _owned_once(converged)


def test_without_the_hold_a_sticky_group_would_settle_elsewhere() -> None:
    """The check above has teeth: assigning on partial metadata first ends away from Java's answer."""
    subscriptions = {"leader": {"t1"}, "c1": {"t1", "t2"}, "c2": {"t1", "t2", "t3"}, "c3": {"t3"}}
    group = Group("sticky", subscriptions)
    group.rebalance("leader", {"t1"})
    java = group.java_answer(group.last_join)
    naive = create_assignor("sticky")
    partial = naive.assign(AssignmentRequest([j.member() for j in group.last_join], {"t1": TOPICS["t1"]}))
    from kgroup.assignors.sticky.userdata import encode_sticky_user_data
    from kgroup.model import Member

    after = [
        Member(
            j.member_id,
            j.subscription.topics,
            generation=1,
            user_data=encode_sticky_user_data(partial[j.member_id], 1),
        )
        for j in group.last_join
    ]
    settled_naively = naive.assign(AssignmentRequest(after, TOPICS))
    assert normal(settled_naively) != normal(java)


def test_a_topic_still_missing_after_the_hold_is_skipped_as_java_skips_it() -> None:
    group = Group("range", {"leader": {"t1"}, "c1": {"t1", "nowhere"}})
    group.rebalance("leader", {"t1"})
    assert group.members["leader"].last_hold is not None
    second = group.rebalance("leader", {"t1"})  # the refresh found no such topic
    assert group.members["leader"].last_hold is None
    assert normal(second) == {"c1": ["t1-0", "t1-1"], "leader": ["t1-2", "t1-3"]}  # Java: ids in order
    third = group.rebalance("leader", {"t1"})  # and no hold again for the same missing topic
    assert normal(third) == normal(second)
