"""Where Spark starts paying for ``kgroup simulate --compare``: the same sweep on both engines, side by
side in one run (``--engine local`` and ``--engine spark``, alternating, each a fresh ``kgroup``
process as a user runs it), for a few sweep sizes; medians of the wall times and the machine's load.

    .venv/bin/python benchmarks/bench_compare_engines.py        # examples/rolling-restart.yaml, 1 and 3 seeds
    .venv/bin/python benchmarks/bench_compare_engines.py examples/crash.yaml --seeds 10,40 --rounds 1

What it printed is in docs/simulator.md ("Which engine"), with the rule ``--engine auto`` follows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _run(scenario: str, seeds: int, engine: str) -> float:
    command = [
        sys.executable,
        "-m",
        "kgroup",
        "simulate",
        scenario,
        "--compare",
        "--seeds",
        str(seeds),
        "--engine",
        engine,
        "--json",
    ]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False, cwd=ROOT)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="examples/rolling-restart.yaml")
    parser.add_argument("--seeds", default="1,3", help="comma-separated seed counts (sweep sizes)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each engine per size")
    args = parser.parse_args()
    print(f"{args.scenario}: {os.cpu_count()} CPUs, load average at the start {_load()}")
    header = f"{'seeds':>5} {'runs':>5} {'local s (median)':>17} {'spark s (median)':>17} {'spark/local':>12}"
    print(f"{header}  load")
    for seeds in (int(s) for s in args.seeds.split(",")):
        walls: dict[str, list[float]] = {"local": [], "spark": []}
        for _ in range(args.rounds):
            for engine in ("local", "spark"):
                walls[engine].append(_run(args.scenario, seeds, engine))
        local, spark = statistics.median(walls["local"]), statistics.median(walls["spark"])
        runs = 14 * seeds
        print(f"{seeds:>5} {runs:>5} {local:>17.1f} {spark:>17.1f} {spark / local:>12.2f}  {_load()}")
        print(f"      every run: local {walls['local']}, spark {walls['spark']}", flush=True)


if __name__ == "__main__":
    main()
