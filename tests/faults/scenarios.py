"""The fault runs the suite makes on both brokers, and what each must show besides the invariants."""

from __future__ import annotations

from kgroup.testing.faults import Fault, FaultRun, RunOutcome, check
from kgroup.testing.faults.invariants import ownership_intervals
from kgroup.testing.faults.simulated import headline_real, headline_simulated

#: a 10 s cut of consumer c1, past its session timeout (6 s; the margin is for a loaded CI machine):
#: the coordinator removes it, the others take its partitions, it rejoins when the link heals
CUT = FaultRun(Fault("cut", at_s=1.0, duration_s=10.0, consumer=1), assignor="cooperative-sticky", tail_s=3.0)
#: c1's connections reset every 1.5 s for 5 s, on an eager group
RESETS = FaultRun(
    Fault("resets", at_s=1.0, duration_s=5.0, consumer=1, every_s=1.5), assignor="range", tail_s=2.0
)


def assert_invariants(outcome: RunOutcome) -> None:
    obs = outcome.observations
    assert obs.acked, "the producer got nothing acknowledged"
    assert check(obs).violations() == [], outcome.notes


def assert_cut_seen(outcome: RunOutcome) -> None:
    """c1 was removed during the cut (another consumer got its partitions before it healed), gave
    them up, and the group settled again; the simulator's run of it rebalanced too."""
    obs = outcome.observations
    heal = outcome.fault_t + outcome.run.fault.duration_s
    c1_partitions = {
        p
        for p, consumer, start, end in ownership_intervals(obs)
        if consumer == "c1" and start <= outcome.fault_t < end
    }
    assert c1_partitions, "c1 held nothing when it was cut off"
    taken = {
        p
        for cb in obs.callbacks
        if cb.kind == "assign" and cb.consumer != "c1" and outcome.fault_t < cb.t < heal
        for p in cb.partitions
    }
    assert c1_partitions <= taken, (c1_partitions, taken)
    gave_up = {
        p
        for cb in obs.callbacks
        if cb.consumer == "c1" and cb.kind in ("lost", "revoke") and cb.t > outcome.fault_t
        for p in cb.partitions
    }
    assert c1_partitions <= gave_up, obs.callbacks
    real = headline_real(outcome)
    assert real.rebalances >= 2, real
    assert real.time_to_stable_s is not None, real
    simulated = headline_simulated(outcome)
    assert simulated.rebalances >= 1, simulated
    print(f"\n{outcome.broker} cut: real {real.cells()} simulated {simulated.cells()}")
