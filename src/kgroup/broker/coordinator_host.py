"""The coordinator host: the broker's side of :class:`kgroup.group.GroupCoordinator`.

One coordinator per broker node, each owning the groups whose offsets-topic partition
(``abs(hashCode(group.id)) % offsets.topic.num.partitions``) that broker leads. The host runs on the
coordinators' own thread and event loop (:mod:`kgroup.broker.coordinator_runtime`), never on the
loop that serves connections; what it knows of the cluster is what the broker hands it
(:class:`CoordinatorPlacement`, the metadata image). This host is what the simulator also is:

* ``now_ms`` is the wall clock in milliseconds (records carry commit timestamps that must survive a
  restart); the coordinator's timers live in one :class:`kgroup.group.TimerTable` per coordinator
  and fire from a task on the coordinators' loop;
* **persist, then apply**: the records of a call are encoded with
  :mod:`kgroup.group.records.serde` and appended to the coordinator log (durable when ``append``
  returns) before any reply of that call is released; if the write fails, the coordinator is rebuilt
  from the log — undoing the call — and the requests of the call are answered with
  COORDINATOR_NOT_AVAILABLE;
* **any exception rolls back**: a call (or timer, or task) that raises after it applied records is
  undone the same way, its requests answered UNKNOWN_SERVER_ERROR as Kafka answers an unexpected
  error, and every other group goes on;
* on start, and whenever a broker stops or starts, every coordinator is rebuilt **by replaying the
  log** — recovery, failover and rollback are one code path; a coordinator that takes a group over
  (start, failover) restarts its members' sessions from now, as Kafka's loading does;
* the coordinator's **tasks** (regex resolution) run in a thread of their own and come back through
  ``GroupCoordinator.complete``, as Kafka's ``CoordinatorExecutor`` runs them;
* the log is compacted by **checkpoints**: once it has grown past ``coordinator_checkpoint_min_bytes``
  and twice its size after the last checkpoint, the codec thread replays it up to that point into a
  scratch coordinator and writes the records that rebuild that state (``GroupCoordinator.checkpoint``),
  and the host swaps the new file in with the frames appended meanwhile copied after it.

A request waits until the coordinator's reply for its correlation id arrives: at once, or when a
parked JoinGroup/SyncGroup completes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import struct
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from random import Random
from typing import Any, Protocol

from kgroup.broker.internal_topic import OffsetsEntry, OffsetsTopicRecords
from kgroup.broker.logapi import CoordinatorLogLike
from kgroup.group import (
    ClassicGroups,
    CoordinatorConfig,
    CoordinatorResult,
    GroupCoordinator,
    GroupView,
    TimerTable,
)
from kgroup.group.discovery import coordinator_partition
from kgroup.group.metadata import EMPTY_IMAGE, MetadataImage
from kgroup.group.records.serde import decode_record, encode_record
from kgroup.group.timers import ScheduleTimer
from kgroup.group.txn import CoordinatorTask
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribedGroup,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Envelope,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Request,
    Response,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from kgroup.model import ErrorCode, PeerError, TopicId
from kgroup.wire.apis import heartbeat as heartbeat_api
from kgroup.wire.apis import join_group as join_group_api
from kgroup.wire.apis import leave_group as leave_group_api
from kgroup.wire.apis import offset_commit as offset_commit_api
from kgroup.wire.apis import offset_fetch as offset_fetch_api
from kgroup.wire.apis import sync_group as sync_group_api
from kgroup.wire.apis import txn_offset_commit as txn_offset_commit_api
from kgroup.wire.consumer_group import (
    consumer_group_describe_error_answer,
    consumer_group_heartbeat_error_answer,
)
from kgroup.wire.share_group import share_group_describe_error_answer, share_group_heartbeat_error_answer

__all__ = [
    "CoordinatorHost",
    "CoordinatorPlacement",
    "OffLoop",
    "error_response",
    "make_checkpoint",
]

log = logging.getLogger("kgroup.broker")


#: request type -> its answer carrying only an error code: each group API's, beside its translation
#: (DescribeGroups and ListGroups, which the broker answers with version-free data, here)
_ERROR_ANSWERS: dict[type, Callable[[Any, ErrorCode], Response]] = {
    JoinGroupRequest: join_group_api.error_answer,
    SyncGroupRequest: sync_group_api.error_answer,
    HeartbeatRequest: heartbeat_api.error_answer,
    LeaveGroupRequest: leave_group_api.error_answer,
    OffsetCommitRequest: offset_commit_api.error_answer,
    OffsetFetchRequest: offset_fetch_api.error_answer,
    TxnOffsetCommitRequest: txn_offset_commit_api.error_answer,
    ConsumerGroupHeartbeatRequest: consumer_group_heartbeat_error_answer,
    ConsumerGroupDescribeRequest: consumer_group_describe_error_answer,
    ShareGroupHeartbeatRequest: share_group_heartbeat_error_answer,
    ShareGroupDescribeRequest: share_group_describe_error_answer,
    DescribeGroupsRequest: lambda body, code: DescribeGroupsResponse(
        tuple(DescribedGroup(code, g, "", "", "") for g in body.groups)
    ),
    ListGroupsRequest: lambda body, code: ListGroupsResponse(code),
}


def error_response(body: Request, code: ErrorCode) -> Response:
    """The answer to ``body`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    answer = _ERROR_ANSWERS.get(type(body))
    if answer is None:
        raise TypeError(f"no error answer for {type(body).__name__}")
    return answer(body, code)


#: a timer whose work failed (and was undone) fires again after this long
_RETRY_MS = 500
#: records per frame of a checkpoint (frames are replayed whole: a bounded size keeps reads small)
_CHECKPOINT_FRAME_RECORDS = 1000


def make_checkpoint(coordinator_log: CoordinatorLogLike, since: int, config: CoordinatorConfig) -> int:
    """Write the records that rebuild the state the log holds up to position ``since`` to the log's
    checkpoint file; the bytes written. Runs in the codec thread: the log's file is read through a
    descriptor of its own, and a scratch coordinator holds every group (whichever broker leads it);
    nothing of the broker's is touched."""
    scratch = GroupCoordinator(config, rng=Random(0))
    for entries in coordinator_log.read_frames(since):
        for key, value in entries:
            scratch.replay(decode_record(key, value))
    records = iter(scratch.checkpoint())

    def frames() -> Iterator[list[tuple[bytes, bytes | None]]]:
        while batch := [encode_record(r) for r in itertools.islice(records, _CHECKPOINT_FRAME_RECORDS)]:
            yield batch

    return coordinator_log.write_checkpoint(frames())


class OffLoop(Protocol):
    """Runs a pure function in the broker's codec thread (``Broker.off_loop``)."""

    def __call__(self, function: Callable[..., Any], /, *args: Any) -> Awaitable[Any]: ...


#: (group id, key, value, producer) of the records Kafka writes to ``__consumer_offsets``
OffsetsEntries = list[OffsetsEntry]


@dataclass(frozen=True, slots=True)
class CoordinatorPlacement:
    """Which broker coordinates which group, as the cluster sees it when the host is told: the live
    brokers and the leader of each ``__consumer_offsets`` partition (-1: none)."""

    alive: frozenset[int]
    leaders: tuple[int, ...]

    def coordinator_for(self, group_id: str) -> int:
        return self.leaders[coordinator_partition(group_id, len(self.leaders))]


class CoordinatorHost:
    """One :class:`GroupCoordinator` per live broker node, their timers, tasks and the coordinator
    log, driven from the coordinators' own event loop.

    It is given what it uses, nothing more: the coordinators' config, the coordinator log, the clock,
    where groups live (:class:`CoordinatorPlacement`), the codec thread (``off_loop``) for checkpoints,
    a thread for tasks (``run_task``) and where to send what ``__consumer_offsets`` shows
    (``publish_offsets``, called with the records' time and entries once they are in the log).
    """

    def __init__(
        self,
        config: CoordinatorConfig,
        coordinator_log: CoordinatorLogLike,
        *,
        clock_ms: Callable[[], int],
        placement: CoordinatorPlacement,
        off_loop: OffLoop,
        checkpoint_min_bytes: int,
        run_task: Callable[[CoordinatorTask], Awaitable[object]] | None = None,
        publish_offsets: Callable[[int, OffsetsEntries], None] | None = None,
        flush_interval_ms: int | None = None,
    ) -> None:
        self.config = config
        self.coordinator_log = coordinator_log
        self.clock_ms = clock_ms
        self.placement = placement
        self._off_loop = off_loop
        self._run_task = run_task
        self._publish_offsets = publish_offsets
        self._flush_interval_ms = flush_interval_ms
        # member ids come from the coordinator's Random: seeded per process so that ids differ
        # between runs, as Kafka's UUIDs do
        self._rng = Random(clock_ms())
        self.coordinators: dict[int, GroupCoordinator] = {}
        self.timers: dict[int, TimerTable] = {}
        self._waiting: dict[tuple[str, int], asyncio.Future[Response]] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._timers_changed: asyncio.Event | None = None
        self.recorder: Any = None  # kgroup.broker.recorder.GroupRecorder when --record is given
        self.offsets_records = OffsetsTopicRecords()  # __consumer_offsets, readable
        self.checkpoint_min_bytes = checkpoint_min_bytes
        self.checkpoints = 0  # made since start
        self.rollbacks = 0  # calls undone since start
        self._checkpoint_base = 0  # the log's size after the last checkpoint
        self._checkpointing: asyncio.Task[None] | None = None
        self._image: MetadataImage = EMPTY_IMAGE
        #: the coordinators have replayed the log (until then the runtime answers LOAD_IN_PROGRESS)
        self.loaded = False

    # --- lifecycle and rebuilding -----------------------------------------------------------------

    def start(self) -> None:
        """Load every group (replay the log) and start the timers; on the coordinators' loop."""
        self._timers_changed = asyncio.Event()
        self.rebuild()
        self.loaded = True
        self._spawn(self._run_timers())
        if self._flush_interval_ms is not None:
            self._spawn(self._flush_periodically(self._flush_interval_ms))

    async def close(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._checkpointing is not None:  # let it finish: its file is swapped in or removed
            await asyncio.gather(self._checkpointing, return_exceptions=True)
        for future in self._waiting.values():
            if not future.done():
                future.cancel()
        self._waiting.clear()
        self.coordinator_log.flush()

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _topic_name(self, topic_id: TopicId) -> str | None:
        topic = self._image.by_id.get(topic_id)
        return None if topic is None else topic.name

    def metadata_image(self) -> MetadataImage:
        return self._image

    def set_image(self, image: MetadataImage) -> None:
        """A topic was created or deleted: every coordinator gets the new image (Kafka's
        ``onMetadataUpdate``); a group subscribed to a changed topic sees it at its next heartbeat."""
        self._image = image
        for coordinator in self.coordinators.values():
            coordinator.set_metadata(image)

    def rebuild(self, *, load: bool = True) -> None:
        """Every live broker's coordinator, rebuilt by replaying the coordinator log.

        A coordinator that takes a group over (at start, or from a broker that stopped or started)
        restarts its members' sessions from now (``GroupCoordinator.load``), as Kafka's coordinator
        does when it loads an offsets-topic partition. A rollback (``load=False``) keeps the log's
        deadlines.
        """
        placement = self.placement
        previous = {group_id: node for node, c in self.coordinators.items() for group_id in c.group_ids()}
        coordinators = {n: GroupCoordinator(self.config, rng=self._rng) for n in sorted(placement.alive)}
        for new in coordinators.values():
            new.set_metadata(self._image)
        owner: dict[str, int] = {}
        count = 0
        for key, value in self.coordinator_log.replay():
            record = decode_record(key, value)
            group_id = record.group_id
            node = owner.get(group_id)
            if node is None:
                node = owner[group_id] = placement.coordinator_for(group_id)
            coordinator = coordinators.get(node)
            if coordinator is not None:
                coordinator.replay(record)
                count += 1
        self.coordinators = coordinators
        self.timers = {node: TimerTable.from_armed(c.armed_timers()) for node, c in coordinators.items()}
        if count:
            log.info("rebuilt %d group(s) from %d coordinator record(s)", len(owner), count)
        self._wake_timers()
        if load:
            now = self.clock_ms()
            for node, coordinator in coordinators.items():
                taken = [g for g in coordinator.group_ids() if previous.get(g) != node]
                if taken:
                    self.apply(node, coordinator.load(now, taken))

    def set_placement(self, placement: CoordinatorPlacement) -> None:
        """A broker stopped or started: its groups move; the old coordinator's parked requests get
        NOT_COORDINATOR (``unload``, whose records describe losing the groups, not the groups, and are
        not persisted); then every coordinator is rebuilt from the log."""
        self.placement = placement
        now = self.clock_ms()
        for node, coordinator in self.coordinators.items():
            if node not in placement.alive:
                self._release(coordinator.unload(now).replies)
        self.rebuild()

    # --- handling requests ------------------------------------------------------------------------

    async def call(self, node_id: int, envelope: Envelope) -> Response:
        """Hand one request to the coordinator of ``node_id`` and wait for its answer."""
        return await self.submit(node_id, envelope)

    def submit(self, node_id: int, envelope: Envelope) -> asyncio.Future[Response]:
        """Hand one request to the coordinator of ``node_id`` now — handled, its records written
        (:meth:`apply`) before this returns — and the future of its answer: done already unless the
        coordinator parked the request (a JoinGroup until its rebalance completes). Raises
        :class:`~kgroup.model.PeerError` for a request Kafka could not have read."""
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        coordinator = self.coordinators.get(node_id)
        if coordinator is None:
            future.set_result(error_response(envelope.body, ErrorCode.NOT_COORDINATOR))
            return future
        key = (envelope.connection, envelope.correlation_id)
        self._waiting[key] = future
        future.add_done_callback(functools.partial(self._forget, key))
        try:
            result = coordinator.handle(self.clock_ms(), envelope)
        except PeerError:
            # a request Kafka could not have read: the connection is closed, nothing may stay applied
            self._waiting.pop(key, None)
            self._undo_if_applied(node_id, coordinator, (), ErrorCode.UNKNOWN_SERVER_ERROR)
            raise
        except Exception:
            log.exception("the coordinator failed on %s; undoing it", type(envelope.body).__name__)
            self._undo_if_applied(node_id, coordinator, (envelope,), ErrorCode.UNKNOWN_SERVER_ERROR)
            if not future.done():
                future.set_result(error_response(envelope.body, ErrorCode.UNKNOWN_SERVER_ERROR))
        else:
            self.apply(node_id, result, (envelope,))
        return future

    def _forget(self, key: tuple[str, int], future: asyncio.Future[Response]) -> None:
        """A request was answered (or its asker went away): it waits no more."""
        if self._waiting.get(key) is future:
            del self._waiting[key]

    def _undo_if_applied(
        self,
        node_id: int,
        coordinator: GroupCoordinator,
        requests: tuple[Envelope, ...],
        code: ErrorCode,
    ) -> None:
        """A call raised: if it had applied records (which are not in the log), rebuild from the log."""
        if coordinator.failed_call_applied():
            self._roll_back(requests, code)
        else:
            for envelope in requests:
                answer = error_response(envelope.body, code)
                self._answer(envelope.connection, envelope.correlation_id, answer)

    def apply(self, node_id: int, result: CoordinatorResult, requests: tuple[Envelope, ...] = ()) -> None:
        """Persist the result's records, then its timers, then release its replies, then start its
        tasks.

        Nothing of the call is visible before its records are written: ``handle`` and ``apply`` run
        without a suspension point between them, and a call whose records cannot be encoded or
        written is undone (the coordinator is rebuilt from the log) before anything else runs.
        """
        if result.records:
            try:
                entries = [encode_record(record) for record in result.records]
            except (ValueError, OverflowError, struct.error) as exc:
                # Kafka fails such a write (its serializer throws) and answers UNKNOWN_SERVER_ERROR;
                # the handlers refuse the inputs known to lead here before they reach the coordinator
                log.error("a coordinator record cannot be encoded (%s): rolling back by replaying", exc)
                self._roll_back(requests, ErrorCode.UNKNOWN_SERVER_ERROR)
                return
            try:
                self.coordinator_log.append(entries)
            except OSError as exc:
                log.error("coordinator log write failed (%s): rolling back by replaying the log", exc)
                self._roll_back(requests, ErrorCode.COORDINATOR_NOT_AVAILABLE)
                return
            self._maybe_checkpoint()
            now = self.clock_ms()
            view = self._view_of(node_id)
            if self.recorder is not None:
                self.recorder.on_records(now, result.records, view, requests, self._topic_name)
            if self._publish_offsets is not None:
                offsets = self.offsets_records.kafka_records(result.records, view)
                if offsets:
                    self._publish_offsets(now, offsets)
        if result.timers:
            timers = self.timers.get(node_id)
            if timers is not None:
                timers.apply(result.timers)
                self._wake_timers()
        self._release(result.replies)
        for task in result.tasks:
            self._spawn(self._complete(task))

    async def _complete(self, task: CoordinatorTask) -> None:
        """Run one task apart, then hand what it found to the group's coordinator (whichever broker
        coordinates the group by then); a task that fails completes with nothing, as Kafka logs it."""
        try:
            if self._run_task is not None:
                outcome = await self._run_task(task)
            else:
                outcome = task.run()
        except Exception:
            log.exception("coordinator task %s failed", type(task).__name__)
            outcome = None
        node = self.placement.coordinator_for(task.group_id)
        coordinator = self.coordinators.get(node)
        if coordinator is None:
            return
        try:
            result = coordinator.complete(self.clock_ms(), task, outcome)
        except Exception:
            log.exception("the coordinator failed completing %s; undoing it", type(task).__name__)
            self._undo_if_applied(node, coordinator, (), ErrorCode.UNKNOWN_SERVER_ERROR)
            return
        self.apply(node, result)

    def _maybe_checkpoint(self) -> None:
        size = self.coordinator_log.size
        if self._checkpointing is None and size > max(self.checkpoint_min_bytes, 2 * self._checkpoint_base):
            self._checkpointing = asyncio.get_running_loop().create_task(self._checkpoint())

    async def _checkpoint(self) -> None:
        log_ = self.coordinator_log
        since = log_.size
        try:
            written = await self._off_loop(make_checkpoint, log_, since, self.config)
            copied = log_.replace_with(log_.checkpoint_path, since)
            self.checkpoints += 1
            log.info(
                "coordinator log checkpoint: %d bytes became %d, then %d bytes appended meanwhile",
                since,
                written,
                copied,
            )
        except Exception:  # the log stays as it is: nothing is lost, it is only larger
            log.exception("coordinator log checkpoint failed; the log is kept as it is")
        finally:
            self._checkpoint_base = log_.size  # the next one once it has doubled again
            self._checkpointing = None

    def _roll_back(self, requests: Sequence[Envelope], code: ErrorCode) -> None:
        self.rollbacks += 1
        self.rebuild(load=False)  # undoing a call is not a takeover: sessions keep their deadlines
        for envelope in requests:
            self._answer(envelope.connection, envelope.correlation_id, error_response(envelope.body, code))

    def _view_of(self, node_id: int) -> Callable[[str], GroupView | None]:
        def view(group_id: str) -> GroupView | None:
            coordinator = self.coordinators.get(node_id)
            if coordinator is None or not coordinator.has_group(group_id):
                return None
            return coordinator.kind(ClassicGroups).group(group_id)

        return view

    def _release(self, replies: Any) -> None:
        for reply in replies:
            self._answer(reply.connection, reply.correlation_id, reply.body)

    def _answer(self, connection: str, correlation_id: int, body: Response) -> None:
        future = self._waiting.get((connection, correlation_id))
        if future is not None and not future.done():
            future.set_result(body)
        # else: the connection that asked is gone (Kafka drops such a response too)

    def end_transaction(self, partition: int, producer_id: int, committed: bool) -> bool:
        """A transaction's marker reached ``__consumer_offsets``-``partition``: every coordinator ends
        the producer's pending offsets of that partition's groups; False when that could not be
        written (the marker is then tried again)."""
        now = self.clock_ms()
        count = len(self.placement.leaders)
        rollbacks = self.rollbacks
        for node, coordinator in list(self.coordinators.items()):
            if not coordinator.pending_offsets:
                continue
            try:
                result = coordinator.end_transaction(
                    now, producer_id, committed, lambda g: coordinator_partition(g, count) == partition
                )
            except Exception:
                log.exception("the coordinator failed ending producer %d's offsets; undoing it", producer_id)
                self._undo_if_applied(node, coordinator, (), ErrorCode.UNKNOWN_SERVER_ERROR)
                return False
            self.apply(node, result)
        return self.rollbacks == rollbacks

    def delete_group(self, node_id: int, group_id: str) -> ErrorCode:
        coordinator = self.coordinators.get(node_id)
        if coordinator is None:
            return ErrorCode.NOT_COORDINATOR
        try:
            code, result = coordinator.delete_group(self.clock_ms(), group_id)
        except Exception:
            log.exception("the coordinator failed deleting group %s; undoing it", group_id)
            self._undo_if_applied(node_id, coordinator, (), ErrorCode.UNKNOWN_SERVER_ERROR)
            return ErrorCode.UNKNOWN_SERVER_ERROR
        self.apply(node_id, result)
        return code

    # --- timers and the log's interval fsync --------------------------------------------------------

    def _wake_timers(self) -> None:
        if self._timers_changed is not None:
            self._timers_changed.set()

    async def _run_timers(self) -> None:
        assert self._timers_changed is not None
        while True:
            deadlines = [d for t in self.timers.values() if (d := t.next_deadline()) is not None]
            self._timers_changed.clear()
            now = self.clock_ms()
            if deadlines and min(deadlines) <= now:
                self._fire_due(now)
                await asyncio.sleep(0)  # a long run of due timers lets the calls queued meanwhile in
                continue
            timeout = (min(deadlines) - now) / 1000 if deadlines else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._timers_changed.wait(), timeout)

    def _fire_due(self, now: int) -> None:
        for node, table in list(self.timers.items()):
            while (key := table.pop_due(now)) is not None:
                coordinator = self.coordinators.get(node)
                if coordinator is None or self.timers.get(node) is not table:
                    break  # rebuilt meanwhile
                try:
                    result = coordinator.on_timer(now, key)
                except Exception:  # a bug: undo it, keep every other group alive
                    log.exception("coordinator timer %s failed; undoing it, again in %d ms", key, _RETRY_MS)
                    self._undo_if_applied(node, coordinator, (), ErrorCode.UNKNOWN_SERVER_ERROR)
                    # (rebuilt, the key is armed again: it fires after a pause, not in a loop)
                    rebuilt = self.timers.get(node)
                    armed = {t.key for t in self.coordinators[node].armed_timers()} if rebuilt else set()
                    if rebuilt is not None and key in armed:
                        rebuilt.apply((ScheduleTimer(key, now + _RETRY_MS),))
                    break  # the tables may have been rebuilt
                self.apply(node, result)

    async def _flush_periodically(self, interval_ms: int) -> None:
        """``--fsync interval``: the coordinator log is fsynced here, on its own thread."""
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                self.coordinator_log.flush()
            except OSError:
                log.exception("interval fsync of the coordinator log failed")
