"""``kgroup bench broker``: kgroup's broker beside Tansu and librdkafka's mock cluster, with real clients.

Three measurements, each with confluent-kafka (librdkafka) over loopback, for every peer of
:mod:`kgroup.bench.broker_peers`:

* **produce MB/s**: ``records`` records of ``record_bytes`` (1 KiB) into one topic, librdkafka's default
  producer settings (acks=all, linger.ms=5, no compression), from the first ``produce()`` until
  ``flush()`` returns with every record acknowledged. MB = 10^6 bytes of record values.
* **fetch MB/s**: one consumer ``assign()``-ed to every partition of that topic from the log start
  (no group: fetching only), until it has read everything between each partition's low and high
  watermark. The mock cluster keeps only each partition's newest records, so it fetches fewer.
* **group of N stable, s**: N consumers in one fresh group subscribe to ``group_topics`` topics of 4
  partitions each (60 partitions by default: 4 is all the mock cluster can create, and Tansu's
  cooperative rebalancing is broken, so the eager ``roundrobin`` assignor spreads all topics over all
  members); the time from the first ``subscribe()`` until every consumer has a non-empty assignment and
  the assignments cover every partition exactly once.

Each run starts every peer afresh (peers interleaved, so load drifting on a shared machine hits all of
them alike), and the figure is the median of the runs. A peer that cannot run a cell gets its reason
instead of a number. Every measurement is bounded by ``timeout_s``; every process and client started
is stopped before the next peer starts.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kgroup.bench.broker_peers import (
    GROUP_APIS,
    MOCK_PARTITIONS,
    PEERS,
    PeerUnavailable,
    RunningPeer,
    offered_apis,
    start_peer,
)
from kgroup.model import KgroupError

__all__ = [
    "PEERS",
    "BrokerBenchConfig",
    "BrokerBenchResult",
    "CellOutcome",
    "group_support",
    "measure_fetch",
    "measure_group",
    "measure_produce",
    "metric_names",
    "render_table",
    "run_broker_bench",
]

MB = 1_000_000
CLOSE_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class BrokerBenchConfig:
    peers: tuple[str, ...] = PEERS
    records: int = 200_000
    record_bytes: int = 1024
    #: records produced to a topic of their own before the measured produce, on every peer alike
    #: (a JVM's JIT, kgroup's records kernel and Tansu's allocator are warm when the figure is taken)
    warmup_records: int = 50_000
    #: partitions of the produce/fetch topic (4: what the mock cluster auto-creates)
    topic_partitions: int = MOCK_PARTITIONS
    group_sizes: tuple[int, ...] = (10, 50)
    #: topics of 4 partitions each the groups subscribe to
    group_topics: int = 15
    #: the consumers' ``session.timeout.ms`` (librdkafka's default; Tansu holds the first JoinGroup for
    #: about half of it, so it sets Tansu's group figures)
    session_timeout_ms: int = 45_000
    runs: int = 3
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if not self.peers:
            raise KgroupError("peer: give at least one of " + ", ".join(PEERS))
        for peer in self.peers:
            if peer not in PEERS:
                raise KgroupError(f"peer: unknown value {peer!r}; use one of: {', '.join(PEERS)}")
        if not 1 <= self.records <= 100_000_000:
            raise KgroupError(f"records: {self.records} is out of range; give 1..100000000")
        if not 0 <= self.warmup_records <= 100_000_000:
            raise KgroupError(f"warmup-records: {self.warmup_records} is out of range; give 0..100000000")
        if not 1 <= self.record_bytes <= 1_000_000:
            raise KgroupError(f"record-bytes: {self.record_bytes} is out of range; give 1..1000000")
        if not 1 <= self.topic_partitions <= 1000:
            raise KgroupError(f"topic-partitions: {self.topic_partitions} is out of range; give 1..1000")
        for size in self.group_sizes:
            if not 1 <= size <= 500:
                raise KgroupError(f"group-size: {size} is out of range; give 1..500 consumers")
        if not 1 <= self.group_topics <= 250:
            raise KgroupError(f"group-topics: {self.group_topics} is out of range; give 1..250")
        if not 6_000 <= self.session_timeout_ms <= 1_800_000:
            raise KgroupError(f"session-timeout-ms: {self.session_timeout_ms} is out of range; give "
                              "6000..1800000 (Kafka's group.min/max.session.timeout.ms)")
        if not 1 <= self.runs <= 50:
            raise KgroupError(f"runs: {self.runs} is out of range; give 1..50")
        if not 1 <= self.timeout_s <= 3600:
            raise KgroupError(f"timeout: {self.timeout_s:g} is out of range; give 1..3600 seconds")

    @property
    def group_partitions(self) -> int:
        return self.group_topics * MOCK_PARTITIONS


def metric_names(config: BrokerBenchConfig) -> list[tuple[str, str]]:
    """(metric, unit) in table order."""
    names = [("produce", "MB/s"), ("fetch", "MB/s")]
    names += [(f"group of {size} stable", "s") for size in config.group_sizes]
    return names


@dataclass(frozen=True, slots=True)
class _Measured:
    value: float
    detail: str = ""


class _CellFailed(Exception):
    """This measurement could not be made on this peer (the reason is the message)."""


@dataclass(slots=True)
class CellOutcome:
    """One (peer, metric) cell over all runs: the values measured and the reasons of runs without one."""

    peer: str
    metric: str
    unit: str
    values: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    def label(self) -> str:
        median = self.median
        if median is None:
            return "—"
        text = f"{median:.2f}" if self.unit == "s" else f"{median:.1f}"
        if self.failures:
            text += f" ({len(self.values)}/{len(self.values) + len(self.failures)} runs)"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"peer": self.peer, "metric": self.metric, "unit": self.unit, "median": self.median,
                "runs": list(self.values), "failures": list(self.failures), "details": list(self.details)}


@dataclass(frozen=True, slots=True)
class BrokerBenchResult:
    config: BrokerBenchConfig
    cells: dict[tuple[str, str], CellOutcome]
    #: per peer: what its figures include (versions, storage, group delay)
    notes: dict[str, list[str]]
    load_average: tuple[float, float, float]
    elapsed_s: float

    def to_json(self) -> dict[str, Any]:
        c = self.config
        return {
            "config": {"peers": list(c.peers), "records": c.records, "record_bytes": c.record_bytes,
                       "warmup_records": c.warmup_records,
                       "topic_partitions": c.topic_partitions, "group_sizes": list(c.group_sizes),
                       "group_partitions": c.group_partitions, "session_timeout_ms": c.session_timeout_ms,
                       "runs": c.runs, "timeout_s": c.timeout_s},
            "load_average": list(self.load_average),
            "elapsed_s": self.elapsed_s,
            "notes": self.notes,
            "cells": [cell.to_json() for cell in self.cells.values()],
        }


# --- the measurements --------------------------------------------------------------------------------------


def measure_produce(bootstrap: str, topic: str, records: int, record_bytes: int,
                    timeout_s: float) -> _Measured:
    from confluent_kafka import Producer

    errors: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None and len(errors) < 5:
            errors.append(str(err))

    producer = Producer({"bootstrap.servers": bootstrap, "on_delivery": delivered})
    value = os.urandom(record_bytes)
    deadline = time.monotonic() + timeout_s
    produce = producer.produce
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.01)
                if time.monotonic() > deadline:
                    raise _CellFailed(f"not all produced within {timeout_s:g} s") from None
    left = producer.flush(max(0.0, deadline - time.monotonic()))
    elapsed = time.perf_counter() - started
    if left:
        raise _CellFailed(f"{left} of {records} records unacknowledged after {timeout_s:g} s")
    if errors:
        raise _CellFailed(f"delivery failed: {errors[0]}")
    return _Measured(records * record_bytes / MB / elapsed, f"{records} records in {elapsed:.2f} s")


def measure_fetch(bootstrap: str, topic: str, partitions: int, timeout_s: float) -> _Measured:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    # fetch.queue.backoff.ms: once librdkafka holds 64 MiB its application has not consumed, it stops
    # fetching for this long (1,000 ms by default); this loop consumes more slowly than a fast broker
    # fills that queue, so at the default the client's pause, not the broker, would set the figure.
    # Every peer is measured with the same client settings.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kgroup-bench-fetch-{time.time_ns()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "fetch.queue.backoff.ms": 10})
    try:
        expected = 0
        for p in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)
            expected += high - low
        if expected <= 0:
            raise _CellFailed("the topic holds no record to fetch")
        deadline = time.monotonic() + timeout_s
        got = nbytes = 0
        started = time.perf_counter()
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        while got < expected:
            if time.monotonic() > deadline:
                raise _CellFailed(f"fetched {got} of {expected} records within {timeout_s:g} s")
            for message in consumer.consume(10_000, 0.5):
                error = message.error()
                if error is not None:
                    if error.fatal() or not error.retriable():
                        raise _CellFailed(f"fetch error: {error}")
                    continue
                got += 1
                nbytes += len(message.value() or b"")
        elapsed = time.perf_counter() - started
    finally:
        consumer.close()
    return _Measured(nbytes / MB / elapsed, f"{got} records in {elapsed:.2f} s")


def group_support(bootstrap: str) -> str | None:
    """Why this broker cannot host a consumer group (its ApiVersions lacks a group API), or None."""
    apis = offered_apis(bootstrap)
    missing = [f"{name} ({key})" for key, name in GROUP_APIS.items() if key not in apis]
    if missing:
        return "its ApiVersions offers no " + ", ".join(missing) + ": no consumer groups"
    return None


def measure_group(bootstrap: str, topics: list[str], partitions_per_topic: int, size: int,
                  session_timeout_ms: int, timeout_s: float) -> _Measured:
    from confluent_kafka import Consumer

    group = f"kgroup-bench-group-{size}-{time.time_ns()}"
    wanted = {(t, p) for t in topics for p in range(partitions_per_topic)}
    settings = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                "partition.assignment.strategy": "roundrobin", "auto.offset.reset": "latest",
                "session.timeout.ms": session_timeout_ms}
    consumers = [Consumer(settings) for _ in range(size)]
    try:
        deadline = time.monotonic() + timeout_s
        started = time.perf_counter()
        for consumer in consumers:
            consumer.subscribe(topics)
        while True:
            for consumer in consumers:
                consumer.poll(0)  # serves the rebalance: the assignment is applied here
            owned = [{(tp.topic, tp.partition) for tp in c.assignment()} for c in consumers]
            if all(owned) and sum(map(len, owned)) == len(wanted) and set().union(*owned) == wanted:
                elapsed = time.perf_counter() - started
                return _Measured(elapsed, f"{size} consumers own {len(wanted)} partitions")
            if time.monotonic() > deadline:
                assigned = sum(1 for o in owned if o)
                raise _CellFailed(f"not stable within {timeout_s:g} s ({assigned}/{size} consumers assigned)")
            time.sleep(0.005)
    finally:
        _close_all(consumers)


def _close_all(consumers: list[Any]) -> None:
    """Close the consumers at once (each close leaves the group and waits for it), bounded in time."""
    threads = [threading.Thread(target=c.close, name="kgroup-bench-close", daemon=True) for c in consumers]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + CLOSE_TIMEOUT_S
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))


# --- the run ------------------------------------------------------------------------------------------------


ProgressFn = Callable[[str], AbstractContextManager[Any]]


def _no_progress(_description: str) -> AbstractContextManager[Any]:
    return nullcontext()


def run_broker_bench(config: BrokerBenchConfig, stage: ProgressFn = _no_progress) -> BrokerBenchResult:
    """Run every cell ``config.runs`` times (peers interleaved within a run) and collect the outcomes.

    ``stage(description)`` wraps each step (a context manager: the CLI shows a spinner per step).
    """
    started = time.perf_counter()
    cells: dict[tuple[str, str], CellOutcome] = {}
    for peer in config.peers:
        for metric, unit in metric_names(config):
            cells[(peer, metric)] = CellOutcome(peer, metric, unit)
    notes: dict[str, list[str]] = {peer: [] for peer in config.peers}
    for run in range(1, config.runs + 1):
        for peer in config.peers:
            _run_peer(config, peer, run, cells, notes, stage)
    return BrokerBenchResult(config, cells, notes, os.getloadavg(), time.perf_counter() - started)


def _run_peer(config: BrokerBenchConfig, name: str, run: int, cells: dict[tuple[str, str], CellOutcome],
              notes: dict[str, list[str]], stage: ProgressFn) -> None:
    metrics = metric_names(config)
    try:
        with stage(f"run {run}/{config.runs} {name}: start"):
            peer = start_peer(name)
    except PeerUnavailable as exc:
        for metric, _unit in metrics:
            cells[(name, metric)].failures.append(f"{name} did not start: {exc.reason}")
        return
    try:
        for note in peer.notes:
            if note not in notes[name]:
                notes[name].append(note)
        for metric, measured in _measure_peer(config, peer, run, stage):
            cell = cells[(name, metric)]
            if isinstance(measured, str):
                cell.failures.append(measured)
            else:
                cell.values.append(measured.value)
                cell.details.append(measured.detail)
    finally:
        with stage(f"run {run}/{config.runs} {name}: stop"):
            peer.close()


def _measure_peer(config: BrokerBenchConfig, peer: RunningPeer, run: int, stage: ProgressFn
                  ) -> Iterator[tuple[str, _Measured | str]]:
    prefix = f"run {run}/{config.runs} {peer.name}"
    topic = f"kgroup-bench-{run}"
    group_topics = [f"kgroup-bench-{run}-g{i}" for i in range(config.group_topics)]
    warmup = f"{topic}-warmup"
    topics = {topic: config.topic_partitions}
    if config.warmup_records:
        topics[warmup] = config.topic_partitions
    reason = _reason_of(stage, f"{prefix}: create topics",
                        partial(peer.create_topics, topics, config.timeout_s))
    if reason is None and config.warmup_records:
        warmed = _attempt(stage, f"{prefix}: warm up with {config.warmup_records} × {config.record_bytes} B",
                          partial(measure_produce, peer.bootstrap_servers, warmup, config.warmup_records,
                                  config.record_bytes, config.timeout_s))
        if isinstance(warmed, str):
            reason = f"warm-up: {warmed}"
    if reason is not None:
        yield "produce", reason
        yield "fetch", reason
    else:
        produced = _attempt(stage, f"{prefix}: produce {config.records} × {config.record_bytes} B",
                            partial(measure_produce, peer.bootstrap_servers, topic, config.records,
                                    config.record_bytes, config.timeout_s))
        yield "produce", produced
        if isinstance(produced, str):
            yield "fetch", "not measured: the produce before it failed"
        else:
            yield "fetch", _attempt(stage, f"{prefix}: fetch",
                                    partial(measure_fetch, peer.bootstrap_servers, topic,
                                            config.topic_partitions, config.timeout_s))
    group_metrics = [(size, f"group of {size} stable") for size in config.group_sizes]
    reason = _reason_of(stage, f"{prefix}: ApiVersions", partial(_no_group_support, peer.bootstrap_servers))
    if reason is None:
        reason = _reason_of(stage, f"{prefix}: create the groups' {len(group_topics)} topic(s)",
                            partial(peer.create_topics, {t: MOCK_PARTITIONS for t in group_topics},
                                    config.timeout_s))
    for size, metric in group_metrics:
        if reason is not None:
            yield metric, reason
            continue
        yield metric, _attempt(stage, f"{prefix}: group of {size}",
                               partial(measure_group, peer.bootstrap_servers, group_topics, MOCK_PARTITIONS,
                                       size, config.session_timeout_ms, config.timeout_s))


def _no_group_support(bootstrap: str) -> None:
    reason = group_support(bootstrap)
    if reason is not None:
        raise _CellFailed(reason)


def _reason_of(stage: ProgressFn, description: str, step: Callable[[], None]) -> str | None:
    """None when the step (a topic creation, a check) succeeds, else the one-line reason it did not."""
    try:
        with stage(description):
            step()
    except Exception as exc:
        return _reason(exc, description)
    return None


def _attempt(stage: ProgressFn, description: str, measure: Callable[[], _Measured]) -> _Measured | str:
    """The measurement, or the one-line reason it could not be made (a peer's fault is data here)."""
    try:
        with stage(description):
            return measure()
    except Exception as exc:
        return _reason(exc, description)


def _reason(exc: Exception, description: str) -> str:
    if isinstance(exc, _CellFailed):
        return str(exc)
    if isinstance(exc, PeerUnavailable):
        return exc.reason
    step = description.rpartition(": ")[2]
    if isinstance(exc, OSError):
        return f"{step} failed: {exc}"
    return f"{step}: {type(exc).__name__}: {exc}"


# --- the table ---------------------------------------------------------------------------------------------


def render_table(result: BrokerBenchResult) -> Any:
    """For rich: a table (one row per metric, one column per peer), then the numbered reasons of the
    cells without a figure and what each peer's figures include."""
    from rich.console import Group
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    config = result.config
    load = ", ".join(f"{x:.2f}" for x in result.load_average)
    heading = (f"kgroup bench broker — median of {config.runs} run(s): {config.records} records × "
               f"{config.record_bytes} B after {config.warmup_records} to warm up; groups over "
               f"{config.group_partitions} partitions, "
               f"session.timeout.ms={config.session_timeout_ms}; load average {load}")
    table = Table()
    table.add_column("metric")
    for peer in config.peers:
        table.add_column(peer, justify="right")
    footnotes: list[str] = []
    for metric, unit in metric_names(config):
        row = [f"{metric} ({unit})"]
        for peer in config.peers:
            cell = result.cells[(peer, metric)]
            text = cell.label()
            if cell.failures:
                reason = cell.failures[0]
                if reason not in footnotes:
                    footnotes.append(reason)
                text += f" [{footnotes.index(reason) + 1}]"
            row.append(escape(text))
        table.add_row(*row)
    lines = [f"[{i}] {reason}" for i, reason in enumerate(footnotes, 1)]
    lines += [f"{peer}: {note}" for peer, peer_notes in result.notes.items() for note in peer_notes]
    return Group(Text(heading, style="bold"), table, *(Text(line) for line in lines))
