"""Helpers for the simulator tests: run an example file (with overrides) and cache the result."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from kgroup.sim import SimResult, load_scenario, simulate, with_overrides

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@cache
def run_example(
    name: str, assignors: tuple[str, ...] | None = None, membership: str | None = None
) -> SimResult:
    scenario = with_overrides(load_scenario(EXAMPLES / name), assignors=assignors, membership=membership)
    return simulate(scenario)
