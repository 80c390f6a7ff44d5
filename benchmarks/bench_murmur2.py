"""Benchmark (not a test): ns per key of keyed partitioning, kgroup beside Java (same run) and kafka-python.

Run:  .venv/bin/python benchmarks/bench_murmur2.py [--keys 1000000] [--runs 5] [--rounds 15]

* side by side with Java, in one run on the same keys: Kafka's ``Utils.toPositive(Utils.murmur2(key))
  % 100`` over one ``byte[]`` per key in its own JVM (``Murmur2Bench.java`` over the pinned Kafka
  jars, JIT-warm after 5 passes), alternating with kgroup's paths round by round so every path sees
  the same machine load: ``partitions_for_keys`` over an Arrow ``BinaryArray`` on one numba thread
  (the batch API), the numba kernel alone on the same buffers (the batch API's per-call overhead is
  the difference), and ``partitions_for_keys`` given a Python list of ``bytes`` (what a caller holding
  Python bytes pays: the conversion to Arrow); medians of ``--rounds`` rounds, wall clock and each
  side's own thread CPU time, and the partitions' sums must agree;
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


def side_by_side(keys: pa.BinaryArray, rounds: int) -> None:
    """kgroup's paths and Java's, interleaved round by round on the very same keys."""
    import numba

    from kgroup.bench.java_murmur2 import JavaMurmur2
    from kgroup.partitioning import _murmur2_kernels as kernels

    data = np.frombuffer(keys.buffers()[2], dtype=np.uint8)
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[: len(keys) + 1]
    as_bytes = keys.to_pylist()
    counts = np.array([PARTITIONS], dtype=np.int64)
    out = np.empty((1, len(keys)), dtype=np.int32)
    expected = int(partitions_for_keys(keys, PARTITIONS).sum(dtype=np.int64))

    def kernel_only() -> None:
        kernels.partition_kernel(data, offsets, counts, out)

    paths: dict[str, Callable[[], object]] = {
        "kgroup partitions_for_keys(Arrow), 1 thread": lambda: partitions_for_keys(keys, PARTITIONS),
        "kgroup numba kernel alone, same buffers": kernel_only,
        "kgroup partitions_for_keys(list of bytes)": lambda: partitions_for_keys(as_bytes, PARTITIONS),
    }
    wall: dict[str, list[float]] = {name: [] for name in [*paths, "Java Utils.murmur2, byte[] per key"]}
    cpu: dict[str, list[float]] = {name: [] for name in wall}
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with JavaMurmur2(data, offsets, PARTITIONS) as java:
            for _ in range(5):  # the JIT's warm-up (and numba's)
                assert java.run().partition_sum == expected, "Java's partitions differ from kgroup's"
                for run in paths.values():
                    run()
            for _ in range(rounds):
                for name, run in paths.items():
                    # the JVM waits on its pipe between passes and the scheduler favours a task that
                    # wakes from sleep; each kgroup pass starts from a short sleep too, so that on a
                    # loaded machine neither side's wall clock gets that advantage alone
                    time.sleep(0.02)
                    start_cpu, start = time.thread_time_ns(), time.perf_counter_ns()
                    run()
                    wall[name].append((time.perf_counter_ns() - start) / len(keys))
                    cpu[name].append((time.thread_time_ns() - start_cpu) / len(keys))
                answer = java.run()
                assert answer.partition_sum == expected, "Java's partitions differ from kgroup's"
                wall["Java Utils.murmur2, byte[] per key"].append(answer.wall_ns / len(keys))
                cpu["Java Utils.murmur2, byte[] per key"].append(answer.cpu_ns / len(keys))
    finally:
        numba.set_num_threads(threads)
    java_wall = statistics.median(wall["Java Utils.murmur2, byte[] per key"])
    java_cpu = statistics.median(cpu["Java Utils.murmur2, byte[] per key"])
    print(f"\nside by side with Java: {len(keys):,} 16-byte keys, {PARTITIONS} partitions, median of "
          f"{rounds} interleaved rounds (load average now {os.getloadavg()[0]:.1f})")
    print(f"  {'path':<46} {'wall ns/key':>12} {'/ Java':>7} {'CPU ns/key':>11} {'/ Java':>7}")
    for name in wall:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"  {name:<46} {w:>12.1f} {w / java_wall:>6.2f}x {c:>11.1f} {c / java_cpu:>6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--subset", type=int, default=20_000, help="keys for the pure-Python paths")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20241025)
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds beside Java")
    parser.add_argument("--no-java", action="store_true", help="leave out the side-by-side Java run")
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
    if not args.no_java:
        from kgroup.model import KgroupError

        try:
            side_by_side(random_keys(np.random.default_rng(args.seed), args.keys, 16, 16), args.rounds)
        except KgroupError as exc:  # no Java or no Kafka jars here: the rest still runs
            print(f"\nside by side with Java: not measured ({exc.message}); run `make kafka` first")
    bench("16-byte random keys", random_keys(rng, args.keys, 16, 16), args.subset, args.runs)
    bench("1-24-byte random keys", random_keys(rng, args.keys, 1, 24), args.subset, args.runs)


if __name__ == "__main__":
    main()
