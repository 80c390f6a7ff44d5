"""The leader's whole path (subscription bytes in, assignment bytes out) gives exactly the bytes of the
object path: ``encode_assignment(ConsumerAssignment(tuple(partitions)))`` for every member."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.assignors.strategies import groups
from tests.conftest import load_vectors

from kgroup.assignors import leader_path
from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.fast.partition_list import FlatPartitionList, TopicTable
from kgroup.assignors.fast.sticky import FastCooperativeStickyAssignor, FastStickyAssignor
from kgroup.assignors.fileformat import parse_assignment_file
from kgroup.assignors.leader_path import assign_subscriptions, encode_assignments, members_from_subscriptions
from kgroup.javacompat import hashmap_iteration_order
from kgroup.messages import ConsumerAssignment, ConsumerSubscription
from kgroup.model import KgroupError, Member, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment, encode_assignment, encode_subscription


@pytest.fixture(scope="module")
def monkeypatch_module() -> Any:
    """A monkeypatch for a hypothesis test (function-scoped fixtures are not reset between examples)."""
    with pytest.MonkeyPatch.context() as patch:
        yield patch


TOPIC_NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6)


@st.composite
def flat_assignments(draw: st.DrawFn) -> tuple[TopicTable, list[np.ndarray]]:
    """A topic table (some topics without partitions) and each member's flat numbers, in any order
    (a topic's partitions need not be consecutive in a member's list)."""
    names = draw(st.lists(TOPIC_NAMES, min_size=1, max_size=8, unique=True))
    counts = draw(st.lists(st.integers(0, 12), min_size=len(names), max_size=len(names)))
    if sum(counts) == 0:
        counts[-1] = 1
    bases = np.zeros(len(names), dtype=np.int64)
    np.cumsum(counts[:-1], out=bases[1:])
    total = sum(counts)
    members = draw(st.lists(
        st.lists(st.integers(0, total - 1), max_size=3 * total, unique=True), min_size=1, max_size=6))
    return TopicTable(names, bases), [np.array(m, dtype=np.int64) for m in members]


@settings(max_examples=300, deadline=None)
@given(case=flat_assignments(), version=st.integers(0, 6))
def test_flat_lists_encode_to_the_object_paths_bytes(
    case: tuple[TopicTable, list[np.ndarray]], version: int
) -> None:
    table, flats = case
    result = {f"m{i}": FlatPartitionList(flat, table) for i, flat in enumerate(flats)}
    result["plain"] = list(table.partitions(flats[0]))  # a list that is not flat: the object path
    order = list(result)
    got = encode_assignments(result, order, version)
    assert all(not lst.is_materialised() for lst in result.values() if isinstance(lst, FlatPartitionList))
    want = [encode_assignment(ConsumerAssignment(partitions=tuple(result[m])), version) for m in order]
    assert got == want
    for data, member in zip(got, order, strict=True):
        # the same partitions (grouped by topic in order of first appearance, as Kafka writes them)
        assert sorted(decode_assignment(data).partitions) == sorted(result[member])


JAVA_INTS = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=200, deadline=None)
@given(
    lists=st.lists(st.lists(st.tuples(st.sampled_from(["a", "b", "ü", "c.d"]), JAVA_INTS | st.integers(0, 3)),
                            max_size=12), min_size=1, max_size=5),
    version=st.integers(0, 6),
)
def test_plain_lists_through_the_kernel_give_the_object_paths_bytes(
    lists: list[list[tuple[str, int]]], version: int, monkeypatch_module: Any
) -> None:
    monkeypatch_module.setattr(leader_path, "VECTOR_MIN_PARTITIONS", 0)
    result = {f"m{i}": [TopicPartition(t, p) for t, p in lst] for i, lst in enumerate(lists)}
    order = list(result)
    want = [encode_assignment(ConsumerAssignment(partitions=tuple(result[m])), version) for m in order]
    assert encode_assignments(result, order, version) == want


@pytest.mark.parametrize("odd", [TopicPartition("t", True), TopicPartition("t", 2**31), ("t", 1),
                                 TopicPartition("t", 1.0)])
def test_unusual_plain_lists_take_the_object_path(odd: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the object path does with them (bytes or its error), the leader path does too."""
    monkeypatch.setattr(leader_path, "VECTOR_MIN_PARTITIONS", 0)
    result = {"m": [TopicPartition("t", 0), odd]}
    want = _outcome(lambda: [encode_assignment(ConsumerAssignment(partitions=tuple(result["m"])))])
    assert _outcome(lambda: encode_assignments(result, ["m"])) == want


def test_a_negative_version_is_refused() -> None:
    with pytest.raises(KgroupError, match="version"):
        encode_assignments({}, [], -1)


def _subscription_bytes(request: AssignmentRequest, version: int) -> list[tuple[str, bytes]]:
    return [
        (m.member_id, encode_subscription(
            ConsumerSubscription(topics=m.topics, user_data=m.user_data, owned_partitions=m.owned,
                                 generation_id=m.generation, rack_id=m.rack_id), version))
        for m in request.members
    ]


def _object_path(
    make: Any, subscriptions: list[tuple[str, bytes]], request: AssignmentRequest
) -> list[tuple[str, bytes]]:
    members = members_from_subscriptions(subscriptions)
    result = make().assign(AssignmentRequest(members, request.topics, request.prefer_rack_aware_logic))
    order = hashmap_iteration_order(result.keys())
    return [(m, encode_assignment(ConsumerAssignment(partitions=tuple(result[m])))) for m in order]


def _fast(cls: Any) -> Any:
    def make() -> Any:
        assignor = cls()
        assignor.fast_path_min_partitions = 0  # the fast path (flat answers) even on small groups
        return assignor
    return make


@pytest.mark.parametrize("cls", [FastStickyAssignor, FastCooperativeStickyAssignor])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=groups(), version=st.integers(1, 3))
def test_the_leader_path_equals_the_object_path_on_random_groups(
    cls: Any, request: AssignmentRequest, version: int
) -> None:
    subscriptions = _subscription_bytes(request, version)
    assert _outcome(lambda: assign_subscriptions(
        _fast(cls)(), subscriptions, request.topics, prefer_rack_aware_logic=request.prefer_rack_aware_logic
    )) == _outcome(lambda: _object_path(_fast(cls), subscriptions, request))


def _outcome(run: Any) -> Any:
    try:
        return run()
    except Exception as exc:  # Kafka's error paths: both must fail the same way
        return f"{type(exc).__name__}: {exc}"


_VECTORS = [v for kind in ("sticky", "cooperative-sticky") for v in load_vectors(kind)]


@pytest.mark.parametrize(("name", "data"), _VECTORS, ids=[n for n, _ in _VECTORS])
def test_the_leader_path_gives_kafkas_answer_as_bytes_on_every_vector(
    name: str, data: dict[str, Any]
) -> None:
    af = parse_assignment_file(data, source=name)
    cls = FastStickyAssignor if data["assignor"] == "sticky" else FastCooperativeStickyAssignor
    assignor = _fast(cls)()
    if af.prior_max_generation is not None:  # the leader's assignor state from earlier rounds
        assignor.set_prior_max_generation(af.prior_max_generation)
    subscriptions = _subscription_bytes(af.request, 3)
    try:
        got = dict(assign_subscriptions(assignor, subscriptions, af.request.topics,
                                        prefer_rack_aware_logic=af.request.prefer_rack_aware_logic))
    except Exception as exc:
        assert "error" in data["expected"], f"{name}: {exc}"
        return
    expected = data["expected"]["assignment"]
    for member_id, data_bytes in got.items():
        shown = sorted(str(tp) for tp in decode_assignment(data_bytes).partitions)
        assert shown == sorted(expected.get(member_id, [])), (name, member_id)


def test_equal_subscriptions_are_decoded_once() -> None:
    data = encode_subscription(ConsumerSubscription(topics=("b", "a")))
    members = members_from_subscriptions([("m1", data), ("m2", data), ("m3", bytes(data))])
    assert members[0].topics is members[1].topics is members[2].topics
    assert members[0] == Member("m1", ("a", "b"))
