"""An exactly-once consume-transform-produce chain: `kgroup serve` and Apache Kafka 4.4.0 side by side,
one run (benchmark, not a test).

The chain of ``tests/apache_kafka/test_eos_chain.py`` (``kgroup.testing.eos_chain``), steady: three
stages (``topic0 -> stage 1 -> topic1 -> stage 2 -> topic2 -> stage 3 -> topic3``), each a consumer
group of two transactional workers; each poll of up to ``--batch`` (500) records is one transaction
(the records written onward, the consumer's offsets sent with its group metadata, committed). Stages 1
and 3 are confluent-kafka (librdkafka's transactional producer, each worker its own Python process),
stage 2 Kafka's Java ``KafkaConsumer`` and ``KafkaProducer`` (one JVM per worker); ``--java-stages
none`` makes every stage librdkafka. Every worker holds partitions before the clock starts; timed:
from the first of ``--records`` (20,000) inputs produced to stage 3 having committed them all; the
final topic is then read with ``read_committed`` and checked (every input once). Figures: records/s
through the whole chain, per group kind (``--variants``: eager, cooperative, static, consumer).

Both brokers run for the whole benchmark (``kgroup serve`` in its own process, Apache Kafka in its
KRaft JVM, each with its defaults), the peers taking turns, ``--runs`` runs each; printed: every run,
the medians, and the load average before and after.

    .venv/bin/python benchmarks/bench_eos_chain.py [--records 20000] [--partitions 4] [--batch 500]
        [--runs 3] [--variants eager,cooperative,static,consumer] [--java-stages 2]
        [--peer kgroup --peer apache] [--json]

Needs Apache Kafka's jars (``make kafka``) for the Java stage and the ``apache`` peer.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
from collections import Counter

from side_by_side import load, print_json, progress, run_peers, too_small  # a sibling module

from kgroup.bench.broker_peers import PeerUnavailable, RunningPeer
from kgroup.model import KgroupError
from kgroup.testing.eos_chain import VARIANTS, expected_output, read_committed, run_chain, topic_names


def _run(peer: RunningPeer, variant: str, tag: str, args: argparse.Namespace) -> float:
    chosen = dataclasses.replace(VARIANTS[variant], java_stages=args.java_stages)
    result = run_chain(
        chosen,
        peer.bootstrap_servers,
        tag,
        records=args.records,
        partitions=args.partitions,
        create_topic=lambda name, count: peer.create_topics({name: count}, timeout_s=60),
        timeout_s=600.0,
        session_timeout_ms=10_000,
        churn=False,
        batch=args.batch,
    )
    if result.fatal:
        raise PeerUnavailable(f"a worker was fenced: {result.fatal[0]}")
    output = read_committed(peer.bootstrap_servers, topic_names(tag)[-1], args.partitions, timeout_s=120)
    if Counter(output) != Counter(expected_output(args.records)):
        raise PeerUnavailable(f"the final topic does not hold every input once ({len(output)} records)")
    return args.records / result.elapsed_s


def _stages(text: str) -> tuple[int, ...]:
    if text == "none":
        return ()
    try:
        stages = tuple(sorted({int(part) for part in text.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give stage numbers 1-3 (e.g. 2 or 1,3) or none"
        ) from None
    if not all(1 <= s <= 3 for s in stages):
        raise argparse.ArgumentTypeError(f"{text!r}: the stages are 1, 2 and 3")
    return stages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variants", default="eager,cooperative,static,consumer")
    parser.add_argument("--java-stages", type=_stages, default=(2,))
    parser.add_argument("--peer", action="append", choices=["kgroup", "apache"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    bad = too_small(args, ("records", "partitions", "batch", "runs"))
    if bad is not None:
        return bad
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        print(f"--variants: {unknown or variants} not among {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    names = args.peer or ["kgroup", "apache"]
    load_before = load()
    results: dict[str, dict[str, list[float]]] = {n: {v: [] for v in variants} for n in names}

    def take_turns(peers: dict[str, RunningPeer]) -> None:
        for run in range(args.runs):
            for variant in variants:
                for name in names:
                    figure = _run(peers[name], variant, f"eos-{name}-{variant}-{run}-{os.getpid()}", args)
                    results[name][variant].append(figure)
                    progress(f"run {run} {variant} {name}: {figure:,.0f} records/s, load {load()}")

    if run_peers(names, take_turns, failures=(PeerUnavailable, KgroupError)):
        return 1
    load_after = load()
    medians = {n: {v: statistics.median(runs) for v, runs in by.items()} for n, by in results.items()}
    if args.json:
        print_json(results, medians, load_before, load_after)
        return 0
    java = ",".join(map(str, args.java_stages)) or "none"
    print(
        f"exactly-once chain: 3 stages x 2 workers, {args.records} records, {args.partitions} partitions, "
        f"up to {args.batch} records a transaction, Java stage(s) {java}, {args.runs} run(s)"
    )
    for variant in variants:
        cells = []
        for name in names:
            each = " / ".join(f"{r:,.0f}" for r in results[name][variant])
            cells.append(f"{name} {medians[name][variant]:>8,.0f} ({each})")
        row = "  ".join(cells)
        print(f"  {variant:12s} records/s median: {row}")
    print(f"load average before {load_before}, after {load_after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
