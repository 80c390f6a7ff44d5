"""Transactional produce throughput: `kgroup serve` and Apache Kafka 4.4.0 side by side, one run
(benchmark, not a test).

librdkafka's transactional producer (confluent-kafka) writes ``--transactions`` transactions of
``--records-per-txn`` (100) records of ``--record-bytes`` (1 KiB) each to a topic of ``--partitions``
partitions (round robin over them), committing each; then a ``read_committed`` consumer reads every
record back (checked: the count). Timed: from the first ``begin_transaction`` to the last
``commit_transaction`` returned. Both brokers run for the whole benchmark (``kgroup serve`` in its own
process, Apache Kafka in its KRaft JVM), the peers taking turns, ``--runs`` runs each; printed: every
run's records/s and transactions/s, the medians, and the load average before and after.

    .venv/bin/python benchmarks/bench_txn_produce.py [--transactions 200] [--records-per-txn 100]
        [--record-bytes 1024] [--partitions 4] [--runs 3] [--peer kgroup --peer apache] [--json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from side_by_side import load, print_json, progress, run_peers, too_small  # a sibling module

from kgroup.bench.broker_peers import PeerUnavailable, RunningPeer


def _run(peer: RunningPeer, tag: str, args: argparse.Namespace) -> dict[str, float]:
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

    topic = f"txn-bench-{tag}"
    peer.create_topics({topic: args.partitions}, timeout_s=60)
    producer = Producer(
        {
            "bootstrap.servers": peer.bootstrap_servers,
            "transactional.id": f"txn-bench-{tag}",
            "linger.ms": 5,
        }
    )
    producer.init_transactions(60)
    value = b"x" * args.record_bytes
    start = time.monotonic()
    for txn in range(args.transactions):
        producer.begin_transaction()
        for index in range(args.records_per_txn):
            while True:
                try:
                    producer.produce(
                        topic, value, partition=(txn * args.records_per_txn + index) % args.partitions
                    )
                    break
                except BufferError:
                    producer.poll(0.01)
        producer.commit_transaction(60)
    elapsed = time.monotonic() - start
    total = args.transactions * args.records_per_txn
    consumer = Consumer(
        {
            "bootstrap.servers": peer.bootstrap_servers,
            "group.id": f"txn-bench-{tag}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(args.partitions)])
    seen, ended = 0, set()
    deadline = time.monotonic() + 120
    while len(ended) < args.partitions and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error() is not None:
            if message.error().code() == KafkaError._PARTITION_EOF:
                ended.add(message.partition())
            continue
        seen += 1
    consumer.close()
    if seen != total:
        raise PeerUnavailable(f"read_committed read {seen} of {total} records")
    return {"records_per_s": total / elapsed, "txns_per_s": args.transactions / elapsed, "seconds": elapsed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transactions", type=int, default=200)
    parser.add_argument("--records-per-txn", type=int, default=100)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--peer", action="append", choices=["kgroup", "apache"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    bad = too_small(args, ("transactions", "records_per_txn", "record_bytes", "partitions", "runs"))
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
                progress(
                    f"run {run} {name}: {figures['records_per_s']:,.0f} records/s, "
                    f"{figures['txns_per_s']:.1f} transactions/s, load {load()}"
                )

    if run_peers(names, take_turns):
        return 1
    load_after = load()
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in ("records_per_s", "txns_per_s")}
        for name, runs in results.items()
    }
    if args.json:
        print_json(results, medians, load_before, load_after)
        return 0
    print(
        f"transactional produce: {args.transactions} transactions x {args.records_per_txn} records of "
        f"{args.record_bytes} B, {args.partitions} partitions, {args.runs} run(s), librdkafka"
    )
    for name, median in medians.items():
        records, txns = median["records_per_s"], median["txns_per_s"]
        print(f"  {name:8s} median {records:>10,.0f} records/s  {txns:>7.1f} txn/s")
    print(f"load average before {load_before}, after {load_after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
