"""Server CPU per MB of `kgroup serve`'s produce and fetch paths (docs/broker-bench.md, the profile).

`kgroup serve --port 0` (on disk, `--fsync interval`, its defaults) in a subprocess; the benchmark's
own `measure_produce` / `measure_fetch` (confluent-kafka, 1 KiB records, 4 partitions) after a
warm-up; the server's CPU seconds (user + system) read from `/proc/<pid>/stat` before and after each
measurement. CPU per MB moves much less than wall time on a shared, loaded machine: it is the figure
to compare between two versions of the broker; MB/s is printed beside it for what it is worth.

    .venv/bin/python benchmarks/bench_broker_cpu.py [--records 200000] [--runs 3] [--warmup 50000]
        [--py-spy DIR]   # also record a py-spy profile of each measured phase (raw format) into DIR
        [--perf DIR]     # or a `perf record -e cpu-clock -g` profile (CPU only, kernel and C included)
        [--base SRC]     # also run the broker from another source tree (PYTHONPATH=SRC), interleaved
                         # run by run with this one: `git archive main src | tar -x -C /tmp/base`

CPU per MB drifts with the machine's state (the kernel's write(2) into the page cache is most of
produce's CPU and its cost varies between minutes), so two versions are compared interleaved, in one
invocation, with --base.

Linux only (it reads /proc).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

from kgroup.bench.broker import MB, measure_fetch, measure_produce
from kgroup.bench.broker_peers import KgroupServePeer

PARTITIONS = 4
RECORD_BYTES = 1024
TIMEOUT_S = 300.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def _load() -> str:
    return " / ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--warmup", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--py-spy", type=Path, default=None, help="py-spy profiles into this directory")
    parser.add_argument("--perf", type=Path, default=None, help="perf profiles into this directory")
    parser.add_argument("--base", type=Path, default=None, help="a source tree to compare with (its src/)")
    args = parser.parse_args()
    megabytes = args.records * RECORD_BYTES / MB
    variants = ["this"] if args.base is None else ["this", "base"]
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    print(f"load average at the start: {_load()}")
    for run in range(1, args.runs + 1):
        # alternate which variant goes first, so a drift in the machine's state hits both alike
        for variant in variants if run % 2 else reversed(variants):
            _measure_run(args, run, variant, megabytes, results)
    for (variant, phase), values in sorted(results.items()):
        cpu = statistics.median(v[0] for v in values)
        speed = statistics.median(v[1] for v in values)
        print(f"{variant} {phase}: median {cpu:.2f} ms CPU/MB ({', '.join(f'{v[0]:.2f}' for v in values)}); "
              f"median {speed:.0f} MB/s")
    print(f"load average at the end: {_load()}")


def _measure_run(args: argparse.Namespace, run: int, variant: str, megabytes: float,
             results: dict[tuple[str, str], list[tuple[float, float]]]) -> None:
    saved = os.environ.get("PYTHONPATH")
    if variant == "base":
        os.environ["PYTHONPATH"] = str(args.base / "src")
    try:
        peer = KgroupServePeer()
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    try:
        pid = peer._proc.pid  # the `kgroup serve` process itself (python -m kgroup serve)
        topic, warmup = f"cpu-{run}", f"cpu-{run}-warmup"
        peer.create_topics({topic: PARTITIONS, warmup: PARTITIONS}, TIMEOUT_S)
        if args.warmup:
            measure_produce(peer.bootstrap_servers, warmup, args.warmup, RECORD_BYTES, TIMEOUT_S)
        phases = {
            "produce": lambda: measure_produce(
                peer.bootstrap_servers, topic, args.records, RECORD_BYTES, TIMEOUT_S
            ),
            "fetch": lambda: measure_fetch(peer.bootstrap_servers, topic, PARTITIONS, TIMEOUT_S),
        }
        for phase, measure in phases.items():
            spy = None
            if args.py_spy is not None:
                args.py_spy.mkdir(parents=True, exist_ok=True)
                spy = subprocess.Popen(
                    ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "200",
                     "--nonblocking", "-o", str(args.py_spy / f"{variant}-{phase}-{run}.txt")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
                time.sleep(1.0)
            elif args.perf is not None:
                args.perf.mkdir(parents=True, exist_ok=True)
                spy = subprocess.Popen(
                    ["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-p", str(pid),
                     "-o", str(args.perf / f"{variant}-{phase}-{run}.data")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
                time.sleep(1.0)
            before = _cpu_seconds(pid)
            measured = measure()
            cpu = _cpu_seconds(pid) - before
            if spy is not None:
                spy.send_signal(2)
                spy.wait(30)
            ms_per_mb = cpu * 1000 / megabytes
            results.setdefault((variant, phase), []).append((ms_per_mb, measured.value))
            print(f"run {run} {variant} {phase}: {ms_per_mb:.2f} ms server CPU per MB, "
                  f"{measured.value:.0f} MB/s ({measured.detail}), load {_load()}", flush=True)
    finally:
        peer.close()


if __name__ == "__main__":
    main()
