"""kgroup.client over real sockets, against kgroup's own broker, Apache Kafka and librdkafka's mock cluster.

Every group scenario runs against kgroup's broker (``[kgroup]``) and the pinned Apache Kafka
(``[apache]``, the run's shared KRaft node: every test takes fresh topic and group names). librdkafka's
mock cluster (``[mock]``) is an independent coordinator implementation; it answers a follower's
SyncGroup that arrives after the leader's with INVALID_REQUEST and a null assignment (its group goes
"Up" as soon as the leader has synced — Kafka instead answers a Stable group's SyncGroup with the
member's assignment), so groups of several kgroup members race there: single-member scenarios run
against it too, multi-member ones do not. Each test runs its own event loop with a time bound and
closes every consumer and broker it starts.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from kgroup.client import ClientError, GroupConsumer
from kgroup.member import MemberConfig
from kgroup.member.events import PartitionsAssigned, PartitionsLost, PartitionsRevoked
from kgroup.model import KgroupError, TopicPartition
from kgroup.testing import KafkaBroker

from .mock_cluster import MOCK_PARTITIONS, mock_cluster

FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 20000}
#: librdkafka's mock cluster advertises flexible versions of the group APIs (JoinGroup v6, SyncGroup v4,
#: ...) but misreads them (it closes the connection on JoinGroup v6 and reports a buffer underflow on
#: SyncGroup v4; seen with librdkafka 2.16, whose own client sends the non-flexible versions)
MOCK_CAPS = {
    "JoinGroup": 5,
    "SyncGroup": 3,
    "Heartbeat": 3,
    "LeaveGroup": 3,
    "OffsetCommit": 7,
    "OffsetFetch": 5,
}
#: the brokers every group scenario runs against; ``ALL`` adds librdkafka's mock cluster
BROKERS = ["kgroup", "apache"]
ALL = [*BROKERS, "mock"]


def run(coro: Callable[[], Awaitable[Any]], timeout_s: float = 60) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro(), timeout_s)

    return asyncio.run(bounded())


@dataclass(frozen=True)
class Cluster:
    """A running broker of one kind, its topics (4 partitions each) and names unique in the run."""

    kind: str
    bootstrap: str
    prefix: str

    def topic(self, name: str) -> str:
        return self.prefix + name

    def tp(self, name: str, partition: int) -> TopicPartition:
        return TopicPartition(self.topic(name), partition)

    @property
    def caps(self) -> dict[str, int] | None:
        return MOCK_CAPS if self.kind == "mock" else None


OpenCluster = Callable[..., AbstractContextManager[Cluster]]


@pytest.fixture
def cluster(request: pytest.FixtureRequest, names: str) -> OpenCluster:
    """``cluster(*topics)``: a broker of the test's kind (its parameter) with ``topics``.

    kgroup's broker and the mock cluster are started for the block; Apache Kafka is the run's shared
    node (checked alive after the block). Topic and group names carry the test's unique prefix.
    """
    kind = request.param
    apache = request.getfixturevalue("apache_kafka") if kind == "apache" else None
    prefix = f"{names}-"

    @contextmanager
    def open_cluster(*topics: str) -> Iterator[Cluster]:
        real = tuple(prefix + t for t in topics)
        if kind == "mock":
            with mock_cluster(topics=real) as bootstrap:
                yield Cluster(kind, bootstrap, prefix)
        elif kind == "kgroup":
            with KafkaBroker(topics=dict.fromkeys(real, MOCK_PARTITIONS)) as broker:
                yield Cluster(kind, broker.bootstrap_servers, prefix)
        else:
            assert apache is not None
            for topic in real:
                apache.create_topic(topic, MOCK_PARTITIONS)
            yield Cluster(kind, apache.bootstrap_servers, prefix)
            apache.check_alive()

    return open_cluster


def _consumer(cluster: Cluster, config: MemberConfig, **kwargs: Any) -> GroupConsumer:
    if "topics" in kwargs:
        kwargs["topics"] = [cluster.topic(t) for t in kwargs["topics"]]
    return GroupConsumer(cluster.bootstrap, config, max_versions=cluster.caps, **kwargs)


def _config(cluster: Cluster | None = None, **overrides: Any) -> MemberConfig:
    group = cluster.topic("g") if cluster is not None else "g"
    values: dict[str, Any] = {"group_id": group, "enable_auto_commit": False, **FAST}
    values.update(overrides)
    return MemberConfig(**values)


async def _all_stable(
    consumers: list[GroupConsumer], timeout_s: float = 30
) -> dict[str, frozenset[TopicPartition]]:
    """Poll every consumer until all are stable in one generation with nothing left to rebalance."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        for c in consumers:
            await c.poll()
        await asyncio.sleep(0.05)
        gens = {c.generation for c in consumers}
        settled = all(c.phase.value == "stable" and not c.member.rejoin_needed for c in consumers)
        if len(gens) == 1 and settled:
            return {c.member_id: c.assignment for c in consumers}
    raise AssertionError(f"not stable: {[(c.phase, c.generation) for c in consumers]}")


def _check_partitioned(owned: dict[str, frozenset[TopicPartition]], topic: str, partitions: int) -> None:
    everything = [tp for parts in owned.values() for tp in parts]
    assert sorted(everything) == [TopicPartition(topic, p) for p in range(partitions)]  # each exactly once


@pytest.mark.parametrize("cluster", BROKERS, indirect=True)
def test_range_group_of_two_splits_the_topic(cluster: OpenCluster) -> None:
    with cluster("orders") as kafka:
        orders = kafka.topic("orders")

        async def scenario() -> None:
            a = _consumer(kafka, _config(kafka, client_id="a", assignors=("range",)), topics=["orders"])
            b = _consumer(kafka, _config(kafka, client_id="b", assignors=("range",)), topics=["orders"])
            async with a, b:
                owned = await _all_stable([a, b])
                _check_partitioned(owned, orders, 4)
                assert sorted(len(p) for p in owned.values()) == [2, 2]
                # Range over members sorted by id: the smaller id takes partitions 0-1
                first = min(owned)
                assert owned[first] == frozenset(TopicPartition(orders, p) for p in range(2))

        run(scenario)


@pytest.mark.parametrize("cluster", BROKERS, indirect=True)
def test_cooperative_join_moves_partitions_without_double_ownership(cluster: OpenCluster) -> None:
    with cluster("t") as kafka:
        owned_now: dict[str, set[TopicPartition]] = {}
        double: list[tuple[str, TopicPartition]] = []

        def tracker(name: str) -> Callable[[Any], None]:
            owned_now[name] = set()

            def on_event(event: Any) -> None:
                if isinstance(event, PartitionsAssigned):
                    for tp in event.partitions:
                        if any(tp in parts for other, parts in owned_now.items() if other != name):
                            double.append((name, tp))
                    owned_now[name].update(event.partitions)
                elif isinstance(event, (PartitionsRevoked, PartitionsLost)):
                    owned_now[name].difference_update(event.partitions)

            return on_event

        async def scenario() -> None:
            cfg = {"assignors": ("cooperative-sticky",)}
            cfg_a = _config(kafka, client_id="a", **cfg)
            a = _consumer(kafka, cfg_a, topics=["t"], on_event=tracker("a"))
            async with a:
                first = await _all_stable([a])
                assert len(first[a.member_id]) == 4
                cfg_b = _config(kafka, client_id="b", **cfg)
                b = _consumer(kafka, cfg_b, topics=["t"], on_event=tracker("b"))
                async with b:
                    owned = await _all_stable([a, b])
                    _check_partitioned(owned, kafka.topic("t"), 4)
                    assert sorted(len(p) for p in owned.values()) == [2, 2]
                    # a kept what it keeps: sticky, and it revoked only what moved to b
                    assert owned[a.member_id] <= first[a.member_id]

        run(scenario)
        assert double == []


@pytest.mark.parametrize("restarted", ["follower", "leader"])
@pytest.mark.parametrize("cluster", BROKERS, indirect=True)
def test_static_member_restart_gets_its_partitions_back_without_a_rebalance(
    cluster: OpenCluster, restarted: str
) -> None:
    """A static member closes (no LeaveGroup) and comes back under its instance id: it gets its
    partitions back in the same generation. A returning static leader is told to skip the
    assignment (JoinGroup v9, KIP-814) and keeps the group as it is."""
    with cluster("s") as kafka:

        async def scenario() -> None:
            def static(name: str) -> GroupConsumer:
                cfg = _config(kafka, client_id=name, group_instance_id=name, assignors=("range",))
                return _consumer(kafka, cfg, topics=["s"])

            a, b = static("a"), static("b")
            async with a, b:
                owned = await _all_stable([a, b])
                generation = a.generation
                leader, follower = (a, b) if a.member.is_leader else (b, a)
                assert leader.member.is_leader and not follower.member.is_leader
                gone, stays = (leader, follower) if restarted == "leader" else (follower, leader)
                before = owned[gone.member_id]
                name = "a" if gone is a else "b"
                await gone.close()  # static: no LeaveGroup
                back = static(name)
                async with back:
                    again = await _all_stable([stays, back])
                    assert back.assignment == before
                    assert back.generation == generation == stays.generation  # no rebalance happened
                    assert again[stays.member_id] == owned[stays.member_id]
                    assert back.member.is_leader == (restarted == "leader")

        run(scenario)


@pytest.mark.parametrize("cluster", ALL, indirect=True)
def test_committed_offsets_survive_a_member_restart(cluster: OpenCluster) -> None:
    with cluster("c") as kafka:
        c0, c1, c2, c3 = (kafka.tp("c", p) for p in range(4))

        async def scenario() -> None:
            a = _consumer(kafka, _config(kafka, client_id="a", assignors=("range",)), topics=["c"])
            async with a:
                await _all_stable([a])
                await a.commit({c0: 42, c1: 7})
            b = _consumer(kafka, _config(kafka, client_id="b", assignors=("range",)), topics=["c"])
            async with b:
                await _all_stable([b])
                loop = asyncio.get_running_loop()
                deadline = loop.time() + 10
                while len(b.member.positions()) < 4 and loop.time() < deadline:
                    await b.poll(20)
                expected = {c0: 42, c1: 7, c2: -1, c3: -1}  # nothing committed on 2 and 3
                assert b.member.positions() == expected

        run(scenario)


@pytest.mark.parametrize("cluster", BROKERS, indirect=True)
def test_rolling_upgrade_from_range_to_cooperative_sticky(cluster: OpenCluster) -> None:
    """Kafka's documented upgrade: members bounce from [range] to [cooperative-sticky, range] (the group
    keeps range until every member supports cooperative-sticky, and stays EAGER because range is in
    every list), then to [cooperative-sticky] (COOPERATIVE once every member has only it) — every
    partition owned exactly once after each step."""
    with cluster("u") as kafka:
        topic = kafka.topic("u")

        async def scenario() -> None:
            def member(name: str, assignors: tuple[str, ...]) -> GroupConsumer:
                return _consumer(kafka, _config(kafka, client_id=name, assignors=assignors), topics=["u"])

            both = ("cooperative-sticky", "range")
            members = {"a": member("a", ("range",)), "b": member("b", ("range",))}
            for c in members.values():
                await c.start()
            try:
                owned = await _all_stable(list(members.values()))
                _check_partitioned(owned, topic, 4)
                steps = [("b", both, "range"), ("a", both, "cooperative-sticky")]
                steps += [("b", ("cooperative-sticky",), "cooperative-sticky")]
                steps += [("a", ("cooperative-sticky",), "cooperative-sticky")]
                for name, assignors, chosen in steps:
                    await members[name].close()
                    members[name] = member(name, assignors)
                    await members[name].start()
                    owned = await _all_stable(list(members.values()))
                    _check_partitioned(owned, topic, 4)
                    assert {c.member.group_protocol for c in members.values()} == {chosen}
                assert {c.member.protocol.name for c in members.values()} == {"COOPERATIVE"}
            finally:
                for c in members.values():
                    await c.close()

        run(scenario, timeout_s=120)


def test_bad_input() -> None:
    with pytest.raises(KgroupError, match="bootstrap servers"):
        GroupConsumer("nohost", _config(), topics=["t"])
    with pytest.raises(KgroupError, match="topics or a pattern"):
        GroupConsumer("127.0.0.1:1", _config(), topics=["t"], pattern="t.*")
    with pytest.raises(KgroupError, match="pattern"):
        GroupConsumer("127.0.0.1:1", _config(), pattern="(")

    async def unreachable() -> None:
        c = GroupConsumer("127.0.0.1:1", _config(), topics=["t"], request_timeout_ms=2000)
        with pytest.raises(ClientError, match="no broker reachable"):
            await c.start()

    run(unreachable)


@pytest.mark.parametrize("cluster", ALL, indirect=True)
def test_pattern_subscription(cluster: OpenCluster) -> None:
    """A pattern matches whole topic names: ``<prefix>p-\\d`` takes p-1 and p-2, not ``other``."""
    with cluster("p-1", "p-2", "other") as kafka:

        async def scenario() -> None:
            pattern = re.escape(kafka.prefix) + r"p-\d"
            a = _consumer(kafka, _config(kafka, assignors=("range",)), pattern=pattern)
            async with a:
                owned = await _all_stable([a])
                expected = [f"{kafka.topic(f'p-{t}')}-{p}" for t in (1, 2) for p in range(4)]
                assert sorted(map(str, owned[a.member_id])) == expected

        run(scenario)


@pytest.mark.parametrize("cluster", BROKERS, indirect=True)
def test_a_refused_join_is_thrown_once_and_the_next_poll_tries_again(cluster: OpenCluster) -> None:
    """As Kafka's consumer: a JoinGroup refused with INCONSISTENT_GROUP_PROTOCOL (the group runs
    range, this member offers only roundrobin) is raised from one poll(); the member has asked to
    rejoin, so once the range member leaves, a later poll() joins."""
    with cluster("p") as kafka:

        async def scenario() -> None:
            a = _consumer(kafka, _config(kafka, client_id="a", assignors=("range",)), topics=["p"])
            b = _consumer(kafka, _config(kafka, client_id="b", assignors=("roundrobin",)), topics=["p"])
            async with a:
                await _all_stable([a])
                async with b:
                    loop = asyncio.get_running_loop()
                    deadline = loop.time() + 20
                    raised: list[str] = []
                    while not raised and loop.time() < deadline:
                        await a.poll()
                        try:
                            await b.poll(20)
                        except ClientError as error:
                            raised.append(str(error))
                    assert raised and "INCONSISTENT_GROUP_PROTOCOL" in raised[0]
                    await a.close()  # dynamic: LeaveGroup, the group is empty again
                    owned = await _all_stable([b])  # the next polls join: b is usable
                    assert owned[b.member_id] == frozenset(kafka.tp("p", i) for i in range(4))

        run(scenario)


def test_close_ends_a_connection_still_opening() -> None:
    """A connection being opened when the consumer closes (its ApiVersions not answered yet) is
    ended by close(): left running, it finished afterwards and its socket was never closed (CI saw
    the ResourceWarning of such a socket under load)."""
    accepted: list[asyncio.StreamReader] = []

    async def run() -> None:
        ended = asyncio.Event()

        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted.append(reader)
            await reader.read()  # never answers; returns at the client's EOF
            ended.set()
            writer.close()

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        with KafkaBroker(topics={"t": 1}) as kafka:
            consumer = GroupConsumer(kafka.bootstrap_servers, MemberConfig("g-opening"), topics=["t"])
            await consumer.start()
            consumer._addresses[7] = ("127.0.0.1", port)  # a node whose broker never answers
            opening = asyncio.get_running_loop().create_task(consumer._ensure_node(7))
            while not accepted:
                await asyncio.sleep(0.01)
            await consumer.close()
            await asyncio.wait_for(ended.wait(), 10)  # the server saw the client close the socket
            with pytest.raises((asyncio.CancelledError, Exception)):
                await opening
        server.close()
        await server.wait_closed()

    asyncio.run(run())
