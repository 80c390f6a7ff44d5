"""``ThreadedGroupConsumers``: real group consumers on their own loop thread, driven from plain code
against kgroup's broker over loopback."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from kgroup.client import ClientError, GroupConsumer
from kgroup.client.threaded import LoopCallTimeout, ThreadedGroupConsumers
from kgroup.member import MemberConfig
from kgroup.model import TopicPartition
from kgroup.testing import KafkaBroker


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("kgroup-threaded-test")]


def test_two_members_share_a_topic_and_leave_on_close() -> None:
    with KafkaBroker(topics={"orders": 4}) as broker:

        def make(count: int) -> Callable[[], list[GroupConsumer]]:
            return lambda: [
                GroupConsumer(
                    broker.bootstrap_servers,
                    MemberConfig("g", client_id=f"c{i}", assignors=("range",)),
                    topics=["orders"],
                )
                for i in range(count)
            ]

        def settle(group: ThreadedGroupConsumers) -> Coroutine[Any, Any, list[frozenset[TopicPartition]]]:
            async def run() -> list[frozenset[TopicPartition]]:
                for _ in range(500):  # bounded: 500 x 20 ms
                    for c in group.consumers:
                        await c.poll()
                    if all(c.settled for c in group.consumers):
                        return [c.assignment for c in group.consumers]
                    await asyncio.sleep(0.02)
                raise AssertionError("the group did not settle in 10 s")

            return run()

        group = ThreadedGroupConsumers(make(2), timeout_s=30, thread_name="kgroup-threaded-test")
        try:
            assert _threads() == ["kgroup-threaded-test"]
            owned = group.run(settle(group))
            assert sorted(len(a) for a in owned) == [2, 2]
            assert sorted(owned[0] | owned[1]) == [TopicPartition("orders", p) for p in range(4)]

            # a call that outlives its timeout is cancelled and named; the loop goes on serving
            with pytest.raises(LoopCallTimeout, match=r"no answer within 0\.2 s"):
                group.run(asyncio.sleep(5), timeout_s=0.2)

            async def own_timeout() -> None:
                raise TimeoutError("the coroutine's own")

            with pytest.raises(TimeoutError, match="the coroutine's own") as caught:
                group.run(own_timeout())
            assert not isinstance(caught.value, LoopCallTimeout)
            assert group.run(settle(group)) == owned
        finally:
            group.close()
        assert _threads() == []
        group.close()  # again: nothing to do
        # both members left the group on close: a new member owns everything at once, instead of
        # waiting out their session timeout (45 s; settle gives up after 10 s)
        alone = ThreadedGroupConsumers(make(1), timeout_s=30, thread_name="kgroup-threaded-test")
        try:
            assert alone.run(settle(alone)) == [frozenset(TopicPartition("orders", p) for p in range(4))]
        finally:
            alone.close()


def test_a_consumer_that_cannot_start_ends_the_thread() -> None:
    def make() -> list[GroupConsumer]:
        config = MemberConfig("g", client_id="c")
        return [GroupConsumer("127.0.0.1:1", config, topics=["t"], request_timeout_ms=1000)]

    with pytest.raises(ClientError, match="no broker reachable"):
        ThreadedGroupConsumers(make, timeout_s=30, thread_name="kgroup-threaded-test")
    assert _threads() == []
