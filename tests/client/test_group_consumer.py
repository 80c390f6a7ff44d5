"""kgroup.client over real sockets, against kgroup's own broker and librdkafka's mock cluster.

librdkafka's mock cluster is an independent coordinator implementation; it answers a follower's
SyncGroup that arrives after the leader's with INVALID_REQUEST and a null assignment (its group goes
"Up" as soon as the leader has synced — Kafka instead answers a Stable group's SyncGroup with the
member's assignment), so groups of several kgroup members race there: multi-member scenarios run
against kgroup's broker, single-member ones against both. Each test runs its own event loop with a
time bound and closes every consumer and broker it starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
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


def run(coro: Callable[[], Awaitable[Any]], timeout_s: float = 60) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro(), timeout_s)

    return asyncio.run(bounded())


_MOCKS: set[str] = set()


@contextmanager
def cluster(kind: str, topics: tuple[str, ...]) -> Iterator[str]:
    """A broker of ``kind`` ("kgroup" or "mock") with ``topics`` of 4 partitions each."""
    if kind == "mock":
        with mock_cluster(topics=topics) as bootstrap:
            _MOCKS.add(bootstrap)
            try:
                yield bootstrap
            finally:
                _MOCKS.discard(bootstrap)
    else:
        with KafkaBroker(topics=dict.fromkeys(topics, MOCK_PARTITIONS)) as broker:
            yield broker.bootstrap_servers


def _consumer(bootstrap: str, config: MemberConfig, **kwargs: Any) -> GroupConsumer:
    caps = MOCK_CAPS if bootstrap in _MOCKS else None
    return GroupConsumer(bootstrap, config, max_versions=caps, **kwargs)


def _config(**overrides: Any) -> MemberConfig:
    values: dict[str, Any] = {"group_id": "g", "enable_auto_commit": False, **FAST}
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


def test_range_group_of_two_splits_the_topic() -> None:
    with cluster("kgroup", ("orders",)) as bootstrap:

        async def scenario() -> None:
            a = _consumer(bootstrap, _config(client_id="a", assignors=("range",)), topics=["orders"])
            b = _consumer(bootstrap, _config(client_id="b", assignors=("range",)), topics=["orders"])
            async with a, b:
                owned = await _all_stable([a, b])
                _check_partitioned(owned, "orders", 4)
                assert sorted(len(p) for p in owned.values()) == [2, 2]
                # Range over members sorted by id: the smaller id takes partitions 0-1
                first = min(owned)
                assert owned[first] == frozenset(TopicPartition("orders", p) for p in range(2))

        run(scenario)


def test_cooperative_join_moves_partitions_without_double_ownership() -> None:
    with cluster("kgroup", ("t",)) as bootstrap:
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
            a = _consumer(bootstrap, _config(client_id="a", **cfg), topics=["t"], on_event=tracker("a"))
            async with a:
                first = await _all_stable([a])
                assert len(first[a.member_id]) == 4
                cfg_b = _config(client_id="b", **cfg)
                b = _consumer(bootstrap, cfg_b, topics=["t"], on_event=tracker("b"))
                async with b:
                    owned = await _all_stable([a, b])
                    _check_partitioned(owned, "t", 4)
                    assert sorted(len(p) for p in owned.values()) == [2, 2]
                    # a kept what it keeps: sticky, and it revoked only what moved to b
                    assert owned[a.member_id] <= first[a.member_id]

        run(scenario)
        assert double == []


def test_static_member_restart_gets_its_partitions_back_without_a_rebalance() -> None:
    with cluster("kgroup", ("s",)) as bootstrap:

        async def scenario() -> None:
            def static(name: str) -> GroupConsumer:
                cfg = _config(client_id=name, group_instance_id=name, assignors=("range",))
                return _consumer(bootstrap, cfg, topics=["s"])

            a, b = static("a"), static("b")
            async with a, b:
                owned = await _all_stable([a, b])
                generation = a.generation
                b_before = owned[b.member_id]
                await b.close()  # static: no LeaveGroup
                b2 = static("b")
                async with b2:
                    again = await _all_stable([a, b2])
                    assert b2.assignment == b_before
                    assert b2.generation == generation == a.generation  # no rebalance happened
                    assert again[a.member_id] == owned[a.member_id]

        run(scenario)


@pytest.mark.parametrize("kind", ["kgroup", "mock"])
def test_committed_offsets_survive_a_member_restart(kind: str) -> None:
    with cluster(kind, ("c",)) as bootstrap:

        async def scenario() -> None:
            a = _consumer(bootstrap, _config(client_id="a", assignors=("range",)), topics=["c"])
            async with a:
                await _all_stable([a])
                await a.commit({TopicPartition("c", 0): 42, TopicPartition("c", 1): 7})
            b = _consumer(bootstrap, _config(client_id="b", assignors=("range",)), topics=["c"])
            async with b:
                await _all_stable([b])
                loop = asyncio.get_running_loop()
                deadline = loop.time() + 10
                while len(b.member.positions()) < 4 and loop.time() < deadline:
                    await b.poll(20)
                expected = {TopicPartition("c", 0): 42, TopicPartition("c", 1): 7}
                expected |= {TopicPartition("c", 2): -1, TopicPartition("c", 3): -1}  # nothing committed
                assert b.member.positions() == expected

        run(scenario)


def test_rolling_upgrade_from_range_to_cooperative_sticky() -> None:
    """Kafka's documented upgrade: members bounce from [range] to [cooperative-sticky, range] (the group
    keeps range until every member supports cooperative-sticky, and stays EAGER because range is in
    every list), then to [cooperative-sticky] (COOPERATIVE once every member has only it) — every
    partition owned exactly once after each step."""
    with cluster("kgroup", ("u",)) as bootstrap:

        async def scenario() -> None:
            def member(name: str, assignors: tuple[str, ...]) -> GroupConsumer:
                return _consumer(bootstrap, _config(client_id=name, assignors=assignors), topics=["u"])

            both = ("cooperative-sticky", "range")
            members = {"a": member("a", ("range",)), "b": member("b", ("range",))}
            for c in members.values():
                await c.start()
            try:
                owned = await _all_stable(list(members.values()))
                _check_partitioned(owned, "u", 4)
                steps = [("b", both, "range"), ("a", both, "cooperative-sticky")]
                steps += [("b", ("cooperative-sticky",), "cooperative-sticky")]
                steps += [("a", ("cooperative-sticky",), "cooperative-sticky")]
                for name, assignors, chosen in steps:
                    await members[name].close()
                    members[name] = member(name, assignors)
                    await members[name].start()
                    owned = await _all_stable(list(members.values()))
                    _check_partitioned(owned, "u", 4)
                    assert {c.member.group_protocol for c in members.values()} == {chosen}
                assert {c.member.protocol.name for c in members.values()} == {"COOPERATIVE"}
            finally:
                for c in members.values():
                    await c.close()

        run(scenario, timeout_s=120)


def test_pattern_subscription_and_bad_input() -> None:
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

    for kind in ("kgroup", "mock"):
        with cluster(kind, ("p-1", "p-2", "other")) as bootstrap:
            _pattern_scenario(bootstrap)


def _pattern_scenario(bootstrap: str) -> None:
    async def scenario() -> None:
        a = _consumer(bootstrap, _config(assignors=("range",)), pattern=r"p-\d")
        async with a:
            owned = await _all_stable([a])
            expected = [f"p-{t}-{p}" for t in (1, 2) for p in range(4)]
            assert sorted(map(str, owned[a.member_id])) == expected

    run(scenario)


def test_a_refused_join_is_thrown_once_and_the_next_poll_tries_again() -> None:
    """As Kafka's consumer: a JoinGroup refused with INCONSISTENT_GROUP_PROTOCOL (the group runs
    range, this member offers only roundrobin) is raised from one poll(); the member has asked to
    rejoin, so once the range member leaves, a later poll() joins."""
    with cluster("kgroup", ("p",)) as bootstrap:

        async def scenario() -> None:
            a = _consumer(bootstrap, _config(client_id="a", assignors=("range",)), topics=["p"])
            b = _consumer(bootstrap, _config(client_id="b", assignors=("roundrobin",)), topics=["p"])
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
                    assert owned[b.member_id] == frozenset(TopicPartition("p", i) for i in range(4))

        run(scenario)
