"""The simulator's scenario events and its result, kept apart from the event loop (runner.py).

Functions here act through the small host protocols of :mod:`kgroup.sim.host` (start and stop
processes, schedule, log), which :class:`kgroup.sim.runner.Simulation` implements; they hold no
state of their own and do not import the runner.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from kgroup.model import compress_partitions
from kgroup.sim.consumer_group import ConsumerGroupObserver
from kgroup.sim.host import ProcessHost, ResultSource, ScenarioHost, SimProcess
from kgroup.sim.result import SimResult
from kgroup.sim.scenario import ConsumerSpec, EventSpec, scaled_ids
from kgroup.sim.scheduler import HEAL, RESTART, UNSTALL

__all__ = [
    "apply_process_event",
    "apply_scenario_event",
    "build_result",
    "change_subscription",
    "consumer_protocol_metrics",
    "retire",
    "scale",
    "scale_down",
    "schedule_restart",
]

_P = TypeVar("_P", bound=SimProcess)


def apply_process_event(sim: ProcessHost[_P], ev: EventSpec) -> int | None:
    """The scenario events every protocol carries out alike: ``start``, ``stop``, ``crash``, ``restart``,
    ``rolling_restart`` and ``network_partition``. Returns when the event's last action is done
    (``None``: another kind, the protocol's own)."""
    now = sim.now
    kind = ev.kind
    if kind == "restart":
        return schedule_restart(sim, sim.process_named(ev.consumer), ev, now)
    if kind == "rolling_restart":
        names = ev.consumers if ev.consumers is not None else [p.id for p in sim.procs if p.deployed]
        sim.log_event("rolling_restart", consumers=list(names), gap_ms=ev.gap_ms, downtime_ms=ev.downtime_ms)
        ready = now
        for k, name in enumerate(names):
            ready = max(ready, schedule_restart(sim, sim.process_named(name), ev, now + k * ev.gap_ms))
        return ready
    if kind == "start":
        sim.log_event("start", consumer=ev.consumer)
        sim.start_process(sim.process_named(ev.consumer))
    elif kind == "stop":
        sim.log_event("stop", consumer=ev.consumer)
        retire(sim, [sim.process_named(ev.consumer)])
    elif kind == "crash":
        sim.log_event("crash", consumer=ev.consumer)
        sim.stop_process(sim.process_named(ev.consumer), graceful=False)
    elif kind == "network_partition":
        sim.log_event("network_partition", consumer=ev.consumer, duration_ms=ev.duration_ms)
        proc = sim.process_named(ev.consumer)
        sim.net.cut(proc.id, now, now + ev.duration_ms)  # (registered ahead; idempotent)
        sim.q.push(now + ev.duration_ms, HEAL, proc.index)
        return now + ev.duration_ms
    else:
        return None
    return now


def retire(sim: ProcessHost[_P], procs: Sequence[_P]) -> None:
    """Stop ``procs`` gracefully for good (no longer deployed) and resubscribe."""
    for proc in procs:
        sim.stop_process(proc, graceful=True)
        proc.deployed = False
    sim.resubscribe()


def scale_down(sim: ProcessHost[_P], ev: EventSpec, running: Sequence[_P]) -> None:
    """A ``scale`` event with a negative count: the last ``-count`` of ``running`` retire."""
    victims = list(reversed(running))[: -ev.count]
    sim.log_event("scale", count=ev.count, consumers=[p.id for p in victims])
    retire(sim, victims)


def change_subscription(sim: ProcessHost[_P], ev: EventSpec) -> _P:
    """A ``subscribe`` event's common part: the process's topics change; returns the process."""
    assert ev.topics is not None
    sim.log_event("subscribe", consumer=ev.consumer, topics=list(ev.topics))
    proc = sim.process_named(ev.consumer)
    proc.topics = ev.topics
    sim.resubscribe()
    return proc


def apply_scenario_event(sim: ScenarioHost, ev: EventSpec) -> int:
    """Apply one of the classic and consumer protocols' own scenario events now (the others:
    :func:`apply_process_event`); return when its last action is done (for time to stable)."""
    now = sim.now
    ready = now
    kind = ev.kind
    if kind == "scale":
        scale(sim, ev)
    elif kind == "add_partitions":
        assert ev.topic is not None
        sim.log_event("add_partitions", topic=ev.topic, count=ev.count)
        sim.add_topic_partitions(ev.topic, ev.count, now)
        sim.metadata_changed_ms = now
        sim.resubscribe()
        for proc in sim.procs:
            if proc.member is not None:
                sim.workload.advance(proc.load, proc.member, now)
                sim.give_metadata(proc)
                sim.poll_process(proc)
                sim.after_member(proc)
    elif kind == "subscribe":
        proc = change_subscription(sim, ev)
        if proc.member is not None:
            sim.workload.advance(proc.load, proc.member, now)
            proc.member.subscribe(proc.topics)
            sim.poll_process(proc)
            sim.after_member(proc)
    elif kind == "slow_poll":
        sim.log_event("slow_poll", consumer=ev.consumer, duration_ms=ev.duration_ms)
        proc = sim.process_named(ev.consumer)
        if proc.member is not None:
            sim.workload.advance(proc.load, proc.member, now)
            # the loop's last poll() returned the batch whose processing now gets stuck
            sim.send_requests(proc, proc.member.poll(now))
            sim.after_member(proc)
            proc.load.stalled_until_ms = now + ev.duration_ms
            sim.q.push(now + ev.duration_ms, UNSTALL, proc.index)
        ready = now + ev.duration_ms
    return ready


def schedule_restart(sim: ProcessHost[_P], proc: _P, ev: EventSpec, at_ms: int) -> int:
    """Stop ``proc`` at ``at_ms`` and start it ``downtime_ms`` later; returns when it is back."""
    sim.q.push(at_ms, RESTART, (proc.index, ev.graceful, ev.downtime_ms, ev.assignors))
    return at_ms + ev.downtime_ms


def scale(sim: ScenarioHost, ev: EventSpec) -> None:
    if ev.count > 0:
        assert ev.topics is not None
        names = scaled_ids(ev, sim.by_id)
        sim.log_event("scale", count=ev.count, consumers=names)
        for name in names:
            spec = ConsumerSpec(
                id=name, topics=ev.topics, static=ev.static, rack=ev.rack, assignors=ev.assignors
            )
            sim.start_process(sim.new_process(spec))
        return
    scale_down(sim, ev, [p for p in sim.procs if p.deployed and p.member is not None])


def consumer_protocol_metrics(sim: ResultSource) -> dict[str, Any]:
    """The consumer protocol's extras (docs/simulator.md): hand-over clocks, epochs, the end state."""
    group = sim.group
    assert sim.handover is not None and isinstance(group, ConsumerGroupObserver)
    out: dict[str, Any] = {
        "protocol": "consumer",
        "revoking_partition_ms": sim.handover.revoking_ms,
        "unreleased_partition_ms": sim.handover.unreleased_ms,
        "assignment_epoch": group.data.assignment_epoch,
        "member_epochs": {proc.id: proc.member.generation for proc in sim.procs if proc.member is not None},
        "settled_at_end": sim.settled_at_end,
        "reconciled_at_end": sim.reconciled_at_end,
    }
    if sim.handover.intervals_dropped:
        out["handover_intervals_dropped"] = sim.handover.intervals_dropped
    return out


def build_result(sim: ResultSource) -> SimResult:
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
        "generation": sim.group.generation,
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
        "outside_subscription_ms": sim.own.outside_subscription_ms,
        "records_skipped": sim.workload.records_skipped,
        "final_group_state": sim.group.state.kafka_name,
        "final_protocol": sim.group.protocol,
        "running_consumers": sim.running_count,
        "idle_consumers": idle,
        "final_assignment": final,
        "offset_commits_sent": sim.commits_sent,
        "steps": sim.steps,
    }
    if sim.handover is not None:
        metrics.update(consumer_protocol_metrics(sim))
    if sim.eos is not None:
        metrics.update(sim.eos.metrics())
    # bounded memory on long runs: say what the logs left out (only when they did)
    for key, dropped in (
        ("events_dropped", sim.events_dropped),
        ("ownership_dropped", sim.ownership_dropped),
        ("intervals_dropped", sim.own.intervals_dropped),
    ):
        if dropped:
            metrics[key] = dropped
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
        handover_intervals=sorted(sim.handover.intervals) if sim.handover is not None else [],
        recovery_ms=[None if d.resolved_ms is None else d.resolved_ms - d.ready_ms for d in sim.disturbances],
    )
