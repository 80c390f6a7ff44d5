"""A parked fetch counts what arrives and reads the log only when it completes (Kafka's DelayedFetch).

Issue 17: a Fetch with a huge ``min_bytes`` and a long ``max_wait`` from offset 0, while records trickle
in, used to re-read the whole log on every append (about 80 % of a core). Now the log is read once when
the fetch arrives and once when it is answered, whatever is appended meanwhile.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.broker.rawclient import RawClient
from tests.broker.rawdata import fetch_request, produce_code, produce_request
from tests.log.batches import kio_batch

from kgroup.testing import KafkaBroker


def _count_reads(kafka: KafkaBroker, topic: str, partition: int) -> list[int]:
    """Wrap the partition log's ``read_slice`` (the Fetch handler's read, on the broker's loop): the
    list grows by one per read."""
    reads: list[int] = []

    async def wrap() -> None:
        plog = kafka.broker.cluster.partition_log(topic, partition)
        original = plog.read_slice

        def counted(offset: int, max_bytes: int) -> object:
            reads.append(offset)
            return original(offset, max_bytes)

        plog.read_slice = counted

    kafka.run_in_loop(wrap())
    return reads


def _fetch_in_thread(kafka: KafkaBroker, request: Any) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []

    def run() -> None:
        with RawClient(kafka.bootstrap_servers, timeout_s=30) as client:
            result.append(client.request(request))

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def _parked(kafka: KafkaBroker) -> int:
    async def count() -> int:
        return len(kafka.broker.fetch_waiters)

    return kafka.run_in_loop(count())


def _wait_parked(kafka: KafkaBroker) -> None:
    deadline = time.monotonic() + 10
    while _parked(kafka) == 0:
        assert time.monotonic() < deadline, "the fetch never parked"
        time.sleep(0.01)


def test_a_parked_fetch_reads_the_log_twice_whatever_arrives() -> None:
    with KafkaBroker(topics={"t": 1}) as kafka, RawClient(kafka.bootstrap_servers) as producer:
        for _ in range(20):  # some history, which the old fetch re-read on every append
            assert produce_code(producer.request(produce_request("t", 0, kio_batch([b"x" * 1000] * 5)))) == 0
        reads = _count_reads(kafka, "t", 0)
        started = time.monotonic()
        thread, result = _fetch_in_thread(
            kafka, fetch_request([("t", 0, 0)], min_bytes=2**31 - 1, max_wait_ms=2_000)
        )
        _wait_parked(kafka)
        for n in range(50):
            assert produce_code(producer.request(produce_request("t", 0, kio_batch([b"y%d" % n])))) == 0
        thread.join(30)
        assert not thread.is_alive()
        waited = time.monotonic() - started
        assert len(reads) == 2  # the first read and the answer's (50 appends meanwhile)
        assert waited >= 1.9  # min_bytes never reached: answered at max_wait
        (answer,) = result
        assert len(answer.responses[0].partitions[0].records) > 0
        assert _parked(kafka) == 0  # nothing left behind


def test_a_parked_fetch_completes_once_min_bytes_have_arrived() -> None:
    with KafkaBroker(topics={"t": 2}) as kafka, RawClient(kafka.bootstrap_servers) as producer:
        batch = kio_batch([b"z" * 1000])
        started = time.monotonic()
        thread, result = _fetch_in_thread(
            kafka,
            fetch_request([("t", 0, 0), ("t", 1, 0)], min_bytes=3 * len(batch), max_wait_ms=20_000),
        )
        _wait_parked(kafka)
        assert produce_code(producer.request(produce_request("t", 0, batch))) == 0
        assert produce_code(producer.request(produce_request("t", 1, batch))) == 0
        time.sleep(0.3)
        assert thread.is_alive()  # two batches are not min_bytes yet
        assert produce_code(producer.request(produce_request("t", 1, batch))) == 0
        thread.join(10)
        assert not thread.is_alive()
        assert time.monotonic() - started < 10  # not the 20 s max_wait
        (answer,) = result
        sizes = [len(p.records) for t in answer.responses for p in t.partitions]
        assert sizes == [len(batch), 2 * len(batch)]


def test_each_partition_counts_at_most_its_partition_max_bytes() -> None:
    with KafkaBroker(topics={"t": 2}) as kafka, RawClient(kafka.bootstrap_servers) as producer:
        batch = kio_batch([b"w" * 1000])
        thread, result = _fetch_in_thread(
            kafka,
            fetch_request(
                [("t", 0, 0), ("t", 1, 0)],
                min_bytes=2 * len(batch),
                max_wait_ms=1_500,
                partition_max_bytes=len(batch),
            ),
        )
        _wait_parked(kafka)
        started = time.monotonic()
        for _ in range(3):  # three batches, but partition 0 counts for one
            assert produce_code(producer.request(produce_request("t", 0, batch))) == 0
        thread.join(10)
        assert time.monotonic() - started >= 1.0  # waited for max_wait, not completed by partition 0
        assert result
