"""Share groups (KIP-932, ``protocol: share``) in the simulator: the fourth protocol.

Members of a share group heartbeat (ShareGroupHeartbeat) to the same pure
:class:`kgroup.group.GroupCoordinator` the broker runs, whose share kind assigns with Kafka's
``SimpleAssignor`` — members beyond the partition count share partitions, and nothing is revoked.
Records are read through Kafka's share partitions as :mod:`kgroup.share` keeps them
(``SharePartition``: acquisition under a time-limited lock, ACCEPT / RELEASE / REJECT, delivery counts,
archiving at ``share.delivery.count.limit``); the lock timers are queue events.

What is modelled around those exact parts (``docs/simulator.md``, "Share groups"):

* the log: each partition's records are produced at the workload's rate and appended in producer
  batches of 100 ms worth (at least one record); a ShareFetch reads whole batches;
* the share consumer (Kafka's ``KafkaShareConsumer``, implicit/explicit acknowledgement): its
  heartbeat thread (join with epoch 0 and an id of its own, the interval the coordinator gives,
  rejoin from epoch 0 when fenced, leave with -1 on close) and its application loop: a ShareFetch
  carrying the previous batch's acknowledgements, up to ``max_poll_records`` records acquired over
  its assigned partitions (rotated), processed at ``consume_per_consumer_per_s``, then acknowledged
  with the next fetch: ACCEPT, or — for the ``failure_share`` of deliveries and the ``poison_share``
  of records — RELEASE (redelivered) or REJECT (archived), as ``failure_action`` says;
* the broker: a fetch that finds nothing waits up to ``fetch.max.wait.ms`` (500 ms) or until a batch
  arrives; a closed connection (a crash: the kernel closes a killed process's socket) releases what
  its member holds, as Kafka 4.4's ``ShareSessionCache`` disconnect listener does; a graceful close
  acknowledges what was processed and releases the rest.

The simulator keeps its own books (:class:`kgroup.sim.share_ledger.ShareLedger`) from what the share
partitions answer, and checks after every operation: no record accepted twice, a delivery count
never above the limit, one holder at a time for an acquired record, and at the end no record lost.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any

from kgroup.group import CoordinatorConfig, CoordinatorResult, GroupCoordinator
from kgroup.group.records.share import ShareGroupMetadata
from kgroup.group.share.kind import ShareGroups
from kgroup.messages import Envelope, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
from kgroup.model import ErrorCode, TopicPartition, compress_partitions
from kgroup.share import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    CancelLockTimer,
    FetchedBatch,
    LockKey,
    PersistedPartitionState,
    ScheduleLockTimer,
    SharePartition,
    SharePartitionConfig,
    StateWrite,
)
from kgroup.sim.actions import change_subscription, scale_down
from kgroup.sim.consumer_group import metadata_image, topic_id_for
from kgroup.sim.loop import Disturbance, SimLoop, handles, log_full, scenario_network
from kgroup.sim.result import LagSample, SimResult
from kgroup.sim.scenario import ConsumerSpec, EventSpec, Scenario, scaled_ids
from kgroup.sim.scheduler import LAST_KIND, SAMPLE, START, UNSTALL, EventQueue, HostTimers
from kgroup.sim.share_ledger import LatencyHistogram, ShareLedger

__all__ = ["FETCH_MAX_WAIT_MS", "ShareSimulation", "simulate_share"]

#: the share consumer's ``fetch.max.wait.ms`` (Kafka's default): how long a fetch waits for records
FETCH_MAX_WAIT_MS = 500
#: ``retry.backoff.ms``: a failed heartbeat is sent again after this long
RETRY_BACKOFF_MS = 100
#: a producer batch holds this long's worth of records (at least one)
PRODUCER_BATCH_MS = 100
_LEAVE = -1

# queue kinds: the scenario's and the processes' (SCENARIO, START, RESTART, UNSTALL, HEAL, SAMPLE) are
# the simulator's (kgroup.sim.scheduler); these are the share group's own, numbered after its last
(
    _HB_DUE, _TO_COORD, _HB_REPLY, _HB_FAILED,
    _FETCH_AT_BROKER, _FETCH_PARKED, _FETCH_REPLY, _FETCH_FAILED,
    _BATCH_DONE, _LOCK, _DISCONNECT, _APP_FETCH, _POLL_TIMEOUT,
) = range(LAST_KIND + 1, LAST_KIND + 14)  # fmt: skip

_ACCEPT = int(AcknowledgeType.ACCEPT)
_RELEASE = int(AcknowledgeType.RELEASE)
_REJECT = int(AcknowledgeType.REJECT)


@dataclass(slots=True)
class _Fetch:
    """One ShareFetch: the acknowledgements it carries and the partitions it reads."""

    proc: int
    incarnation: int
    member_id: str
    acks: dict[int, list[AcknowledgementBatch]]
    partitions: tuple[int, ...]
    deadline_ms: int
    close: bool = False  # the session's close (ShareAcknowledge with epoch -1 on close())


@dataclass(slots=True)
class _Proc:
    """One share consumer process (``id`` stays across restarts; a restart is a new member)."""

    index: int
    id: str
    topics: tuple[str, ...]
    running: bool = False
    deployed: bool = False
    incarnation: int = 0
    member_id: str = ""
    epoch: int = 0
    joined: bool = False  # the coordinator has answered its join
    fatal: bool = False
    assignment: frozenset[int] = frozenset()  # partition indices
    sent_topics: tuple[str, ...] | None = None  # the subscription last sent
    hb_interval_ms: int = 5000
    hb_inflight: int | None = None  # correlation id
    hb_version: int = 0
    correlation: int = 0
    conn: str = ""
    fetch_conn: str = ""
    fetch_inflight: bool = False
    rotation: int = 0
    #: the batch being processed: (partition index, acquired range) and when processing ends
    batch: list[tuple[int, AcquiredRecords]] = field(default_factory=list)
    batch_started_ms: int = 0
    batch_done_ms: int = -1
    stalled_until_ms: int = -1
    stall_started_ms: int = -1
    pending_acks: dict[int, list[AcknowledgementBatch]] = field(default_factory=dict)
    started_ms: int = 0
    running_ms: int = 0
    idle_since_ms: int | None = None
    settled: bool = False
    #: left the group on its own: poll() was not called within max.poll.interval.ms (it rejoins,
    #: epoch 0 and the same member id, at its next poll())
    stale: bool = False


class ShareSimulation(SimLoop):
    """One run of one ``protocol: share`` scenario; ``ShareSimulation(scenario).run()``."""

    def __init__(self, scenario: Scenario) -> None:
        self.sc = sc = scenario
        g, w = sc.group, sc.workload
        seed = sc.seed
        self.q: EventQueue[Any] = EventQueue()
        self.net = scenario_network(sc)
        config = CoordinatorConfig(
            share_session_timeout_ms=g.share_session_timeout_ms,
            share_min_session_timeout_ms=min(g.share_session_timeout_ms, 45_000),
            share_max_session_timeout_ms=max(g.share_session_timeout_ms, 60_000),
            share_heartbeat_interval_ms=g.share_heartbeat_interval_ms,
            share_min_heartbeat_interval_ms=min(g.share_heartbeat_interval_ms, 5000),
            share_max_heartbeat_interval_ms=max(g.share_heartbeat_interval_ms, 15_000),
        )
        self.coord = GroupCoordinator(config, rng=Random(f"kgroup-sim:{seed}:coordinator"))
        self.coord_timers = HostTimers(sequence=self.q.next_seq)
        self.group_id = g.group_id
        self.sp_config = SharePartitionConfig(
            max_in_flight_records=g.share_max_record_locks,
            max_delivery_count=g.share_delivery_count_limit,
            record_lock_duration_ms=g.share_record_lock_duration_ms,
        )
        self.limit = g.share_delivery_count_limit
        self.rate = w.produce_per_partition_per_s
        self.consume_rate = w.consume_per_consumer_per_s
        self.batch_records = max(1, self.rate * PRODUCER_BATCH_MS // 1000)
        self.rng = Random(f"kgroup-sim:{seed}:share-outcomes")
        self.member_rng = Random(f"kgroup-sim:{seed}:share-members")
        self.poison_salt = Random(f"kgroup-sim:{seed}:poison").getrandbits(32)
        # partitions
        self.topic_sizes: dict[str, int] = {}
        self.partitions: list[TopicPartition] = []
        self.index: dict[TopicPartition, int] = {}
        self.created: list[int] = []
        self.sps: list[SharePartition | None] = []
        self.ledgers: list[ShareLedger | None] = []
        self.metadata_version = 0
        self.procs: list[_Proc] = []
        self.by_id: dict[str, _Proc] = {}
        self.conn_owner: dict[str, tuple[int, int]] = {}
        # outputs and counters
        self.events: list[dict[str, Any]] = []
        self.ownership: list[dict[str, Any]] = []
        self.events_dropped = 0
        self.violations: list[str] = []
        self.violation_count = 0
        self.rebalances = 0
        self.group_epoch = 0
        self.steps = 0
        self.moved = 0
        self.last_sharers: dict[int, frozenset[str]] = {}
        self.processed = 0
        self.reprocessed = 0
        self.accepted = 0
        self.archived_by = {"reject": 0, "delivery_limit": 0}
        self.redelivered_by = {"lock_timeout": 0, "release": 0, "crash": 0, "leave": 0}
        self.acks_refused = 0
        self.acks_late = 0
        self.skipped = 0
        self.latency = LatencyHistogram()
        self.member_accepted: dict[str, int] = {}
        self.idle_member_ms = 0
        self.unowned_ms = 0
        self.counting_unowned = False
        self.unowned_now = 0
        self.unowned_since = 0
        self.subscribed: set[int] = set()
        self.lag: list[LagSample] = []
        self.max_lag = 0
        self.max_partition_lag = 0
        self.disturbances: list[Disturbance] = []
        self.open_disturbances: list[Disturbance] = []
        self.pending_starts = 0
        self.running_count = 0
        self.rebalance_starts: list[int] = []
        self.stable_marks: list[int] = []
        self._was_settled = False
        #: members whose share session was closed or whose connection went: the broker acquires
        #: nothing more for them
        self.closed_members: set[str] = set()

        for name, count in sc.topics:
            self.add_topic_partitions(name, count)
        for spec in sc.consumers:
            self.new_process(spec)

    # --- set-up -----------------------------------------------------------------------------------------

    def new_process(self, spec: ConsumerSpec) -> _Proc:
        proc = _Proc(index=len(self.procs), id=spec.id, topics=spec.topics)
        self.procs.append(proc)
        self.by_id[spec.id] = proc
        return proc

    def add_topic_partitions(self, topic: str, count: int) -> None:
        first = self.topic_sizes.get(topic, 0)
        self.topic_sizes[topic] = first + count
        for p in range(first, first + count):
            tp = TopicPartition(topic, p)
            self.index[tp] = len(self.partitions)
            self.partitions.append(tp)
            self.created.append(self.q.now_ms)
            self.sps.append(None)
            self.ledgers.append(None)
        self.metadata_version += 1
        self.coord.set_metadata(metadata_image(self.topic_sizes, self.metadata_version))
        self.resubscribe()

    def resubscribe(self) -> None:
        self._account_unowned()
        topics = {t for p in self.procs if p.deployed for t in p.topics}
        self.subscribed = {i for i, tp in enumerate(self.partitions) if tp.topic in topics}
        self._refresh_unowned()

    # --- the log ----------------------------------------------------------------------------------------

    def log_end(self, i: int, now_ms: int) -> int:
        return self.rate * (now_ms - self.created[i]) // 1000

    def visible_end(self, i: int, now_ms: int) -> int:
        """The end of the last whole producer batch appended by ``now_ms``."""
        b = self.batch_records
        return self.log_end(i, now_ms) // b * b

    def batch_appended_ms(self, i: int, offset: int) -> int:
        """When the producer batch holding ``offset`` was appended."""
        b = self.batch_records
        end = (offset // b + 1) * b
        return self.created[i] + -(-end * 1000 // self.rate) if self.rate else 1 << 62

    def next_append_ms(self, i: int, now_ms: int) -> int:
        return self.batch_appended_ms(i, self.visible_end(i, now_ms))

    # --- the run ----------------------------------------------------------------------------------------

    def run(self, progress: Callable[[int, int], None] | None = None) -> SimResult:
        self._open()
        self._drive(progress)
        self._sample(self.sc.duration_ms)
        return self._result()

    # --- processes ------------------------------------------------------------------------------------

    def start_process(self, proc: _Proc) -> None:
        if proc.running:
            self.log_event("already_running", consumer=proc.id)
            return
        now = self.now
        proc.running = True
        proc.fatal = False
        proc.incarnation += 1
        # Kafka's share consumer picks its member id itself: a random Uuid, once per consumer
        raw = self.member_rng.getrandbits(128).to_bytes(16, "big")
        proc.member_id = base64.urlsafe_b64encode(raw).decode().rstrip("=")  # Uuid.toString()'s form
        proc.epoch = 0
        proc.joined = False
        proc.stale = False
        proc.assignment = frozenset()
        proc.sent_topics = None
        proc.hb_inflight = None
        proc.hb_version += 1
        proc.conn = f"{proc.id}#{proc.incarnation}"
        proc.fetch_conn = f"{proc.id}#{proc.incarnation}/fetch"
        self.conn_owner[proc.conn] = (proc.index, proc.incarnation)
        proc.fetch_inflight = False
        proc.batch = []
        proc.batch_done_ms = -1
        proc.stalled_until_ms = -1
        proc.pending_acks = {}
        proc.started_ms = now
        proc.idle_since_ms = now
        proc.settled = False
        if not proc.deployed:
            proc.deployed = True
            self.resubscribe()
        self.running_count += 1
        self._heartbeat(proc)

    def stop_process(self, proc: _Proc, graceful: bool) -> None:
        if not proc.running:
            return
        now = self.now
        if graceful:
            # close(): what was processed of the current batch is acknowledged, the rest released
            # (explicitly), the share session closed; then the member leaves the group (epoch -1)
            acks = proc.pending_acks
            proc.pending_acks = {}
            if proc.batch:
                done = self._processed_so_far(proc, now)
                self._acknowledge_batch(proc, done, into=acks)
                proc.batch = []
            self._send_fetch(proc, acks, close=True)
            if proc.joined:
                self._send_heartbeat(proc, _LEAVE)
        else:
            # kill -9: the kernel closes the sockets; the broker sees the share session's connection go
            at = self.net.transit(proc.id, proc.fetch_conn, True, now)
            if at is not None:  # (None: the FIN never gets through; the locks run out instead)
                self.q.push(at, _DISCONNECT, (proc.member_id, "crash"))
            proc.batch = []
        self._set_idle(proc, None)
        proc.running_ms += now - proc.started_ms
        proc.running = False
        proc.hb_version += 1
        proc.hb_inflight = None
        proc.fetch_inflight = False
        self.running_count -= 1
        if proc.assignment:
            self._log_ownership(proc, frozenset(), lost=True)
        proc.assignment = frozenset()
        proc.settled = False
        self._refresh_unowned()

    def _processed_so_far(self, proc: _Proc, now: int) -> int:
        """Records of the current batch processed by ``now`` (in batch order)."""
        total = sum(r.count for _, r in proc.batch)
        if proc.batch_done_ms <= now:
            return total
        spent = now - proc.batch_started_ms
        stall_lo, stall_hi = (
            max(proc.stall_started_ms, proc.batch_started_ms),
            min(proc.stalled_until_ms, now),
        )
        if stall_hi > stall_lo:
            spent -= stall_hi - stall_lo  # (nothing is processed while the loop is stuck)
        return min(total, max(0, spent) * self.consume_rate // 1000)

    # --- the heartbeat thread (ShareGroupHeartbeat) ----------------------------------------------------

    def _heartbeat(self, proc: _Proc) -> None:
        self._send_heartbeat(proc, proc.epoch)

    def _send_heartbeat(self, proc: _Proc, epoch: int) -> None:
        now = self.now
        topics: tuple[str, ...] | None = None
        if epoch == 0 or proc.sent_topics != proc.topics:
            topics = proc.topics
            proc.sent_topics = proc.topics
        proc.correlation += 1
        corr = proc.correlation
        request = ShareGroupHeartbeatRequest(self.group_id, proc.member_id, epoch, None, topics)
        if epoch != _LEAVE:
            proc.hb_inflight = corr
            proc.hb_version += 1
        at = self.net.transit(proc.id, proc.conn, True, now)
        deadline = now + self.sc.group.request_timeout_ms
        if at is None or at >= deadline:
            if epoch != _LEAVE:
                self.q.push(deadline, _HB_FAILED, (proc.index, proc.incarnation, corr))
            return
        self.q.push(at, _TO_COORD, (proc.index, proc.incarnation, proc.conn, corr, request, deadline))

    @handles(_HB_DUE)
    def _on_hb_due(self, payload: tuple[int, int, int]) -> None:
        index, incarnation, version = payload
        proc = self.procs[index]
        if not proc.running or proc.incarnation != incarnation or proc.hb_version != version:
            return
        if proc.hb_inflight is None:
            self._heartbeat(proc)

    @handles(_TO_COORD)
    def _on_to_coord(self, payload: tuple[int, int, str, int, ShareGroupHeartbeatRequest, int]) -> None:
        index, incarnation, conn, corr, request, deadline = payload
        proc = self.procs[index]
        env = Envelope(conn, corr, request, proc.id)
        result = self.coord.handle(self.now, env)
        self._apply_result(result)
        for reply in result.replies:
            if proc.incarnation != incarnation or not proc.running:
                continue  # the process that asked is gone
            at = self.net.transit(proc.id, conn, False, self.now)
            if at is None or at >= deadline:
                self.q.push(deadline, _HB_FAILED, (index, incarnation, corr))
            else:
                self.q.push(at, _HB_REPLY, (index, incarnation, corr, reply.body))

    def _apply_result(self, result: CoordinatorResult) -> None:
        if result.timers:
            self.coord_timers.apply(result.timers)
        for record in result.records:
            if isinstance(record, ShareGroupMetadata) and record.group_id == self.group_id:
                if record.value is None:
                    continue
                epoch = record.value[0]
                if epoch < self.group_epoch:
                    self.violation(f"group epoch went back from {self.group_epoch} to {epoch}")
                elif epoch > self.group_epoch:
                    self.rebalances += 1
                    self.rebalance_starts.append(self.now)
                    self.group_epoch = epoch
                    self.log_event("group_epoch", epoch=epoch)
        for task in result.tasks:
            # the share coordinator's InitializeShareGroupState: done at once
            self._apply_result(self.coord.complete(self.now, task, task.run()))

    @handles(_HB_REPLY)
    def _on_hb_reply(self, payload: tuple[int, int, int, ShareGroupHeartbeatResponse]) -> None:
        index, incarnation, corr, body = payload
        proc = self.procs[index]
        if not proc.running or proc.incarnation != incarnation or proc.hb_inflight != corr:
            return
        proc.hb_inflight = None
        now = self.now
        code = body.error_code
        if code is ErrorCode.NONE:
            if body.member_epoch < proc.epoch and body.member_epoch > 0:
                self.violation(f"{proc.id}'s member epoch went back from {proc.epoch} to {body.member_epoch}")
            proc.epoch = body.member_epoch
            proc.joined = True
            if body.heartbeat_interval_ms > 0:
                proc.hb_interval_ms = body.heartbeat_interval_ms
            if body.assignment is not None:
                names = {topic_id_for(n): n for n in self.topic_sizes}
                parts = frozenset(
                    self.index[TopicPartition(names[t.topic_id], p)]
                    for t in body.assignment
                    if t.topic_id in names
                    for p in t.partitions
                    if TopicPartition(names[t.topic_id], p) in self.index
                )
                self._set_assignment(proc, parts)
            self._schedule_heartbeat(proc, now + proc.hb_interval_ms)
            return
        if code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            # fenced: the member gives up its assignment and rejoins from epoch 0 with the same id
            self.log_event("fenced", consumer=proc.id, error=code.name)
            proc.epoch = 0
            proc.joined = False
            self._set_assignment(proc, frozenset())
            self._heartbeat(proc)
            return
        if code is ErrorCode.GROUP_MAX_SIZE_REACHED:
            self.log_event("process_exited", consumer=proc.id, reason=code.name)
            proc.fatal = True
            self.stop_process(proc, graceful=False)
            return
        self._schedule_heartbeat(proc, now + RETRY_BACKOFF_MS)

    @handles(_HB_FAILED)
    def _on_hb_failed(self, payload: tuple[int, int, int]) -> None:
        index, incarnation, corr = payload
        proc = self.procs[index]
        if not proc.running or proc.incarnation != incarnation or proc.hb_inflight != corr:
            return
        proc.hb_inflight = None
        self.log_event("heartbeat_failed", consumer=proc.id)
        self._schedule_heartbeat(proc, self.now + RETRY_BACKOFF_MS)

    def _schedule_heartbeat(self, proc: _Proc, at: int) -> None:
        proc.hb_version += 1
        self.q.push(at, _HB_DUE, (proc.index, proc.incarnation, proc.hb_version))

    def _set_assignment(self, proc: _Proc, parts: frozenset[int]) -> None:
        if parts == proc.assignment:
            return
        self._account_unowned()
        added = parts - proc.assignment
        for p in added:
            if proc.id not in self.last_sharers.get(p, frozenset()):
                self.moved += 1
        self._log_ownership(proc, parts)
        proc.assignment = parts
        for p in parts | added:
            self.last_sharers[p] = frozenset(o.id for o in self.procs if o.running and p in o.assignment)
        self._set_idle(proc, None if parts else self.now)
        self._refresh_unowned()
        if parts and not self.counting_unowned:
            self.counting_unowned = True
            self.unowned_since = self.now
        if parts and not proc.fetch_inflight and not proc.batch:
            self._maybe_fetch(proc)

    def _log_ownership(self, proc: _Proc, parts: frozenset[int], lost: bool = False) -> None:
        if log_full(self.ownership):
            return
        gained = sorted(parts - proc.assignment)
        dropped = sorted(proc.assignment - parts)
        self.ownership.append(
            {
                "t_ms": self.now,
                "member": proc.id,
                "generation": proc.epoch,
                "assigned": [str(self.partitions[p]) for p in gained],
                "revoked": [] if lost else [str(self.partitions[p]) for p in dropped],
                "lost": [str(self.partitions[p]) for p in dropped] if lost else [],
            }
        )

    def _set_idle(self, proc: _Proc, since: int | None) -> None:
        if proc.idle_since_ms is not None:
            self.idle_member_ms += self.now - proc.idle_since_ms
        proc.idle_since_ms = since

    # --- unowned partition-time -----------------------------------------------------------------------

    def _account_unowned(self) -> None:
        now = self.now
        if self.counting_unowned and now > self.unowned_since:
            self.unowned_ms += self.unowned_now * (now - self.unowned_since)
        self.unowned_since = now

    def _refresh_unowned(self) -> None:
        self._account_unowned()
        held: set[int] = set()
        for proc in self.procs:
            if proc.running:
                held |= proc.assignment
        self.unowned_now = len(self.subscribed - held)

    # --- the application loop (ShareFetch, processing, acknowledgement) -------------------------------

    def _maybe_fetch(self, proc: _Proc) -> None:
        """poll(): a ShareFetch with the acknowledgements of the last batch, from the assigned partitions."""
        if not proc.running or proc.fetch_inflight or proc.batch:
            return
        if proc.stalled_until_ms > self.now:
            return  # the application is stuck: it does not poll
        if proc.stale:
            # poll() after the poll timeout: "Member … will rejoin the group now" (epoch 0, same id)
            proc.stale = False
            self.log_event("rejoin_after_poll_timeout", consumer=proc.id)
            self._heartbeat(proc)
        if not proc.assignment and not proc.pending_acks:
            return
        acks = proc.pending_acks
        proc.pending_acks = {}
        self._send_fetch(proc, acks)

    def _send_fetch(
        self, proc: _Proc, acks: dict[int, list[AcknowledgementBatch]], close: bool = False
    ) -> None:
        now = self.now
        parts = () if close else tuple(sorted(proc.assignment))
        if not parts and not acks and not close:
            return
        fetch = _Fetch(
            proc.index,
            proc.incarnation,
            proc.member_id,
            acks,
            parts,
            now + self.sc.group.request_timeout_ms,
            close,
        )
        at = self.net.transit(proc.id, proc.fetch_conn, True, now)
        if not close:
            proc.fetch_inflight = True
        if at is None or at >= fetch.deadline_ms:
            if not close:
                self.q.push(fetch.deadline_ms, _FETCH_FAILED, fetch)
            return
        self.q.push(at, _FETCH_AT_BROKER, fetch)

    @handles(_FETCH_AT_BROKER)
    def _on_fetch_at_broker(self, fetch: _Fetch) -> None:
        now = self.now
        for i, batches in sorted(fetch.acks.items()):
            self._acknowledge(i, fetch.member_id, batches, fetch.proc, "leave" if fetch.close else "release")
        if fetch.close:
            self._release_member(fetch.member_id, "leave")
            return
        if fetch.member_id in self.closed_members:
            return
        if self._acquire_for(fetch):
            return
        # nothing to acquire: the broker waits up to fetch.max.wait.ms, or until a batch arrives
        wake = now + FETCH_MAX_WAIT_MS
        for i in fetch.partitions:
            wake = min(wake, self.next_append_ms(i, now))
        self.q.push(max(wake, now + 1), _FETCH_PARKED, fetch)

    @handles(_FETCH_PARKED)
    def _on_fetch_parked(self, fetch: _Fetch) -> None:
        if fetch.member_id in self.closed_members:
            return  # the share session went while the fetch waited
        if not self._acquire_for(fetch):
            self._reply_fetch(fetch, [])

    def _acquire_for(self, fetch: _Fetch) -> bool:
        """Acquire up to ``max_poll_records`` over the fetch's partitions (their order rotated per
        fetch); reply and return True if anything was acquired."""
        proc = self.procs[fetch.proc]
        budget = self.sc.workload.max_poll_records
        parts = fetch.partitions
        got: list[tuple[int, AcquiredRecords]] = []
        if parts:
            start = proc.rotation % len(parts)
            proc.rotation += 1
            for i in parts[start:] + parts[:start]:
                if budget <= 0:
                    break
                acquired = self._acquire(i, fetch.member_id, budget)
                for r in acquired:
                    got.append((i, r))
                    budget -= r.count
        if not got:
            return False
        self._reply_fetch(fetch, got)
        return True

    def _share_partition(self, i: int) -> SharePartition:
        sp = self.sps[i]
        if sp is None:
            # first fetch: the share partition initialises; share.auto.offset.reset decides its start
            tp = self.partitions[i]
            sp = SharePartition(self.group_id, tp.topic, tp.partition, self.sp_config)
            end = self.visible_end(i, self.now)
            start = end if self.sc.workload.auto_offset_reset == "latest" else 0
            sp.initialize(PersistedPartitionState(), reset_start_offset=start)
            self.skipped += start
            self.sps[i] = sp
            self.ledgers[i] = ShareLedger(start)
        return sp

    def _acquire(self, i: int, member_id: str, budget: int) -> list[AcquiredRecords]:
        now = self.now
        sp = self._share_partition(i)
        if not sp.can_acquire_records():
            return []
        fetch_offset = sp.next_fetch_offset()
        visible = self.visible_end(i, now)
        if fetch_offset >= visible:
            return []
        b = self.batch_records
        first = fetch_offset // b * b
        last = min(visible, first + (budget // b + 2) * b)
        batches = [FetchedBatch(o, min(o + b, last) - 1) for o in range(first, last, b)]
        result = sp.acquire(member_id, now, fetch_offset, batches, max_fetch_records=budget)
        self._lock_effects(i, result.effects)
        ledger = self.ledgers[i]
        assert ledger is not None
        tp = self.partitions[i]
        for r in result.acquired:
            if r.delivery_count > self.limit:
                self.violation(
                    f"{tp} offsets {r.first_offset}-{r.last_offset} delivered {r.delivery_count} times"
                )
            done = ledger.accepted.overlap(r.first_offset, r.last_offset + 1) + ledger.archived.overlap(
                r.first_offset, r.last_offset + 1
            )
            if done:
                self.violation(
                    f"{tp}: {done} record(s) of {r.first_offset}-{r.last_offset} delivered again after "
                    "being accepted or archived"
                )
            for o in range(r.first_offset, r.last_offset + 1):
                held = ledger.holders.get(o)
                if held is not None:
                    self.violation(f"{tp}-{o} acquired by {member_id} while {held[0]} holds it")
                ledger.holders[o] = (member_id, r.delivery_count)
                if r.delivery_count > 1:
                    why = ledger.returned.pop(o, "lock_timeout")
                    self.redelivered_by[why] = self.redelivered_by.get(why, 0) + 1
        return result.acquired

    def _reply_fetch(self, fetch: _Fetch, got: list[tuple[int, AcquiredRecords]]) -> None:
        proc = self.procs[fetch.proc]
        if not proc.running or proc.incarnation != fetch.incarnation:
            return  # nobody reads the answer: what was acquired waits for its lock (or the disconnect)
        at = self.net.transit(proc.id, proc.fetch_conn, False, self.now)
        if at is None or at >= fetch.deadline_ms:
            self.q.push(fetch.deadline_ms, _FETCH_FAILED, fetch)
            return
        self.q.push(at, _FETCH_REPLY, (fetch, got))

    @handles(_FETCH_FAILED)
    def _on_fetch_failed(self, fetch: _Fetch) -> None:
        proc = self.procs[fetch.proc]
        if not proc.running or proc.incarnation != fetch.incarnation:
            return
        if fetch.acks:
            self.log_event("share_fetch_failed", consumer=proc.id)
        proc.fetch_inflight = False
        self.q.push(self.now + RETRY_BACKOFF_MS, _APP_FETCH, (proc.index, proc.incarnation))

    @handles(_APP_FETCH)
    def _on_app_fetch(self, payload: tuple[int, int]) -> None:
        index, incarnation = payload
        proc = self.procs[index]
        if proc.running and proc.incarnation == incarnation:
            self._maybe_fetch(proc)

    @handles(_FETCH_REPLY)
    def _on_fetch_reply(self, payload: tuple[_Fetch, list[tuple[int, AcquiredRecords]]]) -> None:
        fetch, got = payload
        proc = self.procs[fetch.proc]
        if not proc.running or proc.incarnation != fetch.incarnation:
            return
        proc.fetch_inflight = False
        now = self.now
        if not got:
            self._maybe_fetch(proc)
            return
        count = sum(r.count for _, r in got)
        proc.batch = got
        proc.batch_started_ms = now
        took = -(-count * 1000 // self.consume_rate) if self.consume_rate else 1 << 40
        done = now + took
        if proc.stalled_until_ms > now:
            done += proc.stalled_until_ms - now
        proc.batch_done_ms = done
        self.q.push(done, _BATCH_DONE, (proc.index, proc.incarnation, done))
        # poll() returned this batch: the next poll() is due within max.poll.interval.ms
        self.q.push(
            now + self.sc.group.max_poll_interval_ms, _POLL_TIMEOUT, (proc.index, proc.incarnation, now)
        )

    @handles(_POLL_TIMEOUT)
    def _on_poll_timeout(self, payload: tuple[int, int, int]) -> None:
        """``max.poll.interval.ms`` passed since poll() returned the batch still being processed: the
        heartbeat thread leaves the group (Kafka's AbstractHeartbeatRequestManager, share consumers
        included: ``transitionToSendingLeaveGroup``, epoch -1) and the member has no assignment."""
        index, incarnation, started = payload
        proc = self.procs[index]
        if not proc.running or proc.incarnation != incarnation or proc.stale or not proc.batch:
            return
        if proc.batch_started_ms != started or proc.batch_done_ms <= self.now:
            return
        self.log_event(
            "poll_timeout_left", consumer=proc.id, max_poll_interval_ms=self.sc.group.max_poll_interval_ms
        )
        if proc.joined:
            self._send_heartbeat(proc, _LEAVE)
        proc.hb_version += 1  # (no more heartbeats until it rejoins)
        proc.hb_inflight = None
        proc.stale = True
        proc.joined = False
        proc.epoch = 0
        self._set_assignment(proc, frozenset())

    @handles(_BATCH_DONE)
    def _on_batch_done(self, payload: tuple[int, int, int]) -> None:
        index, incarnation, done = payload
        proc = self.procs[index]
        if (
            not proc.running
            or proc.incarnation != incarnation
            or proc.batch_done_ms != done
            or not proc.batch
        ):
            return
        if proc.stalled_until_ms > self.now:
            return  # (the unstall reschedules it)
        total = sum(r.count for _, r in proc.batch)
        self._acknowledge_batch(proc, total, into=proc.pending_acks)
        proc.batch = []
        self._maybe_fetch(proc)

    def _acknowledge_batch(
        self, proc: _Proc, processed: int, into: dict[int, list[AcknowledgementBatch]]
    ) -> None:
        """The application processed the first ``processed`` records of its batch: each is accepted,
        or — failed — released or rejected; the rest (a close mid-batch) is released."""
        w = self.sc.workload
        fail_type = _REJECT if w.failure_action == "reject" else _RELEASE
        left = processed
        plain = not w.poison_share and not w.failure_share
        for i, r in proc.batch:
            if plain and left >= r.count:
                left -= r.count
                self.processed += r.count
                if r.delivery_count > 1:
                    self.reprocessed += r.count
                into.setdefault(i, []).append(AcknowledgementBatch(r.first_offset, r.last_offset, (_ACCEPT,)))
                continue
            types: list[int] = []
            for o in range(r.first_offset, r.last_offset + 1):
                if left <= 0:
                    types.append(_RELEASE)
                    continue
                left -= 1
                self.processed += 1
                if r.delivery_count > 1:
                    self.reprocessed += 1
                failed = (w.poison_share and self._poisoned(i, o)) or (
                    w.failure_share and self.rng.random() < w.failure_share
                )
                types.append(fail_type if failed else _ACCEPT)
            into.setdefault(i, []).extend(_runs(r.first_offset, types))

    def _poisoned(self, i: int, offset: int) -> bool:
        h = (offset * 0x9E3779B1 + i * 0x85EBCA77 + self.poison_salt) & 0xFFFFFFFF
        h ^= h >> 15
        h = (h * 0x2C1B3C6D) & 0xFFFFFFFF
        h ^= h >> 12
        return h / 2**32 < self.sc.workload.poison_share

    def _acknowledge(
        self, i: int, member_id: str, batches: list[AcknowledgementBatch], proc_index: int, why: str
    ) -> None:
        sp = self.sps[i]
        ledger = self.ledgers[i]
        if sp is None or ledger is None:
            return
        now = self.now
        holders = ledger.holders
        late = sum(
            1
            for b in batches
            for o in range(max(b.first_offset, sp.start_offset), b.last_offset + 1)
            if (held := holders.get(o)) is None or held[0] != member_id
        ) + sum(max(0, min(b.last_offset + 1, sp.start_offset) - b.first_offset) for b in batches)
        if late:
            # processed after the lock ran out: the record went (or goes) to someone else too
            self.acks_late += late
        result = sp.acknowledge(member_id, now, batches)
        self._lock_effects(i, result.effects)
        if result.error is not None:
            refused = sum(b.last_offset - b.first_offset + 1 for b in batches)
            self.acks_refused += refused
            self.log_event(
                "acknowledgement_refused",
                consumer=self.procs[proc_index].id,
                partition=str(self.partitions[i]),
                records=refused,
                error=result.error.code.name,
            )
            return
        consumer = self.procs[proc_index].id
        rejected = [(b.first_offset, b.last_offset + 1) for b in batches if b.acknowledge_types == (_REJECT,)]
        self._written(i, result.write, why, consumer, rejected, acker=member_id)

    def _written(
        self,
        i: int,
        write: StateWrite | None,
        why: str,
        consumer: str | None = None,
        rejected: Sequence[tuple[int, int]] = (),
        acker: str | None = None,
    ) -> None:
        """Book what a share partition asked to persist: accepted, archived, or back to Available."""
        if write is None:
            return
        ledger = self.ledgers[i]
        assert ledger is not None
        tp = self.partitions[i]
        now = self.now
        for b in write.batches:
            lo, hi = b.first_offset, b.last_offset + 1
            for o in range(lo, hi):
                held = ledger.holders.pop(o, None)
                if acker is not None and (held is None or held[0] != acker):
                    self.violation(f"{tp}-{o} acknowledged by {acker} but held by {held and held[0]}")
            if b.delivery_state == 2:
                twice = ledger.accepted.overlap(lo, hi)
                if twice:
                    self.violation(f"{tp}: {twice} record(s) of {lo}-{hi - 1} accepted twice")
                ledger.accepted.add(lo, hi)
                n = hi - lo
                self.accepted += n
                if consumer is not None:
                    self.member_accepted[consumer] = self.member_accepted.get(consumer, 0) + n
                self._latencies(i, lo, hi, now)
            elif b.delivery_state == 4:
                again = ledger.archived.overlap(lo, hi) + ledger.accepted.overlap(lo, hi)
                if again:
                    self.violation(f"{tp}: {again} record(s) of {lo}-{hi - 1} archived after being done")
                ledger.archived.add(lo, hi)
                by_reject = sum(max(0, min(hi, e) - max(lo, s)) for s, e in rejected)
                self.archived_by["reject"] += by_reject
                self.archived_by["delivery_limit"] += hi - lo - by_reject
            elif b.delivery_state == 0:
                for o in range(lo, hi):
                    ledger.returned[o] = why

    def _latencies(self, i: int, lo: int, hi: int, now: int) -> None:
        b = self.batch_records
        o = lo
        while o < hi:
            batch_end = (o // b + 1) * b
            n = min(batch_end, hi) - o
            self.latency.add(now - self.batch_appended_ms(i, o), n)
            o += n

    def _lock_effects(self, i: int, effects: Sequence[ScheduleLockTimer | CancelLockTimer]) -> None:
        for e in effects:
            if isinstance(e, ScheduleLockTimer):
                self.q.push(e.deadline_ms, _LOCK, (i, e.key))
            # (a cancelled lock's firing is stale: the share partition ignores it)

    @handles(_LOCK)
    def _on_lock(self, payload: tuple[int, LockKey]) -> None:
        i, key = payload
        sp = self.sps[i]
        if sp is None:
            return
        result = sp.on_lock_timeout(self.now, key)
        self._lock_effects(i, result.effects)
        if result.write is not None:
            self.log_event(
                "lock_timeout",
                partition=str(self.partitions[i]),
                records=sum(b.last_offset - b.first_offset + 1 for b in result.write.batches),
            )
        self._written(i, result.write, "lock_timeout")

    def _release_member(self, member_id: str, why: str) -> None:
        self.closed_members.add(member_id)
        for i, sp in enumerate(self.sps):
            if sp is None:
                continue
            result = sp.release_acquired_records(member_id)
            self._lock_effects(i, result.effects)
            self._written(i, result.write, why)

    @handles(_DISCONNECT)
    def _on_disconnect(self, payload: tuple[str, str]) -> None:
        member_id, why = payload
        self._release_member(member_id, why)

    # --- scenario events ---------------------------------------------------------------------------

    @handles(START)
    def _on_start(self, payload: tuple[int, tuple[str, ...] | None]) -> None:
        index, _ = payload  # (a share consumer has no client-side assignors)
        self.pending_starts -= 1
        self.start_process(self.procs[index])

    @handles(UNSTALL)
    def _on_unstall(self, index: int) -> None:
        proc = self.procs[index]
        if not proc.running or proc.stalled_until_ms > self.now:
            return
        self.log_event("poll_resumed", consumer=proc.id)
        if proc.batch and proc.batch_done_ms <= self.now:
            self._on_batch_done((proc.index, proc.incarnation, proc.batch_done_ms))
        elif not proc.batch:
            self._maybe_fetch(proc)

    def _apply_event(self, ev: EventSpec) -> int:
        now = self.now
        ready = now
        kind = ev.kind
        if kind == "scale":
            if ev.count > 0:
                assert ev.topics is not None
                new = scaled_ids(ev, self.by_id)
                self.log_event("scale", count=ev.count, consumers=new)
                for name in new:
                    self.start_process(self.new_process(ConsumerSpec(id=name, topics=ev.topics)))
            else:
                scale_down(self, ev, [p for p in self.procs if p.deployed and p.running])
        elif kind == "add_partitions":
            assert ev.topic is not None
            self.log_event("add_partitions", topic=ev.topic, count=ev.count)
            self.add_topic_partitions(ev.topic, ev.count)
        elif kind == "subscribe":
            proc = change_subscription(self, ev)
            if proc.running and proc.joined and proc.hb_inflight is None:
                self._heartbeat(proc)  # the subscription changed: Kafka's heartbeat goes out at once
        elif kind == "slow_poll":
            self.log_event("slow_poll", consumer=ev.consumer, duration_ms=ev.duration_ms)
            proc = self.process_named(ev.consumer)
            if proc.running:
                until = now + ev.duration_ms
                proc.stall_started_ms = now
                proc.stalled_until_ms = until
                if proc.batch and proc.batch_done_ms > now:
                    # the batch's processing stops for the stall and resumes after it
                    proc.batch_done_ms += ev.duration_ms
                    self.q.push(
                        proc.batch_done_ms, _BATCH_DONE, (proc.index, proc.incarnation, proc.batch_done_ms)
                    )
                self.q.push(until, UNSTALL, proc.index)
            ready = now + ev.duration_ms
        return ready

    def process_named(self, name: str | None) -> _Proc:
        assert name is not None
        return self.by_id[name]

    # --- after every step: settled? -----------------------------------------------------------------

    def _after_step(self) -> None:
        if not self.open_disturbances and self._was_settled:
            return
        settled = self._is_settled()
        if settled and not self._was_settled:
            self.stable_marks.append(self.now)
        self._was_settled = settled
        if settled:
            self._resolve_disturbances()

    def _group(self) -> Any:
        kind = self.coord.kind(ShareGroups)
        return kind.ctx.groups.get(self.group_id)

    def _is_settled(self) -> bool:
        """Every running member holds the coordinator's current assignment at the group epoch, and
        every subscribed partition is assigned to someone."""
        if self.pending_starts:
            return False
        group = self._group()
        if self.running_count == 0:
            return group is None or not group.members
        if group is None or group.assignment_epoch != group.group_epoch:
            return False
        for proc in self.procs:
            if not proc.running:
                continue
            member = group.members.get(proc.member_id)
            if (
                member is None
                or member.member_epoch != group.group_epoch
                or proc.epoch != member.member_epoch
            ):
                return False
        return self.unowned_now == 0

    # --- samples and the result ---------------------------------------------------------------------

    @handles(SAMPLE)
    def _on_sample(self, _: None) -> None:
        self._sample(self.now)
        interval = self.sc.workload.sample_interval_ms or max(1000, self.sc.duration_ms // 300)
        if self.now + interval < self.sc.duration_ms:
            self.q.push(self.now + interval, SAMPLE, None)

    def _sample(self, now: int) -> None:
        """Share-group lag: records past the start offset not yet acknowledged or archived."""
        total = largest = 0
        for i in self.subscribed:
            sp = self.sps[i]
            end = self.visible_end(i, now)
            if sp is None:
                continue
            lag = end - sp.start_offset - sp.delivery_complete_count()
            total += lag
            largest = max(largest, lag)
        if self.lag and self.lag[-1].t_ms == now:
            self.lag.pop()
        self.lag.append(LagSample(now, total, total))
        self.max_lag = max(self.max_lag, total)
        self.max_partition_lag = max(self.max_partition_lag, largest)

    def _check_nothing_lost(self) -> None:
        """Every record below a partition's start offset was accepted or archived, never both."""
        for i, sp in enumerate(self.sps):
            ledger = self.ledgers[i]
            if sp is None or ledger is None:
                continue
            tp = self.partitions[i]
            lo, hi = ledger.first_start, sp.start_offset
            both = sum(ledger.archived.overlap(s, e) for s, e in ledger.accepted.runs())
            if both:
                self.violation(f"{tp}: {both} record(s) both accepted and archived")
            done = ledger.accepted.overlap(lo, hi) + ledger.archived.overlap(lo, hi)
            if done - both != max(0, hi - lo):
                self.violation(
                    f"{tp}: {hi - lo - done + both} record(s) below the start offset {hi} were "
                    "neither accepted nor archived (lost)"
                )

    def _result(self) -> SimResult:
        end = self.sc.duration_ms
        self.q.now_ms = end
        self._account_unowned()
        self._check_nothing_lost()
        final: dict[str, str] = {}
        idle = 0
        per_member_rate: dict[str, float] = {}
        for proc in self.procs:
            ms = proc.running_ms + (end - proc.started_ms if proc.running else 0)
            if proc.running:
                final[proc.id] = compress_partitions(self.partitions[p] for p in proc.assignment)
                if not proc.assignment:
                    idle += 1
                self._set_idle(proc, proc.idle_since_ms if proc.idle_since_ms is None else end)
            if ms > 0:
                per_member_rate[proc.id] = round(self.member_accepted.get(proc.id, 0) * 1000 / ms, 1)
        produced = sum(self.log_end(i, end) for i in range(len(self.partitions)))
        in_flight = 0
        for sp in self.sps:
            if sp is not None:
                in_flight += sp.in_flight_records - sp.delivery_complete_count()
        group = self._group()
        times = [None if d.resolved_ms is None else d.resolved_ms - d.start_ms for d in self.disturbances]
        metrics: dict[str, Any] = {
            "rebalances": self.rebalances,
            "generation": self.group_epoch,
            "unowned_partition_ms": self.unowned_ms,
            "double_owned_ms": 0,
            "zombie_owned_ms": 0,
            "moved_partitions": self.moved,
            "time_to_stable_ms": times,
            "max_lag_records": self.max_lag,
            "records_produced": produced,
            "records_processed": self.processed,
            "records_reprocessed": self.reprocessed,
            "invariant_violations": list(self.violations),
            "invariant_violation_count": self.violation_count,
            "max_partition_lag_records": self.max_partition_lag,
            "zombie_overlap_ms": 0,
            "outside_subscription_ms": 0,
            "records_skipped": self.skipped,
            "final_group_state": group.state.kafka_name if group is not None else "Dead",
            "final_protocol": "simple",
            "running_consumers": self.running_count,
            "idle_consumers": idle,
            "final_assignment": final,
            "offset_commits_sent": 0,
            "steps": self.steps,
            # share groups (docs/simulator.md, "Share groups")
            "protocol": "share",
            "records_accepted": self.accepted,
            "records_archived": sum(self.archived_by.values()),
            "records_archived_by": dict(self.archived_by),
            "records_redelivered": sum(self.redelivered_by.values()),
            "records_redelivered_by": dict(self.redelivered_by),
            "acknowledgements_refused": self.acks_refused,
            "records_acknowledged_late": self.acks_late,
            "records_in_flight_at_end": in_flight,
            "delivery_latency_ms": self.latency.summary(),
            "idle_member_ms": self.idle_member_ms,
            "member_records_accepted": {p.id: self.member_accepted.get(p.id, 0) for p in self.procs},
            "member_accepted_per_s": per_member_rate,
            "settled_at_end": self._is_settled(),
        }
        if self.events_dropped:
            metrics["events_dropped"] = self.events_dropped
        return SimResult(
            scenario=self.sc,
            metrics=metrics,
            ownership=self.ownership,
            events=self.events,
            partitions=[str(tp) for tp in self.partitions],
            consumers=[p.id for p in self.procs],
            intervals=[],
            lag=self.lag,
            rebalance_starts=self.rebalance_starts,
            stable_marks=self.stable_marks,
            recovery_ms=[
                None if d.resolved_ms is None else d.resolved_ms - d.ready_ms for d in self.disturbances
            ],
        )


def _runs(first: int, types: list[int]) -> list[AcknowledgementBatch]:
    """Acknowledgement batches, one per run of the same type (as a share consumer sends them)."""
    out: list[AcknowledgementBatch] = []
    start = 0
    for k in range(1, len(types) + 1):
        if k == len(types) or types[k] != types[start]:
            out.append(AcknowledgementBatch(first + start, first + k - 1, (types[start],)))
            start = k
    return out


def simulate_share(scenario: Scenario, progress: Callable[[int, int], None] | None = None) -> SimResult:
    """Run a ``protocol: share`` scenario (a pure function of it, its seed included)."""
    return ShareSimulation(scenario).run(progress)
