"""A real fault run beside the simulator's run of the same scenario with the same fault.

The scenario is the run's: the topic and its partitions, the consumers (``c0``…), the assignor, the
session timeout and heartbeat interval, the producer's rate, the fault at the moment it started in
the real run (seconds after the consumers started) and the run's length. How each fault maps:

* ``cut`` → the simulator's ``network_partition`` of that consumer for the same duration;
* ``latency`` → the scenario's network ``latency_ms``/``jitter_ms`` for the whole run (toxiproxy
  adds it per direction, as the simulator does per message; it is on from the start there, from
  the fault on here);
* ``resets`` → that consumer's link gets ``resets_per_hour`` giving the same count of resets over the
  run (toxiproxy resets every connection of the consumer at once, in bursts; the simulator draws
  each connection's resets at random);
* ``slow_link`` → nothing: the simulator has no bandwidth model, its run is the clean network.

The simulated run lasts :data:`SIM_TAIL_S` longer than the real one (a slower recovery then shows
as a time, not as "never"); its window for the metrics runs to its own end (once settled, nothing
adds to them).

The same headline metrics are read from both the same way, from the fault's start to the run's end:
rebalances (generations after the fault; the simulator: rebalances started after it), time to
stable, unowned partition-seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgroup.testing.faults.invariants import (
    rebalances_after,
    time_to_stable_s,
    unowned_partition_s,
)
from kgroup.testing.faults.run import RunOutcome

#: the simulated run goes on this long after the real one ended, so a slower recovery shows as a
#: longer time to stable rather than as "never"
SIM_TAIL_S = 60.0

__all__ = ["SIM_TAIL_S", "Headline", "headline_real", "headline_simulated", "simulated_scenario"]


@dataclass(frozen=True, slots=True)
class Headline:
    rebalances: int
    time_to_stable_s: float | None
    unowned_partition_s: float
    zombie_overlap_s: float

    def cells(self) -> tuple[str, str, str, str]:
        stable = "never" if self.time_to_stable_s is None else f"{self.time_to_stable_s:.1f}"
        return (
            str(self.rebalances),
            stable,
            f"{self.unowned_partition_s:.1f}",
            f"{self.zombie_overlap_s:.1f}",
        )


def simulated_scenario(outcome: RunOutcome) -> dict[str, Any]:
    """The simulator's scenario (as the data a scenario file holds) for ``outcome``'s run."""
    run = outcome.run
    fault = run.fault
    duration_ms = max(1, round((outcome.observations.end_t + SIM_TAIL_S) * 1000))
    at_ms = round(outcome.fault_t * 1000)
    consumers: list[dict[str, Any]] = [{"id": f"c{i}", "topics": ["t"]} for i in range(run.consumers)]
    network: dict[str, Any] = {"latency_ms": 1, "jitter_ms": 0}
    events: list[dict[str, Any]] = []
    if fault.kind == "cut":
        events.append(
            {
                "at_ms": at_ms,
                "kind": "network_partition",
                "consumer": f"c{fault.consumer}",
                "duration_ms": round(fault.duration_s * 1000),
            }
        )
    elif fault.kind == "latency":
        network = {"latency_ms": fault.latency_ms, "jitter_ms": fault.jitter_ms}
    elif fault.kind == "resets" and outcome.resets:
        rate = min(3600.0, outcome.resets * 3_600_000 / duration_ms)
        consumers[fault.consumer]["network"] = {"latency_ms": 1, "jitter_ms": 0, "resets_per_hour": rate}
    return {
        "seed": 1,
        "duration_ms": duration_ms,
        "topics": {"t": run.partitions},
        "group": {
            "assignors": [run.assignor],
            "session_timeout_ms": run.session_timeout_ms,
            "heartbeat_interval_ms": run.heartbeat_interval_ms,
            "initial_rebalance_delay_ms": 0,
            "enable_auto_commit": True,
            "auto_commit_interval_ms": 500,
        },
        "consumers": consumers,
        "network": network,
        "workload": {
            "produce_per_partition_per_s": max(1, run.produce_per_s // run.partitions),
            "auto_offset_reset": "earliest",
        },
        "events": events,
    }


def headline_real(outcome: RunOutcome) -> Headline:
    from kgroup.testing.faults.invariants import check, ownership_intervals

    obs = outcome.observations
    return Headline(
        rebalances_after(obs, outcome.fault_t),
        time_to_stable_s(obs, outcome.fault_t, outcome.run.consumers),
        unowned_partition_s(ownership_intervals(obs), obs.partitions, outcome.fault_t, obs.end_t),
        check(obs).zombie_overlap_s,
    )


def headline_simulated(outcome: RunOutcome) -> Headline:
    """The simulator's run of ``outcome``'s scenario, read as :func:`headline_real` reads the real one."""
    from kgroup.sim import parse_scenario, simulate

    scenario = parse_scenario(simulated_scenario(outcome), name=f"faults-{outcome.run.fault.kind}")
    result = simulate(scenario)
    start_s = outcome.fault_t
    end_s = scenario.duration_ms / 1000
    intervals = [(p, c, s / 1000, e / 1000) for p, c, s, e in result.intervals]
    stable = result.metrics["time_to_stable_ms"]
    if outcome.run.fault.kind == "cut":
        ttsm = stable[0] if stable else None
        tts = None if ttsm is None else ttsm / 1000
    else:  # no scenario event: the group's last change after the fault's start
        changes = [s for _p, _c, s, _e in intervals if s >= start_s] + [
            e for _p, _c, _s, e in intervals if start_s <= e < end_s
        ]
        tts = (max(changes) - start_s) if changes else 0.0
    return Headline(
        sum(1 for t in result.rebalance_starts if t >= outcome.fault_t * 1000),
        tts,
        unowned_partition_s(intervals, outcome.run.partitions, start_s, end_s),
        result.metrics.get("zombie_overlap_ms", 0) / 1000,
    )
