"""Java consumers in classic groups, on kgroup's broker and on Apache Kafka: the same members give the
same assignment in every generation (and kgroup's own assignor gives it too), static members,
commits across restarts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from apache_kafka.conftest import Target
from apache_kafka.groups import (
    all_partitions,
    generations,
    java_consumer,
    kgroup_assignment,
    show,
    wait_settled,
)
from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka.java_client import JavaConsumer, JavaProducer

pytestmark = pytest.mark.slow

# Three Java consumers join one at a time (client ids c0 < c1 < c2, so member ids sort the same way on
# both brokers), then c1 leaves: the assignment of every generation, topics a (5 partitions) and b (3).
# The tables are what Apache Kafka 4.4.0 does; kgroup's broker must do the same.
EXPECTED: dict[str, dict[int, dict[str, str]]] = {
    "range": {
        1: {"c0": "a0 a1 a2 a3 a4 b0 b1 b2"},
        2: {"c0": "a0 a1 a2 b0 b1", "c1": "a3 a4 b2"},
        3: {"c0": "a0 a1 b0", "c1": "a2 a3 b1", "c2": "a4 b2"},
        4: {"c0": "a0 a1 a2 b0 b1", "c2": "a3 a4 b2"},
    },
    "roundrobin": {
        1: {"c0": "a0 a1 a2 a3 a4 b0 b1 b2"},
        2: {"c0": "a0 a2 a4 b1", "c1": "a1 a3 b0 b2"},
        3: {"c0": "a0 a3 b1", "c1": "a1 a4 b2", "c2": "a2 b0"},
        4: {"c0": "a0 a2 a4 b1", "c2": "a1 a3 b0 b2"},
    },
    # cooperative: a joining member first gets nothing while the owners give up what moves (one
    # generation), then it gets what was given up (the next); a leaving member's partitions move at once
    "cooperative-sticky": {
        1: {"c0": "a0 a1 a2 a3 a4 b0 b1 b2"},
        2: {"c0": "a0 a1 b0 b1", "c1": ""},
        3: {"c0": "a0 a1 b0 b1", "c1": "a2 a3 a4 b2"},
        4: {"c0": "a0 a1 b0", "c1": "a2 a3 b2", "c2": ""},
        5: {"c0": "a0 a1 b0", "c1": "a2 a3 b2", "c2": "a4 b1"},
        6: {"c0": "a0 a1 a2 b0", "c2": "a3 a4 b1 b2"},
    },
}


def _short(table: dict[int, dict[str, frozenset[TopicPartition]]], prefix: str) -> dict[int, dict[str, str]]:
    return {
        g: {
            name: " ".join(sorted(f"{tp.topic.removeprefix(prefix)}{tp.partition}" for tp in parts))
            for name, parts in row.items()
        }
        for g, row in table.items()
    }


@pytest.mark.parametrize("strategy", list(EXPECTED))
def test_generations_of_a_growing_then_shrinking_group(
    target: Target, names: str, tmp_path: Path, strategy: str
) -> None:
    topics = {f"{names}-a": 5, f"{names}-b": 3}
    for topic, count in topics.items():
        target.create_topic(topic, count)
    everything = all_partitions(topics)
    group = f"{names}-g"
    consumers: list[JavaConsumer] = []
    try:
        for name in ("c0", "c1", "c2"):
            consumers.append(
                java_consumer(
                    target.bootstrap_servers,
                    group,
                    list(topics),
                    name,
                    tmp_path,
                    assignment_strategy=strategy,
                )
            )
            wait_settled(consumers, everything)
        consumers[1].close()
        wait_settled([consumers[0], consumers[2]], everything)
        table = generations(consumers)
        assert _short(table, f"{names}-") == EXPECTED[strategy], show(table)
        for generation, row in table.items():
            assert row == kgroup_assignment(strategy, consumers, generation, topics), generation
    finally:
        for consumer in consumers:
            consumer.close()


def test_a_static_member_restarts_without_a_rebalance(target: Target, names: str, tmp_path: Path) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, 6)
    everything = all_partitions({topic: 6})
    static = {"assignment_strategy": "range", "session_timeout_ms": 30000}
    c0 = java_consumer(
        target.bootstrap_servers, group, [topic], "c0", tmp_path, group_instance_id="i0", **static
    )
    c1 = java_consumer(
        target.bootstrap_servers, group, [topic], "c1", tmp_path, group_instance_id="i1", **static
    )
    try:
        wait_settled([c0, c1], everything)
        generation, before = c0.generation, c0.assignment
        mark = c1.mark()
        c0.close()  # a static member leaves no LeaveGroup behind: its place is kept for the session
        again = java_consumer(
            target.bootstrap_servers, group, [topic], "c0-again", tmp_path, group_instance_id="i0", **static
        )
        try:
            assigned = again.wait_assigned()
            assert (assigned.generation, assigned.assignment) == (generation, before)
            assert assigned.member_id != c0.member_id and assigned.member_id.startswith("i0-")
            time.sleep(3)  # six heartbeats of c1: none tells it to rejoin
            assert c1.rebalances(since=mark) == []
            assert c1.current_assignment() == (everything - before, generation)
            assert again.rebalances()[1:] == []
        finally:
            again.close()
    finally:
        c0.close()
        c1.close()


def test_a_second_instance_fences_the_first(target: Target, names: str, tmp_path: Path) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, 4)
    everything = all_partitions({topic: 4})
    static = {"assignment_strategy": "range", "session_timeout_ms": 30000}
    first = java_consumer(
        target.bootstrap_servers, group, [topic], "first", tmp_path, group_instance_id="i0", **static
    )
    other = java_consumer(
        target.bootstrap_servers, group, [topic], "other", tmp_path, group_instance_id="i1", **static
    )
    second = None
    try:
        wait_settled([first, other], everything)
        generation, owned = first.generation, first.assignment
        mark = first.mark()
        second = java_consumer(
            target.bootstrap_servers, group, [topic], "second", tmp_path, group_instance_id="i0", **static
        )
        assigned = second.wait_assigned()
        assert (assigned.generation, assigned.assignment) == (generation, owned)
        error = first.wait_error(since=mark, timeout_s=30)
        assert (error["type"], error["fatal"]) == ("FencedInstanceIdException", True)
        # the client's words for the broker's FENCED_INSTANCE_ID (82), thrown by poll()
        assert error["message"] == (
            "The broker rejected this static consumer since another consumer with the same "
            "group.instance.id has registered with a different member.id."
        )
    finally:
        first.kill()
        other.close()
        if second is not None:
            second.close()


def test_commits_survive_consumer_restarts(target: Target, names: str, tmp_path: Path) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, 4)
    with JavaProducer(target.bootstrap_servers, name="producer", log_dir=tmp_path) as producer:
        first = producer.send_records(topic, [(f"k{i}", f"v{i}") for i in range(40)])
        ends = {TopicPartition(topic, p): 0 for p in range(4)}
        for sent in first:
            ends[TopicPartition(topic, sent.partition)] = sent.offset + 1

        with java_consumer(target.bootstrap_servers, group, [topic], "c0", tmp_path) as consumer:
            assert len(consumer.wait_records(40)) == 40
            commit = consumer.commit()
            assert (commit.error, commit.offsets) == (None, ends)

        second = producer.send_records(topic, [(f"k{i}", f"v{i}") for i in range(40, 60)])
        with java_consumer(target.bootstrap_servers, group, [topic], "c1", tmp_path) as consumer:
            assert consumer.committed(list(ends)) == ends
            records = consumer.wait_records(20)
            time.sleep(1)
            assert sorted(r["key"] for r in consumer.records()) == sorted(s.key for s in second)
            assert all(r["offset"] >= ends[TopicPartition(topic, r["partition"])] for r in records)
            rewound = {tp: 1 for tp in ends}
            assert consumer.commit(rewound).error is None

        with java_consumer(target.bootstrap_servers, group, [topic], "c2", tmp_path) as consumer:
            assert consumer.committed(list(ends)) == rewound
            records = consumer.wait_records(60 - 4)
            time.sleep(1)
            assert len(consumer.records()) == 56
            assert {(r["partition"], r["offset"]) for r in records} == {
                (s.partition, s.offset) for s in first + second if s.offset >= 1
            }
