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
from tests.broker.rawdata import consumer_join

from kgroup.broker.coordinator_runtime import Mailbox
from kgroup.messages import ConsumerGroupHeartbeatRequest, Envelope, JoinGroupProtocol, JoinGroupRequest
from kgroup.model import ErrorCode
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
    return consumer_join("g", member)


def test_requests_queued_while_the_coordinators_are_busy_take_one_wake_up_each_way(
    kafka: KafkaBroker,
) -> None:
    runtime = kafka.broker.coordinators
    inbox, outbox = runtime._inbox, runtime._outbox
    clients = [Raw(kafka.bootstrap_servers) for _ in range(20)]
    try:
        clients[0].call("ConsumerGroupHeartbeat", 1, _join("first"))  # the group exists, loaded
        started, held = threading.Event(), threading.Event()
        broker_held = threading.Event()

        def hold() -> None:
            started.set()
            held.wait()

        # the coordinators' loop is made busy through the inbox itself, so the hold runs after whatever
        # the broker posted before it (a drain already scheduled would otherwise run first and take the
        # requests below with it); once it runs, the inbox has no wake-up pending
        inbox.post(hold)
        assert started.wait(10)
        wake_ups = inbox.wake_ups, outbox.wake_ups
        for n, raw in enumerate(clients):
            raw.send("ConsumerGroupHeartbeat", 1, _join(f"m{n}"))
        deadline = time.monotonic() + 10
        while inbox.pending < len(clients):  # every request read and handed over
            assert time.monotonic() < deadline, inbox.pending
            time.sleep(0.01)
        # the broker's loop is held in turn while the coordinators handle the 20, so that the count
        # below is the mailbox's and not the scheduler's (free, the broker's loop may drain the
        # outbox between two answers, and does more often on a loaded machine)
        broker_busy, broker_held = threading.Event(), threading.Event()

        def hold_broker() -> None:
            broker_busy.set()
            broker_held.wait()

        outbox.loop.call_soon_threadsafe(hold_broker)
        assert broker_busy.wait(10)
        held.set()
        deadline = time.monotonic() + 10
        while inbox.pending or outbox.pending < len(clients):  # every request handled, every answer posted
            assert time.monotonic() < deadline, (inbox.pending, outbox.pending)
            time.sleep(0.01)
        broker_held.set()
        answers = [raw.receive() for raw in clients]
    finally:
        held.set()
        broker_held.set()
        for raw in clients:
            raw.close()
    assert [a["error_code"] for a in answers] == [NONE] * len(clients)
    assert len({a["member_id"] for a in answers}) == len(clients)
    # the 20 requests: one wake-up of the coordinators at most, not 20 (none of their own when a call
    # the broker posted just before them, after the hold began, had asked for the one they share)
    assert inbox.wake_ups - wake_ups[0] <= 1
    # their answers (and the __consumer_offsets appends before them), all posted while the broker's
    # loop was busy: one wake-up, not 20 or 40
    assert outbox.wake_ups - wake_ups[1] == 1, outbox.wake_ups - wake_ups[1]
    with Raw(kafka.bootstrap_servers) as raw:
        described = raw.call(
            "ConsumerGroupDescribe", 1, {"group_ids": ["g"], "include_authorized_operations": False}
        )
    assert len(described["groups"][0]["members"]) == len(clients) + 1


def test_a_request_the_coordinator_answers_at_once_is_answered_when_submitted(kafka: KafkaBroker) -> None:
    """``CoordinatorHost.submit`` handles the request and writes its records before it returns; an
    answer known then is in the future it returns (the runtime hands it back in the same turn of
    the coordinators' loop, without a task per request)."""
    with Raw(kafka.bootstrap_servers) as raw:  # the offsets topic is made by a first group request
        assert raw.call("ConsumerGroupHeartbeat", 1, _join("first"))["error_code"] == NONE
    join = ConsumerGroupHeartbeatRequest(
        "g2", "m1", 0, rebalance_timeout_ms=30000, subscribed_topic_names=("t",), topic_partitions=()
    )

    def submit(host: Any) -> tuple[bool, int, bool, bool]:
        node = host.placement.coordinator_for("g2")
        size = host.coordinator_log.size
        future = host.submit(node, Envelope("c", 7, join))
        return (
            future.done(),
            future.result().member_epoch,
            host.coordinator_log.size > size,
            (("c", 7) in host._waiting),
        )

    done, epoch, written, waiting = kafka.run_in_loop(kafka.broker.coordinators.inspect(submit))
    assert done and epoch > 0 and written  # joined: an epoch, its records in the log
    assert waiting  # until the future's done callback forgets it, a turn of the loop later
    assert (
        kafka.run_in_loop(kafka.broker.coordinators.inspect(lambda host: ("c", 7) in host._waiting)) is False
    )


def test_a_parked_request_whose_asker_goes_away_waits_no_more() -> None:
    """A JoinGroup parked until its rebalance completes (a new group's first member waits out
    ``group.initial.rebalance.delay.ms``, 30 s here), its asking task cancelled on the broker's loop
    (the connection closed): its wait on the coordinators' loop is cancelled too (not answered when
    the rebalance completes), and nothing is left waiting."""
    with KafkaBroker(topics={"t": 8}, group_initial_rebalance_delay_ms=30_000) as kafka:
        with Raw(kafka.bootstrap_servers) as raw:  # the offsets topic is made by a first group request
            assert raw.call("ConsumerGroupHeartbeat", 1, _join("first"))["error_code"] == NONE
        assert kafka.run_in_loop(_parked_then_gone(kafka)) == (ErrorCode.MEMBER_ID_REQUIRED, True, True, True)


async def _parked_then_gone(kafka: KafkaBroker) -> tuple[int, bool, bool, bool]:
    """(the first JoinGroup's error, the second parked, its wait cancelled, nothing left waiting)"""
    runtime = kafka.broker.coordinators
    protocols = (JoinGroupProtocol("range", b""),)
    node = runtime._placement.coordinator_for("classic")
    join = JoinGroupRequest("classic", 10000, 30000, "", protocols)
    first = await runtime.call(node, Envelope("c", 1, join))
    again = JoinGroupRequest("classic", 10000, 30000, first.member_id, protocols)
    asking = asyncio.ensure_future(runtime.call(node, Envelope("c", 2, again)))
    deadline = time.monotonic() + 10
    while (waiting := await runtime.inspect(lambda host: host._waiting.get(("c", 2)))) is None:
        assert time.monotonic() < deadline, "the JoinGroup was not parked"
        await asyncio.sleep(0.01)
    parked = not asking.done()
    asking.cancel()
    await asyncio.gather(asking, return_exceptions=True)
    while not waiting.done():  # (read across threads: a flag, then the outcome once set)
        assert time.monotonic() < deadline, "the parked JoinGroup still waits"
        await asyncio.sleep(0.01)
    gone = await runtime.inspect(lambda host: ("c", 2) not in host._waiting)
    return int(first.error_code), parked, waiting.cancelled(), gone
