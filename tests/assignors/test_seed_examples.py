"""The worked examples of the seed articles (000 and 001), as Kafka computes them."""

from __future__ import annotations

from kgroup.assignors import AssignmentRequest, create_assignor
from kgroup.assignors.legacy import LegacyAssignmentRequest, LegacyRangeAssignor, LegacyRoundRobinAssignor
from kgroup.model import Member, TopicMetadata, TopicPartition


def _run(assignor: str, members: list[Member], topics: dict[str, int]) -> dict[str, list[str]]:
    meta = {name: TopicMetadata(name, count) for name, count in topics.items()}
    result = create_assignor(assignor).assign(AssignmentRequest(members, meta))
    return {m: [str(tp) for tp in ps] for m, ps in result.items()}


def _consumers(*ids: str, topics: tuple[str, ...]) -> list[Member]:
    return [Member(i, topics) for i in ids]


# --- seed 000 -----------------------------------------------------------------------------------


def test_seed000_range_10_partitions_3_consumers() -> None:
    # c1: 0,1,2,3  c2: 4,5,6  c3: 7,8,9
    result = _run("range", _consumers("c1", "c2", "c3", topics=("t",)), {"t": 10})
    assert result == {
        "c1": ["t-0", "t-1", "t-2", "t-3"],
        "c2": ["t-4", "t-5", "t-6"],
        "c3": ["t-7", "t-8", "t-9"],
    }


def test_seed000_range_11_partitions_3_consumers() -> None:
    # c1: 0,1,2,3  c2: 4,5,6,7  c3: 8,9,10
    result = _run("range", _consumers("c1", "c2", "c3", topics=("t",)), {"t": 11})
    assert result == {
        "c1": ["t-0", "t-1", "t-2", "t-3"],
        "c2": ["t-4", "t-5", "t-6", "t-7"],
        "c3": ["t-8", "t-9", "t-10"],
    }


def test_seed000_range_two_topics_of_10_give_c1_two_extra() -> None:
    result = _run("range", _consumers("c1", "c2", "c3", topics=("t1", "t2")), {"t1": 10, "t2": 10})
    assert [len(ps) for ps in result.values()] == [8, 6, 6]
    assert result["c1"] == ["t1-0", "t1-1", "t1-2", "t1-3", "t2-0", "t2-1", "t2-2", "t2-3"]


def test_seed000_roundrobin_5_partitions_2_consumers() -> None:
    result = _run("roundrobin", _consumers("c0", "c1", topics=("t",)), {"t": 5})
    assert result == {"c0": ["t-0", "t-2", "t-4"], "c1": ["t-1", "t-3"]}


def test_seed000_roundrobin_three_topics_with_skipping() -> None:
    # t0 (3), t1 (2), t2 (4); c0 [t0, t1], c1 [t1, t2], c2 [t2, t0]. The article's walk-through:
    # t0-0 c0, t0-1 c2 (c1 skipped), t0-2 c0, t1-0 c1, t1-1 c0, t2-0 c1, t2-1 c2, t2-2 c1, and the
    # last one, which the article misprints as "t0-p3", is t2-3 -> c2.
    members = [Member("c0", ("t0", "t1")), Member("c1", ("t1", "t2")), Member("c2", ("t2", "t0"))]
    result = _run("roundrobin", members, {"t0": 3, "t1": 2, "t2": 4})
    assert result == {
        "c0": ["t0-0", "t0-2", "t1-1"],
        "c1": ["t1-0", "t2-0", "t2-2"],
        "c2": ["t0-1", "t2-1", "t2-3"],
    }


# --- seed 001 -----------------------------------------------------------------------------------

SEED001_TOPICS = {"t0": 3, "t1": 3}


def test_seed001_modern_range() -> None:
    result = _run("range", _consumers("c0", "c1", topics=("t0", "t1")), SEED001_TOPICS)
    assert result == {"c0": ["t0-0", "t0-1", "t1-0", "t1-1"], "c1": ["t0-2", "t1-2"]}


def test_seed001_modern_roundrobin() -> None:
    result = _run("roundrobin", _consumers("c0", "c1", topics=("t0", "t1")), SEED001_TOPICS)
    assert result == {"c0": ["t0-0", "t0-2", "t1-1"], "c1": ["t0-1", "t1-0", "t1-2"]}


def test_seed001_legacy_assignors_with_one_stream_each_agree_with_the_article() -> None:
    members = _consumers("c0", "c1", topics=("t0", "t1"))
    assert _run("legacy-range", members, SEED001_TOPICS) == {
        "c0": ["t0-0", "t0-1", "t1-0", "t1-1"],
        "c1": ["t0-2", "t1-2"],
    }
    # hashCode("[t0,0]") < "[t0,1]" < "[t0,2]" < "[t1,0]" < ...: here hash order is natural order
    assert _run("legacy-roundrobin", members, SEED001_TOPICS) == {
        "c0": ["t0-0", "t0-2", "t1-1"],
        "c1": ["t0-1", "t1-0", "t1-2"],
    }


def test_seed001_legacy_assignors_with_two_streams_per_topic() -> None:
    # topicCountMap {t0: 2, t1: 2} for both consumers: threads c0-0, c0-1, c1-0, c1-1
    members = _consumers("c0", "c1", topics=("t0", "t1"))
    topics = {n: TopicMetadata(n, c) for n, c in SEED001_TOPICS.items()}
    streams = {"c0": {"t0": 2, "t1": 2}, "c1": {"t0": 2, "t1": 2}}
    request = LegacyAssignmentRequest(members, topics, streams=streams)

    by_range = LegacyRangeAssignor().assign_threads(request)
    # per topic: 3 partitions over 4 threads -> N = 0, R = 3: the first three threads get one each
    assert by_range.threads == {
        "c0-0": [TopicPartition("t0", 0), TopicPartition("t1", 0)],
        "c0-1": [TopicPartition("t0", 1), TopicPartition("t1", 1)],
        "c1-0": [TopicPartition("t0", 2), TopicPartition("t1", 2)],
        "c1-1": [],
    }
    assert by_range.idle_threads() == ["c1-1"]

    by_rr = LegacyRoundRobinAssignor().assign_threads(request)
    # six partitions in hash order dealt to c0-0, c0-1, c1-0, c1-1, c0-0, c0-1
    assert {t: [str(tp) for tp in ps] for t, ps in by_rr.threads.items()} == {
        "c0-0": ["t0-0", "t1-1"],
        "c0-1": ["t0-1", "t1-2"],
        "c1-0": ["t0-2"],
        "c1-1": ["t1-0"],
    }
    assert {m: len(ps) for m, ps in by_rr.per_consumer().items()} == {"c0": 4, "c1": 2}
