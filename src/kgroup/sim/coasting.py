"""Steady heartbeats carried out in closed form: a member that has nothing to do costs nothing.

A classic member in a Stable group sends a heartbeat every ``heartbeat.interval.ms`` and gets
``NONE`` back; each round is three steps of the run (the heartbeat thread's wake-up, the request at
the coordinator, the answer at the member) that change nothing but that member's timers, its
correlation ids and its session timer at the coordinator. In a group of a thousand they are about
two fifths of an hour's steps. While a member *coasts*, its rounds are not queued: they are carried
out when something next looks at the member, its session timer or the group, and only the last of
the rounds before that moment is carried out for real (it sets every timer the rounds set); the
others leave their correlation ids used (:meth:`ClassicConsumerMember.heartbeats_left_out`) and are
counted as steps. The run's results are the step-by-step run's, byte for byte
(``tests/sim/test_coasting.py``; ``Simulation(..., coasting=False)`` is the step-by-step run).

What makes that exact:

* **Ties belong to events** (:func:`kgroup.sim.scheduler.event_tie`): one member's entries never
  reorder another's, so leaving them out of the queue changes no one else's order. The run loop
  keeps a *cursor* — the current step's time and the highest tie run at that millisecond — and a
  coasting round's step is "before now" exactly when the step-by-step run would have run it already.
* **Who looks, catches up first.** The member's own events catch it up before they act (its
  application loop, an answer, a timeout, a reset, a restart), and so does its OffsetCommit at the
  coordinator (which restarts the same session timer). Anything that may change the group or fire
  a timer catches every coasting member up first: a JoinGroup, SyncGroup, LeaveGroup or other group
  request, any coordinator timer (the run loop asks before firing one), a scenario event.
* **A changed group ends every coast**: the rounds before the change were answered ``NONE``; the
  rest are queued for real (the round in progress and the next wake-up, exactly the entries the
  step-by-step run has queued then) and run step by step.
* **Only what is certain coasts**: a classic member (not the consumer protocol's, not under
  exactly-once), STABLE with no rejoin asked for and nothing in flight when its coast begins, in a
  Stable group of its generation, on a link with a fixed delay (no jitter, loss or cut: nothing
  drawn from the network's random stream), and heartbeat and session timeouts for which each round
  is answered before the next and renews the session before it could run out. An OffsetCommit the
  member sends while coasting is fine when its answer arrives before the next wake-up (else the
  coast ends: the step-by-step run's wake-up would find it in flight).
* **Looking again.** A *look-again* entry (``COAST``, not a step) ends the coast in time before
  ``max.poll.interval.ms`` could run out, and at the *settling horizon*: an open scenario
  disturbance is resolved at the first step, any step, once its last action is done and the group
  has settled, so from the earliest such moment on (``Simulation.settling_horizon``) every step is
  run one by one.

Checked as it goes: a round carried out in closed form must send exactly one heartbeat, be answered
``NONE`` with nothing but its timer re-armed, and leave the member waking at the next round; anything
else raises :class:`CoastingError` (a defect of this module, never a result).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kgroup.group.records import TimerArmed
from kgroup.group.states import GroupState
from kgroup.member import ClassicConsumerMember
from kgroup.messages import (
    Envelope,
    HeartbeatRequest,
    HeartbeatResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Request,
    Response,
)
from kgroup.model import ErrorCode
from kgroup.sim.scheduler import COAST, TO_COORD, TO_MEMBER, WAKE

if TYPE_CHECKING:
    from kgroup.group import GroupCoordinator, TimerTable
    from kgroup.sim.consumer_group import ConsumerGroupObserver
    from kgroup.sim.network import Network
    from kgroup.sim.observer import GroupObserver
    from kgroup.sim.process import ConsumerProcess
    from kgroup.sim.scenario import Scenario
    from kgroup.sim.scheduler import EventQueue, Payload

__all__ = ["Coasting", "CoastingError", "CoastingHost", "catches_everyone_up"]

# the ties of a round's three steps within the member's own entries (kgroup.sim.scheduler.event_tie)
_RANK_TO_MEMBER, _RANK_TO_COORD, _RANK_WAKE = 2, 3, 4
#: a cursor after every step of a millisecond (the end of the run)
_AFTER_ALL: tuple[int, ...] = (1 << 62,)
#: the requests that can neither change the group nor read another member's session timer
_ROUTINE_REQUESTS = (HeartbeatRequest, OffsetCommitRequest, OffsetFetchRequest)


class CoastingError(RuntimeError):
    """A round carried out in closed form did not go as a steady round goes (a defect here)."""


def catches_everyone_up(body: Request) -> bool:
    """Whether a request at the coordinator may change the group (so every coast catches up first)."""
    return not isinstance(body, _ROUTINE_REQUESTS)


class CoastingHost(Protocol):
    """What coasting reads and drives of its simulation (:class:`kgroup.sim.runner.Simulation`)."""

    sc: Scenario
    q: EventQueue[Payload]
    net: Network
    coord: GroupCoordinator
    procs: list[ConsumerProcess]
    group: GroupObserver | ConsumerGroupObserver
    cursor_tie: Any

    @property
    def coord_timers(self) -> TimerTable: ...

    def settling_horizon(self) -> int | None: ...


@dataclass(slots=True)
class _Coast:
    """One member's coast: the round at ``w`` (its wake-up's time) has ``stage`` steps done —
    0 (its wake-up is next), 1 (the heartbeat is on its way), 2 (answered at the coordinator)."""

    w: int
    latency: int
    period: int
    stage: int = 0
    conn: str = ""
    corr: int = 0
    body: HeartbeatRequest | None = None
    reply: Response | None = None


class Coasting:
    """The coasting members of one :class:`~kgroup.sim.runner.Simulation` (see the module)."""

    __slots__ = ("_marker_at", "coasts", "sim", "steps")

    def __init__(self, sim: CoastingHost) -> None:
        self.sim = sim
        #: process index -> its coast
        self.coasts: dict[int, _Coast] = {}
        #: process index -> the time of its live look-again entry
        self._marker_at: dict[int, int] = {}
        #: steps carried out in closed form (the run counts them as its own)
        self.steps = 0

    # --- beginning ------------------------------------------------------------------------------------

    def begin(self, proc: ConsumerProcess) -> bool:
        """At ``proc``'s live wake-up now: if it is a steady round, carry out its wake-up and coast
        from there (True: handled); else leave the step to the run (False)."""
        sim = self.sim
        member = proc.member
        now = sim.q.now_ms
        horizon = sim.settling_horizon()
        if (
            type(member) is not ClassicConsumerMember
            or proc.inflight
            or (horizon is not None and horizon <= now)
            or not member.heartbeat_alone_due(now)
        ):
            return False
        group = sim.group
        if group.state is not GroupState.STABLE or not group.is_current(member.generation, member.member_id):
            return False
        latency = sim.net.steady_latency(proc.id)
        period = member.config.heartbeat_interval_ms
        session = member.config.session_timeout_ms
        if (
            latency is None
            or period <= 2 * latency  # each round answered before the next begins
            or session + 2 * latency < 2 * period  # each answer renews the session past the round after
            or min(member.session_deadline_ms, member.poll_deadline_ms) < now + period
        ):
            return False
        coast = _Coast(w=now, latency=latency, period=period)
        self._wake(proc, coast)  # (the run loop counted this step)
        self.coasts[proc.index] = coast
        self._look_again(proc, coast)
        return True

    # --- catching up --------------------------------------------------------------------------------

    def catch_up(self, proc: ConsumerProcess) -> None:
        """Carry out ``proc``'s rounds up to the cursor (what the step-by-step run has run by now)."""
        coast = self.coasts.get(proc.index)
        if coast is not None:
            self._catch_up(proc, coast, self.sim.q.now_ms, self.sim.cursor_tie)

    def catch_up_all(self) -> None:
        """Every coasting member's rounds up to the cursor."""
        if self.coasts:
            sim = self.sim
            at, high, procs = sim.q.now_ms, sim.cursor_tie, sim.procs
            for index, coast in self.coasts.items():
                self._catch_up(procs[index], coast, at, high)

    def _catch_up(self, proc: ConsumerProcess, c: _Coast, at: int, high: Any) -> None:
        i, latency, period = proc.index, c.latency, c.period
        # the round in progress
        if c.stage and not self._finish_round(proc, c, at, high):
            return
        # whole rounds: round r (from c.w) is done when its answer has arrived, at
        # c.w + r·period + 2·latency, with the tie (i, answer, its correlation id)
        q = at - c.w - 2 * latency
        rounds = q // period + 1 if q >= 0 else 0
        if rounds and q % period == 0:
            corr = proc_member(proc).next_correlation_id + rounds - 1
            if not (i, _RANK_TO_MEMBER, corr) < high:
                rounds -= 1  # the last one's answer comes later at this millisecond
        if rounds:
            self._rounds(proc, c, rounds)
        # the round after them, as far as it has gone
        self._finish_round(proc, c, at, high)

    def _finish_round(self, proc: ConsumerProcess, c: _Coast, at: int, high: Any) -> bool:
        """Carry out the round's steps up to the cursor; True when it is complete."""
        i = proc.index
        while True:
            stage = c.stage
            if stage == 0:
                time, tie = c.w, (i, _RANK_WAKE, 0)
            elif stage == 1:
                time, tie = c.w + c.latency, (i, _RANK_TO_COORD, c.corr)
            else:
                time, tie = c.w + 2 * c.latency, (i, _RANK_TO_MEMBER, c.corr)
            if time > at or (time == at and not tie < high):
                return False
            self.steps += 1
            if stage == 0:
                self._wake(proc, c)
            elif stage == 1:
                self._at_coordinator(proc, c)
            else:
                self._answered(proc, c)
                return True

    def _rounds(self, proc: ConsumerProcess, c: _Coast, rounds: int) -> None:
        """``rounds`` whole rounds from ``c.w``, in closed form: the member left as after them
        (:meth:`ClassicConsumerMember.heartbeats_carried_out`), the last one's heartbeat handled by
        the coordinator at its own time (what renews its session timer there; the earlier ones'
        renewals it overrides), nothing queued."""
        member, latency = proc_member(proc), c.latency
        last = c.w + (rounds - 1) * c.period
        corr = member.next_correlation_id + rounds - 1
        body = c.body
        if body is None:  # (the request every round sends: built once per coast, as the member builds it)
            body = c.body = member.heartbeat_request()
        member.heartbeats_carried_out(rounds, last, last + 2 * latency)
        self._renewed_at_coordinator(proc, proc.conn, last + latency, corr, body)
        proc.wake_version += rounds
        proc.wake_at = last + c.period
        self.steps += 3 * rounds
        c.w = last + c.period

    def _renewed_at_coordinator(
        self, proc: ConsumerProcess, conn: str, now: int, corr: int, body: HeartbeatRequest
    ) -> Response:
        sim = self.sim
        result = sim.coord.handle(now, Envelope(conn, corr, body, proc.id))
        replies = result.replies
        if (
            len(replies) != 1
            or type(replies[0].body) is not HeartbeatResponse
            or replies[0].body.error_code is not ErrorCode.NONE
            or result.tasks
            or any(type(r) is not TimerArmed for r in result.records)
        ):
            raise CoastingError(f"{proc.id}: a coasting heartbeat at {now} ms was answered {result!r}")
        if result.timers:
            sim.coord_timers.apply(result.timers)
        return replies[0].body

    # --- one round's steps, carried out for real at their own time ------------------------------------

    def _wake(self, proc: ConsumerProcess, c: _Coast) -> None:
        sim, member, now = self.sim, proc_member(proc), c.w
        if proc.inflight:
            raise CoastingError(f"{proc.id}: a coasting wake-up at {now} ms found a request in flight")
        out = member.background(now)
        if len(out) != 1 or type(out[0].body) is not HeartbeatRequest:
            raise CoastingError(f"{proc.id}: a coasting wake-up at {now} ms sent {out!r}, not one heartbeat")
        sent = out[0]
        proc.inflight[sent.correlation_id] = now + sim.sc.group.request_timeout_ms
        if sim.net.transit(proc.id, proc.conn, True, now) != now + c.latency:
            raise CoastingError(f"{proc.id}: a coasting heartbeat at {now} ms was not delivered on time")
        wake = member.next_wakeup_ms()
        if wake != now + c.period or member.drain_events():
            raise CoastingError(f"{proc.id}: after a coasting heartbeat at {now} ms it wakes at {wake}")
        proc.wake_at = wake
        proc.wake_version += 1
        assert isinstance(sent.body, HeartbeatRequest)
        c.stage, c.conn, c.corr, c.body = 1, proc.conn, sent.correlation_id, sent.body

    def _at_coordinator(self, proc: ConsumerProcess, c: _Coast) -> None:
        sim = self.sim
        now = c.w + c.latency
        assert c.body is not None
        reply = self._renewed_at_coordinator(proc, c.conn, now, c.corr, c.body)
        if sim.net.transit(proc.id, c.conn, False, now) != now + c.latency:
            raise CoastingError(f"{proc.id}: a coasting heartbeat's answer at {now} ms was not on time")
        c.stage, c.reply = 2, reply

    def _answered(self, proc: ConsumerProcess, c: _Coast) -> None:
        member, now = proc_member(proc), c.w + 2 * c.latency
        assert c.reply is not None
        proc.inflight.pop(c.corr, None)
        if member.on_response(now, c.corr, c.reply) or member.drain_events():
            raise CoastingError(f"{proc.id}: a coasting heartbeat's answer at {now} ms did more than renew")
        if member.next_wakeup_ms() != proc.wake_at:
            raise CoastingError(f"{proc.id}: a coasting heartbeat's answer at {now} ms moved its wake-up")
        c.w += c.period
        c.stage, c.reply = 0, None  # (the body stays: every round of the coast sends the same)

    # --- going on, or ending --------------------------------------------------------------------------

    def keep(self, proc: ConsumerProcess) -> bool:
        """After ``proc``'s own event (caught up before it): whether its coast goes on. If not, the
        coast ends here (its entries queued for real) and the caller goes on as for any member."""
        c = self.coasts.get(proc.index)
        if c is None:
            return False
        member = proc.member
        next_wake = c.w if c.stage == 0 else c.w + c.period
        if (
            type(member) is ClassicConsumerMember
            and next_wake > self.sim.q.now_ms  # (a wake-up due now is moved a millisecond on by the run)
            and member.heartbeat_alone_due(next_wake)
            and member.next_wakeup_ms() == proc.wake_at == next_wake
            and self._answered_before(proc, c, next_wake)
        ):
            return True
        self.end(proc)
        return False

    def _answered_before(self, proc: ConsumerProcess, c: _Coast, wake: int) -> bool:
        """Every request in flight other than the round's own heartbeat (a steady member's are
        OffsetCommits, answered at once) is answered before the wake-up at ``wake`` (strictly: an
        answer at that very millisecond runs first and finds its wake-up due, which the run moves a
        millisecond on)."""
        timeout = self.sim.sc.group.request_timeout_ms
        own = c.corr if c.stage else None
        return all(
            deadline - timeout + 2 * c.latency < wake
            for corr, deadline in proc.inflight.items()
            if corr != own
        )

    def end(self, proc: ConsumerProcess) -> None:
        """End ``proc``'s coast (caught up to the cursor): queue what the step-by-step run has queued
        for it now — the round in progress's next step and the live wake-up."""
        c = self.coasts.pop(proc.index, None)
        if c is None:
            return
        q, i = self.sim.q, proc.index
        if c.stage == 1:
            assert c.body is not None
            q.push(c.w + c.latency, TO_COORD, (i, c.conn, c.corr, c.body))
        elif c.stage == 2:
            assert c.reply is not None
            q.push(c.w + 2 * c.latency, TO_MEMBER, (i, c.conn, c.corr, c.reply))
        assert proc.wake_at is not None
        q.push(proc.wake_at, WAKE, (i, proc.incarnation, proc.wake_version))

    def end_all(self) -> None:
        """Catch every coast up to the cursor and end it."""
        if self.coasts:
            self.catch_up_all()
            procs = self.sim.procs
            for index in list(self.coasts):
                self.end(procs[index])

    def close(self, end_ms: int) -> None:
        """The run ends at ``end_ms``: every round due by then is carried out."""
        procs = self.sim.procs
        for index, coast in self.coasts.items():
            self._catch_up(procs[index], coast, end_ms, _AFTER_ALL)

    # --- looking again: before max.poll.interval.ms, and when a disturbance may settle --------------

    def _look_again(self, proc: ConsumerProcess, c: _Coast) -> None:
        """Queue a look-again entry at the first wake-up after which the poll timer would run out
        before the next, or at the settling horizon if that is earlier (unless one at or before it
        is queued already)."""
        member = proc_member(proc)
        first = c.w if c.stage == 0 else c.w + c.period
        period = c.period
        slack = member.poll_deadline_ms - period - first
        at = first if slack < 0 else first + (slack // period + 1) * period
        horizon = self.sim.settling_horizon()
        if horizon is not None and horizon < at:
            at = horizon
        queued = self._marker_at.get(proc.index)
        if queued is None or queued > at:
            self._marker_at[proc.index] = at
            self.sim.q.push(at, COAST, (proc.index, at))

    def on_look_again(self, payload: tuple[int, int]) -> None:
        """A look-again entry (before the process's other entries at its time): the coast ends if
        the poll timer would now run out before the wake-up after the next, or the settling horizon
        is reached; else a later look is queued."""
        index, at = payload
        if self._marker_at.get(index) != at:
            return  # superseded
        del self._marker_at[index]
        c = self.coasts.get(index)
        if c is None:
            return
        proc = self.sim.procs[index]
        self._catch_up(proc, c, at, self.sim.cursor_tie)
        member = proc_member(proc)
        next_wake = c.w if c.stage == 0 else c.w + c.period
        horizon = self.sim.settling_horizon()
        if member.poll_deadline_ms < next_wake + c.period or (horizon is not None and horizon <= at):
            self.end(proc)
        else:
            self._look_again(proc, c)


def proc_member(proc: ConsumerProcess) -> ClassicConsumerMember:
    member = proc.member
    if type(member) is not ClassicConsumerMember:
        raise CoastingError(f"{proc.id} coasts without a classic member")
    return member
