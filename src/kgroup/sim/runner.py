"""The simulator: kgroup's real coordinator and members driven over virtual time.

The host loop owns everything Kafka leaves to the outside world — the clock, the network, the
coordinator's timer queue, the consumer processes and their application threads — and nothing else:
every protocol decision is made by :class:`kgroup.group.GroupCoordinator` and
:class:`kgroup.member.ClassicConsumerMember`, the same code the live broker runs.

Per consumer process the host models two threads, as the Java consumer has: the *heartbeat thread*
(``background()``, called whenever the member's ``next_wakeup_ms()`` comes due) and the *application
loop* (``poll()``, called after every interaction unless the loop is stalled by a ``slow_poll``
event; the records it processes are computed by :mod:`kgroup.sim.workload`).
What the coordinator returns (timers, group records, replies) is carried out by
:mod:`kgroup.sim.coordinator_results`.

The run is event driven — the clock jumps from one event to the next — and deterministic: all
randomness comes from ``Random`` streams seeded from the scenario's seed, and the events of one
millisecond run in an order given by what they are (:func:`kgroup.sim.scheduler.event_tie`: the
coordinator's timers, the scenario's events, then each process's by process index).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from random import Random
from typing import TYPE_CHECKING, Any

from kgroup.collector import relaxed_collector
from kgroup.group import CoordinatorConfig, CoordinatorResult, GroupCoordinator
from kgroup.group.states import GroupState
from kgroup.member import ClassicConsumerMember, MemberConfig, OutboundRequest, Phase
from kgroup.member.events import (
    MemberEvent,
    OffsetsCommitted,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.messages import (
    Envelope,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    Reply,
    Request,
    Response,
    SyncGroupRequest,
)
from kgroup.model import ErrorCode, TopicMetadata, TopicPartition, jsonable, sorted_partitions
from kgroup.sim.actions import apply_scenario_event, build_result
from kgroup.sim.coasting import Coasting, catches_everyone_up
from kgroup.sim.consumer_group import (
    ConsumerGroupObserver,
    HandoverTracker,
    SimMember,
    metadata_image,
    new_member,
)
from kgroup.sim.coordinator_results import apply_coordinator_result
from kgroup.sim.loop import Disturbance, SimLoop, handles, log_full, scenario_network
from kgroup.sim.observer import GroupObserver
from kgroup.sim.ownership import OwnershipTracker, given_away_while_missing
from kgroup.sim.process import ConsumerProcess
from kgroup.sim.result import LagSample, SimResult
from kgroup.sim.scenario import ConsumerSpec, EventSpec, Scenario
from kgroup.sim.scheduler import APP_POLL as _APP_POLL
from kgroup.sim.scheduler import COAST as _COAST
from kgroup.sim.scheduler import RESET as _RESET
from kgroup.sim.scheduler import SAMPLE as _SAMPLE
from kgroup.sim.scheduler import START as _START
from kgroup.sim.scheduler import TIMEOUT as _TIMEOUT
from kgroup.sim.scheduler import TO_COORD as _TO_COORD
from kgroup.sim.scheduler import TO_MEMBER as _TO_MEMBER
from kgroup.sim.scheduler import TXN_TIMER as _TXN_TIMER
from kgroup.sim.scheduler import UNSTALL as _UNSTALL
from kgroup.sim.scheduler import WAKE as _WAKE
from kgroup.sim.scheduler import EventQueue, HostTimers, Payload, event_tie, timer_tie
from kgroup.sim.workload import ConsumerLoad, Workload

if TYPE_CHECKING:
    from kgroup.sim.exactly_once import ExactlyOnce

__all__ = ["Simulation", "simulate"]

# Kafka's JoinGroup request timeout: the rebalance timeout plus this lapse (AbstractCoordinator)
_JOIN_TIMEOUT_LAPSE_MS = 5000
#: the simulated cluster's answer to FindCoordinator: one broker (node 0), the coordinator of the group
SIM_COORDINATOR = FindCoordinatorResponse(ErrorCode.NONE, 0, "127.0.0.1", 9092)
_OWNERSHIP_KINDS = {
    "PartitionsAssigned": "assigned",
    "PartitionsRevoked": "revoked",
    "PartitionsLost": "lost",
}


class Simulation(SimLoop):
    """One run of one scenario. ``Simulation(scenario).run()`` returns a :class:`SimResult`."""

    def __init__(self, scenario: Scenario, *, coasting: bool = True) -> None:
        """``coasting``: carry steady members' heartbeats out in closed form (:mod:`kgroup.sim.coasting`;
        the same results; False runs every step one by one)."""
        self.sc = scenario
        g = scenario.group
        seed = scenario.seed
        # one millisecond's entries in the order of what they are (event_tie), the coordinator's timers
        # before them in key order: one process's entries never reorder another's
        self.q: EventQueue[Payload] = EventQueue(tie=event_tie)
        self.net = scenario_network(scenario)
        self.consumer_protocol = g.consumer_protocol
        if self.consumer_protocol:
            config = CoordinatorConfig(
                group_initial_rebalance_delay_ms=g.initial_rebalance_delay_ms,
                consumer_session_timeout_ms=g.consumer_session_timeout_ms,
                consumer_heartbeat_interval_ms=g.consumer_heartbeat_interval_ms,
            )
        else:
            config = CoordinatorConfig(group_initial_rebalance_delay_ms=g.initial_rebalance_delay_ms)
        self.coord = GroupCoordinator(config, rng=Random(f"kgroup-sim:{seed}:coordinator"))
        self.metadata_version = 0
        self.group_id = g.group_id
        self.workload = Workload(scenario.workload)
        #: exactly-once processing (kgroup.sim.exactly_once), None at least once: the members then
        #: commit nothing themselves and the application loop looks every commit interval
        self.eos: ExactlyOnce | None = None
        if scenario.workload.exactly_once:
            from kgroup.sim.exactly_once import ExactlyOnce  # (the transaction coordinator: only then)

            self.eos = ExactlyOnce(self)
        self.auto_commit = g.enable_auto_commit and self.eos is None
        self.tick_ms = g.auto_commit_interval_ms if self.eos is None else scenario.workload.commit_interval_ms
        self.workload_rng = Random(f"kgroup-sim:{seed}:workload")
        self.own = OwnershipTracker()
        self.topic_sizes: dict[str, int] = {}
        self.procs: list[ConsumerProcess] = []
        self.by_id: dict[str, ConsumerProcess] = {}
        self.conn_owner: dict[str, tuple[int, int]] = {}
        self.broken_conns: set[str] = set()  # connections a timeout or reset closed
        self.coord_timers = HostTimers(key_tie=timer_tie)
        # group observation
        # the group as its coordinator's records show it
        self.group: GroupObserver | ConsumerGroupObserver
        if self.consumer_protocol:
            self.group = ConsumerGroupObserver(g.group_id, config.consumer_assignors[0])
        else:
            self.group = GroupObserver()
        #: consumer protocol: when partitions were revoking / unreleased (None on the classic protocol)
        self.handover: HandoverTracker | None = HandoverTracker() if self.consumer_protocol else None
        self.rebalances = 0
        self.settled_count = 0
        self.running_count = 0
        # outputs
        self.ownership: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self.violation_count = 0
        self.events_dropped = 0
        self.ownership_dropped = 0
        self.moved = 0
        self.last_owner: dict[TopicPartition, str] = {}
        self.disturbances: list[Disturbance] = []
        self.open_disturbances: list[Disturbance] = []  # not settled yet
        self.lag: list[LagSample] = []
        self.max_lag = 0
        self.max_partition_lag = 0
        self.rebalance_starts: list[int] = []
        self.stable_marks: list[int] = []
        self.steps = 0
        self.metadata_changed_ms = -1
        self.pending_starts = 0  # starts scheduled and not yet run (a restart's downtime)
        self.commits_sent = 0
        self._in_double = False
        self._started = False
        #: the deployed processes' topics and the partition count the subscribed set was last built for
        self._subscribed_key: tuple[frozenset[str], int] | None = None
        self.settled_at_end = False
        self.reconciled_at_end = False
        #: steady classic members' heartbeats in closed form (None: every step is run one by one)
        self.coasting: Coasting | None = (
            Coasting(self) if coasting and self.eos is None and not self.consumer_protocol else None
        )

        for name, count in scenario.topics:
            self.add_topic_partitions(name, count, 0)
        for spec in scenario.consumers:
            self.new_process(spec)

    # --- set-up ---------------------------------------------------------------------------------------

    def new_process(self, spec: ConsumerSpec) -> ConsumerProcess:
        proc = ConsumerProcess(
            index=len(self.procs),
            id=spec.id,
            topics=spec.topics,
            assignors=spec.assignors or self.sc.group.assignors,
            static=spec.static,
            rack=spec.rack,
            load=ConsumerLoad(last_ms=0),
        )
        self.procs.append(proc)
        self.by_id[spec.id] = proc
        return proc

    def add_topic_partitions(self, topic: str, count: int, now_ms: int) -> None:
        first = self.topic_sizes.get(topic, 0)
        self.topic_sizes[topic] = first + count
        self.workload.add_partitions((TopicPartition(topic, p) for p in range(first, first + count)), now_ms)
        self.own.add_partitions(count, now_ms)
        if self.eos is not None:
            self.eos.add_partitions(count)
        if self.consumer_protocol:
            # Kafka's onMetadataUpdate: the coordinator sees the new partition count at once
            self.metadata_version += 1
            self.coord.set_metadata(metadata_image(self.topic_sizes, self.metadata_version))

    def give_metadata(self, proc: ConsumerProcess) -> None:
        """The member learns the cluster's topics (names and partition counts; the consumer
        protocol's member reads topic ids' names)."""
        member = proc.member
        if isinstance(member, SimMember):
            member.give_metadata(self.topic_sizes)
        elif member is not None:
            member.update_metadata(self.metadata())

    def metadata(self) -> dict[str, TopicMetadata]:
        return {name: TopicMetadata(name, n) for name, n in self.topic_sizes.items()}

    def _sample_interval(self) -> int:
        given = self.sc.workload.sample_interval_ms
        return given if given is not None else max(1000, self.sc.duration_ms // 300)

    # --- the loop -------------------------------------------------------------------------------------

    def run(self, progress: Callable[[int, int], None] | None = None) -> SimResult:
        """Run to the end. ``progress(virtual_now_ms, duration_ms)`` is called every
        :data:`PROGRESS_EVERY_STEPS` steps (the host may show it; the simulator reads no clock)."""
        if self._started:
            raise RuntimeError("a Simulation runs once; make a new one")
        self._started = True
        with relaxed_collector():
            return self._run(progress)

    def _run(self, progress: Callable[[int, int], None] | None) -> SimResult:
        self._open()
        if self.eos is not None:
            self.eos.start(0)
        self._drive(progress, account=self.own.account)
        end = self.sc.duration_ms
        if self.coasting is not None:
            self.coasting.close(end)
            self.steps += self.coasting.steps
        self.own.account(end)
        for proc in self.procs:
            if proc.member is not None:
                self.workload.advance(proc.load, proc.member, end)
        self._sample(end)
        if self.eos is not None:
            self.eos.close()
        self.own.close(end)
        if self.handover is not None:
            self.settled_at_end = self._is_settled()
            self.reconciled_at_end = self._is_reconciled()
            self.handover.close(end)
        return self._result()

    # --- consumer processes ---------------------------------------------------------------------------

    def _member_config(self, proc: ConsumerProcess) -> MemberConfig:
        g = self.sc.group
        return MemberConfig(
            group_id=g.group_id,
            client_id=proc.id,
            group_instance_id=proc.id if proc.static else None,
            rack_id=proc.rack,
            session_timeout_ms=g.session_timeout_ms,
            heartbeat_interval_ms=g.heartbeat_interval_ms,
            max_poll_interval_ms=g.max_poll_interval_ms,
            enable_auto_commit=self.auto_commit,
            auto_commit_interval_ms=g.auto_commit_interval_ms,
            assignors=proc.assignors,
            # librdkafka commits a revoked partition's offset as it revokes it (with auto-commit);
            # Kafka's Java consumer commits only before JoinGroup and on close
            commit_on_revoke=g.client == "librdkafka" and self.auto_commit,
        )

    def start_process(self, proc: ConsumerProcess) -> None:
        if proc.member is not None:
            self.log_event("already_running", consumer=proc.id)
            return
        proc.incarnation += 1
        proc.conn = f"{proc.id}#{proc.incarnation}"
        proc.reconnects = 0
        proc.conn_ready_at = self.now
        self.conn_owner[proc.conn] = (proc.index, proc.incarnation)
        self._schedule_reset(proc)
        if self.consumer_protocol:
            g = self.sc.group
            member = new_member(
                group_id=g.group_id,
                consumer_id=proc.id,
                static=proc.static,
                rack=proc.rack,
                server_assignor=g.server_assignor,
                max_poll_interval_ms=g.max_poll_interval_ms,
                enable_auto_commit=self.auto_commit,
                auto_commit_interval_ms=g.auto_commit_interval_ms,
                rng=Random(f"kgroup-sim:{self.sc.seed}:member:{proc.id}:{proc.incarnation}"),
            )
            member.subscribe(proc.topics)
            proc.member = member
            proc.epoch_seen = 0
        else:
            proc.member = ClassicConsumerMember(self._member_config(proc), proc.topics)
        self.give_metadata(proc)
        proc.load.last_ms = self.now
        proc.load.budget_milli = 0
        proc.load.stalled_until_ms = -1
        proc.load.busy_since_ms = None
        batch_ms = self.workload.batch_ms
        proc.load.batch_phase_ms = self.workload_rng.randrange(batch_ms) if batch_ms > 0 else 0
        if not proc.deployed:
            proc.deployed = True
            known = self._subscribed_key
            # (a process deploying with topics already subscribed changes nothing: a group of a
            # thousand starting at once does not recompute the subscribed set a thousand times)
            if known is None or known[1] != len(self.workload.index) or not known[0].issuperset(proc.topics):
                self.resubscribe()
        self.running_count += 1
        proc.app_tick_at = None
        proc.app_poll_at = None
        self._schedule_tick(proc, self.now + self.tick_ms)
        if self.eos is not None:
            self.eos.process_started(proc)
        self.send_requests(proc, proc.member.poll(self.now))
        self.after_member(proc)

    def stop_process(self, proc: ConsumerProcess, graceful: bool) -> None:
        member = proc.member
        if member is None:
            return
        if self.coasting is not None:
            self.coasting.catch_up(proc)
            self.coasting.end(proc)
        self.workload.advance(proc.load, member, self.now)
        if graceful:
            if self.eos is not None:
                self.eos.commit(proc, "close")  # (Kafka Streams commits on a clean shutdown)
            self.send_requests(proc, member.close(self.now))
            self._drain(proc)
        proc.member = None
        proc.inflight.clear()
        self.net.forget(proc.conn)
        proc.wake_version += 1
        proc.wake_at = None
        self.running_count -= 1
        if proc.settled:
            proc.settled = False
            self.settled_count -= 1
        self._set_claim(proc, frozenset(), False, frozenset())
        proc.claim_key = None
        proc.claim_since.clear()

    def send_requests(self, proc: ConsumerProcess, requests: Sequence[OutboundRequest]) -> None:
        if not requests:
            return
        q = self.q
        now = q.now_ms
        push = q.push
        request_timeout = self.sc.group.request_timeout_ms
        for out in requests:
            body = out.body
            kind = type(body)  # (the request types are final: no subclass to miss)
            timeout = request_timeout
            parked = kind is JoinGroupRequest or kind is SyncGroupRequest
            if kind is JoinGroupRequest:
                assert isinstance(body, JoinGroupRequest)
                timeout = max(timeout, body.rebalance_timeout_ms + _JOIN_TIMEOUT_LAPSE_MS)
            deadline = now + timeout
            proc.inflight[out.correlation_id] = deadline
            if kind is OffsetCommitRequest:
                # The application polls continuously; the member's next auto-commit falls due one
                # interval after this one was sent, so the loop is looked at then.
                self.commits_sent += 1
                self._schedule_tick(proc, now + self.tick_ms)
            ready = proc.conn_ready_at
            at = self.net.transit(proc.id, proc.conn, True, now if now >= ready else ready)
            # A JoinGroup or SyncGroup may be parked by the coordinator past its timeout, so its
            # timeout is armed now; any other request is answered at once, and its timeout is armed
            # only when the request (here) or its answer (coordinator_results) arrives too late
            # (fewer queue entries, same outcome).
            if at is None or at >= deadline or parked:
                push(deadline, _TIMEOUT, (proc.index, proc.incarnation, out.correlation_id))
            if at is not None:
                push(at, _TO_COORD, (proc.index, proc.conn, out.correlation_id, body))
        # (a timeout armed twice fires once: the first firing removes the request from inflight)

    def arm_timeout(self, proc: ConsumerProcess, incarnation: int, correlation_id: int) -> None:
        """The answer will come too late: the member hears of it when the request times out."""
        deadline = proc.inflight.get(correlation_id)
        if deadline is not None and proc.incarnation == incarnation:
            self.q.push(deadline, _TIMEOUT, (proc.index, incarnation, correlation_id))

    def _schedule_reset(self, proc: ConsumerProcess) -> None:
        at = self.net.next_reset_ms(proc.id, self.now)
        if at is not None:
            self.q.push(at, _RESET, (proc.index, proc.conn))

    def _disconnect(self, proc: ConsumerProcess) -> None:
        """The connection closes (a request timed out, or it was reset): every request in flight on it
        fails at once (Kafka's disconnect), the client reconnects on a new connection and polls."""
        member = proc.member
        if member is None:
            return
        self.net.forget(proc.conn)
        self.broken_conns.add(proc.conn)
        proc.reconnects += 1
        proc.conn = f"{proc.id}#{proc.incarnation}.{proc.reconnects}"
        proc.conn_ready_at = self.net.reconnect_ready_ms(proc.id, self.now)
        self.conn_owner[proc.conn] = (proc.index, proc.incarnation)
        self._schedule_reset(proc)
        failed = list(proc.inflight)
        proc.inflight.clear()
        self.workload.advance(proc.load, member, self.now)
        for correlation_id in failed:
            self.send_requests(proc, member.on_request_failed(self.now, correlation_id))
        self.poll_process(proc)
        self.after_member(proc)

    def poll_process(self, proc: ConsumerProcess) -> None:
        """The application calls poll() now if it is waiting in poll(), else when its batch is done."""
        member = proc.member
        now = self.q.now_ms
        if member is None or proc.load.stalled_until_ms > now or member.error_pending:
            return  # (a poll() that throws ends the application: it does not poll again)
        at = self.workload.next_poll_ms(proc.load, now)
        if at > now:
            if proc.app_poll_at is None or proc.app_poll_at <= now or proc.app_poll_at > at:
                proc.app_poll_at = at
                self.q.push(at, _APP_POLL, (proc.index, proc.incarnation))
            return
        self.send_requests(proc, member.poll(now))

    def after_member(self, proc: ConsumerProcess) -> None:
        """Collect what a member did: callbacks, ownership, its next wake-up."""
        member = proc.member
        if member is None:
            return
        thrown = member.error_pending
        events = member.drain_events()
        if events:
            self._log_member_events(proc, events)
        if thrown or member.phase is Phase.FAILED:
            # An error Kafka's poll() throws (a FatalError; FENCED_INSTANCE_ID, which also fails the
            # member) is not caught by the simulated application: the process ends. (Kafka's consumer
            # would mostly be usable again at the next poll(); this application does not try.)
            self.log_event("process_exited", consumer=proc.id, reason="the member failed")
            self.stop_process(proc, graceful=False)
            return
        if isinstance(member, SimMember):
            self._consumer_member_checked(proc, member)
        self._refresh_claim(proc)
        if self.coasting is not None and self.coasting.keep(proc):
            return  # its next wake-up is carried out in closed form
        wake = member.next_wakeup_ms()
        if wake is not None and wake <= self.q.now_ms:
            wake = self.q.now_ms + 1  # it was just run: never spin on one millisecond
        if wake != proc.wake_at:
            proc.wake_at = wake
            proc.wake_version += 1
            if wake is not None:
                self.q.push(wake, _WAKE, (proc.index, proc.incarnation, proc.wake_version))

    def _consumer_member_checked(self, proc: ConsumerProcess, member: SimMember) -> None:
        """A consumer-protocol member's epoch never goes back, except to 0 or below (fenced and
        rejoining from 0, or leaving); it asked for metadata: the host gives it (Kafka's refresh)."""
        epoch = member.member_epoch
        if 0 < epoch < proc.epoch_seen:
            self.violation(f"{proc.id}'s member epoch went back from {proc.epoch_seen} to {epoch}")
        proc.epoch_seen = epoch
        if member.metadata_update_requested:
            self.give_metadata(proc)

    def _drain(self, proc: ConsumerProcess) -> None:
        member = proc.member
        if member is None:
            return
        events = member.drain_events()
        if events:
            self._log_member_events(proc, events)

    def _log_member_events(self, proc: ConsumerProcess, events: list[MemberEvent]) -> None:
        """The member's callbacks go to the ownership log, its other events to the event log."""
        for ev in events:
            if isinstance(ev, (OffsetsCommitted, OffsetsFetched)):
                continue  # routine; commits are counted as they are sent
            if not isinstance(ev, (PartitionsAssigned, PartitionsRevoked, PartitionsLost)):
                if log_full(self.events):
                    # (what log_event does with an entry past the cap, without first turning the
                    # event's fields into JSON data: a long run of a big group logs millions)
                    self.events_dropped += 1
                    continue
                fields = {k: jsonable(getattr(ev, k)) for k in getattr(ev, "__dataclass_fields__", {})}
                self.log_event(_snake(type(ev).__name__), consumer=proc.id, **fields)
                continue
            kind = _OWNERSHIP_KINDS[type(ev).__name__]
            if self.eos is not None and kind != "assigned" and proc.member is not None:
                # onPartitionsRevoked commits the transaction, onPartitionsLost aborts it
                if kind == "revoked":
                    self.eos.commit(proc, "revocation")
                else:
                    self.eos.lost(proc)
            parts = sorted(ev.partitions)
            generation = ev.generation
            if kind == "assigned":
                # Kafka restarts the auto-commit timer when a join completes: look again then
                self._schedule_tick(proc, self.now + self.tick_ms)
                self._check_accepted(proc)
                for tp in parts:
                    previous = self.last_owner.get(tp)
                    if previous is not None and previous != proc.id:
                        self.moved += 1
                    self.last_owner[tp] = proc.id
            last = self.ownership[-1] if self.ownership else None
            if not (
                last is not None
                and last["t_ms"] == self.now
                and last["member"] == proc.id
                and last["generation"] == generation
            ):
                last = {"t_ms": self.now, "member": proc.id, "generation": generation,
                        "assigned": [], "revoked": [], "lost": []}  # fmt: skip
                if log_full(self.ownership):
                    self.ownership_dropped += 1
                    continue
                self.ownership.append(last)
            last[kind].extend(str(tp) for tp in parts)

    def _check_accepted(self, proc: ConsumerProcess) -> None:
        """What Kafka's client guarantees (``onJoinComplete``): a member takes an assignment only if
        every partition is of a topic it subscribes to now; otherwise it rejoins without it."""
        member = proc.member
        if member is None:
            return
        topics = set(member.subscription)
        outside = sorted_partitions(tp for tp in member.assignment() if tp.topic not in topics)
        if outside:
            shown = ", ".join(map(str, outside[:5]))
            generation = member.generation
            self.violation(f"{proc.id} took {shown} in generation {generation}, outside its subscription")

    # --- ownership ------------------------------------------------------------------------------------

    def _refresh_claim(self, proc: ConsumerProcess) -> None:
        member = proc.member
        if member is None:
            return
        assigned = member.assignment()
        generation = member.generation
        member_id = member.member_id
        key = proc.claim_key
        # assignment() is the same object until the member's assignment changes: in the common case
        # nothing changed and only whether the member is settled needs a look
        if key is None or key[0] is not assigned or key[1] != generation or key[2] != member_id:
            proc.claim_key = (assigned, generation, member_id)
            current = self.group.is_current(generation, member_id)
            if key is not None and key[0] is assigned:
                # the same assignment in a new generation
                stale = proc.stale
                if current and 0 < key[1] < generation - 1 and proc.claim:
                    stale = stale | self._given_away_while_missing(proc, key[1], generation)
                self._set_claim(proc, proc.claim, current, stale)
            else:
                if key is not None and len(proc.claim) == len(assigned) and assigned == key[0]:
                    # the same partitions in a new set (a rebalance that left this member's alone):
                    # every one of them was indexed when the claim was made, so it is the claim again
                    parts = proc.claim
                else:
                    index = self.workload.index
                    parts = frozenset([index[tp] for tp in assigned if tp in index])
                if not isinstance(self.group, ConsumerGroupObserver):
                    since = proc.claim_since
                    for p in parts - proc.claim:
                        since[p] = generation
                    for p in proc.claim - parts:
                        since.pop(p, None)
                self._set_claim(proc, parts, current, frozenset())
        settled = member.phase is Phase.STABLE and self._member_settled(generation, member_id)
        if settled is not proc.settled:
            proc.settled = settled
            self.settled_count += 1 if settled else -1

    def _set_claim(
        self,
        proc: ConsumerProcess,
        parts: frozenset[int],
        current: bool,
        stale: frozenset[int] | None = None,
    ) -> None:
        """``proc`` now claims ``parts`` (``current`` or not); ``stale``: those of them that stay
        zombie claims (``None``: the ones that already did)."""
        if stale is None:
            stale = proc.stale
        same_parts = parts is proc.claim or parts == proc.claim
        if current is proc.claim_current and same_parts and stale == proc.stale:
            return
        self.own.update_claims(
            proc.id, proc.claim, parts, current, proc.claim_current, self.q.now_ms, stale, proc.stale
        )
        proc.claim = parts
        proc.claim_current = current
        proc.stale = stale

    def _given_away_while_missing(self, proc: ConsumerProcess, last: int, generation: int) -> frozenset[int]:
        """Classic: :func:`~kgroup.sim.ownership.given_away_while_missing` for ``proc``'s claim."""
        if isinstance(self.group, ConsumerGroupObserver):
            return frozenset()
        others = [(o.claim, o.claim_since) for o in self.procs if o is not proc and o.member is not None]
        return given_away_while_missing(proc.claim, others, last, generation)

    def _refresh_settled(self, proc: ConsumerProcess) -> None:
        member = proc.member
        settled = (
            member is not None
            and member.phase is Phase.STABLE
            and self._member_settled(member.generation, member.member_id)
        )
        if settled != proc.settled:
            proc.settled = settled
            self.settled_count += 1 if settled else -1

    def _member_settled(self, generation: int, member_id: str) -> bool:
        """Classic: a member of the current generation. Consumer protocol: the coordinator holds it
        reconciled to the target assignment, at the epoch the member knows."""
        group = self.group
        if isinstance(group, ConsumerGroupObserver):
            return group.is_reconciled(member_id, generation)
        return group.is_current(generation, member_id)

    def resubscribe(self) -> None:
        topics = frozenset(t for p in self.procs if p.deployed for t in p.topics)
        index = self.workload.index
        key = (topics, len(index))
        if key == self._subscribed_key:
            return  # the same topics over the same partitions: the same subscribed set
        self._subscribed_key = key
        self.own.set_subscribed(i for tp, i in index.items() if tp.topic in topics)

    def group_changed(self) -> None:
        """The generation or the member set changed: every claim may have become (non-)current."""
        group = self.group
        is_current = group.is_current
        if isinstance(group, ConsumerGroupObserver):
            for proc in self.procs:
                member = proc.member
                if member is None:
                    continue
                current = is_current(member.generation, member.member_id)
                self._set_claim(proc, proc.claim, current)
                self._refresh_settled(proc)
            return
        # classic: the same as above with the no-op calls left out (a group of a thousand changes
        # membership thousands of times): a claim whose standing is unchanged keeps it
        # (_set_claim returns at once), and a member is settled exactly when it is STABLE and current
        stable = Phase.STABLE
        for proc in self.procs:
            member = proc.member
            if member is None:
                continue
            current = is_current(member.generation, member.member_id)
            if current is not proc.claim_current:
                self._set_claim(proc, proc.claim, current)
            settled = current and member.phase is stable
            if settled is not proc.settled:
                proc.settled = settled
                self.settled_count += 1 if settled else -1

    # --- handlers -------------------------------------------------------------------------------------

    @handles(_TO_COORD)
    def _on_to_coord(self, payload: tuple[int, str, int, Request]) -> None:
        index, conn, correlation_id, body = payload
        if conn in self.broken_conns:
            return  # its connection broke (timeout, reset) while it was in transit: it is gone
        # (what a stopped process sent before it closed its socket is still delivered)
        if isinstance(body, FindCoordinatorRequest):
            # the cluster's knowledge, not the coordinator's: the simulated cluster is one broker
            reply = Reply(conn, correlation_id, SIM_COORDINATOR)
            apply_coordinator_result(self, CoordinatorResult(replies=(reply,)))
            return
        proc = self.procs[index]
        coasting = self.coasting
        if coasting is not None:
            # (what may change the group, or reads the asker's session timer, sees every round before it)
            if catches_everyone_up(body):
                coasting.catch_up_all()
            else:
                coasting.catch_up(proc)
        envelope = Envelope(conn, correlation_id, body, proc.id)
        apply_coordinator_result(self, self.coord.handle(self.q.now_ms, envelope))

    @handles(_TO_MEMBER)
    def _on_to_member(self, payload: tuple[int, str, int, Response]) -> None:
        index, conn, correlation_id, body = payload
        proc = self.procs[index]
        member = proc.member
        if member is None or proc.conn != conn:
            return  # the process or its connection is gone
        if self.coasting is not None:
            self.coasting.catch_up(proc)
        if proc.inflight.pop(correlation_id, None) is None:
            return  # it already timed out
        now = self.q.now_ms
        # A successful heartbeat or commit changes neither what the member owns nor its positions:
        # processing need not be brought up to date for it, nor the application loop woken.
        routine = isinstance(body, OffsetCommitResponse) or (
            isinstance(body, HeartbeatResponse) and body.error_code is ErrorCode.NONE
        )
        if not routine:
            self.workload.advance(proc.load, member, now)
        self.send_requests(proc, member.on_response(now, correlation_id, body))
        if routine:
            self._poll_if_needed(proc)
        else:
            self.poll_process(proc)
        self.after_member(proc)

    @handles(_TIMEOUT)
    def _on_timeout(self, payload: tuple[int, int, int]) -> None:
        index, incarnation, correlation_id = payload
        proc = self.procs[index]
        member = proc.member
        if member is None or proc.incarnation != incarnation:
            return
        if self.coasting is not None:
            self.coasting.catch_up(proc)
        deadline = proc.inflight.get(correlation_id)
        if deadline is None or deadline > self.now:
            return  # answered in time (or failed with its connection already)
        # Kafka's NetworkClient closes the connection of a timed-out request
        self._disconnect(proc)

    @handles(_RESET)
    def _on_reset(self, payload: tuple[int, str]) -> None:
        index, conn = payload
        proc = self.procs[index]
        if proc.member is None or proc.conn != conn:
            return  # that connection is closed already
        if self.coasting is not None:
            self.coasting.catch_up(proc)
        self.log_event("connection_reset", consumer=proc.id)
        self._disconnect(proc)

    @handles(_WAKE)
    def _on_wake(self, payload: tuple[int, int, int]) -> None:
        index, incarnation, version = payload
        proc = self.procs[index]
        member = proc.member
        if member is None or proc.incarnation != incarnation or proc.wake_version != version:
            return
        proc.wake_at = None
        if self.coasting is not None and self.coasting.begin(proc):
            return  # a steady round: it and the rounds after it are carried out in closed form
        now = self.q.now_ms
        # A STABLE member with nothing in flight cannot lose partitions in its heartbeat thread (a
        # session or poll timeout there only sends or resets); otherwise bring processing up to date
        # first, so that what it owned until now is processed with the assignment it had.
        if member.phase is not Phase.STABLE or member.rejoin_needed or proc.inflight:
            self.workload.advance(proc.load, member, now)
        self.send_requests(proc, member.background(now))
        self._poll_if_needed(proc)
        self.after_member(proc)

    @handles(_APP_POLL)
    def _on_app_poll(self, payload: tuple[int, int]) -> None:
        index, incarnation = payload
        proc = self.procs[index]
        member = proc.member
        if member is None or proc.incarnation != incarnation:
            return
        now = self.q.now_ms
        if proc.app_tick_at != now and proc.app_poll_at != now:
            return  # superseded
        if self.coasting is not None:
            self.coasting.catch_up(proc)
        if proc.app_tick_at == now:
            # the loop's periodic look: the next one an auto-commit interval from now
            self._schedule_tick(proc, now + self.tick_ms, replace=True)
            if self.eos is not None:
                self.workload.advance(proc.load, member, now)
                self.eos.tick(proc)
        elif proc.app_poll_at != now:
            return  # superseded
        self.workload.advance(proc.load, member, now)
        self.poll_process(proc)
        self.after_member(proc)

    def _schedule_tick(self, proc: ConsumerProcess, at: int, *, replace: bool = False) -> None:
        if replace or proc.app_tick_at is None or at < proc.app_tick_at:
            proc.app_tick_at = at
            self.q.push(at, _APP_POLL, (proc.index, proc.incarnation))

    def _poll_if_needed(self, proc: ConsumerProcess) -> None:
        """The application is inside poll() all the time, but a poll() matters only when the member
        has something to do there (a rejoin, a rebalance in progress); auto-commits and the poll
        timer are served by the loop's periodic look (:meth:`_on_app_poll`)."""
        member = proc.member
        if member is not None and (member.phase is not Phase.STABLE or member.rejoin_needed):
            self.workload.advance(proc.load, member, self.q.now_ms)
            self.poll_process(proc)

    @handles(_SAMPLE)
    def _on_sample(self, _: None) -> None:
        self._sample(self.now)
        nxt = self.now + self._sample_interval()
        if nxt < self.sc.duration_ms:
            self.q.push(nxt, _SAMPLE, None)

    def _sample(self, now: int) -> None:
        advance = self.workload.advance
        for proc in self.procs:
            member = proc.member
            if member is not None:
                advance(proc.load, member, now)
        # the group's committed offsets as the coordinator holds them (new owners start there)
        # (Workload.on_commit, inlined: ten thousand partitions a sample)
        index_of, committed = self.workload.index.get, self.workload.committed
        for tp, value in self.coord.committed_offsets(self.group_id).items():
            offset = value.offset
            if offset >= 0 and (i := index_of(tp)) is not None:
                committed[i] = offset
        subscribed = self.own.subscribed()
        committed_total, largest, unprocessed = self.workload.lag(subscribed, now)
        if self.lag and self.lag[-1].t_ms == now:
            self.lag.pop()
        self.lag.append(LagSample(now, committed_total, unprocessed))
        self.max_lag = max(self.max_lag, committed_total)
        self.max_partition_lag = max(self.max_partition_lag, largest)

    @handles(_START)
    def _on_start(self, payload: tuple[int, tuple[str, ...] | None]) -> None:
        index, assignors = payload
        self.pending_starts -= 1
        proc = self.procs[index]
        if assignors is not None:
            proc.assignors = assignors
        self.start_process(proc)

    @handles(_UNSTALL)
    def _on_unstall(self, index: int) -> None:
        proc = self.procs[index]
        member = proc.member
        if member is None or proc.load.stalled_until_ms > self.now:
            return
        if self.coasting is not None:
            self.coasting.catch_up(proc)
        self.workload.advance(proc.load, member, self.now)
        self.log_event("poll_resumed", consumer=proc.id)
        self.poll_process(proc)
        self.after_member(proc)

    @handles(_TXN_TIMER)
    def _on_txn_timer(self, timer: int) -> None:
        assert self.eos is not None
        self.eos.on_timer(timer)

    # --- scenario events (kgroup.sim.actions) -----------------------------------------------------------

    def _apply_event(self, ev: EventSpec) -> int:
        return apply_scenario_event(self, ev)

    def _apply_result(self, result: CoordinatorResult) -> None:
        apply_coordinator_result(self, result)

    # --- coasting (kgroup.sim.coasting) ------------------------------------------------------------

    def settling_horizon(self) -> int | None:
        """The earliest time an open disturbance could be resolved (its last action done; it is then
        resolved at the first step at which the group is settled), or None when none is open."""
        return min((d.ready_ms for d in self.open_disturbances), default=None)

    def _before_timer(self) -> None:
        if self.coasting is not None:
            self.coasting.catch_up_all()

    def _before_scenario_event(self) -> None:
        if self.coasting is not None:
            self.coasting.end_all()

    def group_records_observed(self) -> None:
        """The coordinator wrote records that may change the group (its state, generation or
        members): no coast goes on past them."""
        if self.coasting is not None:
            self.coasting.end_all()

    @handles(_COAST)
    def _on_look_again(self, payload: tuple[int, int]) -> None:
        if self.coasting is not None:
            self.coasting.on_look_again(payload)

    def process_named(self, name: str | None) -> ConsumerProcess:
        assert name is not None  # validated by the scenario parser
        return self.by_id[name]

    # --- after every step: invariants and stability -------------------------------------------------------

    def _after_step(self) -> None:
        own = self.own
        if own.n_double and not self._in_double:
            for p, owners in own.double_owned()[:5]:
                tp = self.workload.partitions[p]
                self.violation(f"{tp} owned by {' and '.join(owners)} in generation {self.group.generation}")
        self._in_double = own.n_double > 0
        if self.open_disturbances and self._is_settled():
            self._resolve_disturbances()

    def _is_settled(self) -> bool:
        if self.pending_starts:
            return False
        group = self.group
        if isinstance(group, ConsumerGroupObserver):
            if self.running_count == 0:
                return group.is_empty()
            return group.is_stable() and self.own.n_unowned == 0 and self.settled_count == self.running_count
        if self.running_count == 0:
            return group.state in (GroupState.EMPTY, GroupState.DEAD)
        return (
            group.state is GroupState.STABLE
            and self.own.n_unowned == 0
            and self.settled_count == self.running_count
        )

    def _is_reconciled(self) -> bool:
        """Consumer protocol: the coordinator holds the group Stable and every running member
        reconciled to its target. Unlike :meth:`_is_settled` it does not ask that every subscribed
        partition be owned: a topic whose only subscriber crashed for good stays unowned (a real cost,
        counted in unowned partition-time) in a group that has nothing left to reconcile."""
        group = self.group
        assert isinstance(group, ConsumerGroupObserver)
        if self.pending_starts:
            return False
        if self.running_count == 0:
            return group.is_empty()
        return group.is_stable() and self.settled_count == self.running_count

    # --- the result -----------------------------------------------------------------------------------

    def _result(self) -> SimResult:
        return build_result(self)


@cache
def _snake(name: str) -> str:
    out: list[str] = []
    for i, ch in enumerate(name):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def simulate(
    scenario: Scenario, progress: Callable[[int, int], None] | None = None, *, coasting: bool = True
) -> SimResult:
    """Run ``scenario`` once (a pure function of the scenario, its seed included); ``progress`` as
    :meth:`Simulation.run`; ``coasting`` as :class:`Simulation` (the same result either way). A
    ``protocol: share`` scenario runs on :mod:`kgroup.sim.share_group`."""
    if scenario.group.share_protocol:
        from kgroup.sim.share_group import simulate_share

        with relaxed_collector():
            return simulate_share(scenario, progress)
    return Simulation(scenario, coasting=coasting).run(progress)
