"""Long runs: progress reported to the host, and logs bounded in memory (with what they left out)."""

from __future__ import annotations

import pytest

from kgroup.sim import load_scenario
from kgroup.sim import loop as loop_module
from kgroup.sim import ownership as ownership_module
from kgroup.sim.runner import Simulation, simulate

from .conftest import EXAMPLES


def test_progress_is_reported_in_virtual_time_and_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, "PROGRESS_EVERY_STEPS", 1000)
    scenario = load_scenario(EXAMPLES / "rolling-restart.yaml")
    calls: list[tuple[int, int]] = []
    result = Simulation(scenario).run(lambda now, end: calls.append((now, end)))
    assert len(calls) == result.metrics["steps"] // 1000
    assert all(end == scenario.duration_ms for _, end in calls)
    assert [now for now, _ in calls] == sorted(now for now, _ in calls)
    assert result.to_json() == simulate(scenario).to_json()


def test_logs_are_bounded_and_say_what_they_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = load_scenario(EXAMPLES / "rolling-restart.yaml")
    full = simulate(scenario)
    assert "events_dropped" not in full.metrics  # nothing left out: the keys are absent
    monkeypatch.setattr(loop_module, "MAX_LOG_ENTRIES", 50)
    monkeypatch.setattr(ownership_module, "MAX_INTERVALS", 40)
    capped = simulate(scenario)
    assert len(capped.events) == 50 and capped.events == full.events[:50]
    assert len(capped.ownership) == 50 and capped.ownership == full.ownership[:50]
    assert len(capped.intervals) == 40
    assert capped.metrics["events_dropped"] == len(full.events) - 50
    assert capped.metrics["ownership_dropped"] >= len(full.ownership) - 50
    assert capped.metrics["intervals_dropped"] == len(full.intervals) - 40
    for key in ("rebalances", "double_owned_ms", "zombie_owned_ms", "moved_partitions", "final_assignment"):
        assert capped.metrics[key] == full.metrics[key]  # the metrics are not affected
