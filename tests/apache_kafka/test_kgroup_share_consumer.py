"""kgroup's own share consumer (``kgroup.client.ShareConsumer``) on kgroup serve and on Apache Kafka
4.4.0, in the same share groups as librdkafka's ``ShareConsumer``.

The brokers are ``test_share_consumers.py``'s ``share_broker`` (each group reads from the earliest
offset with a 15 s acquisition lock: IncrementalAlterConfigs on Kafka, the broker's settings on kgroup
serve):

* more consumers than partitions, implicit acknowledgement: every record delivered and accepted once,
  at delivery count 1, with its key, value and headers;
* explicit acknowledgement: ACCEPT, RELEASE and REJECT with ``commit_sync``'s per-partition results and
  the callback's; the released record comes again at delivery count 2, the rejected one never; the
  state errors Kafka's ``IllegalStateException``\\ s name;
* mixed with librdkafka's share consumer in one group: every record once;
* close: a consumer holding records closes; another gets them at count 2 before the lock would end,
  and ShareGroupDescribe no longer lists the closed member.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from confluent_kafka import Producer
from tests.apache_kafka.test_diff_share_group import _describe
from tests.apache_kafka.test_share_consumers import (
    LOCK_MS,
    ShareBroker,
    _produce,
    _RdkafkaShare,
    share_broker,
)
from tests.apache_kafka.wire import Raw, create_topic

from kgroup.client import (
    AcknowledgeType,
    ShareAcknowledgementError,
    ShareConsumer,
    ShareConsumerStateError,
    ShareRecord,
)
from kgroup.model import TopicPartition

pytestmark = [pytest.mark.slow, pytest.mark.apache_kafka]

__all__ = ["share_broker"]  # the fixture, shared with test_share_consumers.py

_T = TypeVar("_T")


def _run(coro: Callable[[], Awaitable[_T]], timeout_s: float = 90) -> _T:
    async def bounded() -> _T:
        return await asyncio.wait_for(coro(), timeout_s)  # type: ignore[arg-type]

    return asyncio.run(bounded())


async def _poll_until(
    consumers: list[ShareConsumer],
    done: Callable[[], bool],
    on_records: Callable[[ShareConsumer, list[ShareRecord]], None],
    timeout_s: float,
    what: str,
) -> None:
    """Poll every consumer in turn (200 ms each) until ``done()``; bounded by ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        for consumer in consumers:
            records = await consumer.poll(200)
            if records:
                on_records(consumer, records)


def _group_topic(share_broker: ShareBroker, names: str, partitions: int) -> tuple[str, str]:
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(share_broker.bootstrap_servers) as raw:
        create_topic(raw, topic, partitions)
    share_broker.prepare_group(group)
    return group, topic


def test_more_consumers_than_partitions_implicit(share_broker: ShareBroker, names: str) -> None:
    group, topic = _group_topic(share_broker, names, 2)
    producer = Producer({"bootstrap.servers": share_broker.bootstrap_servers, "acks": "all"})
    producer.produce(
        topic, key=b"k", value=b"with-headers", partition=0, headers=[("h1", b"x"), ("h2", None)]
    )
    assert producer.flush(30) == 0
    sent = _produce(share_broker.bootstrap_servers, topic, 2, 300) | {(0, 0)}
    got: list[ShareRecord] = []
    owners: dict[str, int] = {}

    async def scenario() -> None:
        consumers = [ShareConsumer(share_broker.bootstrap_servers, group) for _ in range(3)]
        for consumer in consumers:
            await consumer.start()
            consumer.subscribe([topic])
        try:

            def keep(consumer: ShareConsumer, records: list[ShareRecord]) -> None:
                got.extend(records)
                owners[consumer.member_id] = owners.get(consumer.member_id, 0) + len(records)

            await _poll_until(consumers, lambda: len(got) >= len(sent), keep, 60, f"{len(sent)} records")
            # the next polls accept them (implicit mode) and must bring nothing again
            for consumer in consumers:
                assert await consumer.poll(300) == []
            assert {c.acquisition_lock_timeout_ms for c in consumers if c.member_id in owners} == {LOCK_MS}
        finally:
            for consumer in consumers:
                await consumer.close()

    _run(scenario)
    assert sorted((r.partition, r.offset) for r in got) == sorted(sent), share_broker.kind
    assert {r.delivery_count for r in got} == {1}
    first = next(r for r in got if (r.partition, r.offset) == (0, 0))
    assert (first.key, first.value, first.headers) == (b"k", b"with-headers", (("h1", b"x"), ("h2", None)))
    assert next(r for r in got if (r.partition, r.offset) == (1, 0)).value == b"r1"


def test_explicit_accept_release_reject(share_broker: ShareBroker, names: str) -> None:
    group, topic = _group_topic(share_broker, names, 1)
    sent = _produce(share_broker.bootstrap_servers, topic, 1, 6)
    assert sorted(sent) == [(0, o) for o in range(6)]
    deliveries: list[tuple[int, int]] = []
    callback: list[tuple[dict[TopicPartition, frozenset[int]], Exception | None]] = []
    results: list[dict[TopicPartition, ShareAcknowledgementError | None]] = []
    refused: dict[str, str] = {}
    tp = TopicPartition(topic, 0)

    async def scenario() -> None:
        async with ShareConsumer(share_broker.bootstrap_servers, group, acknowledgement_mode="explicit") as c:
            c.set_acknowledgement_commit_callback(lambda offsets, exc: callback.append((dict(offsets), exc)))
            with pytest.raises(ShareConsumerStateError, match="not subscribed"):
                await c.poll(0)
            c.subscribe([topic])
            first: list[ShareRecord] = []

            def keep(_c: ShareConsumer, records: list[ShareRecord]) -> None:
                first.extend(records)

            await _poll_until([c], lambda: bool(first), keep, 30, "the first records")
            deliveries.extend((r.offset, r.delivery_count) for r in first)
            with pytest.raises(ShareConsumerStateError, match="All records must be acknowledged") as info:
                await c.poll(0)
            refused["poll"] = str(info.value)
            for record in first:
                kind = {0: AcknowledgeType.RELEASE, 1: AcknowledgeType.REJECT}.get(
                    record.offset, AcknowledgeType.ACCEPT
                )
                c.acknowledge(record, kind)
            with pytest.raises(ShareConsumerStateError, match="cannot be acknowledged"):
                c.acknowledge(first[0], AcknowledgeType.ACCEPT)
            results.append(await c.commit_sync())
            again: list[ShareRecord] = []

            def keep_again(consumer: ShareConsumer, records: list[ShareRecord]) -> None:
                again.extend(records)
                for record in records:
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT)

            seen = {r.offset for r in first}
            await _poll_until(
                [c],
                lambda: (
                    {0} <= {r.offset for r in again} and seen | {r.offset for r in again} >= set(range(6))
                ),
                keep_again,
                30,
                "the released record again",
            )
            deliveries.extend((r.offset, r.delivery_count) for r in again)
            results.append(await c.commit_sync())
            assert await c.poll(500) == []  # nothing more: the rejected record never comes back

    _run(scenario)
    assert (0, 1) in deliveries and (0, 2) in deliveries and (1, 1) in deliveries
    assert [d for d in deliveries if d[0] == 1] == [(1, 1)], deliveries  # rejected: never again
    assert sorted({o for o, _ in deliveries}) == list(range(6))
    assert [(o, c) for o, c in deliveries if o > 1] == [(o, 1) for o, _ in sorted(set(deliveries)) if o > 1]
    assert results == [{tp: None}, {tp: None}], results
    acked = frozenset(o for offsets, exc in callback for o in offsets.get(tp, ()) if exc is None)
    assert acked == frozenset(range(6)) and all(exc is None for _, exc in callback), callback


def test_implicit_mode_refuses_acknowledge_and_accepts_on_commit(
    share_broker: ShareBroker, names: str
) -> None:
    group, topic = _group_topic(share_broker, names, 1)
    _produce(share_broker.bootstrap_servers, topic, 1, 3)
    tp = TopicPartition(topic, 0)

    async def scenario() -> tuple[
        list[int], dict[TopicPartition, ShareAcknowledgementError | None], list[Any]
    ]:
        async with ShareConsumer(share_broker.bootstrap_servers, group) as c:
            c.subscribe([topic])
            got: list[ShareRecord] = []
            await _poll_until([c], lambda: len(got) >= 3, lambda _c, rs: got.extend(rs), 30, "three records")
            with pytest.raises(ShareConsumerStateError, match="Implicit acknowledgement"):
                c.acknowledge(got[0])
            committed = await c.commit_sync()  # accepts the three
            assert await c.commit_sync() == {}  # nothing left to acknowledge
        # another member of the group: nothing is left to deliver
        async with ShareConsumer(share_broker.bootstrap_servers, group) as other:
            other.subscribe([topic])
            later: list[Any] = []
            deadline = time.monotonic() + 20
            while not other.assignment() and time.monotonic() < deadline:
                later.extend(await other.poll(300))
            assert other.assignment() == {tp}
            deadline = time.monotonic() + 1  # assigned: what was not accepted would come now
            while time.monotonic() < deadline:
                later.extend(await other.poll(300))
        return [r.offset for r in got], committed, later

    offsets, committed, later = _run(scenario)
    assert sorted(offsets) == [0, 1, 2]
    assert committed == {tp: None}
    assert later == []


def test_mixed_with_librdkafka_share_consumer(share_broker: ShareBroker, names: str) -> None:
    group, topic = _group_topic(share_broker, names, 2)
    sent = _produce(share_broker.bootstrap_servers, topic, 2, 400)
    rdkafka = _RdkafkaShare(share_broker.bootstrap_servers, group, topic)
    got: list[ShareRecord] = []
    try:

        async def scenario() -> None:
            async with ShareConsumer(
                share_broker.bootstrap_servers, group, acknowledgement_mode="explicit"
            ) as c:
                c.subscribe([topic])

                def keep(consumer: ShareConsumer, records: list[ShareRecord]) -> None:
                    got.extend(records)
                    for record in records:
                        consumer.acknowledge(record, AcknowledgeType.ACCEPT)
                    consumer.commit_async()

                await _poll_until(
                    [c], lambda: len(got) + len(rdkafka.records) >= len(sent), keep, 60, "every record"
                )
                end = time.monotonic() + 1.0  # nothing more is delivered (a duplicate would show here)
                while time.monotonic() < end:
                    keep(c, await c.poll(200))

        _run(scenario)
    finally:
        rdkafka.close()
    rows = [(r.partition, r.offset, r.delivery_count) for r in got] + rdkafka.records
    assert sorted((p, o) for p, o, _ in rows) == sorted(sent), share_broker.kind
    assert {c for _, _, c in rows} == {1}
    assert got, "kgroup's consumer got none of the records"
    assert rdkafka.errors == []


def test_close_releases_held_records_and_leaves(share_broker: ShareBroker, names: str) -> None:
    """A consumer holds records (explicit mode, none acknowledged) and closes: its share session closes
    (the broker releases them) and it leaves the group; another member gets them at delivery count 2
    well before the 15 s lock would end, and ShareGroupDescribe lists only that member."""
    group, topic = _group_topic(share_broker, names, 1)
    sent = _produce(share_broker.bootstrap_servers, topic, 1, 5)

    async def scenario() -> tuple[list[ShareRecord], list[ShareRecord], float, list[str], str]:
        holder = ShareConsumer(share_broker.bootstrap_servers, group, acknowledgement_mode="explicit")
        other = ShareConsumer(share_broker.bootstrap_servers, group)
        await holder.start()
        await other.start()
        try:
            return await both(holder, other)
        finally:
            await holder.close()
            await other.close()

    async def both(
        holder: ShareConsumer, other: ShareConsumer
    ) -> tuple[list[ShareRecord], list[ShareRecord], float, list[str], str]:
        # both join together; the other one fetches nothing until it polls again, after the close
        holder.subscribe([topic])
        other.subscribe([topic])
        assert await other.poll(0) == []
        held: list[ShareRecord] = []
        await _poll_until(
            [holder], lambda: len(held) >= len(sent), lambda _c, rs: held.extend(rs), 30, "records"
        )
        deadline = time.monotonic() + 15
        while not other.assignment() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # its heartbeats run on their own: the partition is shared
        assert other.assignment() == {TopicPartition(topic, 0)}
        closed_at = time.monotonic()
        await holder.close()
        again: list[ShareRecord] = []
        await _poll_until(
            [other], lambda: len(again) >= len(sent), lambda _c, rs: again.extend(rs), 14, "again"
        )
        waited = time.monotonic() - closed_at
        with Raw(share_broker.bootstrap_servers) as raw:
            described = _describe(raw, group)
        members = [m["member_id"] for m in described[0]["members"]]
        return held, again, waited, members, other.member_id

    held, again, waited, members, other_id = _run(scenario)
    assert sorted(r.offset for r in held) == [o for _, o in sorted(sent)]
    assert {r.delivery_count for r in held} == {1}
    assert sorted((r.offset, r.delivery_count) for r in again) == [(o, 2) for _, o in sorted(sent)]
    assert waited < LOCK_MS / 1000 / 2, waited  # released by the close, not by the 15 s lock
    assert members == [other_id], (members, share_broker.kind)
