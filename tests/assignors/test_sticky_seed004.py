"""Seed 004's worked examples of the sticky assignors, as readable tests.

The seed (a Chinese article on Kafka's assignors) writes partitions as ``t1p0``; here they are
``t1-0``. Its examples, and what Kafka 4.0 answers:

1. balance across unequal subscriptions (c1: t1; c2: t2, t1; c3: t1, t2, t3) — sticky gives each
   member what only it can balance, where round robin leaves c3 with three;
2. stickiness: four topics of two partitions over c1..c3 — the first assignment equals round robin's;
   when c1 leaves, round robin reshuffles, sticky keeps every partition c2 and c3 had;
3. cooperative: c1 [p1, p2], c2 [p3], c3 joins — p2 is withheld in the first rebalance and handed to
   c3 in the second.

One difference from the seed's text: for example 2 after c1 leaves, the seed prints the answer of
Kafka's *older* sticky algorithm (c2 receives t2-1, c3 receives t1-0 and t4-0, as in
``StickyAssignor``'s javadoc). Kafka 4.0 takes the constrained path for equal subscriptions and
hands out the three free partitions round robin in (topic, partition) order: c2 receives t1-0, c3
receives t2-1 and t4-0. Both keep all five partitions the remaining members had, which is the
seed's point.
"""

from __future__ import annotations

from kgroup.assignors import create_assignor
from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.invariants import stickiness
from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kgroup.assignors.sticky.userdata import encode_sticky_user_data
from kgroup.model import Assignment, Member, TopicMetadata, TopicPartition


def _names(assignment: Assignment) -> dict[str, list[str]]:
    return {member: [str(tp) for tp in partitions] for member, partitions in assignment.items()}


def _tp(text: str) -> TopicPartition:
    return TopicPartition.parse(text)


def test_example_1_sticky_balances_unequal_subscriptions_better_than_round_robin() -> None:
    topics = {"t1": TopicMetadata("t1", 1), "t2": TopicMetadata("t2", 2), "t3": TopicMetadata("t3", 2)}
    members = [Member("c1", ("t1",)), Member("c2", ("t2", "t1")), Member("c3", ("t1", "t2", "t3"))]
    request = AssignmentRequest(members, topics)

    assert _names(create_assignor("roundrobin").assign(request)) == {
        "c1": ["t1-0"],
        "c2": ["t2-0"],
        "c3": ["t2-1", "t3-0", "t3-1"],
    }
    assert _names(StickyAssignor().assign(request)) == {
        "c1": ["t1-0"],
        "c2": ["t2-0", "t2-1"],
        "c3": ["t3-0", "t3-1"],
    }


FOUR_TOPICS = {name: TopicMetadata(name, 2) for name in ("t1", "t2", "t3", "t4")}
ALL_FOUR = ("t1", "t2", "t3", "t4")


def test_example_2_first_assignment_equals_round_robin() -> None:
    request = AssignmentRequest([Member(c, ALL_FOUR) for c in ("c1", "c2", "c3")], FOUR_TOPICS)
    expected = {
        "c1": ["t1-0", "t2-1", "t4-0"],
        "c2": ["t1-1", "t3-0", "t4-1"],
        "c3": ["t2-0", "t3-1"],
    }
    assert _names(StickyAssignor().assign(request)) == expected
    assert _names(create_assignor("roundrobin").assign(request)) == expected


def test_example_2_when_c1_leaves_sticky_keeps_everything_round_robin_does_not() -> None:
    before = {
        "c2": [_tp("t1-1"), _tp("t3-0"), _tp("t4-1")],
        "c3": [_tp("t2-0"), _tp("t3-1")],
    }
    # eager members report their last assignment and generation in the sticky user data
    members = [
        Member(
            c, ALL_FOUR, owned=tuple(before[c]), generation=1, user_data=encode_sticky_user_data(before[c], 1)
        )
        for c in ("c2", "c3")
    ]
    request = AssignmentRequest(members, FOUR_TOPICS)

    round_robin = create_assignor("roundrobin").assign(request)
    assert _names(round_robin) == {
        "c2": ["t1-0", "t2-0", "t3-0", "t4-0"],
        "c3": ["t1-1", "t2-1", "t3-1", "t4-1"],
    }
    sticky = StickyAssignor().assign(request)
    assert _names(sticky) == {
        "c2": ["t1-0", "t1-1", "t3-0", "t4-1"],
        "c3": ["t2-0", "t2-1", "t3-1", "t4-0"],
    }
    assert stickiness(members, sticky).kept == 5
    assert stickiness(members, round_robin).kept == 2  # only t3-0 and t3-1 stay put


def test_example_3_cooperative_hands_p2_over_in_a_second_rebalance() -> None:
    topics = {"t": TopicMetadata("t", 3)}
    p1, p2, p3 = _tp("t-0"), _tp("t-1"), _tp("t-2")
    assignor = CooperativeStickyAssignor()
    first_round = [
        Member("c1", ("t",), owned=(p1, p2), generation=1),
        Member("c2", ("t",), owned=(p3,), generation=1),
        Member("c3", ("t",)),
    ]
    first = assignor.assign(AssignmentRequest(first_round, topics))
    assert first == {"c1": [p1], "c2": [p3], "c3": []}  # p2 is revoked from c1, nobody gets it yet

    second_round = [
        Member("c1", ("t",), owned=(p1,), generation=2),
        Member("c2", ("t",), owned=(p3,), generation=2),
        Member("c3", ("t",), owned=(), generation=2),
    ]
    second = assignor.assign(AssignmentRequest(second_round, topics))
    assert second == {"c1": [p1], "c2": [p3], "c3": [p2]}

    # the eager sticky assignor moves p2 at once (its members revoke everything before joining)
    eager_members = [
        Member(m.member_id, m.topics, user_data=encode_sticky_user_data(m.owned, 1) if m.owned else None)
        for m in first_round
    ]
    assert StickyAssignor().assign(AssignmentRequest(eager_members, topics)) == second
