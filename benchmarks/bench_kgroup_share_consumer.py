"""kgroup's own share consumer (``kgroup.client.ShareConsumer``) beside librdkafka's, on `kgroup serve` and
Apache Kafka 4.4.0 (benchmark, not a test).

The set-up is ``bench_share_consume.py``'s: ``--records`` records of ``--record-bytes`` (1 KiB) on
``--partitions`` partitions, ``--consumers`` share consumers in a new share group reading from the
earliest offset, explicit acknowledgement (ACCEPT each record, ``commit_sync`` after each poll). Each
run reads the records once with librdkafka's ``ShareConsumer`` (threads) and once, in a fresh group, with
kgroup's ``ShareConsumer`` (one event loop); both brokers run for the whole benchmark, taking turns.
Timed: from the subscription to the last record accepted (checked: every record once), and from the
first record to the last (``steady``: without the wait for the coordinator's first assignment, about one
5 s heartbeat interval on both brokers). Printed: every run's records/s, the medians per client and
broker, the load average.

    .venv/bin/python benchmarks/bench_kgroup_share_consumer.py [--records 10000] [--record-bytes 1024]
        [--partitions 2] [--consumers 2] [--runs 3] [--peer kgroup --peer apache] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from typing import Any

import bench_share_consume as base  # the sibling benchmark (this script's folder is on sys.path)
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
from kgroup.client import AcknowledgeType, ShareConsumer

CLIENTS = ("librdkafka", "kgroup")


def _librdkafka(
    peer: RunningPeer, group: str, topic: str, args: argparse.Namespace
) -> tuple[float, float, list[set[Any]]]:
    seen: list[set[tuple[int, int]]] = [set() for _ in range(args.consumers)]
    first: float | None = None
    stop = threading.Event()
    start = time.monotonic()
    threads = [
        threading.Thread(
            target=base._consume, args=(peer.bootstrap_servers, group, topic, s, stop), daemon=True
        )
        for s in seen
    ]
    for t in threads:
        t.start()
    deadline = start + 600
    while sum(len(s) for s in seen) < args.records and time.monotonic() < deadline:
        if first is None and any(seen):
            first = time.monotonic()
        time.sleep(0.01)
    end = time.monotonic()
    stop.set()
    for t in threads:
        t.join(timeout=60)
    return end - start, end - (first or start), list(seen)


async def _kgroup_async(
    peer: RunningPeer, group: str, topic: str, args: argparse.Namespace
) -> tuple[float, float, list[set[Any]]]:
    seen: list[set[tuple[int, int]]] = [set() for _ in range(args.consumers)]
    first: list[float] = []
    consumers = [
        ShareConsumer(peer.bootstrap_servers, group, acknowledgement_mode="explicit")
        for _ in range(args.consumers)
    ]
    for consumer in consumers:
        await consumer.start()
    start = time.monotonic()
    deadline = start + 600

    async def consume(consumer: ShareConsumer, into: set[tuple[int, int]]) -> None:
        consumer.subscribe([topic])
        while sum(len(s) for s in seen) < args.records and time.monotonic() < deadline:
            records = await consumer.poll(200)
            if records and not first:
                first.append(time.monotonic())
            for record in records:
                into.add((record.partition, record.offset))
                consumer.acknowledge(record, AcknowledgeType.ACCEPT)
            if records:
                await consumer.commit_sync()

    try:
        await asyncio.gather(*(consume(c, s) for c, s in zip(consumers, seen, strict=True)))
        end = time.monotonic()
    finally:
        for consumer in consumers:
            await consumer.close()
    return end - start, end - (first[0] if first else start), seen


def _run(peer: RunningPeer, client: str, tag: str, args: argparse.Namespace) -> dict[str, float]:
    topic, group = f"kshare-bench-{tag}", f"kshare-bench-{tag}"
    produce(peer, topic, args)
    if peer.name == "apache":
        set_share_earliest(peer.bootstrap_servers, group)
    if client == "librdkafka":
        elapsed, steady, seen = _librdkafka(peer, group, topic, args)
    else:
        elapsed, steady, seen = asyncio.run(_kgroup_async(peer, group, topic, args))
    total = set().union(*seen)
    if len(total) != args.records or sum(len(s) for s in seen) != args.records:
        raise PeerUnavailable(
            f"{peer.name}/{client}: {len(total)} distinct of {args.records} records consumed"
        )
    return {
        "records_per_s": args.records / elapsed,
        "steady_records_per_s": args.records / steady,
        "seconds": elapsed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
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
    results: dict[str, list[dict[str, float]]] = {f"{n}/{c}": [] for n in names for c in CLIENTS}

    def take_turns(peers: dict[str, RunningPeer]) -> None:
        for run in range(args.runs):
            for name in names:
                for client in CLIENTS:
                    figures = _run(peers[name], client, f"{name}-{client}-{run}-{os.getpid()}", args)
                    results[f"{name}/{client}"].append(figures)
                    rate, steady = figures["records_per_s"], figures["steady_records_per_s"]
                    progress(
                        f"run {run} {name} {client}: {rate:,.0f} records/s ({steady:,.0f} first to last), "
                        f"load {load()}"
                    )

    if run_peers(names, take_turns, settings=share_earliest_settings):
        return 1
    load_after = load()
    medians = {
        key: {
            "records_per_s": statistics.median(r["records_per_s"] for r in runs),
            "steady_records_per_s": statistics.median(r["steady_records_per_s"] for r in runs),
        }
        for key, runs in results.items()
    }
    if args.json:
        print_json(results, medians, load_before, load_after)
        return 0
    print(
        f"share consumption: {args.records} records of {args.record_bytes} B, {args.partitions} partitions, "
        f"{args.consumers} share consumers, {args.runs} run(s)"
    )
    for key, median in medians.items():
        print(
            f"  {key:20s} median {median['records_per_s']:>8,.0f} records/s, "
            f"first to last record {median['steady_records_per_s']:>8,.0f} records/s"
        )
    print(f"load average before {load_before}, after {load_after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
