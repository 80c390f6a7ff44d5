"""Property tests: chains of rebalances through the eager ``sticky`` assignor keep Kafka's promises.

A group is drawn, then rebalanced again and again by one assignor instance (a leader reuses its
assignor), each member reporting its last assignment and generation in its user data as a Kafka
client does, with one change per round: a member joins, a member leaves, a member changes its
subscription, a topic gains partitions, or nothing happens. After every round:

* every partition of a subscribed topic is assigned exactly once, only to subscribers, and every
  member appears (:func:`kgroup.assignors.invariants.check_all`);
* with equal subscriptions, sizes are within one and every member that stays keeps at least
  ``min(its still-valid owned partitions, floor(P / C))`` of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.invariants import check_all, check_balance_within_one
from kgroup.assignors.sticky import StickyAssignor
from kgroup.assignors.sticky.userdata import encode_sticky_user_data
from kgroup.model import Member, TopicMetadata, TopicPartition

TOPIC_NAMES = ("t0", "t1", "t10", "t2", "a-b")
MEMBER_POOL = (*(f"m{i}" for i in range(12)), "consumer-\U0001f600", "consumer-\ue000")


@dataclass
class Group:
    """The evolving state of a simulated group, as its members would report it."""

    topics: dict[str, TopicMetadata]
    subscriptions: dict[str, tuple[str, ...]]  # member -> topics, in join order
    owned: dict[str, list[TopicPartition]]
    generation: int = 0

    def request(self) -> AssignmentRequest:
        members = []
        for member_id, topics in self.subscriptions.items():
            mine = self.owned.get(member_id)
            user_data = None if mine is None else encode_sticky_user_data(mine, self.generation)
            members.append(Member(member_id, topics, generation=self.generation, user_data=user_data))
        return AssignmentRequest(members, self.topics)


# -- strategies ---------------------------------------------------------------------------------------

CHANGES = ("join", "leave", "subscribe", "grow", "nothing")


@st.composite
def groups(draw: st.DrawFn, equal: bool) -> Group:
    names = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=4, unique=True))
    topics = {n: TopicMetadata(n, draw(st.integers(1, 8))) for n in names}
    members = draw(st.lists(st.sampled_from(MEMBER_POOL), min_size=1, max_size=6, unique=True))
    subscription = st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True)
    shared = tuple(draw(subscription))
    subs = {m: shared if equal else tuple(draw(subscription)) for m in members}
    return Group(topics, subs, {})


def _apply(draw: st.DrawFn, group: Group, change: str, equal: bool) -> None:
    names = list(group.topics)
    any_subscription = st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True)
    shared = next(iter(group.subscriptions.values()), tuple(names))
    if change == "join":
        free = [m for m in MEMBER_POOL if m not in group.subscriptions]
        if free:
            newcomer = draw(st.sampled_from(free))
            group.subscriptions[newcomer] = shared if equal else tuple(draw(any_subscription))
    elif change == "leave" and len(group.subscriptions) > 1:
        leaving = draw(st.sampled_from(sorted(group.subscriptions)))
        del group.subscriptions[leaving]
        group.owned.pop(leaving, None)
    elif change == "subscribe":
        new = tuple(draw(any_subscription))
        if equal:
            group.subscriptions = dict.fromkeys(group.subscriptions, new)
        else:
            member = draw(st.sampled_from(sorted(group.subscriptions)))
            group.subscriptions[member] = new
    elif change == "grow":
        topic = draw(st.sampled_from(names))
        extra = draw(st.integers(1, 4))
        group.topics[topic] = TopicMetadata(topic, group.topics[topic].partitions + extra)


def _check_round(
    group: Group, request: AssignmentRequest, assignment: dict[str, list[TopicPartition]]
) -> None:
    problems = check_all(request.members, request.topics, assignment, "sticky")
    assert problems == [], problems
    subscriptions = {m.topics for m in request.members}
    if len(subscriptions) != 1:
        return
    assert check_balance_within_one(request.members, assignment) == []
    (topics,) = subscriptions
    total = sum(group.topics[t].partitions for t in set(topics))
    min_quota = total // len(request.members)
    for member_id, owned in group.owned.items():
        if member_id not in group.subscriptions:
            continue
        valid = {
            tp for tp in owned if tp.topic in topics and tp.partition < group.topics[tp.topic].partitions
        }
        kept = valid & set(assignment[member_id])
        assert len(kept) >= min(len(valid), min_quota), (member_id, sorted(valid), assignment[member_id])


@st.composite
def chains(draw: st.DrawFn, equal: bool) -> tuple[Group, list[str]]:
    group = draw(groups(equal))
    steps = draw(st.lists(st.sampled_from(CHANGES), min_size=1, max_size=6))
    return group, steps


def _run_chain(data: st.DataObject, equal: bool) -> None:
    group, steps = data.draw(chains(equal))
    assignor = StickyAssignor()
    for change in [*steps, "nothing"]:
        request = group.request()
        assignment = assignor.assign(request)
        _check_round(group, request, assignment)
        group.generation += 1
        group.owned = {m: list(ps) for m, ps in assignment.items()}
        _apply(data.draw, group, change, equal)


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_chains_with_equal_subscriptions_stay_balanced_and_sticky(data: st.DataObject) -> None:
    _run_chain(data, equal=True)


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_chains_with_different_subscriptions_cover_every_partition_once(data: st.DataObject) -> None:
    _run_chain(data, equal=False)


def test_a_stable_group_keeps_its_assignment() -> None:
    """Nothing changes -> nothing moves, on both paths."""
    topics = {"a": TopicMetadata("a", 5), "b": TopicMetadata("b", 3)}
    for subscriptions in (
        {"x": ("a", "b"), "y": ("a", "b"), "z": ("a", "b")},
        {"x": ("a",), "y": ("a", "b"), "z": ("b",)},
    ):
        group = Group(dict(topics), dict(subscriptions), {})
        assignor = StickyAssignor()
        first = assignor.assign(group.request())
        group.owned, group.generation = {m: list(p) for m, p in first.items()}, 1
        assert assignor.assign(group.request()) == first
