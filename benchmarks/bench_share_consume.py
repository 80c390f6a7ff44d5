"""Share-group consumption throughput (KIP-932): `kgroup serve` and Apache Kafka 4.4.0 side by side
(benchmark, not a test).

``--records`` records of ``--record-bytes`` (1 KiB) are produced to a topic of ``--partitions``
partitions, then ``--consumers`` librdkafka share consumers (confluent-kafka's ``ShareConsumer``,
explicit acknowledgement: ACCEPT each record, ``commit_sync`` after each poll, one thread each) in a new
share group read them from the earliest offset (the group's ``share.auto.offset.reset``: set with
IncrementalAlterConfigs on Apache Kafka, ``kgroup serve --share-auto-offset-reset earliest`` on kgroup).
Timed: from the consumers' subscription to the last record accepted (checked: every record once).
Both brokers run for the whole benchmark (``kgroup serve`` in its own process, Apache Kafka in its KRaft
JVM), taking turns, ``--runs`` runs each; printed: every run's records/s, the medians, the load average.

    .venv/bin/python benchmarks/bench_share_consume.py [--records 20000] [--record-bytes 1024]
        [--partitions 2] [--consumers 2] [--runs 3] [--peer kgroup --peer apache] [--json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

from side_by_side import (  # the helpers the side-by-side benchmarks share (a sibling module)
    load,
    print_json,
    produce,
    progress,
    run_peers,
    set_share_earliest,
    share_earliest_settings,
    too_small,
)

from kgroup.bench.broker_peers import PeerUnavailable, RunningPeer


def _consume(
    bootstrap: str, group: str, topic: str, seen: set[tuple[int, int]], stop: threading.Event
) -> None:
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
            for m in messages:
                if m.error() is None:
                    seen.add((m.partition(), m.offset()))
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            consumer.commit_sync()
    finally:
        consumer.close()


def _run(peer: RunningPeer, tag: str, args: argparse.Namespace) -> dict[str, float]:
    topic, group = f"share-bench-{tag}", f"share-bench-{tag}"
    produce(peer, topic, args)
    if peer.name == "apache":
        set_share_earliest(peer.bootstrap_servers, group)
    seen: list[set[tuple[int, int]]] = [set() for _ in range(args.consumers)]
    stop = threading.Event()
    start = time.monotonic()
    threads = [
        threading.Thread(target=_consume, args=(peer.bootstrap_servers, group, topic, s, stop), daemon=True)
        for s in seen
    ]
    for t in threads:
        t.start()
    deadline = start + 600
    while sum(len(s) for s in seen) < args.records and time.monotonic() < deadline:
        time.sleep(0.01)
    elapsed = time.monotonic() - start
    stop.set()
    for t in threads:
        t.join(timeout=60)
    total = set().union(*seen)
    if len(total) != args.records or sum(len(s) for s in seen) != args.records:
        raise PeerUnavailable(f"{peer.name}: {len(total)} distinct of {args.records} records consumed")
    return {"records_per_s": args.records / elapsed, "seconds": elapsed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--peer", action="append", choices=["kgroup", "apache"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    bad = too_small(args, ("records", "record_bytes", "partitions", "consumers", "runs"))
    if bad is not None:
        return bad
    names = args.peer or ["kgroup", "apache"]
    load_before = load()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in names}

    def take_turns(peers: dict[str, RunningPeer]) -> None:
        for run in range(args.runs):
            for name in names:
                figures = _run(peers[name], f"{name}-{run}-{os.getpid()}", args)
                results[name].append(figures)
                progress(f"run {run} {name}: {figures['records_per_s']:,.0f} records/s, load {load()}")

    if run_peers(names, take_turns, settings=share_earliest_settings):
        return 1
    load_after = load()
    medians = {name: statistics.median(r["records_per_s"] for r in runs) for name, runs in results.items()}
    if args.json:
        print_json(results, medians, load_before, load_after)
        return 0
    print(
        f"share consumption: {args.records} records of {args.record_bytes} B, {args.partitions} partitions, "
        f"{args.consumers} librdkafka share consumers, {args.runs} run(s)"
    )
    for name, median in medians.items():
        print(f"  {name:8s} median {median:>10,.0f} records/s")
    print(f"load average before {load_before}, after {load_after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
