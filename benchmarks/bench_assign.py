"""Run the assignor benchmark table: ``kgroup bench assign --all`` (or a subset) and print it.

Benchmarks are not tests: nothing here asserts a time. Each cell runs in a fresh process (its own
peak memory, killed after ``--timeout`` seconds); the full table takes a long time on 2 cores, so
filter it. Examples::

    python benchmarks/bench_assign.py                                  # everything (long)
    python benchmarks/bench_assign.py --case uniform --assignor sticky --impl fast --impl kgroup
    python benchmarks/bench_assign.py --json > table.json

Every argument is passed on to ``kgroup bench assign --all``.
"""

from __future__ import annotations

import sys

from kgroup.cli import main


def run(argv: list[str]) -> None:
    main(["bench", "assign", "--all", *argv])


if __name__ == "__main__":
    run(sys.argv[1:])
