"""Random groups of every shape (the shared strategies: missing topics, duplicate subscriptions, empty
topics, racks incl. "", static ids, owned partitions in conflicting generations) never crash the
sticky assignors: they answer (every member present, no partition twice), or raise the one-line error
Kafka's own failure maps to (about one random group in ten hits Kafka's NullPointerException on a
stale previous owner outside the reassignment; see docs/assignors-sticky.md)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings

from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.invariants import check_members
from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignmentError, StickyAssignor
from kgroup.assignors.sticky.userdata import encode_sticky_user_data
from kgroup.model import Member, TopicPartition

from .strategies import groups


def _eager_user_data(member: Member) -> bytes | None:
    if not member.owned and member.generation < 0:
        return None
    return encode_sticky_user_data(member.owned, member.generation)


def _no_double_assignment(result: dict[str, list[TopicPartition]]) -> None:
    counts = Counter(tp for partitions in result.values() for tp in partitions)
    assert [tp for tp, n in counts.items() if n > 1] == []


@given(groups())
@settings(max_examples=150, deadline=None)
def test_cooperative_sticky_answers_or_fails_like_kafka(request: AssignmentRequest) -> None:
    try:
        result = CooperativeStickyAssignor().assign(request)
    except StickyAssignmentError as failure:
        assert "\n" not in str(failure)
        return
    assert check_members(request.members, result) == []
    _no_double_assignment(result)


@given(groups())
@settings(max_examples=150, deadline=None)
def test_sticky_answers_or_fails_like_kafka(request: AssignmentRequest) -> None:
    members = [
        Member(
            m.member_id,
            m.topics,
            group_instance_id=m.group_instance_id,
            rack_id=m.rack_id,
            generation=m.generation,
            user_data=_eager_user_data(m),
        )
        for m in request.members
    ]
    eager = AssignmentRequest(members, request.topics, request.prefer_rack_aware_logic)
    try:
        result = StickyAssignor().assign(eager)
    except StickyAssignmentError as failure:
        assert "\n" not in str(failure)
        return
    assert check_members(eager.members, result) == []
    _no_double_assignment(result)
