"""Every numba kernel of kgroup, compiled now — or read from numba's cache — instead of on first use.

kgroup's hot loops are numba kernels compiled with ``cache=True``: the first call on a machine compiles
each one for the argument types it is given (seconds of CPU per kernel), and numba keeps the machine
code in the package's ``__pycache__``, where every later process — a Spark task's Python worker, a test
worker, ``kgroup serve`` — reads it in a fraction of a second. Several processes starting at once on a
fresh install (the Python workers of a Spark job, pytest's workers) would each compile the same
kernels. :func:`compile_all` compiles them once, with the argument types kgroup's own calls give them,
by running each kernel's public path on a small input:

* keyed partitioning (``kgroup.partitioning``): murmur2 and the partition kernels, one thread and
  parallel, over Arrow binary and large-binary arrays;
* the fast sticky assignors (``kgroup.assignors.fast``): the constrained and general kernels with and
  without racks, the sticky user-data decoder, the leader's assignment encoder;
* the KIP-848 server assignors (``kgroup.group.assignors.fast``): ``range`` and ``uniform`` (both
  builders), and the replay of Java's map order;
* the broker's record walk (``kgroup.log.records``);
* the ``kgroup`` Spark source's RecordBatch decoder (``kgroup.spark.source.record_columns``) and its
  sink's RecordBatch encoder (``kgroup.spark.source.record_batches``; numba and Arrow only, no pyspark).

Run it once after installing (an image build, each node of a Spark cluster, a CI job before its
parallel tests): ``python -m kgroup.kernels``. It changes no answer: a kernel it did not reach is
compiled on its first use, as before. Beyond Kafka: Kafka's Java code is compiled by the JIT at run
time; this is numba's equivalent of warming it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = ["KERNEL_GROUPS", "compile_all", "compile_in_processes", "main"]


def _partitioning() -> None:
    import pyarrow as pa

    from kgroup.partitioning import murmur2_array, partitions_for_keys, partitions_for_keys_multi
    from kgroup.partitioning._murmur2_kernels import PARALLEL_MIN_KEYS

    keys = [b"key-%d" % i for i in range(8)] + [None]
    for array in (pa.array(keys, pa.binary()), pa.array(keys, pa.large_binary())):
        murmur2_array(array)
        partitions_for_keys(array, 12)
        partitions_for_keys_multi(array, [12, 16])
    # the kernels that split the keys over numba's threads (taken from this many keys, with 2+ threads)
    many = PARALLEL_MIN_KEYS
    big = pa.array([b"k"] * many, pa.binary())
    for array in (big, big.cast(pa.large_binary())):
        murmur2_array(array)
        partitions_for_keys_multi(array, [12])


def _assignors() -> None:
    from kgroup.assignors.fast.sticky import FastCooperativeStickyAssignor, FastStickyAssignor
    from kgroup.assignors.leader_path import assign_subscriptions
    from kgroup.bench.cases import CASES, Phase, build_request, phases_for
    from kgroup.bench.java_leader import subscription_bytes

    for case in ("uniform", "uniform-rack", "nonequal", "nonequal-rack"):
        shape = CASES[case].scaled(0.001)
        for name, make in (
            ("sticky", FastStickyAssignor),
            ("cooperative-sticky", FastCooperativeStickyAssignor),
        ):
            for phase in phases_for(name):
                assignor = make()
                assignor.fast_path_min_partitions = 0  # the kernels, even on a group this small
                request = build_request(shape, name, phase)
                assignor.assign(request)
                if phase is Phase.INITIAL:  # the leader's path: subscription bytes in, assignment bytes out
                    leader = make()
                    leader.fast_path_min_partitions = 0
                    assign_subscriptions(
                        leader, subscription_bytes(request), request.topics, prefer_rack_aware_logic=True
                    )


def _server_assignors() -> None:
    from kgroup.group.assignors.fast import warm

    warm()


def _log() -> None:
    from kgroup.log.records import load_kernel

    load_kernel()


def _spark_source() -> None:
    """The sink's encoder writes two records (one with a null key and value), with and without
    headers, and the source's decoder reads each sealed batch back, with and without headers."""
    import numpy as np
    import pyarrow as pa

    from kgroup.spark.source.record_batches import encode_records, group_rows, seal_batch
    from kgroup.spark.source.record_columns import decode_fetched

    header_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    keys = pa.array([b"k", None], pa.binary())
    values = pa.array(["v", None], pa.string())
    order, bounds, _ = group_rows(np.zeros(2, np.int64))
    for header_column in (None, pa.array([[{"key": "h", "value": b"v"}], None], header_type)):
        encoded = encode_records(keys, values, header_column, order, bounds, 1_000_000)
        for batch in encoded.batches:
            sealed = seal_batch(
                encoded, batch, producer_id=-1, producer_epoch=-1, base_sequence=-1, timestamp_ms=0
            )
            for include_headers in (False, True):
                decode_fetched(
                    bytes(sealed),
                    topic="t",
                    partition=0,
                    fetch_offset=0,
                    until_offset=batch.records,
                    include_headers=include_headers,
                )


#: what :func:`compile_all` warms, in order: a name and the call that compiles that group's kernels
KERNEL_GROUPS: tuple[tuple[str, Callable[[], None]], ...] = (
    ("keyed partitioning (murmur2)", _partitioning),
    ("fast sticky assignors", _assignors),
    ("server assignors (range, uniform, simple)", _server_assignors),
    ("broker record walk", _log),
    ("Spark source record decoder and sink encoder", _spark_source),
)


def compile_all(report: Callable[[str, float], None] | None = None) -> list[tuple[str, float]]:
    """Compile (or load from numba's cache) every group of kernels; each group's name and seconds."""
    done: list[tuple[str, float]] = []
    for name, warm in KERNEL_GROUPS:
        start = time.perf_counter()
        warm()
        seconds = time.perf_counter() - start
        done.append((name, seconds))
        if report is not None:
            report(name, seconds)
    return done


def _warm_group(index: int) -> float:
    """One group of :data:`KERNEL_GROUPS`, warmed in this (a pool's) process: its seconds."""
    start = time.perf_counter()
    KERNEL_GROUPS[index][1]()
    return time.perf_counter() - start


def compile_in_processes(
    jobs: int, report: Callable[[str, float], None] | None = None
) -> list[tuple[str, float]]:
    """:func:`compile_all` over ``jobs`` processes, for a machine with idle cores: the groups are
    independent (numba writes each cache file whole, by a rename, so two processes compiling a helper
    both use leave one good copy). Each group's name and seconds, in the order they finished."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    done: list[tuple[str, float]] = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_warm_group, index): name for index, (name, _) in enumerate(KERNEL_GROUPS)}
        for future in as_completed(futures):
            name, seconds = futures[future], future.result()
            done.append((name, seconds))
            if report is not None:
                report(name, seconds)
    return done


def main(argv: list[str] | None = None) -> int:
    """``python -m kgroup.kernels [--jobs N]``: compile every kernel (with ``--jobs``, the groups in N
    processes at once), one line per group on stderr."""
    args = sys.argv[1:] if argv is None else argv
    jobs = 1
    if args:
        if len(args) != 2 or args[0] != "--jobs" or not args[1].isdigit() or int(args[1]) < 1:
            fix = "--jobs: give a count of 1 or more (python -m kgroup.kernels [--jobs N])"
            print(f"kgroup kernels: {fix}", file=sys.stderr)
            return 2
        jobs = int(args[1])
    total = time.perf_counter()

    def say(name: str, seconds: float) -> None:
        print(f"kgroup kernels: {name} ready in {seconds:.1f} s", file=sys.stderr)

    if jobs > 1:
        compile_in_processes(jobs, say)
    else:
        compile_all(say)
    print(f"kgroup kernels: all ready in {time.perf_counter() - total:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
