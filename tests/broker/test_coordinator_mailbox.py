"""The broker's loop and the coordinators' hand each other work through a mailbox each way: in order,
with one wake-up of the other thread for all the calls queued until it runs them.

Each wake-up is a ``call_soon_threadsafe`` — a write to the other loop's self-pipe, after which the
writing thread waits to take the interpreter lock back — and one per request and two per answer
were a large share of the coordinators' thread's time under 1,000 heartbeats a second
(docs/performance.md). Counted here, not timed: the coordinators' loop is held while requests from
many connections queue up, then let go.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.apache_kafka.wire import Raw

from kgroup.broker.coordinator_runtime import Mailbox
from kgroup.testing import KafkaBroker

NONE = 0


def test_a_mailbox_runs_the_calls_in_order_with_one_wake_up_for_those_queued_meanwhile() -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        held, ran = threading.Event(), []
        loop.call_soon_threadsafe(held.wait)  # the loop is busy: nothing posted runs yet
        mailbox = Mailbox(loop)
        for n in range(100):
            mailbox.post(lambda n=n: ran.append(n))
        assert (mailbox.pending, ran) == (100, [])

        def fails() -> None:
            raise RuntimeError("a bug in one call")

        mailbox.post(fails)  # logged; the calls after it still run
        mailbox.post(lambda: ran.append(100))
        held.set()
        done = threading.Event()
        mailbox.post(done.set)
        assert done.wait(10)
        assert ran == list(range(101))
        assert mailbox.wake_ups == 1
        mailbox.post(done.clear)  # the loop got to the queue: the next call wakes it again
        while done.is_set():
            time.sleep(0.01)
        assert mailbox.wake_ups == 2
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.fixture
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(topics={"t": 8}) as broker:
        yield broker


def _join(member: str) -> dict[str, Any]:
    return {
        "group_id": "g",
        "member_id": member,
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000,
        "subscribed_topic_names": ["t"],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }


def test_requests_queued_while_the_coordinators_are_busy_take_one_wake_up_each_way(
    kafka: KafkaBroker,
) -> None:
    runtime = kafka.broker.coordinators
    inbox, outbox = runtime._inbox, runtime._outbox
    clients = [Raw(kafka.bootstrap_servers) for _ in range(20)]
    try:
        clients[0].call("ConsumerGroupHeartbeat", 1, _join("first"))  # the group exists, loaded
        held = threading.Event()
        runtime._loop.call_soon_threadsafe(held.wait)  # the coordinators' loop is busy
        wake_ups = inbox.wake_ups, outbox.wake_ups
        for n, raw in enumerate(clients):
            raw.send("ConsumerGroupHeartbeat", 1, _join(f"m{n}"))
        deadline = time.monotonic() + 10
        while inbox.pending < len(clients):  # every request read and handed over
            assert time.monotonic() < deadline, inbox.pending
            time.sleep(0.01)
        held.set()
        answers = [raw.receive() for raw in clients]
    finally:
        held.set()
        for raw in clients:
            raw.close()
    assert [a["error_code"] for a in answers] == [NONE] * len(clients)
    assert len({a["member_id"] for a in answers}) == len(clients)
    assert inbox.wake_ups - wake_ups[0] == 1  # the 20 requests: one wake-up of the coordinators
    # their answers (and the __consumer_offsets appends before them): a few wake-ups, not 20 or 40
    assert outbox.wake_ups - wake_ups[1] <= 5, outbox.wake_ups - wake_ups[1]
    with Raw(kafka.bootstrap_servers) as raw:
        described = raw.call(
            "ConsumerGroupDescribe", 1, {"group_ids": ["g"], "include_authorized_operations": False}
        )
    assert len(described["groups"][0]["members"]) == len(clients) + 1
