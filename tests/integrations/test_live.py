"""Live: the plug-ins in real kafka-python / aiokafka consumers, beside librdkafka's, kgroup's own client
and Apache Kafka's Java consumer, on kgroup's broker and on Apache Kafka.

Every test runs against both brokers (``target``: ``[kgroup]`` / ``[apache]``; Apache Kafka is the
run's shared node, so topics and groups take the test's unique ``names``). The Java members need the
pinned Apache Kafka's jars: without them the mixed-group test skips with the reason (fails in CI).

Both brokers serve consumer groups: each test first checks that the broker advertises JoinGroup and
SyncGroup in its ApiVersions and fails (never skips) if it does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.registry import create_assignor
from kgroup.model import Member as KMember
from kgroup.model import TopicMetadata, TopicPartition

pytest.importorskip("kafka")
pytest.importorskip("aiokafka")
pytest.importorskip("confluent_kafka")

from apache_kafka.conftest import Target
from kgroup.integrations import aiokafka as aio
from kgroup.integrations import kafka_python as kp
from kgroup.testing.apache_kafka import require_apache_kafka
from kgroup.testing.apache_kafka.java_client import client_driver_jar

from .live import (
    AiokafkaMember,
    JavaMember,
    KafkaPythonMember,
    KgroupClientMember,
    Ledger,
    LibrdkafkaMember,
    Member,
    coordinator_state,
    produce,
    serves_consumer_groups,
    wait_stable,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture
def started() -> Iterator[list[Member]]:
    """Members a test starts; every one is stopped at the end, whatever happened (see :func:`_broker`)."""
    members: list[Member] = []
    yield members
    _stop_all(members)


def _stop_all(members: list[Member]) -> None:
    for member in reversed(members):
        member.stop()
    members.clear()


@contextmanager
def _broker(target: Target, topics: dict[str, int], members: list[Member]) -> Iterator[str]:
    """``topics`` on the test's broker; the test's members stop (and leave) before the block ends."""
    for name, partitions in topics.items():
        target.create_topic(name, partitions)
    try:
        yield target.bootstrap_servers
    finally:
        _stop_all(members)


def _assert_serves_groups(bootstrap: str) -> None:
    assert serves_consumer_groups(bootstrap), f"{bootstrap} does not advertise JoinGroup and SyncGroup"


def _errors(members: list[Member]) -> list[str]:
    return [f"{m.name}: {e!r}" for m in members for e in m.errors]


# the leader's assignor runs in the client, so a Java leader is run once, on Apache Kafka; every
# variant runs Java members (Apache Kafka's client), so all are apache_kafka tests
@pytest.mark.apache_kafka
@pytest.mark.parametrize(
    ("target", "leader"),
    [("kgroup", "kafka-python"), ("apache", "kafka-python"), ("apache", "java")],
    indirect=["target"],
)
def test_mixed_group_never_owns_a_partition_twice_and_stays_sticky_across_a_restart(
    target: Target, names: str, leader: str, started: list[Member]
) -> None:
    """Eight members of one cooperative-sticky group: kafka-python and aiokafka with kgroup's plug-ins,
    librdkafka, kgroup's client and Java's ``KafkaConsumer`` (two each, one aiokafka, one kgroup). The
    first to join leads: a kafka-python member (kgroup's plug-in assigns) or a Java member (Java's
    ``CooperativeStickyAssignor`` assigns, reading the plug-ins' subscriptions). A librdkafka and a
    Java member restart; no partition is ever owned twice and nothing moves between members that
    stayed."""
    libs = require_apache_kafka()
    client_driver_jar(libs)  # compiled here, not in a member's thread
    topic, partitions = f"{names}-orders", 16
    with _broker(target, {topic: partitions}, started) as bootstrap:
        _assert_serves_groups(bootstrap)
        written = produce(bootstrap, topic, 320)
        ledger = Ledger()
        group = f"{names}-mixed"
        every = {(topic, p) for p in range(partitions)}

        def kafka_python(name: str) -> Member:
            m = KafkaPythonMember(name, ledger, bootstrap, group, [topic], kp.CooperativeSticky()).start()
            started.append(m)
            return m

        def librdkafka(name: str) -> Member:
            m = LibrdkafkaMember(name, ledger, bootstrap, group, [topic]).start()
            started.append(m)
            return m

        def java(name: str) -> Member:
            m = JavaMember(name, ledger, bootstrap, group, [topic], libs).start()
            started.append(m)
            return m

        # the first member to join leads the group
        first, second = (kafka_python, java) if leader == "kafka-python" else (java, kafka_python)
        first_name = "kp-1" if leader == "kafka-python" else "java-1"
        first(first_name)
        wait_stable(ledger, every, {first_name})
        second("java-1" if leader == "kafka-python" else "kp-1")
        kafka_python("kp-2")
        librdkafka("rd-1")
        restarted = [librdkafka("rd-2"), java("java-2")]
        started.append(
            AiokafkaMember("aio-1", ledger, bootstrap, group, [topic], aio.CooperativeSticky()).start()
        )
        started.append(KgroupClientMember("kg-1", ledger, bootstrap, group, [topic]).start())
        everyone = {"kp-1", "kp-2", "rd-1", "rd-2", "aio-1", "kg-1", "java-1", "java-2"}
        before = wait_stable(ledger, every, everyone)
        assert ledger.violations == [], ledger.report()
        assert _errors(started) == []
        counts = sorted(list(before.values()).count(n) for n in everyone)
        assert counts == [2] * 8  # balanced: 16 partitions over 8 members

        for member in restarted:
            member.stop()
            started.remove(member)
        wait_stable(ledger, every, everyone - {"rd-2", "java-2"})
        librdkafka("rd-2")
        java("java-2")
        after = wait_stable(ledger, every, everyone)
        assert ledger.violations == [], ledger.report()
        assert _errors(started) == []
        # cooperative stickiness: a partition held by a cooperative member that stayed is, after the
        # restart, held by the same member, or by a restarted one, or by the eager aiokafka member
        # (which claims nothing when it rejoins) — never moved between two members that stayed
        stayed = {"kp-1", "kp-2", "rd-1", "kg-1", "java-1"}
        moved = {tp: (before[tp], after[tp]) for tp in every if before[tp] in stayed and after[tp] in stayed}
        assert {tp: pair for tp, pair in moved.items() if pair[0] != pair[1]} == {}

        produced = {(topic, p, o) for p, n in written.items() for o in range(n)}

        def all_consumed() -> bool:
            seen: set[tuple[str, int, int]] = set()
            for m in started:
                seen |= m.consumed
            return produced <= seen

        wait_until(all_consumed, 60, "every record consumed")
        _stop_all(started)
        assert ledger.violations == [], ledger.report()


class RecordingCooperativeSticky(kp.CooperativeSticky):
    """kgroup's plug-in, remembering every hold it handed out."""

    def __init__(self) -> None:
        super().__init__()
        self.holds: list[frozenset[str]] = []
        self.calls: list[str] = []

    def assign(self, cluster: Any, members: Any) -> dict[str, bytes]:
        self.calls.append(f"assign({len(members)} members)")
        result = super().assign(cluster, members)
        self.calls.append(f"-> {sorted(len(raw) for raw in result.values())} bytes")
        if self.last_hold is not None:
            self.holds.append(self.last_hold.missing_topics)
        return result


def test_a_kafka_python_leader_without_every_topic_converges_to_javas_answer(
    target: Target, names: str, started: list[Member]
) -> None:
    t1, t2, group = f"{names}-t1", f"{names}-t2", f"{names}-partial"
    topics = {t1: 4, t2: 6}
    with _broker(target, topics, started) as bootstrap:
        _assert_serves_groups(bootstrap)
        ledger = Ledger()
        leader_assignor = RecordingCooperativeSticky()
        leader = KafkaPythonMember("leader", ledger, bootstrap, group, [t1], leader_assignor).start()
        started.append(leader)
        first = {(t1, p) for p in range(4)}
        state = lambda: (leader_assignor.calls, coordinator_state(leader))  # noqa: E731
        wait_stable(ledger, first, {"leader"}, extra=state)
        other = KafkaPythonMember("other", ledger, bootstrap, group, [t1, t2], kp.CooperativeSticky())
        started.append(other.start())
        everything = first | {(t2, p) for p in range(6)}
        final = wait_stable(ledger, everything, {"leader", "other"})

        # Java's leader, on the JoinGroup where "other" arrived (leader owning t1, other new), with
        # metadata for both topics:
        request = AssignmentRequest(
            [
                KMember("leader", (t1,), owned=tuple(TopicPartition(t1, p) for p in range(4)), generation=1),
                KMember("other", (t1, t2)),
            ],
            {name: TopicMetadata(name, n) for name, n in topics.items()},
        )
        java = create_assignor("cooperative-sticky").assign(request)
        assert {f"{t}-{p}": owner for (t, p), owner in final.items()} == {
            str(tp): member for member, tps in java.items() for tp in tps
        }
        assert ledger.revocations.get("leader", []) == []  # the leader never gave up t1 on the way
        # the hold ran when "other" joined (and possibly at the very start, if the leader's first
        # JoinGroup completed before its first metadata answer covered its own topic)
        assert frozenset({t2}) in leader_assignor.holds
        assert set(leader_assignor.holds) <= {frozenset({t1}), frozenset({t2})}
        assert ledger.violations == [], ledger.report()
        assert _errors(started) == []
