"""The simulator's scenario events and its result, kept apart from the event loop (runner.py).

Functions here act on a :class:`kgroup.sim.runner.Simulation` through its host methods (start and
stop processes, schedule, log); they hold no state of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kgroup.model import compress_partitions
from kgroup.sim.result import SimResult
from kgroup.sim.scenario import ConsumerSpec, EventSpec, scaled_ids
from kgroup.sim.scheduler import HEAL, RESTART, UNSTALL

if TYPE_CHECKING:
    from kgroup.sim.runner import Simulation, _Proc

__all__ = ["apply_scenario_event", "build_result", "scale", "schedule_restart"]


def apply_scenario_event(sim: Simulation, ev: EventSpec) -> int:
    """Apply one scenario event now; return when its last action is done (for time to stable)."""
    now = sim.now
    ready = now
    kind = ev.kind
    if kind == "start":
        sim._event("start", consumer=ev.consumer)
        sim._start(sim._proc(ev.consumer))
    elif kind == "stop":
        sim._event("stop", consumer=ev.consumer)
        proc = sim._proc(ev.consumer)
        sim._stop(proc, graceful=True)
        proc.deployed = False
        sim._resubscribe()
    elif kind == "crash":
        sim._event("crash", consumer=ev.consumer)
        sim._stop(sim._proc(ev.consumer), graceful=False)
    elif kind == "restart":
        ready = schedule_restart(sim, sim._proc(ev.consumer), ev, now)
    elif kind == "rolling_restart":
        names = ev.consumers if ev.consumers is not None else [p.id for p in sim.procs if p.deployed]
        sim._event("rolling_restart", consumers=list(names), gap_ms=ev.gap_ms, downtime_ms=ev.downtime_ms)
        for k, name in enumerate(names):
            ready = max(ready, schedule_restart(sim, sim._proc(name), ev, now + k * ev.gap_ms))
    elif kind == "scale":
        scale(sim, ev)
    elif kind == "add_partitions":
        assert ev.topic is not None
        sim._event("add_partitions", topic=ev.topic, count=ev.count)
        sim._add_topic_partitions(ev.topic, ev.count, now)
        sim.metadata_changed_ms = now
        sim._resubscribe()
        metadata = sim._metadata()
        for proc in sim.procs:
            if proc.member is not None:
                sim.workload.advance(proc.load, proc.member, now)
                proc.member.update_metadata(metadata)
                sim._poll(proc)
                sim._after_member(proc)
    elif kind == "subscribe":
        assert ev.topics is not None
        sim._event("subscribe", consumer=ev.consumer, topics=list(ev.topics))
        proc = sim._proc(ev.consumer)
        proc.topics = ev.topics
        sim._resubscribe()
        if proc.member is not None:
            sim.workload.advance(proc.load, proc.member, now)
            proc.member.subscribe(ev.topics)
            sim._poll(proc)
            sim._after_member(proc)
    elif kind == "slow_poll":
        sim._event("slow_poll", consumer=ev.consumer, duration_ms=ev.duration_ms)
        proc = sim._proc(ev.consumer)
        if proc.member is not None:
            sim.workload.advance(proc.load, proc.member, now)
            # the loop's last poll() returned the batch whose processing now gets stuck
            sim._send(proc, proc.member.poll(now))
            sim._after_member(proc)
            proc.load.stalled_until_ms = now + ev.duration_ms
            sim.q.push(now + ev.duration_ms, UNSTALL, proc.index)
        ready = now + ev.duration_ms
    elif kind == "network_partition":
        sim._event("network_partition", consumer=ev.consumer, duration_ms=ev.duration_ms)
        proc = sim._proc(ev.consumer)
        sim.net.cut(proc.id, now, now + ev.duration_ms)  # (registered ahead; idempotent)
        sim.q.push(now + ev.duration_ms, HEAL, proc.index)
        ready = now + ev.duration_ms
    return ready


def schedule_restart(sim: Simulation, proc: _Proc, ev: EventSpec, at_ms: int) -> int:
    """Stop ``proc`` at ``at_ms`` and start it ``downtime_ms`` later; returns when it is back."""
    sim.q.push(at_ms, RESTART, (proc.index, ev.graceful, ev.downtime_ms, ev.assignors))
    return at_ms + ev.downtime_ms


def scale(sim: Simulation, ev: EventSpec) -> None:
    if ev.count > 0:
        assert ev.topics is not None
        names = scaled_ids(ev, sim.by_id)
        sim._event("scale", count=ev.count, consumers=names)
        for name in names:
            spec = ConsumerSpec(
                id=name, topics=ev.topics, static=ev.static, rack=ev.rack, assignors=ev.assignors
            )
            sim._start(sim._new_proc(spec))
        return
    running = [p for p in sim.procs if p.deployed and p.member is not None]
    victims = list(reversed(running))[: -ev.count]
    sim._event("scale", count=ev.count, consumers=[p.id for p in victims])
    for proc in victims:
        sim._stop(proc, graceful=True)
        proc.deployed = False
    sim._resubscribe()


def build_result(sim: Simulation) -> SimResult:
    """The run's metrics, logs and chart data (docs/simulator.md defines every metric)."""
    end = sim.sc.duration_ms
    final: dict[str, str] = {}
    idle = 0
    for proc in sim.procs:
        member = proc.member
        if member is None:
            continue
        assigned = member.assignment()
        final[proc.id] = compress_partitions(assigned)
        if not assigned:
            idle += 1
    metrics: dict[str, Any] = {
        "rebalances": sim.rebalances,
        "generation": sim.g_generation,
        "unowned_partition_ms": sim.own.unowned_ms,
        "double_owned_ms": sim.own.double_ms,
        "zombie_owned_ms": sim.own.zombie_ms,
        "moved_partitions": sim.moved,
        "time_to_stable_ms": [
            None if d.resolved_ms is None else d.resolved_ms - d.start_ms for d in sim.disturbances
        ],
        "max_lag_records": sim.max_lag,
        "records_produced": sim.workload.records_produced(end),
        "records_processed": sim.workload.records_processed,
        "records_reprocessed": sim.workload.records_reprocessed,
        "invariant_violations": list(sim.violations),
        # extras (docs/simulator.md)
        "invariant_violation_count": sim.violation_count,
        "max_partition_lag_records": sim.max_partition_lag,
        "zombie_overlap_ms": sim.own.zombie_overlap_ms,
        "records_skipped": sim.workload.records_skipped,
        "final_group_state": sim.g_state.kafka_name,
        "final_protocol": sim.g_protocol,
        "running_consumers": sim.running_count,
        "idle_consumers": idle,
        "final_assignment": final,
        "offset_commits_sent": sim.commits_sent,
        "steps": sim.steps,
    }
    return SimResult(
        scenario=sim.sc,
        metrics=metrics,
        ownership=sim.ownership,
        events=sim.events,
        partitions=[str(tp) for tp in sim.workload.partitions],
        consumers=[p.id for p in sim.procs],
        intervals=sorted(sim.own.intervals),
        lag=sim.lag,
        rebalance_starts=sim.rebalance_starts,
        stable_marks=sim.stable_marks,
    )
