"""The parent side of the benchmark: one fresh child process per cell, with a timeout, and the table.

A cell is (case, assignor, phase, implementation). Its child builds the inputs, times the runs and
reports; the parent only waits (never longer than the timeout: the child is killed, and the cell reads
``> N s``), so the parent's own memory never mixes with a cell's.
"""

from __future__ import annotations

import enum
import json
import os
import signal
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from kgroup.bench.cases import ASSIGNORS, CASES, phases_for
from kgroup.bench.java import java_median_ms
from kgroup.bench.worker import CellSpec

__all__ = ["CellResult", "CellStatus", "TableRow", "cells", "run_cell", "run_table"]


class CellStatus(enum.Enum):
    OK = "ok"
    TIMEOUT = "timeout"
    OUT_OF_MEMORY = "out of memory"
    ERROR = "error"
    #: the implementation has no such assignor (e.g. ``--impl fast`` for range)
    NOT_APPLICABLE = "n/a"


@dataclass(frozen=True, slots=True)
class CellResult:
    spec: CellSpec
    status: CellStatus
    runs_ms: tuple[float, ...] = ()
    peak_rss_mb: float | None = None
    message: str = ""
    timeout_s: float = 0.0

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.runs_ms) if self.runs_ms else None

    def label(self) -> str:
        """The figure as the table shows it: ``123.4``, ``> 120 s``, ``out of memory`` or ``error``."""
        if self.status is CellStatus.OK and self.median_ms is not None:
            return f"{self.median_ms:.1f}"
        if self.status is CellStatus.TIMEOUT:
            return f"> {self.timeout_s:g} s"
        return self.status.value


def _child_command(spec: CellSpec) -> list[str]:
    return [sys.executable, "-m", "kgroup.bench.worker", spec.to_json()]


def run_cell(spec: CellSpec, timeout_s: float) -> CellResult:
    """Measure one cell in a fresh child process, killing it after ``timeout_s`` seconds."""
    env = dict(os.environ)
    # the child must import this very kgroup, even when it runs from a source checkout
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    child = subprocess.Popen(
        _child_command(spec),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group, so a timeout kills it and anything it started
    )
    try:
        stdout, stderr = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return CellResult(spec, CellStatus.TIMEOUT, timeout_s=timeout_s)
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        if child.returncode in (-signal.SIGKILL, 137):  # the kernel's OOM killer
            return CellResult(spec, CellStatus.OUT_OF_MEMORY, message="killed")
        last = (stderr.strip().splitlines() or [f"exit status {child.returncode}"])[-1]
        return CellResult(spec, CellStatus.ERROR, message=last)
    data = json.loads(lines[-1])
    if "error" in data:
        status = CellStatus.OUT_OF_MEMORY if data.get("oom") else CellStatus.ERROR
        return CellResult(spec, status, message=str(data["error"]))
    return CellResult(
        spec,
        CellStatus.OK,
        runs_ms=tuple(float(x) for x in data["runs_ms"]),
        peak_rss_mb=float(data["peak_rss_mb"]),
    )


def _fast_names() -> set[str]:
    from kgroup.assignors.fast import FAST_ASSIGNORS

    return set(FAST_ASSIGNORS)


def cells(cases: Iterable[str] | None = None, assignors: Iterable[str] | None = None,
          phases: Iterable[str] | None = None) -> Iterator[tuple[str, str, str]]:
    """Every (case, assignor, phase) of the table that applies, in table order, filtered."""
    case_filter = set(cases) if cases else None
    assignor_filter = set(assignors) if assignors else None
    phase_filter = set(phases) if phases else None
    for case in CASES:
        if case_filter is not None and case not in case_filter:
            continue
        for assignor in ASSIGNORS:
            if assignor_filter is not None and assignor not in assignor_filter:
                continue
            for phase in phases_for(assignor):
                if phase_filter is None or phase.value in phase_filter:
                    yield case, assignor, phase.value


@dataclass(frozen=True, slots=True)
class TableRow:
    case: str
    assignor: str
    phase: str
    results: dict[str, CellResult] = field(default_factory=dict)

    @property
    def java_ms(self) -> float | None:
        return java_median_ms(self.case, self.assignor, self.phase)

    def ratio(self, impl: str) -> float | None:
        """kgroup's median over Java's (below 1: faster than Java)."""
        result = self.results.get(impl)
        java = self.java_ms
        if result is None or result.median_ms is None or not java:
            return None
        return result.median_ms / java


def run_table(
    selected: Iterable[tuple[str, str, str]],
    impls: tuple[str, ...],
    *,
    runs: int,
    scale: float,
    timeout_s: float,
    memory_limit_mb: int,
    on_result: Callable[[CellResult], None] | None = None,
) -> list[TableRow]:
    """Measure every selected cell with every implementation, one child process each."""
    rows: list[TableRow] = []
    for case, assignor, phase in selected:
        row = TableRow(case, assignor, phase)
        for impl in impls:
            spec = CellSpec(case=case, assignor=assignor, phase=phase, impl=impl, runs=runs, scale=scale,
                            memory_limit_mb=memory_limit_mb)
            if impl == "fast" and assignor not in _fast_names():
                result = CellResult(spec, CellStatus.NOT_APPLICABLE, message="no fast implementation")
            else:
                result = run_cell(spec, timeout_s)
            row.results[impl] = result
            if on_result is not None:
                on_result(result)
        rows.append(row)
    return rows
