"""A share group beside a consumer group on the same topic: `kgroup serve` and Apache Kafka 4.4.0 in
the same run (benchmark, not a test).

For each broker and each consumer count (``--consumers``, default 2, 8 and 32) on a topic of
``--partitions`` (4) partitions, two groups read the same ``--records`` records:

* a **share group** of that many librdkafka share consumers (confluent-kafka's ``ShareConsumer``,
  explicit acknowledgement: ACCEPT each record, ``commit_sync`` after each poll);
* a **consumer group** of that many librdkafka consumers (``group.protocol=consumer``, KIP-848; no
  auto-commit: ``commit(asynchronous=False)`` after each batch of ``consume``) — only 4 of them get a
  partition, the rest stand by, as a consumer group works.

The consumers run as threads of this process (32 consumers on a 2-core machine). Each group's
consumers subscribe first and, once they have joined (the consumer group: all partitions assigned; the
share group: ``--warmup`` seconds) and one probe record per partition has been acknowledged, the
producer writes the records (``--record-bytes``, the produce
time in the value) at full speed, while the group reads them from the earliest offset (the share
group's ``share.auto.offset.reset=earliest``: IncrementalAlterConfigs on Apache Kafka, ``kgroup serve
--share-auto-offset-reset earliest`` on kgroup). Each group has a topic of its own, so the two groups
of a run do not compete for the broker.

Measured per group: **records/s** = records / (first produce → last record acknowledged), and the
**p99 produce → acknowledged** time: for each record, the time its consumer's ``commit_sync`` (share)
or synchronous offset commit (consumer group) returned, minus the produce time in its value. With the
producer writing at full speed the latency includes the wait behind the backlog: it is the time to
acknowledge in a saturated group, not an idle round trip. Also measured: the broker process's CPU
time over the same span (``/proc``), per 1,000 records — less disturbed by a busy machine than the
wall-clock figures. Checked: every record acknowledged (share:
each at least once; a redelivered record counts once, at its first acknowledgement).

Both brokers run for the whole benchmark (``kgroup serve`` in its own process, Apache Kafka in its KRaft
JVM), taking turns; ``--runs`` runs each; printed: every run's figures, the medians, the load average.

    .venv/bin/python benchmarks/bench_share_vs_consumer.py [--records 20000] [--record-bytes 256]
        [--partitions 4] [--consumers 2 --consumers 8 --consumers 32] [--runs 3]
        [--peer kgroup --peer apache] [--json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys
import threading
import time
from collections.abc import Callable

from bench_etl_chain import _cpu_seconds  # the broker process's CPU seconds (/proc)
from side_by_side import (  # the helpers the side-by-side benchmarks share (a sibling module)
    load,
    print_json,
    progress,
    run_peers,
    set_share_earliest,
    share_earliest_settings,
    too_small,
)

from kgroup.bench.broker_peers import PeerUnavailable, RunningPeer

_STAMP = struct.Struct(">qd")  # record number, produce time (time.time())
_DEADLINE_S = 300


class _Seen:
    """What the consumers acknowledged: record number -> latency (s), the first time each."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[int, float] = {}
        self.probes: set[int] = set()
        self.last_ack = 0.0

    def acked(self, values: list[bytes], now: float) -> None:
        with self.lock:
            for value in values:
                number, produced = _STAMP.unpack_from(value)
                if number < 0:
                    self.probes.add(number)
                elif number not in self.latency:
                    self.latency[number] = now - produced
            self.last_ack = now

    def count(self) -> int:
        with self.lock:
            return len(self.latency)

    def probed(self) -> int:
        with self.lock:
            return len(self.probes)


def _share_consumer(bootstrap: str, group: str, topic: str, seen: _Seen, stop: threading.Event) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    consumer = ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    )
    consumer.subscribe([topic])
    try:
        while not stop.is_set():
            messages = consumer.poll(0.2)
            if not len(messages):
                continue
            values = []
            for m in messages:
                if m.error() is None:
                    values.append(m.value())
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            consumer.commit_sync()
            seen.acked(values, time.time())
    finally:
        consumer.close()


def _group_consumer(
    bootstrap: str,
    group: str,
    topic: str,
    seen: _Seen,
    stop: threading.Event,
    assigned: Callable[[int], None],
) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(
        [topic],
        on_assign=lambda c, ps: assigned(len(ps)),
        on_revoke=lambda c, ps: assigned(-len(ps)),
    )
    try:
        while not stop.is_set():
            messages = consumer.consume(500, 0.2)
            values = [m.value() for m in messages if m.error() is None]
            if not values:
                continue
            consumer.commit(asynchronous=False)
            seen.acked(values, time.time())
    finally:
        consumer.close()


def _produce(bootstrap: str, topic: str, args: argparse.Namespace, *, probes: bool = False) -> float:
    """All records at full speed (or one probe record per partition, numbered below 0); returns the
    time of the first produce."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    pad = b"x" * max(0, args.record_bytes - _STAMP.size)
    first = time.time()
    numbers = range(-args.partitions, 0) if probes else range(args.records)
    for index in numbers:
        value = _STAMP.pack(index, time.time()) + pad
        while True:
            try:
                producer.produce(topic, value, partition=index % args.partitions)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(120) != 0:
        raise PeerUnavailable("the records were not all produced")
    return first


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def _run_group(
    peer: RunningPeer, kind: str, consumers: int, tag: str, args: argparse.Namespace
) -> dict[str, float]:
    topic = group = f"svc-{kind}-{tag}"
    peer.create_topics({topic: args.partitions}, timeout_s=60)
    if kind == "share" and peer.name == "apache":
        set_share_earliest(peer.bootstrap_servers, group)
    seen = _Seen()
    stop = threading.Event()
    owned = [0]
    owned_lock = threading.Lock()

    def assigned(delta: int) -> None:
        with owned_lock:
            owned[0] += delta

    if kind == "share":
        threads = [
            threading.Thread(
                target=_share_consumer, args=(peer.bootstrap_servers, group, topic, seen, stop), daemon=True
            )
            for _ in range(consumers)
        ]
    else:
        threads = [
            threading.Thread(
                target=_group_consumer,
                args=(peer.bootstrap_servers, group, topic, seen, stop, assigned),
                daemon=True,
            )
            for _ in range(consumers)
        ]
    for t in threads:
        t.start()
    try:
        ready = time.monotonic() + 120
        if kind == "share":
            time.sleep(args.warmup)
        else:
            # joined: every partition assigned, and no rebalance for a second
            settled = 0.0
            while time.monotonic() < ready:
                with owned_lock:
                    whole = owned[0] == args.partitions
                if whole and settled == 0.0:
                    settled = time.monotonic()
                elif not whole:
                    settled = 0.0
                if settled and time.monotonic() - settled >= 1.0:
                    break
                time.sleep(0.05)
            else:
                raise PeerUnavailable(f"{peer.name}: the consumer group did not get its partitions")
        # the group reads: a probe record per partition acknowledged before the timed records
        _produce(peer.bootstrap_servers, topic, args, probes=True)
        while seen.probed() < args.partitions:
            if time.monotonic() > ready:
                raise PeerUnavailable(f"{peer.name} {kind}: the probe records were not all acknowledged")
            time.sleep(0.02)
        cpu_before = _cpu_seconds(peer)
        first = _produce(peer.bootstrap_servers, topic, args)
        deadline = time.monotonic() + _DEADLINE_S
        while seen.count() < args.records and time.monotonic() < deadline:
            time.sleep(0.01)
        cpu = _cpu_seconds(peer) - cpu_before
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    if seen.count() != args.records:
        raise PeerUnavailable(f"{peer.name} {kind}: {seen.count()} of {args.records} records acknowledged")
    elapsed = seen.last_ack - first
    return {
        "records_per_s": args.records / elapsed,
        "p99_ms": _p99(list(seen.latency.values())) * 1000,
        "p50_ms": statistics.median(seen.latency.values()) * 1000,
        "seconds": elapsed,
        "broker_cpu_s": cpu,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--record-bytes", type=int, default=256)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--consumers", type=int, action="append")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds the share consumers get to join")
    parser.add_argument("--peer", action="append", choices=["kgroup", "apache"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    counts = args.consumers or [2, 8, 32]
    bad = too_small(args, ("records", "partitions", "runs"))
    if bad is not None:
        return bad
    if args.record_bytes < _STAMP.size:
        print(
            f"--record-bytes: must be at least {_STAMP.size} (the stamp), not {args.record_bytes}",
            file=sys.stderr,
        )
        return 2
    if any(c < 1 for c in counts):
        print(f"--consumers: each must be at least 1, not {counts}", file=sys.stderr)
        return 2
    names = args.peer or ["kgroup", "apache"]
    load_before = load()
    results: dict[str, list[dict[str, float]]] = {}
    loads: list[tuple[float, float, float]] = []

    def take_turns(peers: dict[str, RunningPeer]) -> None:
        for run in range(args.runs):
            for consumers in counts:
                for name in names:
                    for kind in ("share", "consumer"):
                        key = f"{name} {kind} {consumers}"
                        tag = f"{name}-{consumers}-{run}-{os.getpid()}"
                        figures = _run_group(peers[name], kind, consumers, tag, args)
                        results.setdefault(key, []).append(figures)
                        loads.append(load())
                        progress(
                            f"run {run} {key:24s} {figures['records_per_s']:>8,.0f} records/s  "
                            f"p99 {figures['p99_ms']:>7,.0f} ms  load {loads[-1]}"
                        )

    if run_peers(names, take_turns, settings=share_earliest_settings):
        return 1
    load_after = load()
    medians = {
        key: {
            "records_per_s": statistics.median(r["records_per_s"] for r in runs),
            "p99_ms": statistics.median(r["p99_ms"] for r in runs),
            "broker_cpu_ms_per_1000": statistics.median(1e6 * r["broker_cpu_s"] / args.records for r in runs),
        }
        for key, runs in results.items()
    }
    if args.json:
        print_json(results, medians, load_before, load_after, load_max_1min=max(x[0] for x in loads))
        return 0
    print(
        f"share group vs consumer group: {args.records} records of {args.record_bytes} B, "
        f"{args.partitions} partitions, librdkafka clients, medians of {args.runs} run(s)"
    )
    header = ("broker", "consumers", "share rec/s", "p99 ms", "cpu", "group rec/s", "p99 ms", "cpu")
    print("  {:8s} {:>9s}  {:>11s} {:>7s} {:>5s}  {:>11s} {:>7s} {:>5s}".format(*header))
    for name in names:
        for consumers in counts:
            share = medians[f"{name} share {consumers}"]
            group = medians[f"{name} consumer {consumers}"]
            print(
                f"  {name:8s} {consumers:>9d}  {share['records_per_s']:>11,.0f} {share['p99_ms']:>7,.0f} "
                f"{share['broker_cpu_ms_per_1000']:>5.0f}  "
                f"{group['records_per_s']:>11,.0f} {group['p99_ms']:>7,.0f} "
                f"{group['broker_cpu_ms_per_1000']:>5.0f}"
            )
    print(
        "  (cpu: the broker process's CPU milliseconds per 1,000 records, "
        "from the first produce to the last ack)"
    )
    print(f"load average before {load_before}, after {load_after}, highest 1-min {max(x[0] for x in loads)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
