"""Run real clients through a network fault: a broker behind one toxiproxy proxy per consumer.

:class:`FaultBed` is a broker (``kgroup serve`` in process, or Apache Kafka) with one extra listener
per consumer, each advertised at its own proxy's address (``advertised.listeners``), so every
connection a consumer makes — bootstrap, partition leader, group coordinator — goes through its proxy
and a fault on that proxy hits that consumer alone. The producer and the offsets observer use the
broker's own listener, unfaulted.

:func:`run_fault` runs one :class:`FaultRun` on a bed: confluent-kafka (librdkafka) consumers in
threads, each recording its rebalance callbacks (time, generation, member id), its polled records
and its acknowledged commits; a producer recording acknowledged records; an observer sampling the
group's committed offsets. The fault starts once the group is settled. At the end the producer stops,
the consumers drain what was acknowledged (bounded), close, and :mod:`.invariants` checks it all.
Every wait is bounded; every client is closed and every toxic removed, also on failure.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kgroup.model import KgroupError
from kgroup.testing.faults.invariants import Callback, Commit, Observations
from kgroup.testing.faults.toxiproxy import Proxy, Toxiproxy
from kgroup.testing.lifecycle import Started

__all__ = ["FAULT_KINDS", "Fault", "FaultBed", "FaultRun", "RunOutcome", "run_fault"]

#: what :class:`Fault` can do to consumer links
FAULT_KINDS = ("none", "latency", "cut", "resets", "slow_link")
_SETTLE_TIMEOUT_S = 60.0
_DRAIN_TIMEOUT_S = 30.0
_CLOSE_TIMEOUT_S = 30.0
_COMMIT_EVERY_S = 0.5
_OBSERVE_EVERY_S = 0.25
_names = itertools.count()


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault on consumer links, from ``at_s`` after the group settled, for ``duration_s``.

    * ``latency``: every consumer's link, both directions, ``latency_ms`` ± ``jitter_ms`` per chunk;
    * ``cut``: consumer ``consumer``'s link passes nothing (held, delivered when it heals);
    * ``resets``: consumer ``consumer``'s connections are reset every ``every_s`` (a TCP RST);
    * ``slow_link``: consumer ``consumer``'s broker → client direction at ``rate_kbps`` KB/s.
    """

    kind: str
    at_s: float = 2.0
    duration_s: float = 8.0
    consumer: int = 1
    latency_ms: int = 50
    jitter_ms: int = 10
    every_s: float = 2.0
    rate_kbps: int = 8

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise KgroupError(f"fault.kind: {self.kind!r}; use one of {', '.join(FAULT_KINDS)}")
        if self.at_s < 0 or self.duration_s < 0:
            raise KgroupError("fault: at_s and duration_s must be 0 or more (seconds)")

    def describe(self) -> str:
        if self.kind == "latency":
            return f"latency {self.latency_ms}±{self.jitter_ms} ms on every consumer"
        if self.kind == "cut":
            return f"c{self.consumer} cut off for {self.duration_s:g} s"
        if self.kind == "resets":
            return f"c{self.consumer} reset every {self.every_s:g} s for {self.duration_s:g} s"
        if self.kind == "slow_link":
            return f"c{self.consumer} at {self.rate_kbps} KB/s for {self.duration_s:g} s"
        return "no fault"


@dataclass(frozen=True, slots=True)
class FaultRun:
    """A group of ``consumers`` on one topic of ``partitions``, a producer, and a fault."""

    fault: Fault
    assignor: str = "cooperative-sticky"
    consumers: int = 3
    partitions: int = 6
    produce_per_s: int = 200
    #: after the fault's end, how long the run goes on
    tail_s: float = 4.0
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000

    def __post_init__(self) -> None:
        if not 1 <= self.consumers <= 16:
            raise KgroupError(f"consumers: {self.consumers}; use 1..16")
        if self.fault.kind != "latency" and self.fault.consumer >= self.consumers:
            raise KgroupError(f"fault.consumer: {self.fault.consumer}; use 0..{self.consumers - 1}")

    @property
    def eager(self) -> bool:
        return self.assignor != "cooperative-sticky"


@dataclass(slots=True)
class RunOutcome:
    run: FaultRun
    broker: str
    observations: Observations
    #: seconds from the consumers' start to the fault's start
    fault_t: float
    #: the time the group took to settle before the fault
    settle_s: float
    notes: list[str] = field(default_factory=list)
    #: ``resets``: how many bursts of resets the consumer's connections got
    resets: int = 0


class FaultBed(Started):
    """A broker of ``kind`` ``kgroup`` or ``apache`` behind ``consumers`` proxies of ``toxiproxy``."""

    def __init__(
        self, kind: str, toxiproxy: Toxiproxy, consumers: int = 3, *, session_min_ms: int = 6000
    ) -> None:
        if kind not in ("kgroup", "apache"):
            raise KgroupError(f"broker: {kind!r}; use kgroup or apache")
        self.kind = kind
        self.toxiproxy = toxiproxy
        self.consumers = consumers
        self.session_min_ms = session_min_ms
        self.proxies: list[Proxy] = []
        self._server: Any = None

    def start(self) -> FaultBed:
        tag = next(_names)
        try:
            self.proxies = [self.toxiproxy.proxy(f"bed{tag}-c{i}") for i in range(self.consumers)]
            names = [f"C{i}" for i in range(self.consumers)]
            if self.kind == "kgroup":
                from kgroup.testing import KafkaBroker

                self._server = KafkaBroker(
                    listeners=["PLAINTEXT://127.0.0.1:0", *(f"{n}://127.0.0.1:0" for n in names)],
                    listener_security_protocol_map=",".join(f"{n}:PLAINTEXT" for n in names),
                    advertised_listeners=[
                        "PLAINTEXT://127.0.0.1:0",
                        *(f"{n}://{p.listen}" for n, p in zip(names, self.proxies, strict=True)),
                    ],
                    group_min_session_timeout_ms=self.session_min_ms,
                ).start()
                upstreams = [self._server.listener_bootstrap_servers(n) for n in names]
            else:
                from kgroup.testing.apache_kafka import ApacheKafka

                self._server = ApacheKafka(
                    configs={"group.min.session.timeout.ms": self.session_min_ms},
                    advertised_listeners={n: p.listen for n, p in zip(names, self.proxies, strict=True)},
                ).start()
                upstreams = [f"127.0.0.1:{self._server.listener_port(n)}" for n in names]
            for proxy, upstream in zip(self.proxies, upstreams, strict=True):
                proxy.set_upstream(upstream)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        try:
            if server is not None:
                server.stop()
        finally:
            for proxy in self.proxies:
                # the server may be gone already: its proxies went with it
                with contextlib.suppress(KgroupError):
                    self.toxiproxy.api("DELETE", f"/proxies/{proxy.name}")
            self.proxies = []

    @property
    def bootstrap_servers(self) -> str:
        """The broker's own listener (no proxy)."""
        if self._server is None:
            raise KgroupError("FaultBed: not started")
        text: str = self._server.bootstrap_servers
        return text

    def create_topic(self, name: str, partitions: int) -> None:
        assert self._server is not None
        self._server.create_topic(name, partitions)

    def check_alive(self) -> None:
        if self.kind == "apache" and self._server is not None:
            self._server.check_alive()


def generation_of(metadata: Any) -> tuple[int, str]:
    """(generation, member id) from confluent-kafka's consumer group metadata: librdkafka's
    serialized form ``CGMDv2:`` + int32 generation (host order) + group id NUL + member id NUL …"""
    blob = bytes(metadata)
    if not blob.startswith(b"CGMDv2:") or len(blob) < 12:
        return -1, ""
    generation = int.from_bytes(blob[7:11], sys.byteorder, signed=True)
    rest = blob[11:].split(b"\x00")
    member = rest[1].decode(errors="replace") if len(rest) > 1 else ""
    return generation, member


class _Recorder:
    """Shared by the client threads: appends under one lock, times from one origin."""

    def __init__(self, partitions: int) -> None:
        self.lock = threading.Lock()
        self.origin = time.monotonic()
        self.obs = Observations(partitions=partitions, end_t=0.0)
        self.errors: list[str] = []

    def now(self) -> float:
        return time.monotonic() - self.origin


class _ConsumerThread(threading.Thread):
    def __init__(self, name: str, config: dict[str, Any], topic: str, recorder: _Recorder) -> None:
        super().__init__(name=f"fault-{name}", daemon=True)
        self.consumer_name = name
        self.config = config
        self.topic = topic
        self.recorder = recorder
        self.stop_event = threading.Event()
        self.closed = threading.Event()
        self.owned: set[int] = set()
        #: the generation of the last rebalance callback (-1: none yet)
        self.generation = -1
        self._pending: dict[int, int] = {}

    def _callback(self, consumer: Any, kind: str, partitions: list[Any]) -> None:
        generation, member = generation_of(consumer.consumer_group_metadata())
        numbers = tuple(sorted(tp.partition for tp in partitions))
        if kind == "revoke":
            self._commit(consumer)
        rec = self.recorder
        with rec.lock:
            rec.obs.callbacks.append(
                Callback(rec.now(), self.consumer_name, kind, generation, member, numbers)
            )
        self.generation = generation
        if kind == "assign":
            self.owned.update(numbers)
        else:
            self.owned.difference_update(numbers)
            for number in numbers:
                self._pending.pop(number, None)

    def _commit(self, consumer: Any) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        pending = {p: o for p, o in self._pending.items() if p in self.owned}
        if not pending:
            return
        offsets = [TopicPartition(self.topic, p, o) for p, o in sorted(pending.items())]
        try:
            done = consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:  # a stale generation, a lost coordinator: not committed
            with self.recorder.lock:
                self.recorder.errors.append(f"{self.consumer_name}: commit failed: {exc.args[0]}")
            return
        rec = self.recorder
        with rec.lock:
            t = rec.now()
            for tp in done or []:
                if tp.error is None:
                    rec.obs.commits.append(Commit(t, self.consumer_name, tp.partition, tp.offset))
                    if self._pending.get(tp.partition) == tp.offset:
                        del self._pending[tp.partition]

    def _error(self, error: Any) -> None:
        with self.recorder.lock:
            if len(self.recorder.errors) < 50:
                self.recorder.errors.append(f"{self.consumer_name}: {error.str()}")

    def run(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer({**self.config, "error_cb": self._error})
        try:
            consumer.subscribe(
                [self.topic],
                on_assign=lambda c, ps: self._callback(c, "assign", ps),
                on_revoke=lambda c, ps: self._callback(c, "revoke", ps),
                on_lost=lambda c, ps: self._callback(c, "lost", ps),
            )
            next_commit = time.monotonic() + _COMMIT_EVERY_S
            while not self.stop_event.is_set():
                messages = consumer.consume(num_messages=500, timeout=0.1)
                seen: list[tuple[int, int]] = [
                    (int(m.partition() or 0), int(m.offset() or 0)) for m in messages if m.error() is None
                ]
                if seen:
                    with self.recorder.lock:
                        self.recorder.obs.consumed.update(seen)
                        self.recorder.obs.polled += len(seen)
                    for partition, offset in seen:
                        self._pending[partition] = offset + 1
                if time.monotonic() >= next_commit:
                    self._commit(consumer)
                    next_commit = time.monotonic() + _COMMIT_EVERY_S
        except Exception as exc:  # recorded: the run reports it, the thread ends
            with self.recorder.lock:
                self.recorder.errors.append(f"{self.consumer_name}: {type(exc).__name__}: {exc}")
        finally:
            try:
                consumer.close()  # revokes (and commits, in the callback) and leaves the group
            finally:
                self.closed.set()


class _Producer(threading.Thread):
    def __init__(self, bootstrap: str, topic: str, run: FaultRun, recorder: _Recorder) -> None:
        super().__init__(name="fault-producer", daemon=True)
        self.bootstrap = bootstrap
        self.topic = topic
        self.run_spec = run
        self.recorder = recorder
        self.stop_event = threading.Event()
        self.flushed = threading.Event()
        self.unacked = 0

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5, "log_level": 3}
        )
        rec = self.recorder

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                with rec.lock:
                    rec.obs.acked.add((msg.partition(), msg.offset()))

        interval = 1.0 / self.run_spec.produce_per_s
        partitions = self.run_spec.partitions
        sent = 0
        start = time.monotonic()
        try:
            while not self.stop_event.is_set():
                due = start + sent * interval
                delay = due - time.monotonic()
                if delay > 0:
                    self.stop_event.wait(delay)
                    continue
                producer.produce(self.topic, b"x" * 64, partition=sent % partitions, on_delivery=delivered)
                producer.poll(0)
                sent += 1
        finally:
            self.unacked = producer.flush(_DRAIN_TIMEOUT_S)
            self.flushed.set()


class _Observer(threading.Thread):
    """Samples the group's committed offsets (OffsetFetch) on the broker's own listener, through a
    consumer of the group that never subscribes (so never joins). Not the admin API: librdkafka
    2.16's admin OffsetFetch crashes its process when the coordinator answers NOT_COORDINATOR
    (confluentinc/confluent-kafka-python#1982), as Apache Kafka does for a group it is loading."""

    def __init__(self, bootstrap: str, group: str, run: FaultRun, topic: str, recorder: _Recorder) -> None:
        super().__init__(name="fault-observer", daemon=True)
        self.bootstrap, self.group, self.topic, self.recorder = bootstrap, group, topic, recorder
        self.partitions = run.partitions
        self.stop_event = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        reader = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "log_level": 0,
                "enable.auto.commit": False,
            }
        )
        wanted = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        try:
            while not self.stop_event.wait(_OBSERVE_EVERY_S):
                try:
                    answer = reader.committed(wanted, timeout=5)
                except KafkaException:  # a coordinator moving or loading: sample again
                    continue
                rec = self.recorder
                with rec.lock:
                    t = rec.now()
                    for tp in answer:
                        if tp.error is None and tp.offset >= 0:
                            rec.obs.sampled_offsets.append((t, tp.partition, tp.offset))
        finally:
            reader.close()


class _Faulter:
    """Applies a :class:`Fault` to the bed's proxies and takes it off again."""

    def __init__(self, fault: Fault, proxies: list[Proxy]) -> None:
        self.fault = fault
        self.proxies = proxies
        self.resets = 0

    def apply(self, stop: threading.Event) -> None:
        """Blocks for the fault's duration (returns early if ``stop`` is set)."""
        fault = self.fault
        target = self.proxies[fault.consumer] if fault.kind != "latency" else None
        try:
            if fault.kind == "latency":
                for proxy in self.proxies:
                    proxy.add_toxic("latency", {"latency": fault.latency_ms, "jitter": fault.jitter_ms})
                stop.wait(fault.duration_s)
            elif fault.kind == "cut":
                assert target is not None
                target.add_toxic("timeout", {"timeout": 0})
                stop.wait(fault.duration_s)
            elif fault.kind == "slow_link":
                assert target is not None
                target.add_toxic("bandwidth", {"rate": fault.rate_kbps}, stream="downstream")
                stop.wait(fault.duration_s)
            elif fault.kind == "resets":
                assert target is not None
                end = time.monotonic() + fault.duration_s
                for _ in range(int(fault.duration_s / fault.every_s) + 1):
                    if stop.is_set() or time.monotonic() >= end:
                        break
                    names = target.add_toxic("reset_peer", {"timeout": 0})
                    stop.wait(0.3)
                    for name in names:
                        target.remove_toxic(name)
                    self.resets += 1
                    stop.wait(max(0.0, min(fault.every_s - 0.3, end - time.monotonic())))
            else:
                stop.wait(fault.duration_s)
        finally:
            for proxy in self.proxies:
                proxy.remove_all_toxics()


def _wait(predicate: Callable[[], bool], timeout_s: float, step_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step_s)
    return predicate()


def run_fault(bed: FaultBed, run: FaultRun, *, progress: Callable[[str], None] | None = None) -> RunOutcome:
    """Run ``run`` on ``bed`` and return what the clients saw (checked with :func:`invariants.check`)."""
    if run.consumers > len(bed.proxies):
        raise KgroupError(f"consumers: {run.consumers}; the bed has {len(bed.proxies)} proxies")
    say = progress or (lambda _text: None)
    tag = next(_names)
    topic = f"faults-{tag}-{run.fault.kind}"
    group = f"faults-{tag}-{run.fault.kind}-{run.assignor}"
    bed.create_topic(topic, run.partitions)
    recorder = _Recorder(run.partitions)
    consumers = [
        _ConsumerThread(
            f"c{i}",
            {
                "bootstrap.servers": bed.proxies[i].listen,
                "group.id": group,
                "client.id": f"c{i}",
                "partition.assignment.strategy": run.assignor,
                "session.timeout.ms": run.session_timeout_ms,
                "heartbeat.interval.ms": run.heartbeat_interval_ms,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "log_level": 0,
            },
            topic,
            recorder,
        )
        for i in range(run.consumers)
    ]
    producer = _Producer(bed.bootstrap_servers, topic, run, recorder)
    observer = _Observer(bed.bootstrap_servers, group, run, topic, recorder)
    stop_fault = threading.Event()
    faulter = _Faulter(run.fault, bed.proxies)
    notes: list[str] = []
    try:
        producer.start()
        observer.start()
        for thread in consumers:
            thread.start()

        def settled() -> bool:
            """Every consumer in one generation, each partition owned once, nobody idle that could
            have a partition (a late joiner would otherwise rebalance the group after the fault's start)."""
            owned = [frozenset(t.owned) for t in consumers]  # a copy: the threads change them
            generations = {t.generation for t in consumers}
            busy = all(owned) or run.partitions < run.consumers
            return (
                len(generations) == 1
                and -1 not in generations
                and busy
                and sum(len(o) for o in owned) == run.partitions
                and set().union(*owned) == set(range(run.partitions))
            )

        say(f"{bed.kind}: {run.assignor}, {run.fault.describe()}: waiting for the group")
        if not _wait(settled, _SETTLE_TIMEOUT_S):
            raise KgroupError(f"{bed.kind}: the group did not settle within {_SETTLE_TIMEOUT_S:.0f} s")
        settle_s = recorder.now()
        time.sleep(run.fault.at_s)
        fault_t = recorder.now()
        say(f"{bed.kind}: {run.fault.describe()} at {fault_t:.1f} s")
        faulter.apply(stop_fault)
        say(f"{bed.kind}: fault over at {recorder.now():.1f} s; {run.tail_s:g} s more")
        time.sleep(run.tail_s)
        producer.stop_event.set()
        if not producer.flushed.wait(_DRAIN_TIMEOUT_S + 5):
            notes.append("the producer did not flush in time")
        if producer.unacked:
            notes.append(f"{producer.unacked} records were never acknowledged (not counted)")

        def drained() -> bool:
            with recorder.lock:
                return recorder.obs.acked <= recorder.obs.consumed

        if not _wait(drained, _DRAIN_TIMEOUT_S, 0.1):
            notes.append(
                f"the consumers had not read every acknowledged record after {_DRAIN_TIMEOUT_S:.0f} s"
            )
        with recorder.lock:
            recorder.obs.end_t = recorder.now()
    finally:
        stop_fault.set()
        producer.stop_event.set()
        observer.stop_event.set()
        for thread in consumers:
            thread.stop_event.set()
        threads: list[threading.Thread] = [*consumers, producer, observer]
        deadline = time.monotonic() + _CLOSE_TIMEOUT_S
        for each in threads:
            each.join(max(0.0, deadline - time.monotonic()))
        for proxy in bed.proxies:
            proxy.remove_all_toxics()
    stuck = [t.name for t in [*consumers, producer, observer] if t.is_alive()]
    if stuck:
        raise KgroupError(f"fault run: threads {stuck} did not end within {_CLOSE_TIMEOUT_S:.0f} s")
    notes += recorder.errors
    if faulter.resets:
        notes.append(f"{faulter.resets} bursts of resets")
    # what happened after end_t (the final close) is not part of the run
    obs = recorder.obs
    obs.callbacks = [cb for cb in obs.callbacks if cb.t <= obs.end_t]
    return RunOutcome(run, bed.kind, obs, fault_t, settle_s, notes, faulter.resets)
