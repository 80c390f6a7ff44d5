"""The invariant checks find what is wrong, and only that."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors import invariants
from kgroup.assignors.invariants import (
    check_all,
    check_balance,
    check_balance_within_one,
    check_cooperative,
    check_coverage,
    check_members,
    check_range_balance,
    check_sticky_balance,
    check_subscriptions,
    stale_sticky_claims,
    stickiness,
    subscriptions_equal,
)
from kgroup.assignors.sticky.userdata import encode_sticky_user_data
from kgroup.model import Member, TopicMetadata, TopicPartition

TP = TopicPartition
TOPICS = {"t1": TopicMetadata("t1", 3), "t2": TopicMetadata("t2", 2)}
MEMBERS = [Member("a", ("t1", "t2")), Member("b", ("t1",))]
GOOD = {"a": [TP("t1", 0), TP("t2", 0), TP("t2", 1)], "b": [TP("t1", 1), TP("t1", 2)]}


def test_a_sound_assignment_has_no_violations() -> None:
    assert check_all(MEMBERS, TOPICS, GOOD) == []
    # not Range's own answer (Range gives a the extra t1 partition), but within Range's promise
    assert check_all(MEMBERS, TOPICS, GOOD, "range") == []
    assert check_all(MEMBERS, TOPICS, GOOD, "roundrobin") == []  # unequal subscriptions: no promise


def test_coverage_finds_missing_duplicate_and_unknown_partitions() -> None:
    bad = {"a": [TP("t1", 0), TP("t1", 0), TP("t2", 5), TP("zz", 0)], "b": [TP("t1", 1)]}
    problems = check_coverage(MEMBERS, TOPICS, bad)
    assert "t1-0 is assigned 2 times" in problems
    assert "t1-2 is not assigned" in problems
    assert "t2-0 is not assigned" in problems
    assert any("t2-5" in p and "has 2 partitions" in p for p in problems)
    assert any(p.startswith("zz-0") for p in problems)


def test_coverage_ignores_unsubscribed_and_missing_topics() -> None:
    topics = {**TOPICS, "unused": TopicMetadata("unused", 4)}
    members = [Member("a", ("t1", "t2", "ghost")), Member("b", ("t1",))]
    assert check_coverage(members, topics, GOOD) == []


def test_cooperative_coverage_allows_withheld_owned_partitions() -> None:
    members = [Member("a", ("t1", "t2"), owned=(TP("t1", 2),)), Member("b", ("t1",))]
    withheld = {"a": [TP("t1", 0), TP("t2", 0), TP("t2", 1)], "b": [TP("t1", 1)]}
    assert check_coverage(members, TOPICS, withheld) == ["t1-2 is not assigned"]
    assert check_coverage(members, TOPICS, withheld, cooperative=True) == []


def test_subscriptions_and_members() -> None:
    wrong = {"a": [TP("t1", 0)], "b": [TP("t2", 0)], "x": []}
    assert check_subscriptions(MEMBERS, wrong) == ["b got t2-0 but does not subscribe to 't2'"]
    assert check_members(MEMBERS, {"a": []}) == ["member b is missing from the assignment"]
    assert check_members(MEMBERS, wrong) == ["x is in the assignment but not in the group"]


def test_stale_sticky_claims_are_only_a_members_own_claims_outside_its_subscription() -> None:
    """Issue 22: what Kafka's eager sticky gives a member outside its subscription is its own stale
    claim; anything else outside a subscription stays a check_subscriptions violation."""
    claim = encode_sticky_user_data([TP("t2", 0), TP("t1", 0)], 1)
    members = [
        Member("a", ("t1",), user_data=claim),
        Member("b", ("t2",)),
        Member("c", ("t1",), user_data=b"?"),
    ]
    assignment = {"a": [TP("t1", 0), TP("t2", 0), TP("t2", 1)], "b": [TP("t1", 1)], "c": [TP("t2", 0)]}
    # a claimed t2-0 (not t2-1); b has no user data; c's cannot be read (Kafka: nothing claimed)
    assert stale_sticky_claims(members, assignment) == {"a": [TP("t2", 0)]}
    assert len(check_subscriptions(members, assignment)) == 4
    assert stale_sticky_claims(MEMBERS, GOOD) == {}


def test_balance_checks() -> None:
    lopsided = {"a": [TP("t1", 0), TP("t1", 1), TP("t1", 2)], "b": []}
    members = [Member("a", ("t1",)), Member("b", ("t1",))]
    assert check_balance_within_one(members, lopsided) != []
    assert check_range_balance(members, TOPICS, lopsided) != []
    assert check_sticky_balance(members, lopsided) != []
    assert check_balance("roundrobin", members, TOPICS, lopsided) != []
    # b cannot take t2, so a holding more is what the sticky assignor promises
    unequal = [Member("a", ("t1", "t2")), Member("b", ("t1",))]
    fine = {"a": [TP("t1", 0), TP("t2", 0), TP("t2", 1)], "b": [TP("t1", 1), TP("t1", 2)]}
    assert check_sticky_balance(unequal, fine) == []
    assert not subscriptions_equal(unequal)
    assert check_balance("roundrobin", unequal, TOPICS, lopsided) == []  # no promise when unequal
    assert check_balance("my-plugin", members, TOPICS, lopsided) == []


def test_cooperative_rule() -> None:
    members = [Member("a", ("t1",), owned=(TP("t1", 0),)), Member("b", ("t1",))]
    assert check_cooperative(members, {"a": [TP("t1", 0)], "b": []}) == []
    assert check_cooperative(members, {"a": [], "b": [TP("t1", 0)]}) == [
        "t1-0 goes to b while a still owns it"
    ]


def test_stickiness_counts() -> None:
    members = [
        Member("a", ("t1",), owned=(TP("t1", 0), TP("t1", 1))),
        Member("b", ("t1",), owned=(TP("t1", 2), TP("t2", 0))),
    ]
    after = {"a": [TP("t1", 0), TP("t1", 2)], "b": [TP("t1", 1)]}
    s = stickiness(members, after)
    assert (s.kept, s.moved, s.released, s.gained) == (1, 2, 1, 2)
    assert s.moved_partitions == (TP("t1", 1), TP("t1", 2))
    assert s.owned == 4


def test_violation_lists_are_bounded() -> None:
    topics = {"big": TopicMetadata("big", 1000)}
    problems = check_coverage([Member("a", ("big",))], topics, {"a": []})
    assert len(problems) == 21
    assert problems[-1] == "... and 980 more"


_member_ids = st.sampled_from(["a", "b", "c"])
_topic_names = st.sampled_from(["t1", "t2", "zz"])
_partitions = st.builds(TP, _topic_names, st.integers(-1, 4))


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[Member], dict[str, list[TopicPartition]], bool]:
    """Members and an assignment near a sound one: every partition of the subscribed topics handed
    out, then some dropped (a few of them still owned), repeated, or replaced by unknown ones."""
    subscriptions = draw(st.dictionaries(_member_ids, st.lists(_topic_names, max_size=3), min_size=1))
    ids = sorted(subscriptions)
    wanted = sorted({t for ts in subscriptions.values() for t in ts if t in TOPICS})
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in ids}
    owned: list[TopicPartition] = []
    for topic in wanted:
        for p in range(TOPICS[topic].partitions):
            fate = draw(st.sampled_from(["keep", "keep", "keep", "drop", "owned", "twice"]))
            if fate == "drop":
                continue
            if fate == "owned":
                owned.append(TP(topic, p))
                continue
            for _ in range(2 if fate == "twice" else 1):
                assignment[draw(st.sampled_from(ids))].append(TP(topic, p))
    for extra in draw(st.lists(_partitions, max_size=2)):
        assignment[draw(st.sampled_from(ids))].append(extra)
    members = [
        Member(m, tuple(ts), owned=tuple(owned) if m == ids[0] else ()) for m, ts in subscriptions.items()
    ]
    return members, assignment, draw(st.booleans())


@settings(max_examples=500, deadline=None)
@given(case=_cases())
def test_fast_paths_agree_with_the_checks_one_by_one(
    case: tuple[list[Member], dict[str, list[TopicPartition]], bool],
) -> None:
    """check_coverage and check_subscriptions answer "nothing wrong" with set operations when they
    can; that shortcut is taken exactly when going through the partitions one by one finds nothing."""
    members, assignment, cooperative = case
    with_shortcut = (
        check_coverage(members, TOPICS, assignment, cooperative=cooperative),
        check_subscriptions(members, assignment),
    )
    with (
        patch.object(invariants, "_covered_exactly", return_value=False),
        patch.object(invariants, "_TOPIC", side_effect=lambda tp: "\0never a topic"),
    ):
        one_by_one = (
            check_coverage(members, TOPICS, assignment, cooperative=cooperative),
            check_subscriptions(members, assignment),
        )
    assert with_shortcut == one_by_one
