"""Benchmark (not a test): ns per key of keyed partitioning, kgroup vs kafka-python vs Java's figure.

Run:  .venv/bin/python benchmarks/bench_murmur2.py [--keys 1000000] [--runs 5]

* 1,000,000 random 16-byte keys (seeded), 100 partitions, after a warm-up;
* median of ``--runs`` runs of: the vectorised numba function over a pyarrow BinaryArray on one
  thread (``numba.set_num_threads(1)``) and on every thread numba may use (``NUMBA_NUM_THREADS``,
  by default one per core), kgroup's scalar Python function (on a subset, reported per key) and
  kafka-python's pure-Python murmur2 (on a subset);
* the same for random keys of 1–24 bytes;
* wall-clock and CPU time per key, each next to Java's 8.7 ns/key (``Utils.toPositive(Utils.murmur2(key))
  % 100``, one thread, JIT-warm, PERFORMANCE.md). With several threads the CPU column is this thread's
  only: read the wall clock.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from kgroup.partitioning import partition_for_key, partitions_for_keys

JAVA_NS_PER_KEY = 8.7
PARTITIONS = 100


def kafka_python_partition() -> Callable[[bytes], int] | None:
    """kafka-python's murmur2 (``kafka.partitioner.default.murmur2`` in 2.x/3.x), as a partitioner."""
    try:
        from kafka.partitioner.default import murmur2 as kp_murmur2
    except ImportError:  # pragma: no cover - optional
        return None

    def partition(key: bytes) -> int:
        return int((kp_murmur2(key) & 0x7FFFFFFF) % PARTITIONS)

    return partition


def random_keys(rng: np.random.Generator, count: int, min_len: int, max_len: int) -> pa.BinaryArray:
    lengths = rng.integers(min_len, max_len + 1, size=count)
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(0, 256, size=int(offsets[-1]), dtype=np.uint8)
    return pa.BinaryArray.from_buffers(
        pa.binary(), count, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.tobytes())]
    )


def median_ns_per_key(run: Callable[[], object], keys: int, runs: int) -> tuple[float, float]:
    """Median wall-clock and median CPU (this thread) nanoseconds per key over ``runs`` runs.

    On a quiet machine the two agree; when other processes share the cores the wall clock also
    counts the time this process waited for a core, the CPU time does not.
    """
    wall: list[int] = []
    cpu: list[int] = []
    for _ in range(runs):
        start_cpu = time.thread_time_ns()
        start = time.perf_counter_ns()
        run()
        wall.append(time.perf_counter_ns() - start)
        cpu.append(time.thread_time_ns() - start_cpu)
    return statistics.median(wall) / keys, statistics.median(cpu) / keys


def bench(label: str, keys: pa.BinaryArray, subset: int, runs: int) -> None:
    as_bytes = keys.slice(0, subset).to_pylist()
    vectorised = partitions_for_keys(keys, PARTITIONS)  # warm-up (and numba cache load)
    scalar_answers = [partition_for_key(k, PARTITIONS) for k in as_bytes]
    assert vectorised[:subset].tolist() == scalar_answers, "vectorised and scalar disagree"

    import numba

    rows: list[tuple[str, tuple[float, float]]] = []
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        partitions_for_keys(keys, PARTITIONS)  # warm-up of the one-thread kernel
        rows.append(
            (
                "kgroup vectorised (numba, Arrow), 1 thread",
                median_ns_per_key(lambda: partitions_for_keys(keys, PARTITIONS), len(keys), runs),
            )
        )
    finally:
        numba.set_num_threads(threads)
    if threads > 1:
        rows.append(
            (
                f"kgroup vectorised (numba, Arrow), {threads} threads",
                median_ns_per_key(lambda: partitions_for_keys(keys, PARTITIONS), len(keys), runs),
            )
        )
    rows.append(
        (
            f"kgroup scalar Python (on {subset:,} keys)",
            median_ns_per_key(lambda: [partition_for_key(k, PARTITIONS) for k in as_bytes], subset, runs),
        )
    )
    kp = kafka_python_partition()
    if kp is not None:
        assert [kp(k) for k in as_bytes[:1000]] == scalar_answers[:1000], "kafka-python disagrees"
        rows.append(
            (
                f"kafka-python murmur2 (on {subset:,} keys)",
                median_ns_per_key(lambda: [kp(k) for k in as_bytes], subset, runs),
            )
        )
    print(f"\n{label}: {len(keys):,} keys, {PARTITIONS} partitions, median of {runs} runs")
    print(f"  {'implementation':<46} {'wall ns/key':>12} {'vs Java':>8} {'CPU ns/key':>11} {'vs Java':>8}")
    for name, (wall, cpu) in rows:
        print(
            f"  {name:<46} {wall:>12.1f} {wall / JAVA_NS_PER_KEY:>7.2f}x"
            f" {cpu:>11.1f} {cpu / JAVA_NS_PER_KEY:>7.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--subset", type=int, default=20_000, help="keys for the pure-Python paths")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20241025)
    args = parser.parse_args()
    import numba

    try:
        import kafka

        print(f"kafka-python {kafka.__version__}: kafka.partitioner.default.murmur2")
    except ImportError:
        print("kafka-python not installed: its column is left out")
    print(f"numba {numba.__version__}, threads {numba.get_num_threads()}, pyarrow {pa.__version__}")
    print(f"load average at start: {os.getloadavg()[0]:.2f} (other work on the machine skews figures)")
    rng = np.random.default_rng(args.seed)
    bench("16-byte random keys", random_keys(rng, args.keys, 16, 16), args.subset, args.runs)
    bench("1-24-byte random keys", random_keys(rng, args.keys, 1, 24), args.subset, args.runs)


if __name__ == "__main__":
    main()
