"""Chains of rebalances for Range and RoundRobin: members join and leave, subscriptions and
partition counts change, each round's result becomes the next round's owned partitions; the
invariants hold after every round and the stickiness counts add up."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from assignors.strategies import TOPIC_NAMES, groups
from kgroup.assignors import AssignmentRequest, create_assignor
from kgroup.assignors.invariants import check_all, stickiness
from kgroup.model import Member, TopicMetadata

PERTURBATIONS = ("join", "leave", "subscribe", "grow", "nothing")


@st.composite
def chains(draw: st.DrawFn) -> tuple[str, AssignmentRequest, list[tuple[str, int]]]:
    assignor = draw(st.sampled_from(["range", "roundrobin"]))
    start = draw(groups(max_members=6, owned=False))
    steps = draw(
        st.lists(
            st.tuples(st.sampled_from(PERTURBATIONS), st.integers(min_value=0, max_value=1000)),
            min_size=1,
            max_size=5,
        )
    )
    return assignor, start, steps


def _perturb(request: AssignmentRequest, kind: str, pick: int, round_no: int) -> AssignmentRequest:
    members = list(request.members)
    topics = dict(request.topics)
    if kind == "join":
        subscribed = members[pick % len(members)].topics if members else tuple(topics)
        members.append(Member(f"joined-{round_no}", subscribed))
    elif kind == "leave" and len(members) > 1:
        del members[pick % len(members)]
    elif kind == "subscribe" and members:
        i = pick % len(members)
        members[i] = replace(members[i], topics=(*members[i].topics, TOPIC_NAMES[pick % len(TOPIC_NAMES)]))
    elif kind == "grow" and topics:
        name = sorted(topics)[pick % len(topics)]
        old = topics[name]
        grown = old.partitions + 1 + pick % 3
        racks = None if old.racks is None else (*old.racks, *((frozenset(),) * (grown - old.partitions)))
        topics[name] = TopicMetadata(name, grown, racks)
    return AssignmentRequest(members, topics, request.prefer_rack_aware_logic)


@settings(max_examples=100, deadline=None)
@given(chains())
def test_invariants_hold_along_a_chain_of_rebalances(
    chain: tuple[str, AssignmentRequest, list[tuple[str, int]]],
) -> None:
    assignor_name, request, steps = chain
    assignor = create_assignor(assignor_name)  # one instance for the whole chain, like a leader's
    for round_no, (kind, pick) in enumerate(steps):
        result = assignor.assign(request)
        assert check_all(request.members, request.topics, result, assignor_name) == [], (round_no, kind)
        counts = stickiness(request.members, result)
        claims = sum(len(set(m.owned)) for m in request.members)
        assert counts.kept + counts.moved + counts.released == claims
        assert counts.gained == sum(len(ps) for ps in result.values()) - counts.kept
        # the next round: everyone reports what it got, generation + 1, then one perturbation
        members = [
            replace(m, owned=tuple(result[m.member_id]), generation=round_no + 1) for m in request.members
        ]
        request = _perturb(
            AssignmentRequest(members, request.topics, request.prefer_rack_aware_logic), kind, pick, round_no
        )
