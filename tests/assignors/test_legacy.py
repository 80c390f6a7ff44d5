"""The ZooKeeper-era assignors of Kafka 0.8.2: stream counts, thread ids, Range and RoundRobin."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors.strategies import groups
from kgroup.assignors import AssignmentRequest, create_assignor
from kgroup.assignors.fileformat import parse_assignment_file, run_assignment_file
from kgroup.assignors.invariants import check_coverage, check_members, check_subscriptions
from kgroup.assignors.legacy import (
    LegacyAssignmentRequest,
    LegacyRangeAssignor,
    LegacyRoundRobinAssignor,
    thread_id,
)
from kgroup.javacompat import java_string_hash
from kgroup.model import KgroupError, Member, RebalanceProtocol, TopicMetadata, TopicPartition


def _names(assignment: dict[str, list[TopicPartition]]) -> dict[str, list[str]]:
    return {m: [str(tp) for tp in ps] for m, ps in assignment.items()}


def test_registry_names_and_protocols() -> None:
    assert isinstance(create_assignor("legacy-range"), LegacyRangeAssignor)
    assert isinstance(create_assignor("legacy-roundrobin"), LegacyRoundRobinAssignor)
    assert LegacyRangeAssignor.protocols == (RebalanceProtocol.EAGER,)
    assert thread_id("c1", 0) == "c1-0"


def test_range_over_threads_uses_string_order_of_thread_ids() -> None:
    # c has 11 streams: its threads sort c-0, c-1, c-10, c-2, ... (string order, as in Kafka 0.8.2)
    topics = {"t": TopicMetadata("t", 11)}
    request = LegacyAssignmentRequest([Member("c", ("t",))], topics, streams={"c": {"t": 11}})
    threads = LegacyRangeAssignor().assign_threads(request).threads
    assert list(threads) == [f"c-{i}" for i in range(11)]
    assert threads["c-10"] == [TopicPartition("t", 2)]
    assert threads["c-2"] == [TopicPartition("t", 3)]


def test_range_formula_start_and_count_per_thread() -> None:
    # 7 partitions over threads a-0, a-1, b-0: N = 2, R = 1 -> starts 0, 3, 5; counts 3, 2, 2
    topics = {"t": TopicMetadata("t", 7)}
    members = [Member("b", ("t",)), Member("a", ("t",))]
    request = LegacyAssignmentRequest(members, topics, streams={"a": {"t": 2}})
    result = LegacyRangeAssignor().assign_threads(request)
    assert _names(result.threads) == {
        "b-0": ["t-5", "t-6"],
        "a-0": ["t-0", "t-1", "t-2"],
        "a-1": ["t-3", "t-4"],
    }
    assert result.owner == {"b-0": "b", "a-0": "a", "a-1": "a"}
    assert _names(result.per_consumer()) == {"b": ["t-5", "t-6"], "a": ["t-0", "t-1", "t-2", "t-3", "t-4"]}


def test_threads_without_partitions_are_reported_not_an_error() -> None:
    topics = {"t": TopicMetadata("t", 1)}
    request = LegacyAssignmentRequest([Member("c", ("t",))], topics, streams={"c": {"t": 3}})
    result = LegacyRangeAssignor().assign_threads(request)
    assert result.idle_threads() == ["c-1", "c-2"]


def test_roundrobin_orders_partitions_by_java_hash_of_bracketed_name() -> None:
    # hashCode("[t10,0]") = -1768803071 < hashCode("[t1,0]") = -1581082495 (int32 overflow):
    # all of t10 comes first, then t1, dealt to the sorted threads c0-0, c1-0
    assert java_string_hash("[t10,0]") == -1768803071
    assert java_string_hash("[t1,0]") == -1581082495
    topics = {"t1": TopicMetadata("t1", 3), "t10": TopicMetadata("t10", 3)}
    members = [Member("c1", ("t1", "t10")), Member("c0", ("t10", "t1"))]
    result = LegacyRoundRobinAssignor().assign(AssignmentRequest(members, topics))
    assert _names(result) == {"c1": ["t1-0", "t1-2", "t10-1"], "c0": ["t1-1", "t10-0", "t10-2"]}


def test_roundrobin_requires_identical_subscriptions() -> None:
    topics = {"t1": TopicMetadata("t1", 2), "t2": TopicMetadata("t2", 2)}
    members = [Member("c0", ("t1", "t2")), Member("c1", ("t1",))]
    with pytest.raises(KgroupError, match=r"topic 't2'.*consumer 'c1' differs") as info:
        LegacyRoundRobinAssignor().assign(AssignmentRequest(members, topics))
    assert "\n" not in info.value.message


def test_roundrobin_requires_identical_stream_counts() -> None:
    topics = {"t1": TopicMetadata("t1", 2), "t2": TopicMetadata("t2", 2)}
    members = [Member("c0", ("t1", "t2")), Member("c1", ("t1", "t2"))]
    request = LegacyAssignmentRequest(members, topics, streams={"c1": {"t2": 2}})
    with pytest.raises(KgroupError, match=r"topic 't2'.*consumer 'c1' differs"):
        LegacyRoundRobinAssignor().assign(request)


def test_equal_stream_counts_on_every_topic_are_allowed() -> None:
    topics = {"t1": TopicMetadata("t1", 3)}
    members = [Member("c0", ("t1",)), Member("c1", ("t1",))]
    request = LegacyAssignmentRequest(members, topics, streams={"c0": {"t1": 2}, "c1": {"t1": 2}})
    threads = LegacyRoundRobinAssignor().assign_threads(request).threads
    assert _names(threads) == {"c0-0": ["t1-0"], "c0-1": ["t1-1"], "c1-0": ["t1-2"], "c1-1": []}


@pytest.mark.parametrize(
    ("streams", "needle"),
    [
        ({"c0": {"t9": 1}}, "not subscribed"),
        ({"c0": {"t1": 0}}, "1 or more"),
        ({"nobody": {"t1": 1}}, "not in the group"),
    ],
)
def test_bad_stream_counts_are_one_line_errors(streams: dict[str, dict[str, int]], needle: str) -> None:
    request = LegacyAssignmentRequest(
        [Member("c0", ("t1",))], {"t1": TopicMetadata("t1", 1)}, streams=streams
    )
    with pytest.raises(KgroupError, match=needle):
        LegacyRangeAssignor().assign(request)


def test_streams_come_from_the_assignment_file() -> None:
    data = {
        "assignor": "legacy-range",
        "input": {
            "topics": [{"name": "t0", "partitions": 3}],
            "members": [
                {"memberId": "c0", "topics": ["t0"], "streams": {"t0": 2}},
                {"memberId": "c1", "topics": ["t0"]},
            ],
        },
    }
    assert _names(run_assignment_file(parse_assignment_file(data))) == {
        "c0": ["t0-0", "t0-1"],
        "c1": ["t0-2"],
    }


@settings(max_examples=150, deadline=None)
@given(groups(racks=False, static=False, owned=False), st.integers(min_value=1, max_value=3))
def test_legacy_range_keeps_coverage_and_balances_threads(request: AssignmentRequest, streams: int) -> None:
    counts = {m.member_id: dict.fromkeys(m.topics, streams) for m in request.members}
    legacy = LegacyAssignmentRequest(request.members, request.topics, streams=counts)
    result = LegacyRangeAssignor().assign_threads(legacy)
    per_consumer = result.per_consumer()
    assert check_members(request.members, per_consumer) == []
    assert check_subscriptions(request.members, per_consumer) == []
    assert check_coverage(request.members, request.topics, per_consumer) == []
    # per topic, every thread of the topic holds within one of the others
    for topic, meta in request.topics.items():
        sizes = [
            sum(1 for tp in ps if tp.topic == topic)
            for tid, ps in result.threads.items()
            if topic in counts[result.owner[tid]]
        ]
        if sizes and meta.partitions:
            assert max(sizes) - min(sizes) <= 1


@settings(max_examples=100, deadline=None)
@given(groups(racks=False, static=False, owned=False, equal_subscriptions=True))
def test_legacy_roundrobin_is_balanced_over_threads(request: AssignmentRequest) -> None:
    result = LegacyRoundRobinAssignor().assign_threads(request)
    assert check_coverage(request.members, request.topics, result.per_consumer()) == []
    sizes = [len(ps) for ps in result.threads.values()]
    if sizes:
        assert max(sizes) - min(sizes) <= 1


def test_equal_hash_codes_keep_topic_then_partition_order() -> None:
    # "Aa" and "BB" have the same Java hash code, so "[Aa,0]" and "[BB,0]" tie; kgroup's documented
    # tie order is topic (Java order), then partition
    assert java_string_hash("[Aa,0]") == java_string_hash("[BB,0]")
    topics = {"BB": TopicMetadata("BB", 1), "Aa": TopicMetadata("Aa", 1)}
    members = [Member("c0", ("BB", "Aa")), Member("c1", ("Aa", "BB"))]
    result = LegacyRoundRobinAssignor().assign(AssignmentRequest(members, topics))
    assert _names(result) == {"c0": ["Aa-0"], "c1": ["BB-0"]}
