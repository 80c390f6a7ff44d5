"""The run loop both simulations drive (:class:`kgroup.sim.runner.Simulation`, the classic and consumer
protocols, and :class:`kgroup.sim.share_group.ShareSimulation`, share groups), and what goes with it.

One step is the coordinator's next timer or the queue's next event, whichever was scheduled for the
earlier time (at the same time, the one whose tie is smaller: the timer table's ties and the queue's
are of one kind — sequence numbers from the queue's counter, or :func:`kgroup.sim.scheduler.event_tie`
with the timers' constant tie). A queue entry's kind picks its handler: a simulation marks each handler with
:func:`handles`, and :class:`SimLoop` gathers them. After every step the simulation's ``_after_step``
runs (its invariants and whether a disturbance has settled).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from heapq import heappop
from random import Random
from typing import Any, Protocol, TypeVar

from kgroup.group import CoordinatorResult, GroupCoordinator
from kgroup.sim.actions import apply_process_event
from kgroup.sim.network import Network
from kgroup.sim.scenario import ConsumerSpec, EventSpec, Scenario
from kgroup.sim.scheduler import COAST, HEAL, RESTART, SAMPLE, SCENARIO, START, EventQueue, HostTimers

__all__ = [
    "MAX_LOG_ENTRIES",
    "PROGRESS_EVERY_STEPS",
    "Disturbance",
    "SimLoop",
    "handles",
    "log_full",
    "scenario_network",
]

#: how often (in steps) a long run reports its progress to the host
PROGRESS_EVERY_STEPS = 16_384
#: the event log keeps this many entries (the rest are counted as dropped)
MAX_LOG_ENTRIES = 200_000
#: the violations kept word for word (the rest are counted)
_MAX_VIOLATIONS = 100
_KIND = "_sim_queue_kind"


def log_full(entries: list[Any]) -> bool:
    """Whether a log (events, ownership) holds :data:`MAX_LOG_ENTRIES` already: what comes after is
    counted as left out, not kept (read at each call, so setting the cap here caps both simulations)."""
    return len(entries) >= MAX_LOG_ENTRIES


_Handler = TypeVar("_Handler", bound=Callable[..., None])


def handles(kind: int) -> Callable[[_Handler], _Handler]:
    """Mark a :class:`SimLoop` method as the handler of the queue entries of ``kind``."""

    def mark(handler: _Handler) -> _Handler:
        setattr(handler, _KIND, kind)
        return handler

    return mark


@dataclass(slots=True)
class Disturbance:
    """A scenario event, from when it happened until the group settled after it was done."""

    start_ms: int
    ready_ms: int
    resolved_ms: int | None = None


def scenario_network(scenario: Scenario) -> Network:
    """The scenario's network, its consumers' own settings and its partitions' cuts registered."""
    seed = scenario.seed
    net = Network(
        scenario.network,
        Random(f"kgroup-sim:{seed}:network"),
        {c.id: c.network for c in scenario.consumers if c.network is not None},
        reset_rng=Random(f"kgroup-sim:{seed}:resets"),
    )
    for ev in scenario.events:
        if ev.kind == "network_partition" and ev.consumer is not None:
            # cuts are known ahead, so a delivery time drawn at send time is exact
            net.cut(ev.consumer, ev.at_ms, ev.at_ms + ev.duration_ms)
    return net


class _Process(Protocol):
    index: int
    id: str
    topics: tuple[str, ...]


class SimLoop:
    """What both simulations share: the run loop, the event log, violations and disturbances.

    A subclass sets the attributes below in its ``__init__``, marks its handlers with
    :func:`handles` and gives :meth:`_apply_event`, :meth:`_apply_result` and :meth:`_after_step`."""

    sc: Scenario
    q: EventQueue[Any]
    net: Network
    coord: GroupCoordinator
    coord_timers: HostTimers
    procs: list[Any]
    events: list[dict[str, Any]]
    events_dropped: int
    violations: list[str]
    violation_count: int
    disturbances: list[Disturbance]
    open_disturbances: list[Disturbance]
    pending_starts: int
    steps: int
    #: the highest tie run so far at the current millisecond (the current step's, or a higher one's
    #: run before it): where the run is within the millisecond (kgroup.sim.coasting reads it)
    cursor_tie: Any = None

    @property
    def now(self) -> int:
        return self.q.now_ms

    def log_event(self, kind: str, **fields: Any) -> None:
        if log_full(self.events):
            self.events_dropped += 1
            return
        self.events.append({"t_ms": self.now, "kind": kind, **fields})

    def violation(self, text: str) -> None:
        self.violation_count += 1
        if len(self.violations) < _MAX_VIOLATIONS:
            self.violations.append(f"t={self.now}ms: {text}")

    def consumer_spec(self, proc: _Process) -> ConsumerSpec:
        """The scenario's spec of ``proc`` (one that scaling added: its id and topics)."""
        for spec in self.sc.consumers:
            if spec.id == proc.id:
                return spec
        return ConsumerSpec(id=proc.id, topics=proc.topics)

    # --- what a subclass gives ------------------------------------------------------------------------

    def _apply_event(self, ev: EventSpec) -> int:
        """Apply one of the protocol's own scenario events now (the others:
        :func:`kgroup.sim.actions.apply_process_event`); return when its last action is done."""
        raise NotImplementedError

    def process_named(self, name: str | None) -> Any:
        raise NotImplementedError

    def start_process(self, proc: Any) -> None:
        raise NotImplementedError

    def stop_process(self, proc: Any, graceful: bool) -> None:
        raise NotImplementedError

    def resubscribe(self) -> None:
        raise NotImplementedError

    def _apply_result(self, result: CoordinatorResult) -> None:
        """Carry out what the coordinator returned."""
        raise NotImplementedError

    def _after_step(self) -> None:
        raise NotImplementedError

    # --- handlers both have ---------------------------------------------------------------------------

    def _before_timer(self) -> None:
        """Called before a coordinator timer fires (the clock and cursor at it): a subclass brings
        whatever it carries out in closed form up to now (a timer it renews may move)."""

    def _before_scenario_event(self) -> None:
        """Called before a scenario event is carried out (a subclass ends its closed-form shortcuts)."""

    @handles(SCENARIO)
    def _on_scenario(self, i: int) -> None:
        self._before_scenario_event()
        now = self.now
        ev = self.sc.events[i]
        ready = apply_process_event(self, ev)
        if ready is None:
            ready = self._apply_event(ev)
        disturbance = Disturbance(start_ms=now, ready_ms=ready)
        self.disturbances.append(disturbance)
        self.open_disturbances.append(disturbance)

    @handles(RESTART)
    def _on_restart(self, payload: tuple[int, bool, int, tuple[str, ...] | None]) -> None:
        index, graceful, downtime_ms, assignors = payload
        proc = self.procs[index]
        self.log_event("restart", consumer=proc.id, downtime_ms=downtime_ms, graceful=graceful)
        self.stop_process(proc, graceful=graceful)
        self.pending_starts += 1
        self.q.push(self.now + downtime_ms, START, (index, assignors))

    @handles(HEAL)
    def _on_heal(self, index: int) -> None:
        proc = self.procs[index]
        if not self.net.is_cut(proc.id, self.now):
            self.log_event("network_healed", consumer=proc.id)

    def _resolve_disturbances(self) -> None:
        """The group is settled: every open disturbance whose last action is done is resolved now."""
        for d in self.open_disturbances[:]:
            if d.ready_ms <= self.now:
                d.resolved_ms = self.now
                self.open_disturbances.remove(d)

    # --- the loop -------------------------------------------------------------------------------------

    def _handlers(self) -> dict[int, Callable[[Any], None]]:
        """Each queue kind's handler, as the class and its bases mark them (a subclass's wins)."""
        table: dict[int, Callable[[Any], None]] = {}
        for cls in reversed(type(self).__mro__):
            for name, value in vars(cls).items():
                kind = getattr(value, _KIND, None)
                if kind is not None:
                    table[kind] = getattr(self, name)
        return table

    def _open(self) -> None:
        """Queue the autostarted processes' starts, the scenario's events and the first sample."""
        q = self.q
        for proc in self.procs:
            if self.consumer_spec(proc).autostart:
                self.pending_starts += 1
                q.push(0, START, (proc.index, None))
        for i, event in enumerate(self.sc.events):
            q.push(event.at_ms, SCENARIO, i)
        q.push(0, SAMPLE, None)

    def _drive(
        self,
        progress: Callable[[int, int], None] | None,
        account: Callable[[int], None] | None = None,
    ) -> None:
        """Run every step due by the scenario's end (after :meth:`_open`). ``account(t)`` (if given)
        is called once per millisecond before its first step; ``progress(t, end)`` every
        :data:`PROGRESS_EVERY_STEPS` steps."""
        q = self.q
        end = self.sc.duration_ms
        handlers = self._handlers()
        after_step, apply_result = self._after_step, self._apply_result
        timers, coord = self.coord_timers, self.coord
        timer_head, heap = timers.head, q.entries
        before_timer = self._before_timer
        timer = None
        steps = 0
        accounted = -1  # ``account`` has been called up to here
        cursor_at, cursor_tie = -1, None  # the current millisecond and the highest tie run at it
        while True:
            # the timers' head is looked up again only when the table changed
            if timers.changed:
                timers.changed = False
                timer = timer_head()
            # (a run's ties are all of one kind: sequence numbers, or event ties and the timers' constant)
            if (
                timer is not None
                and (at := timer[0]) <= end
                and (
                    not heap or at < (queued := heap[0])[0] or (at == queued[0] and timer[1] < queued[1])  # type: ignore[operator]
                )
            ):
                q.now_ms = at
                tie = timer[1]
                if at != cursor_at:
                    cursor_at, cursor_tie = at, tie
                elif tie > cursor_tie:  # type: ignore[operator]
                    cursor_tie = tie
                self.cursor_tie = cursor_tie
                before_timer()
                if timers.changed:
                    continue  # (closed-form work renewed a timer: the head may have moved)
                if account is not None and at != accounted:
                    account(at)
                    accounted = at
                steps += 1
                key = timers.pop_due(at)
                assert key is not None
                apply_result(coord.on_timer(at, key))
                after_step()
                continue
            # (EventQueue.pop_due, inlined)
            if not heap or heap[0][0] > end:
                break
            at, tie, kind, payload = heappop(heap)
            q.now_ms = at
            if at != cursor_at:
                cursor_at, cursor_tie = at, tie
            elif tie > cursor_tie:  # type: ignore[operator]
                cursor_tie = tie
            self.cursor_tie = cursor_tie
            if kind == COAST:
                handlers[kind](payload)  # (not a step: nothing is counted or checked after it)
                continue
            if account is not None and at != accounted:
                account(at)
                accounted = at
            steps += 1
            handlers[kind](payload)
            after_step()
            if progress is not None and not steps % PROGRESS_EVERY_STEPS:
                progress(at, end)
        self.steps = steps
        q.now_ms = end
