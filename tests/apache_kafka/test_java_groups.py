"""Java consumers in classic groups, on kgroup's broker and on Apache Kafka: the same members give the
same assignment in every generation (and kgroup's own assignor gives it too), static members,
commits across restarts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from apache_kafka.conftest import Target
from apache_kafka.groups import (
    FAST,
    all_partitions,
    generations,
    java_consumers,
    kgroup_assignment,
    missed_generations,
    show,
    wait_settled,
)
from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka.java_client import JavaConsumer, JavaProducer, close_all, start_all

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
    # generation), then it gets what was given up (the next); a leaving member's partitions move at once.
    # Members that got nothing are left out of every row: a newcomer may miss the callback of the
    # generation that gives it nothing (its SyncGroup arriving after the next rebalance began)
    "cooperative-sticky": {
        1: {"c0": "a0 a1 a2 a3 a4 b0 b1 b2"},
        2: {"c0": "a0 a1 b0 b1"},
        3: {"c0": "a0 a1 b0 b1", "c1": "a2 a3 a4 b2"},
        4: {"c0": "a0 a1 b0", "c1": "a2 a3 b2"},
        5: {"c0": "a0 a1 b0", "c1": "a2 a3 b2", "c2": "a4 b1"},
        6: {"c0": "a0 a1 a2 b0", "c2": "a3 a4 b1 b2"},
    },
}


def _short(table: dict[int, dict[str, frozenset[TopicPartition]]], prefix: str) -> dict[int, dict[str, str]]:
    """``a0 a1 b2`` for the partitions of each member that got any (see EXPECTED)."""
    return {
        g: {
            name: " ".join(sorted(f"{tp.topic.removeprefix(prefix)}{tp.partition}" for tp in parts))
            for name, parts in row.items()
            if parts
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
    consumers = java_consumers(
        target.bootstrap_servers,
        group,
        list(topics),
        ["c0", "c1", "c2"],
        tmp_path,
        subscribe=False,
        assignment_strategy=strategy,
    )
    try:
        for joined in range(1, 4):  # one at a time, each once the group has settled
            consumers[joined - 1].subscribe()
            wait_settled(consumers[:joined], everything)
        consumers[1].close()
        wait_settled([consumers[0], consumers[2]], everything)
        table = generations(consumers)
        short = _short(table, f"{names}-")
        missed = {c.name: missed_generations(c) for c in consumers}
        if not any(missed.values()):
            assert short == EXPECTED[strategy], show(table)
        else:
            # a member's SyncGroup came after the next rebalance began (the client logs it; Kafka does
            # this under load): it rejoined owning what it had before, so the generations between take
            # another path; every one of them is still kgroup's assignor's answer (below) and the group
            # ends where the table does
            assert list(short.values())[-1] == list(EXPECTED[strategy].values())[-1], (missed, show(table))
        for generation, row in table.items():
            expected = kgroup_assignment(strategy, consumers, generation, topics)
            assert row == {name: expected[name] for name in row}, generation
            not_told = expected.keys() - row.keys()
            assert all(not expected[name] or generation in missed[name] for name in not_told), generation
    finally:
        close_all(*consumers)


def _static_members(
    target: Target, group: str, topic: str, log_dir: Path, members: tuple[tuple[str, str, bool], ...]
) -> list[JavaConsumer]:
    """Static range members ``(name, group.instance.id, subscribe at start)`` with a 30 s session."""
    return [
        JavaConsumer(
            target.bootstrap_servers,
            group,
            [topic],
            group_instance_id=instance,
            client_id=name,
            name=name,
            log_dir=log_dir,
            subscribe=subscribe,
            assignment_strategy="range",
            session_timeout_ms=30000,
        )
        for name, instance, subscribe in members
    ]


def test_a_static_member_restarts_without_a_rebalance(target: Target, names: str, tmp_path: Path) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, 6)
    everything = all_partitions({topic: 6})
    c0, c1, again = _static_members(
        target, group, topic, tmp_path, (("c0", "i0", True), ("c1", "i1", True), ("c0-again", "i0", False))
    )
    start_all(c0, c1, again)
    try:
        wait_settled([c0, c1], everything)
        generation, before = c0.generation, c0.assignment
        mark = c1.mark()
        c0.close()  # a static member leaves no LeaveGroup behind: its place is kept for the session
        again.subscribe()
        assigned = again.wait_assigned()
        assert (assigned.generation, assigned.assignment) == (generation, before)
        assert assigned.member_id != c0.member_id and assigned.member_id.startswith("i0-")
        time.sleep(2)  # four heartbeats of c1: none tells it to rejoin
        assert c1.rebalances(since=mark) == []
        assert c1.current_assignment() == (everything - before, generation)
        assert again.rebalances()[1:] == []
    finally:
        close_all(c0, c1, again)


def test_a_second_instance_fences_the_first(target: Target, names: str, tmp_path: Path) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, 4)
    everything = all_partitions({topic: 4})
    first, other, second = _static_members(
        target,
        group,
        topic,
        tmp_path,
        (("first", "i0", True), ("other", "i1", True), ("second", "i0", False)),
    )
    start_all(first, other, second)
    try:
        wait_settled([first, other], everything)
        generation, owned = first.generation, first.assignment
        mark = first.mark()
        second.subscribe()
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
        close_all(other, second)


def test_commits_survive_consumer_restarts(target: Target, names: str, tmp_path: Path) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, 4)
    producer = JavaProducer(target.bootstrap_servers, name="producer", log_dir=tmp_path)
    c0, c1, c2 = [
        JavaConsumer(
            target.bootstrap_servers,
            group,
            [topic],
            client_id=name,
            name=name,
            log_dir=tmp_path,
            subscribe=False,
            **FAST,
        )
        for name in ("c0", "c1", "c2")
    ]
    start_all(producer, c0, c1, c2)
    with producer, c0, c1, c2:
        first = producer.send_records(topic, [(f"k{i}", f"v{i}") for i in range(40)])
        ends = {TopicPartition(topic, p): 0 for p in range(4)}
        for sent in first:
            ends[TopicPartition(topic, sent.partition)] = sent.offset + 1

        c0.subscribe()
        assert len(c0.wait_records(40)) == 40
        commit = c0.commit()
        assert (commit.error, commit.offsets) == (None, ends)
        c0.close()

        # a restart resumes at the committed offsets: only the records produced since
        second = producer.send_records(topic, [(f"k{i}", f"v{i}") for i in range(40, 60)])
        assert c1.committed(list(ends)) == ends
        c1.subscribe()
        records = c1.wait_records(20)
        time.sleep(1)
        assert sorted(r["key"] for r in c1.records()) == sorted(s.key for s in second)
        assert all(r["offset"] >= ends[TopicPartition(topic, r["partition"])] for r in records)
        rewound = {tp: 1 for tp in ends}
        assert c1.commit(rewound).error is None
        c1.close()

        # … wherever they are, here rewound
        assert c2.committed(list(ends)) == rewound
        c2.subscribe()
        records = c2.wait_records(60 - 4)
        time.sleep(1)
        assert len(c2.records()) == 56
        assert {(r["partition"], r["offset"]) for r in records} == {
            (s.partition, s.offset) for s in first + second if s.offset >= 1
        }
