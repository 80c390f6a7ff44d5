"""When rebalances happen, measured with Java consumers on kgroup's broker and on Apache Kafka.

Times are the JVM's wall clock in the driver's events (``subscribed`` → ``assigned``) or the test's
wall clock where the test itself acts (a kill, a close). Each bound is the broker's rule plus a stated
tolerance for the client's round trips and a loaded machine; both brokers must fall in the same window.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apache_kafka.conftest import Cluster, Target, find_coordinator
from apache_kafka.groups import FAST, all_partitions, java_consumers, wait_settled
from kgroup.testing.apache_kafka import require_apache_kafka
from kgroup.testing.apache_kafka.java_client import JavaConsumer, start_all

pytestmark = pytest.mark.slow

INITIAL_DELAY_MS = 3000
#: FindCoordinator, JoinGroup twice (MEMBER_ID_REQUIRED first), SyncGroup and the listener, by a client
#: already connected (``subscribe=False`` warms it up): ~100 ms on an idle machine; the rest is room
#: for a loaded one (two CPUs shared with other test runs still leave ~1 s)
JOIN_TOLERANCE_MS = 2000
SESSION_TIMEOUT_MS = FAST["session_timeout_ms"]
HEARTBEAT_MS = FAST["heartbeat_interval_ms"]


@pytest.fixture(scope="module", params=["kgroup", "apache"])
def delayed(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A broker with ``group.initial.rebalance.delay.ms=3000`` (Kafka's default) for this module."""
    if request.param == "apache":
        require_apache_kafka()
    with Cluster(request.param, group_initial_rebalance_delay_ms=INITIAL_DELAY_MS) as cluster:
        yield cluster


def _ready(cluster: Cluster | Target, topic: str, partitions: int, group: str) -> None:
    """The topic exists and the group's coordinator answers (on a new Apache Kafka the first
    FindCoordinator creates ``__consumer_offsets``: that must not count as rebalance time)."""
    cluster.create_topic(topic, partitions)
    find_coordinator(cluster.bootstrap_servers, group)


def _consumer(cluster: Cluster, group: str, topic: str, name: str, tmp_path: Path) -> JavaConsumer:
    return JavaConsumer(
        cluster.bootstrap_servers,
        group,
        [topic],
        client_id=name,
        name=name,
        log_dir=tmp_path,
        subscribe=False,
        assignment_strategy="range",
        **FAST,
    )


def test_the_first_member_waits_the_initial_rebalance_delay(delayed: Cluster, tmp_path: Path) -> None:
    topic, group = "delay-one", "delay-one-group"
    _ready(delayed, topic, 2, group)
    with _consumer(delayed, group, topic, "c0", tmp_path).start() as c0:
        subscribed = c0.subscribe()
        assigned = c0.wait_assigned()
    waited = assigned.ts_ms - subscribed
    assert INITIAL_DELAY_MS <= waited <= INITIAL_DELAY_MS + JOIN_TOLERANCE_MS, waited
    assert (assigned.generation, assigned.assignment) == (1, all_partitions({topic: 2}))


def test_a_member_joining_during_the_delay_extends_it_and_shares_the_first_generation(
    delayed: Cluster, tmp_path: Path
) -> None:
    # Kafka's InitialDelayedJoin: when the delay ends and a member joined meanwhile, it waits another
    # min(delay, rebalance timeout left) — here 3 s more; then both are in generation 1
    topic, group = "delay-two", "delay-two-group"
    _ready(delayed, topic, 4, group)
    c0, c1 = (
        _consumer(delayed, group, topic, "c0", tmp_path),
        _consumer(delayed, group, topic, "c1", tmp_path),
    )
    start_all(c0, c1)
    with c0, c1:
        subscribed = c0.subscribe()
        time.sleep(0.5)
        c1.subscribe()
        first, second = c0.wait_assigned(), c1.wait_assigned()
    waited = first.ts_ms - subscribed
    assert 2 * INITIAL_DELAY_MS <= waited <= 2 * INITIAL_DELAY_MS + JOIN_TOLERANCE_MS, waited
    assert (first.generation, second.generation) == (1, 1)
    assert first.assignment | second.assignment == all_partitions({topic: 4})


def test_a_killed_member_is_expired_after_its_session_timeout(
    target: Target, names: str, tmp_path: Path
) -> None:
    # the member's last heartbeat was at most one heartbeat interval before the kill; the survivor
    # hears of the rebalance at its next heartbeat (at most one interval later), then rejoins alone
    topic, group = f"{names}-t", f"{names}-g"
    _ready(target, topic, 4, group)
    everything = all_partitions({topic: 4})
    survivor, victim = java_consumers(
        target.bootstrap_servers, group, [topic], ["c0", "c1"], tmp_path, assignment_strategy="range"
    )
    try:
        wait_settled([survivor, victim], everything)
        mark = survivor.mark()
        killed = time.time() * 1000
        victim.kill()
        assigned = survivor.wait_assigned(
            since=mark, timeout_s=30, where=lambda r: r.assignment == everything
        )
        waited = assigned.ts_ms - killed
        low = SESSION_TIMEOUT_MS - HEARTBEAT_MS
        high = SESSION_TIMEOUT_MS + HEARTBEAT_MS + JOIN_TOLERANCE_MS
        assert low <= waited <= high, waited
    finally:
        survivor.close()
