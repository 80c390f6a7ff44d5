"""Run the assignor benchmark table: ``kgroup bench assign --all`` (or a subset) and print it.

Benchmarks are not tests: nothing here asserts a time. Each cell runs in a fresh process (its own
peak memory, killed after ``--timeout`` seconds); the full table takes a long time on 2 cores, so
filter it. Examples::

    python benchmarks/bench_assign.py                                  # everything (long)
    python benchmarks/bench_assign.py --case uniform --assignor sticky --impl fast --impl kgroup
    python benchmarks/bench_assign.py --json > table.json

Every argument is passed on to ``kgroup bench assign --all``. One more mode merges saved JSON
tables (from ``--json`` runs, one implementation each or several) into the Markdown table of
``docs/performance.md``::

    python benchmarks/bench_assign.py --markdown fast.json reference.json kafka-python.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kgroup.cli import main

_IMPLS = ("fast", "kgroup", "kafka-python")


def run(argv: list[str]) -> None:
    main(["bench", "assign", "--all", *argv])


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "—"
    if entry["status"] == "ok":
        return f"{entry['median_ms']:.1f}"
    if entry["status"] == "timeout":
        limit = entry.get("timeout_s")
        return f"> {limit:g} s" if limit else "timeout"
    return entry["status"]


def markdown(paths: list[str]) -> str:
    """One Markdown table from saved ``--all --json`` outputs: per cell the best kgroup figure
    (``fast`` when measured, else ``kgroup``), Java's, their ratio, peak RSS, the reference
    (``kgroup``) and kafka-python."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for path in paths:
        for row in json.loads(Path(path).read_text()):
            key = (row["case"], row["assignor"], row["phase"])
            merged = rows.setdefault(key, {"java_ms": row["java_ms"]})
            for impl in _IMPLS:
                if impl in row:
                    merged[impl] = row[impl]
    lines = [
        "| case | assignor | phase | kgroup ms | Java ms | ratio | peak RSS MB | reference ms "
        "| kafka-python ms |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    from kgroup.bench.cases import ASSIGNORS, CASES

    def table_order(key: tuple[str, str, str]) -> tuple[int, int, int]:
        case, assignor, phase = key
        return (list(CASES).index(case), list(ASSIGNORS).index(assignor), phase != "initial")

    for (case, assignor, phase), row in sorted(rows.items(), key=lambda item: table_order(item[0])):
        fast = row.get("fast")
        has_fast = fast is not None and fast["status"] != "n/a"
        best = fast if has_fast else row.get("kgroup")
        java = row["java_ms"]
        ratio = "—"
        if best is not None and best["status"] == "ok" and java:
            value = best["median_ms"] / java
            ratio = f"{value:.2f}" if value >= 0.1 else f"{value:.3f}"
        rss = f"{best['peak_rss_mb']:.0f}" if best is not None and best.get("peak_rss_mb") else "—"
        reference = _cell(row.get("kgroup")) if has_fast else "(same)"
        lines.append(
            f"| {case} | {assignor} | {phase} | {_cell(best)} | {java:g} | {ratio} | {rss} | "
            f"{reference} | {_cell(row.get('kafka-python'))} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--markdown"]:
        print(markdown(sys.argv[2:]))
    else:
        run(sys.argv[1:])
