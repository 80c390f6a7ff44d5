"""The deterministic rebalance simulator: kgroup's coordinator and members over virtual time.

``load_scenario(path)`` reads a scenario file (``docs/simulator.md``), ``simulate(scenario)`` runs it
and returns a :class:`SimResult` (metrics, ownership log, events). Nothing here reads a clock or
uses global randomness: the same scenario and seed always give the same result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kgroup.sim.result import METRIC_NAMES, LagSample, SimResult
from kgroup.sim.scenario import Scenario, load_scenario, parse_scenario, scenario_from_text
from kgroup.sim.variants import Variant, compare_variants, with_overrides

if TYPE_CHECKING:
    from kgroup.sim.runner import Simulation, simulate

__all__ = [
    "METRIC_NAMES",
    "LagSample",
    "Scenario",
    "SimResult",
    "Simulation",
    "Variant",
    "compare_variants",
    "load_scenario",
    "parse_scenario",
    "scenario_from_text",
    "simulate",
    "with_overrides",
]


def __getattr__(name: str) -> Any:
    # The runner imports the coordinator and member; load it only when a simulation is run.
    if name in ("simulate", "Simulation"):
        from kgroup.sim import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'kgroup.sim' has no attribute {name!r}")
