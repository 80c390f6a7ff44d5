"""The fast sticky assignors equal the reference ones: on every Kafka vector and on random groups.

``kgroup.assignors.fast.sticky`` runs the constrained path as a numba kernel and hands everything
else to the reference implementation it extends. These tests compare its answers with Kafka's
(the vectors) and with the reference's (random groups, small and large), and check that the fast
path really runs (not only the fallback) on the inputs it is meant for.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.assignors.strategies import groups
from tests.conftest import load_vectors

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.fast import create_fast_assignor
from kgroup.assignors.fast.sticky import FastCooperativeStickyAssignor, FastStickyAssignor
from kgroup.assignors.fileformat import parse_assignment_file
from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kgroup.assignors.sticky.userdata import encode_sticky_user_data
from kgroup.bench.cases import CASES, Phase, build_request, build_topics
from kgroup.model import Assignment, Member, TopicMetadata, TopicPartition, sorted_partitions

STICKY = ("sticky", "cooperative-sticky")
REFERENCE: dict[str, Callable[[], Assignor]] = {
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}
FAST_CLASSES: dict[str, Callable[[], Any]] = {
    "sticky": FastStickyAssignor,
    "cooperative-sticky": FastCooperativeStickyAssignor,
}
FAST: dict[str, Callable[[], Any]] = {
    "sticky": lambda: _fast("sticky"),
    "cooperative-sticky": lambda: _fast("cooperative-sticky"),
}


def _as_text(assignment: Assignment) -> dict[str, list[str]]:
    return {m: [str(tp) for tp in sorted_partitions(tps)] for m, tps in assignment.items()}


def _fast(name: str) -> Any:
    """A fast assignor that takes its fast path even on small groups."""
    assignor = FAST_CLASSES[name]()
    assignor.fast_path_min_partitions = 0
    return assignor


def _run(make: Callable[[], Any], request: AssignmentRequest, prior: int | None = None) -> Any:
    assignor = make()
    if prior is not None:
        assignor.set_prior_max_generation(prior)
    try:
        return _as_text(assignor.assign(request)), assignor.max_generation
    except Exception as exc:  # both must fail the same way on Kafka's error paths
        return f"{type(exc).__name__}: {exc}", assignor.max_generation


def _vectors() -> list[tuple[str, dict[str, Any]]]:
    return [v for kind in STICKY for v in load_vectors(kind)]


_VECTORS = _vectors()


@pytest.mark.parametrize(("name", "data"), _VECTORS, ids=[n for n, _ in _VECTORS])
def test_fast_equals_kafka_on_every_vector(name: str, data: dict[str, Any]) -> None:
    af = parse_assignment_file(data, source=name)
    fast = FAST[data["assignor"]]()
    if af.prior_max_generation is not None:
        fast.set_prior_max_generation(af.prior_max_generation)
    got = _as_text(fast.assign(af.request))
    assert got == data["expected"]["assignment"], name


def test_the_fast_path_runs_on_most_constrained_vectors() -> None:
    """Guard against a fast path that silently always falls back."""
    taken = 0
    for name, data in _VECTORS:
        af = parse_assignment_file(data, source=name)
        fast = FAST[data["assignor"]]()
        if af.prior_max_generation is not None:
            fast.set_prior_max_generation(af.prior_max_generation)
        if fast._fast_assign(af.request) is not None:
            taken += 1
    assert taken >= 300, taken


def _with_sticky_user_data(request: AssignmentRequest) -> AssignmentRequest:
    """What eager sticky members send: owned partitions and generation in the user data."""
    members = [
        replace(m, user_data=encode_sticky_user_data(m.owned, m.generation if m.generation >= 0 else None))
        if m.owned or m.generation >= 0 else m
        for m in request.members
    ]
    return replace(request, members=members)


@pytest.mark.parametrize("assignor", STICKY)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=groups(equal_subscriptions=True), prior=st.none() | st.integers(-1, 5))
def test_fast_equals_reference_on_small_random_groups(
    assignor: str, request: AssignmentRequest, prior: int | None
) -> None:
    if assignor == "sticky":
        request = _with_sticky_user_data(request)
    assert _run(FAST[assignor], request, prior) == _run(REFERENCE[assignor], request, prior)


@pytest.mark.parametrize("assignor", STICKY)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=groups())
def test_fast_equals_reference_on_unequal_subscriptions(assignor: str, request: AssignmentRequest) -> None:
    """Unequal subscriptions go to the reference's general path: still the same answers."""
    if assignor == "sticky":
        request = _with_sticky_user_data(request)
    assert _run(FAST[assignor], request) == _run(REFERENCE[assignor], request)


def _large_group(
    seed: int, assignor: str, equal: bool = True, own_lists: bool = False
) -> tuple[AssignmentRequest, AssignmentRequest]:
    """A seeded large group (hundreds of members, thousands of partitions) and its next rebalance:
    members leave and join, some lose or gain partitions, some report an older generation. With
    ``equal`` false, members subscribe to one of a few different topic lists (the general path)."""
    rng = random.Random(seed)
    n_topics = rng.randint(3, 30)
    topics: dict[str, TopicMetadata] = {}
    with_racks = rng.random() < 0.6
    rack_names = ["r0", "r1", "r2", "r3"][: rng.randint(2, 4)]
    for t in range(n_topics):
        count = rng.randint(1, 400)
        racks = None
        if with_racks:
            racks = tuple(
                frozenset(rng.sample(rack_names, rng.randint(1, len(rack_names)))) for _ in range(count)
            )
        topics[f"topic-{t}"] = TopicMetadata(f"topic-{t}", count, racks)
    names = list(topics)
    rng.shuffle(names)
    n_members = rng.randint(50, 400)
    ids = [f"member-{rng.randrange(10**6)}-{i}" for i in range(n_members)]
    member_racks = with_racks and rng.random() < 0.8

    patterns = [tuple(names)]
    if not equal:
        patterns += [tuple(rng.sample(names, rng.randint(1, len(names)))) for _ in range(rng.randint(1, 3))]

    def member(mid: str) -> Member:
        rack = rng.choice(rack_names) if member_racks and rng.random() < 0.9 else None
        topics_list = rng.choice(patterns)
        if own_lists:  # an equal but separate tuple per member (no sharing by identity)
            topics_list = tuple(list(topics_list))
        return Member(mid, topics_list, rack_id=rack)

    first = AssignmentRequest([member(m) for m in ids], topics, prefer_rack_aware_logic=rng.random() < 0.5)
    initial = REFERENCE[assignor]().assign(first)

    survivors = [m for m in first.members if rng.random() > 0.1]
    members: list[Member] = []
    for m in survivors:
        owned = list(initial[m.member_id])
        roll = rng.random()
        if roll < 0.1:
            owned = owned[: len(owned) // 2]  # lost some
        generation = 1 if rng.random() > 0.05 else 0  # a few stale members
        members.append(replace(m, owned=tuple(owned), generation=generation))
    members += [member(f"joiner-{i}") for i in range(rng.randint(0, 30))]
    rng.shuffle(members)
    second = AssignmentRequest(members, topics, first.prefer_rack_aware_logic)
    if assignor == "sticky":
        second = _with_sticky_user_data(second)
    return first, second


@pytest.mark.slow
@pytest.mark.parametrize("assignor", STICKY)
@pytest.mark.parametrize("seed", range(6))
def test_fast_equals_reference_on_large_random_groups(assignor: str, seed: int) -> None:
    first, second = _large_group(seed, assignor)
    for request in (first, second):
        fast = FAST[assignor]()
        assert fast._fast_assign(request) is not None, "expected the fast path to run"
        assert _run(FAST[assignor], request) == _run(REFERENCE[assignor], request)


@pytest.mark.slow
@pytest.mark.parametrize("assignor", STICKY)
@pytest.mark.parametrize("seed", range(8))
def test_fast_equals_reference_on_large_random_groups_with_unequal_subscriptions(
    assignor: str, seed: int
) -> None:
    """The general path: fast when the greedy result is balanced, the reference's loop otherwise;
    equal to the reference either way."""
    for request in _large_group(100 + seed, assignor, equal=False):
        assert _run(FAST[assignor], request) == _run(REFERENCE[assignor], request)


@pytest.mark.parametrize("assignor", STICKY)
@pytest.mark.parametrize("case", list(CASES))
def test_fast_equals_reference_on_the_benchmark_cases_scaled_down(assignor: str, case: str) -> None:
    """Kafka's large test cases (``kgroup bench assign``), shrunk: the fast path runs and agrees."""
    shape = CASES[case].scaled(0.04)
    topics = build_topics(shape)
    first = build_request(shape, assignor, Phase.INITIAL, topics=topics)
    initial = REFERENCE[assignor]().assign(first)
    second = build_request(shape, assignor, Phase.REASSIGN, topics=topics, initial=initial)
    for request in (first, second):
        assert FAST[assignor]()._fast_assign(request) is not None, "expected the fast path to run"
        assert _run(FAST[assignor], request) == _run(REFERENCE[assignor], request)


def test_fast_assignor_names_and_protocols_are_the_references() -> None:
    for name in STICKY:
        fast, reference = create_fast_assignor(name), REFERENCE[name]()
        assert fast.name == reference.name == name
        assert fast.protocols == reference.protocols


def test_unknown_fast_assignor_is_a_one_line_error() -> None:
    from kgroup.model import KgroupError

    with pytest.raises(KgroupError, match="no fast implementation of 'legacy-range'"):
        create_fast_assignor("legacy-range")


def test_claims_beyond_a_topic_fall_back_to_the_reference() -> None:
    topics = {"t": TopicMetadata("t", 2)}
    members = [
        Member("a", ("t",), (TopicPartition("t", 5),), 1),
        Member("b", ("t",), (TopicPartition("t", 0),), 1),
    ]
    request = AssignmentRequest(members, topics)
    fast = FAST["cooperative-sticky"]()
    assert fast._fast_assign(request) is None
    assert _run(FAST["cooperative-sticky"], request) == _run(CooperativeStickyAssignor, request)


def test_small_groups_use_the_reference_unless_asked() -> None:
    topics = {"t": TopicMetadata("t", 10)}
    request = AssignmentRequest([Member("a", ("t",)), Member("b", ("t",))], topics)
    assert create_fast_assignor("sticky")._fast_assign(request) is None  # type: ignore[attr-defined]
    assert FAST["sticky"]()._fast_assign(request) is not None


@pytest.mark.slow
@pytest.mark.parametrize("assignor", STICKY)
@pytest.mark.parametrize("seed", range(4))
def test_fast_equals_reference_with_one_heap_for_many_member_groups(assignor: str, seed: int) -> None:
    """Every member with its own subscription list object: too many groups, one shared heap."""
    from kgroup.assignors.fast.sticky import _member_groups, _racks

    for request in _large_group(200 + seed, assignor, equal=False, own_lists=True):
        ordered = list(request.members)
        racks = _racks(ordered, _topics_of(request), request.prefer_rack_aware_logic)
        assert racks is not None and _member_groups(ordered, racks)[1] == 0
        assert _run(FAST[assignor], request) == _run(REFERENCE[assignor], request)


def _topics_of(request: AssignmentRequest) -> Any:
    from kgroup.assignors.fast.sticky import _assignable

    return _assignable(request.members, request.topics)


@pytest.mark.slow
def test_the_general_fast_path_runs_on_most_large_unequal_groups() -> None:
    runs = [
        FAST[assignor]()._fast_assign(request) is not None
        for assignor in STICKY
        for seed in range(8)
        for request in _large_group(100 + seed, assignor, equal=False)
    ]
    assert sum(runs) >= len(runs) // 2, runs


def test_a_shared_subscription_listing_a_topic_twice_is_not_equal() -> None:
    """Kafka compares list sizes with the first member's topic *set*: ("t", "t") twice is unequal,
    even when both members share one tuple object."""
    from kgroup.assignors.fast.sticky import _all_subscriptions_equal

    twice = ("t", "t")
    members = [Member("a", twice), Member("b", twice)]
    assert not _all_subscriptions_equal(members)
    request = AssignmentRequest(members, {"t": TopicMetadata("t", 6)})
    for name in STICKY:
        assert _run(FAST[name], request) == _run(REFERENCE[name], request)
