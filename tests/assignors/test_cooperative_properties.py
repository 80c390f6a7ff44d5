"""Property tests for ``cooperative-sticky``: moves happen in two rebalances, never overlapping.

Members keep what they own through a rebalance (the COOPERATIVE protocol): each round they report
``owned`` = what they hold and the current generation; after the round each member keeps only what
it was assigned (revoking the rest). A chain of changes (joins, leaves, subscription changes,
partition growth) runs through one assignor instance. Checked after every round:

* no partition is given to a member while another member still owns it
  (:func:`kgroup.assignors.invariants.check_cooperative`), nothing is assigned twice, members get
  only subscribed topics;
* after each change, follow-up rebalances complete the moves — with equal subscriptions (Kafka's
  constrained path) exactly one; with different subscriptions (the general path) Kafka's heuristic
  balancing may decide further moves in the follow-up round, so a second follow-up is sometimes
  needed (see ``test_general_path_can_need_a_second_follow_up``) — then every partition is assigned
  again, with equal subscriptions the sizes are within one, otherwise no member with two more
  partitions holds one a less-loaded subscriber could take.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.invariants import (
    check_all,
    check_balance_within_one,
    check_coverage,
    check_sticky_balance,
)
from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kgroup.assignors.sticky.userdata import encode_sticky_user_data
from kgroup.model import Member, TopicMetadata, TopicPartition

TOPIC_NAMES = ("t0", "t1", "t10", "t2", "a-b")
MEMBER_POOL = (*(f"m{i}" for i in range(12)), "consumer-\U0001f600", "consumer-\ue000")
CHANGES = ("join", "leave", "subscribe", "grow")
#: follow-up rebalances a change needs to settle. Equal subscriptions: exactly one. Different
#: subscriptions: Kafka promises no bound; over 5,000 random chains (about 20,000 settles) kgroup —
#: exact to Kafka on all 484 cooperative-sticky vectors — needed two in 29 settles and never three.
MAX_FOLLOW_UPS = {True: 1, False: 3}


class CooperativeGroup:
    def __init__(self, topics: dict[str, TopicMetadata], subscriptions: dict[str, tuple[str, ...]]) -> None:
        self.topics = topics
        self.subscriptions = subscriptions
        self.owned: dict[str, tuple[TopicPartition, ...]] = {}
        self.generation = -1

    def members(self) -> list[Member]:
        return [
            Member(m, topics, self.owned.get(m, ()), self.generation)
            for m, topics in self.subscriptions.items()
        ]

    def rebalance(self, assignor: CooperativeStickyAssignor) -> dict[str, list[TopicPartition]]:
        members = self.members()
        assignment = assignor.assign(AssignmentRequest(members, self.topics))
        problems = check_all(members, self.topics, assignment, "cooperative-sticky")
        assert problems == [], problems
        self.generation += 1
        self.owned = {m: tuple(ps) for m, ps in assignment.items()}
        return assignment

    def settled(self, assignment: dict[str, list[TopicPartition]]) -> bool:
        members = self.members()
        return check_coverage(members, self.topics, assignment) == []


@st.composite
def cooperative_chains(draw: st.DrawFn, equal: bool) -> tuple[CooperativeGroup, list[str]]:
    names = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=4, unique=True))
    topics = {n: TopicMetadata(n, draw(st.integers(1, 8))) for n in names}
    members = draw(st.lists(st.sampled_from(MEMBER_POOL), min_size=1, max_size=6, unique=True))
    subscription = st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True)
    shared = tuple(draw(subscription))
    subs = {m: shared if equal else tuple(draw(subscription)) for m in members}
    return CooperativeGroup(topics, subs), draw(st.lists(st.sampled_from(CHANGES), min_size=1, max_size=5))


def _change(data: st.DataObject, group: CooperativeGroup, change: str, equal: bool) -> None:
    names = list(group.topics)
    any_subscription = st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True)
    shared = next(iter(group.subscriptions.values()))
    if change == "join":
        free = [m for m in MEMBER_POOL if m not in group.subscriptions]
        if free:
            group.subscriptions[data.draw(st.sampled_from(free))] = (
                shared if equal else tuple(data.draw(any_subscription))
            )
    elif change == "leave" and len(group.subscriptions) > 1:
        leaving = data.draw(st.sampled_from(sorted(group.subscriptions)))
        del group.subscriptions[leaving]
        group.owned.pop(leaving, None)
    elif change == "subscribe":
        new = tuple(data.draw(any_subscription))
        if equal:
            group.subscriptions = dict.fromkeys(group.subscriptions, new)
        else:
            group.subscriptions[data.draw(st.sampled_from(sorted(group.subscriptions)))] = new
    elif change == "grow":
        topic = data.draw(st.sampled_from(names))
        group.topics[topic] = TopicMetadata(
            topic, group.topics[topic].partitions + data.draw(st.integers(1, 4))
        )


def _settle(group: CooperativeGroup, assignor: CooperativeStickyAssignor, equal: bool) -> None:
    assignment = group.rebalance(assignor)
    follow_ups = 0
    while not group.settled(assignment):
        follow_ups += 1
        limit = MAX_FOLLOW_UPS[equal]
        assert follow_ups <= limit, f"not settled after {limit} follow-up rebalances"
        assignment = group.rebalance(assignor)
    members = group.members()
    if equal:
        assert check_balance_within_one(members, assignment) == []
    else:
        assert check_sticky_balance(members, assignment) == []


def _run(data: st.DataObject, equal: bool) -> None:
    group, steps = data.draw(cooperative_chains(equal))
    assignor = CooperativeStickyAssignor()
    _settle(group, assignor, equal)
    for change in steps:
        _change(data, group, change, equal)
        _settle(group, assignor, equal)


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_cooperative_chains_with_equal_subscriptions(data: st.DataObject) -> None:
    _run(data, equal=True)


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_cooperative_chains_with_different_subscriptions(data: st.DataObject) -> None:
    _run(data, equal=False)


def test_settled_cooperative_assignment_equals_eager_sticky_from_the_same_state() -> None:
    """The cooperative adjustment only withholds moving partitions for a round; once the group has
    settled it holds what the eager assignor gives in one step from the same starting point."""
    topics = {"a": TopicMetadata("a", 7), "b": TopicMetadata("b", 4)}
    group = CooperativeGroup(dict(topics), {"x": ("a", "b"), "y": ("a", "b")})
    assignor = CooperativeStickyAssignor()
    initial = group.rebalance(assignor)
    group.subscriptions["z"] = ("a", "b")
    first = group.rebalance(assignor)
    assert not group.settled(first)  # what z is to get is withheld this round
    assert first["z"] == []
    second = group.rebalance(assignor)
    assert group.settled(second)

    eager_members = [
        Member("x", ("a", "b"), user_data=encode_sticky_user_data(initial["x"], 0)),
        Member("y", ("a", "b"), user_data=encode_sticky_user_data(initial["y"], 0)),
        Member("z", ("a", "b")),
    ]
    assert StickyAssignor().assign(AssignmentRequest(eager_members, topics)) == second


def test_general_path_can_need_a_second_follow_up() -> None:
    """A case hypothesis found: after m7 changes its subscription, the first follow-up rebalance
    completes the withheld moves but Kafka's general-path balancing then decides new ones, so the
    group settles only after a second follow-up. (kgroup's cooperative-sticky reproduces Kafka on
    all 484 vectors, including random chains through this path; the bound is the algorithm's.)"""
    topics = {n: TopicMetadata(n, 8) for n in ("t1", "t10", "a-b")}
    subscriptions = {
        "m11": ("a-b", "t10"),
        "consumer-\U0001f600": ("t10", "t1", "a-b"),
        "m10": ("t1",),
        "m2": ("a-b", "t1"),
        "m7": ("a-b", "t10"),
    }
    owned = {
        "m11": ["a-b-3", "a-b-7", "t10-1", "t10-4", "t10-7"],
        "consumer-\U0001f600": ["a-b-1", "a-b-6", "t10-0", "t10-3", "t10-6"],
        "m10": ["t1-0", "t1-1", "t1-2", "t1-4", "t1-7"],
        "m2": ["a-b-0", "a-b-2", "a-b-4", "a-b-5", "t1-5"],
        "m7": ["t1-3", "t1-6", "t10-2", "t10-5"],
    }
    group = CooperativeGroup(topics, subscriptions)
    group.owned = {m: tuple(TopicPartition.parse(p) for p in ps) for m, ps in owned.items()}
    group.generation = 1
    assignor = CooperativeStickyAssignor()
    assignor.set_prior_max_generation(1)
    rounds = [group.rebalance(assignor)]
    while not group.settled(rounds[-1]):
        rounds.append(group.rebalance(assignor))
        assert len(rounds) <= 4
    assert len(rounds) == 3  # the change's rebalance, then two follow-ups
    assert check_sticky_balance(group.members(), rounds[-1]) == []
