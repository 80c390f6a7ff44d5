"""Helpers for the simulator tests: run an example file (with overrides) and cache the result.

The tests that read an example's run carry ``EXAMPLE_RUNS`` (an xdist group): under ``make test``
they run on one worker, which simulates each example once for all of them (the share-group example
alone is 15 CPU-seconds) instead of once per worker that happens to get one of them."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kgroup.sim import SimResult, load_scenario, simulate, with_overrides

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: the tests that read ``run_example``'s results share one worker's cache
EXAMPLE_RUNS = pytest.mark.xdist_group("sim-examples")


@cache
def run_example(
    name: str, assignors: tuple[str, ...] | None = None, membership: str | None = None
) -> SimResult:
    scenario = with_overrides(load_scenario(EXAMPLES / name), assignors=assignors, membership=membership)
    return simulate(scenario)
