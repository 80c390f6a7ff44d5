"""The share-partition host: Kafka 4.4.0's ``SharePartitionManager`` and share coordinator on
``kgroup serve``, over the pure :mod:`kgroup.share`.

* one :class:`~kgroup.share.SharePartition` per (share group, topic id, partition), made at its first
  ShareFetch and initialised from the share coordinator's state — ``share.auto.offset.reset`` (latest
  by default) gives the start of a partition whose state holds no start offset yet;
* every call of a share partition or of the share coordinator's store runs on a thread of its own
  (``kgroup-share``), one at a time; the partitions' logs are read, and ``__share_group_state``
  appended, on the broker's loop (which owns the logs); an ``asyncio.Lock`` keeps each request's
  read → acquire/acknowledge → append in one piece;
* **persist, then answer**: a state change's ``StateWrite`` becomes a ``ShareUpdate`` or
  ``ShareSnapshot`` record (Kafka's bytes, :mod:`kgroup.share.codec`) appended to the partition of
  ``__share_group_state`` that Kafka's share coordinator would use (``SharePartitionKey``'s
  ``group:topicId:partition`` hashed with ``String.hashCode``, 50 partitions) before the request is
  answered; the topic is read back when the broker starts (before any ShareFetch is served:
  ``COORDINATOR_LOAD_IN_PROGRESS`` meanwhile is not needed, a partition's first fetch waits for the
  load), so acknowledged and archived records, the start offset and the delivery counts survive a
  ``kill -9``; acquisitions are never written (as in Kafka) and come back Available;
* the acquisition locks are timers on the broker's loop (``ScheduleLockTimer`` / ``CancelLockTimer``
  effects), their firing handed to the partition on the share thread;
* the group coordinator's ``InitializeShareState`` task is answered here: each partition's first
  snapshot (state epoch = the group epoch, start offset −1) is written before the task completes.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kgroup.broker.cluster import SHARE_GROUP_STATE_TOPIC, Cluster
from kgroup.broker.group_configs import store_of
from kgroup.broker.host_thread import HostThread
from kgroup.broker.share_sessions import ShareSession, ShareSessionCache
from kgroup.javacompat import java_string_hash
from kgroup.log.batch import HEADER_SIZE, parse_header
from kgroup.model import TopicId
from kgroup.record.share import ACKNOWLEDGED, ACQUIRED, LOCK_TIMEOUT, MEMBER_RELEASED, ShareEvent
from kgroup.share import (
    AbortedTransaction,
    AcknowledgementBatch,
    AcquiredRecords,
    CancelLockTimer,
    FetchedBatch,
    IsolationLevel,
    LockKey,
    ScheduleLockTimer,
    ShareError,
    ShareKey,
    SharePartition,
    SharePartitionConfig,
    ShareStateStore,
    StateWrite,
    initial_start_offset,
    parse_share_auto_offset_reset,
)
from kgroup.share.codec import decode_share_record, encode_share_record, encode_share_tombstone
from kgroup.share.persist import ShareStateRecord
from kgroup.share.reset import ShareAutoOffsetReset
from kgroup.wire.varint import read_uvarint

__all__ = [
    "SHARE_GROUP_STATE_TOPIC",
    "PartitionFetch",
    "Refused",
    "ShareHost",
    "ShareHostConfig",
    "state_partition_for",
]

log = logging.getLogger("kgroup.broker")
T = TypeVar("T")

#: ``share.coordinator.state.topic.num.partitions``
SHARE_GROUP_STATE_PARTITIONS = 50
#: what the state topic is made with: kept until the share coordinator prunes it (kgroup never does)
SHARE_GROUP_STATE_CONFIGS = {
    "cleanup.policy": "delete",
    "retention.ms": "-1",
    "compression.type": "uncompressed",
    "segment.bytes": "104857600",
}
#: a ShareFetch of many partitions reads this many partitions' logs between two turns of the loop
_READS_PER_TURN = 64
#: a share partition's log is read this much at a time (see _read_log)
_CHUNK_BYTES = 256 * 1024


def state_partition_for(group_id: str, topic_id: uuid.UUID, partition: int) -> int:
    """``ShareCoordinatorService.partitionFor``: ``Utils.abs(key.asCoordinatorKey().hashCode()) % 50``."""
    key = f"{group_id}:{TopicId.from_int(topic_id.int)}:{partition}"
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % SHARE_GROUP_STATE_PARTITIONS


@dataclass(frozen=True, slots=True)
class ShareHostConfig:
    """The ``group.share.*`` settings a share partition runs under (Kafka 4.4.0's broker defaults)."""

    #: ``group.share.record.lock.duration.ms``
    record_lock_duration_ms: int = 30_000
    #: ``group.share.delivery.count.limit``
    delivery_count_limit: int = 5
    #: ``group.share.partition.max.record.locks``
    partition_max_record_locks: int = 2000
    #: ``group.share.max.share.sessions``
    max_share_sessions: int = 2000
    #: ``share.auto.offset.reset`` (the group config's default)
    auto_offset_reset: str = "latest"

    def partition_config(self) -> SharePartitionConfig:
        return SharePartitionConfig(
            max_in_flight_records=self.partition_max_record_locks,
            max_delivery_count=self.delivery_count_limit,
            record_lock_duration_ms=self.record_lock_duration_ms,
        )


@dataclass(slots=True)
class PartitionFetch:
    """One partition's part of a ShareFetch answer."""

    error: int = 0
    error_message: str | None = None
    records: bytes = b""
    acquired: list[AcquiredRecords] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Refused:
    """A share partition's error as the answer carries it (code, message or ``None``)."""

    code: int
    message: str | None


@dataclass(slots=True)
class _Hosted:
    sp: SharePartition
    key: ShareKey
    topic_id: uuid.UUID
    topic: str
    partition: int


class ShareHost(HostThread[LockKey]):
    """The broker's share partitions and share coordinator state (see the module)."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        clock_ms: Callable[[], int],
        config: ShareHostConfig | None = None,
        notify_appended: Callable[[str, int, int], None] | None = None,
    ) -> None:
        super().__init__(cluster, "kgroup-share", notify_appended)
        self.clock_ms = clock_ms
        self.config = config or ShareHostConfig()
        self._reset = parse_share_auto_offset_reset(self.config.auto_offset_reset)
        self.store = ShareStateStore()
        self.sessions = ShareSessionCache(self.config.max_share_sessions)
        self._partitions: dict[tuple[str, uuid.UUID, int], _Hosted] = {}
        #: woken whenever records become acquirable again (released, timed out)
        self._released: asyncio.Event | None = None
        #: ``serve --record``: told what each share partition call did (on the share thread)
        self.observer: Callable[[ShareEvent], None] | None = None

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        self._lock = asyncio.Lock()
        self._released = asyncio.Event()
        self._loading = asyncio.get_running_loop().create_task(self._load())

    async def _load(self) -> None:
        assert self._lock is not None
        async with self._lock:
            entries = await self._read_all(SHARE_GROUP_STATE_TOPIC)
            await self._on_thread(self._replay, entries)

    def _replay(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """On the share thread: the share coordinator's state from its records."""
        for key, value in entries:
            try:
                record = decode_share_record(key, value)
            except ValueError as exc:
                log.error("%s: a record kgroup cannot read: %s", SHARE_GROUP_STATE_TOPIC, exc)
                continue
            if isinstance(record, tuple):
                self.store.replay_tombstone(record[0])
            else:
                self.store.replay(record)

    # --- the state topic ------------------------------------------------------------------------------

    def _ensure_topic(self) -> None:
        if SHARE_GROUP_STATE_TOPIC in self.cluster.topics:
            return
        rf = min(self.cluster.config.replication_factor, len(self.cluster.broker_ids))
        self.cluster.create_topic(
            SHARE_GROUP_STATE_TOPIC, SHARE_GROUP_STATE_PARTITIONS, rf, SHARE_GROUP_STATE_CONFIGS
        )

    def _append(self, records: Sequence[tuple[int, ShareStateRecord | ShareKey]]) -> None:
        """Append (state partition, record) pairs to ``__share_group_state`` on the broker's loop (a
        bare :class:`ShareKey`: that partition's tombstone); raises OSError when the disk refuses."""
        if not records:
            return
        now_ms = self.clock_ms()
        self._ensure_topic()
        by_partition: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for partition, record in records:
            entry = (
                encode_share_tombstone(record)
                if isinstance(record, ShareKey)
                else encode_share_record(record)
            )
            by_partition.setdefault(partition, []).append(entry)
        self._append_batches(SHARE_GROUP_STATE_TOPIC, by_partition, now_ms)

    async def _appended(self, records: Sequence[tuple[int, ShareStateRecord | ShareKey]]) -> bool:
        """:meth:`_append`; when the disk refuses, logged and the store rebuilt from the topic
        (:meth:`_reload`): False then."""
        try:
            self._append(records)
        except Exception as exc:
            log.error("cannot append to %s: %s", SHARE_GROUP_STATE_TOPIC, exc)
            await self._reload()
            return False
        return True

    def _write(
        self, hosted: _Hosted, write: StateWrite | None, now_ms: int
    ) -> list[tuple[int, ShareStateRecord]]:
        """On the share thread: the record a share partition's write makes (replayed in the store)."""
        if write is None:
            return []
        record, error = self.store.write(hosted.key, write, now_ms)
        if record is None:
            log.error("share state write for %s refused (error %d)", hosted.key, error)
            return []
        return [(state_partition_for(hosted.key.group_id, hosted.topic_id, hosted.partition), record)]

    # --- the group coordinator's share-state initialisation --------------------------------------------

    async def initialize_state(
        self, group_id: str, group_epoch: int, partitions: Iterable[tuple[uuid.UUID, Sequence[int]]]
    ) -> bool:
        """``InitializeShareGroupState``: each partition's first snapshot (state epoch = the group
        epoch, start offset −1), appended before the answer. True once written."""
        await self.wait_loaded()
        assert self._lock is not None
        wanted = [(topic_id, p) for topic_id, ps in partitions for p in ps]
        async with self._lock:
            records = await self._on_thread(self._initialize, group_id, group_epoch, wanted, self.clock_ms())
            if not await self._appended(records):
                return False
        return True

    def _initialize(
        self, group_id: str, group_epoch: int, wanted: list[tuple[uuid.UUID, int]], now_ms: int
    ) -> list[tuple[int, ShareStateRecord]]:
        out: list[tuple[int, ShareStateRecord]] = []
        for topic_id, partition in wanted:
            key = ShareKey(group_id, str(TopicId.from_int(topic_id.int)), partition)
            if self.store.has(key) and self.store.read(key).start_offset != -1:
                continue  # already has state (a retried initialisation)
            record = self.store.initialize(key, group_epoch, -1, now_ms)
            out.append((state_partition_for(group_id, topic_id, partition), record))
        return out

    # --- Describe/Alter/DeleteShareGroupOffsets' share-coordinator part ----------------------------------

    async def read_summary(
        self, group_id: str, partitions: Sequence[tuple[uuid.UUID, int]]
    ) -> list[tuple[int, int, int]]:
        """``ReadShareGroupStateSummary``: per partition (start offset, delivery-complete count, leader
        epoch) as the share coordinator holds them; a partition with no state is (−1, −1, 0), as
        ``ShareCoordinatorShard.readStateSummary`` answers it."""
        await self.wait_loaded()

        def read() -> list[tuple[int, int, int]]:  # on the share thread, which owns the store
            out = []
            for topic_id, partition in partitions:
                key = ShareKey(group_id, str(TopicId.from_int(topic_id.int)), partition)
                summary = self.store.summary(key)
                out.append((-1, -1, 0) if summary is None else summary)
            return out

        return await self._on_thread(read)

    async def alter_start_offsets(
        self, group_id: str, group_epoch: int, partitions: Sequence[tuple[uuid.UUID, int, int]]
    ) -> bool:
        """``InitializeShareGroupState`` with the start offsets AlterShareGroupOffsets gives: each
        partition's state starts again there (a snapshot with no batches at the group's epoch), and
        a share partition loaded here is dropped so its next fetch loads the new state. True once
        written."""
        await self.wait_loaded()
        assert self._lock is not None
        async with self._lock:
            now_ms = self.clock_ms()
            records: list[tuple[int, ShareStateRecord | ShareKey]] = []
            for topic_id, partition, start in partitions:
                key = ShareKey(group_id, str(TopicId.from_int(topic_id.int)), partition)
                record = await self._on_thread(self.store.initialize, key, group_epoch, start, now_ms)
                records.append((state_partition_for(group_id, topic_id, partition), record))
                self._evict(group_id, topic_id, partition)
            if not await self._appended(records):
                return False
        return True

    async def delete_state(self, group_id: str, partitions: Sequence[tuple[uuid.UUID, int]]) -> bool:
        """``DeleteShareGroupState``: each partition's tombstone (a partition with no state has none
        written, as the share coordinator skips it); a share partition loaded here is dropped. True
        once written."""
        await self.wait_loaded()
        assert self._lock is not None
        async with self._lock:
            records: list[tuple[int, ShareStateRecord | ShareKey]] = []
            for topic_id, partition in partitions:
                key = ShareKey(group_id, str(TopicId.from_int(topic_id.int)), partition)
                self._evict(group_id, topic_id, partition)
                if self.store.has(key):
                    await self._on_thread(self.store.replay_tombstone, key)
                    records.append((state_partition_for(group_id, topic_id, partition), key))
            if not await self._appended(records):
                return False
        return True

    def _evict(self, group_id: str, topic_id: uuid.UUID, partition: int) -> None:
        """Forget a loaded share partition and its lock timers (its state is read again at its next use)."""
        hosted = self._partitions.pop((group_id, topic_id, partition), None)
        if hosted is None:
            return
        for key in [
            k
            for k in self._timers
            if (k.group_id, k.topic, k.partition) == (group_id, hosted.topic, partition)
        ]:
            self._timers.pop(key).cancel()

    async def _reload(self) -> None:
        """After a failed append: the store rebuilt from the topic, the partitions loaded again."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._partitions.clear()
        self.store = ShareStateStore()
        await self._on_thread(self._replay, await self._read_all(SHARE_GROUP_STATE_TOPIC))

    # --- the group's configs ---------------------------------------------------------------------------

    def group_settings(self, group_id: str) -> tuple[SharePartitionConfig, ShareAutoOffsetReset, bool]:
        """The share partitions' limits, ``share.auto.offset.reset`` and whether the group reads
        committed records only: the group's configs (IncrementalAlterConfigs on the GROUP resource,
        :mod:`kgroup.broker.group_configs`) over the broker's settings, read at each use."""
        overrides = store_of(self.cluster).get(group_id)
        base = self.config
        if not overrides:
            return base.partition_config(), self._reset, False
        config = SharePartitionConfig(
            max_in_flight_records=int(
                overrides.get("share.partition.max.record.locks", base.partition_max_record_locks)
            ),
            max_delivery_count=int(overrides.get("share.delivery.count.limit", base.delivery_count_limit)),
            record_lock_duration_ms=int(
                overrides.get("share.record.lock.duration.ms", base.record_lock_duration_ms)
            ),
            renew_acknowledge_enabled=overrides.get("share.renew.acknowledge.enable", "true").lower()
            == "true",
        )
        given = overrides.get("share.auto.offset.reset")
        reset = self._reset if given is None else parse_share_auto_offset_reset(given)
        return config, reset, overrides.get("share.isolation.level") == "read_committed"

    # --- share partitions -----------------------------------------------------------------------------

    async def _hosted(
        self, group_id: str, topic_id: uuid.UUID, topic: str, partition: int
    ) -> _Hosted | Refused:
        """The share partition, made at its first use (under the lock): the log's offsets for
        ``share.auto.offset.reset`` read on the loop, the persisted state loaded on the share thread."""
        hosted = self._partitions.get((group_id, topic_id, partition))
        if hosted is not None:
            return hosted
        key = ShareKey(group_id, str(TopicId.from_int(topic_id.int)), partition)
        if not self.store.has(key):
            # never initialised by the group's coordinator (not assigned to anyone yet): Kafka's share
            # partition fails to load and the fetch is answered UNKNOWN_SERVER_ERROR, no message
            return _NOT_INITIALISED
        plog = self.cluster.partition_log(topic, partition)
        assert plog is not None
        reset = 0
        if self.store.read(key).start_offset == -1:

            def lookup(ts: int) -> int | None:
                found = plog.offset_for_timestamp(ts)
                return None if found is None or found[1] < 0 else found[1]

            try:
                reset = initial_start_offset(
                    self.group_settings(group_id)[1],
                    log_start_offset=plog.log_start_offset,
                    log_end_offset=plog.high_watermark,
                    offset_for_timestamp=lookup,
                    now_ms=self.clock_ms(),
                )
            except LookupError as exc:
                return Refused(_UNKNOWN_SERVER_ERROR, str(exc))
        made = await self._on_thread(
            self._make,
            group_id,
            topic_id,
            topic,
            partition,
            key,
            reset,
            plog.log_start_offset,
            self.clock_ms(),
        )
        if isinstance(made, ShareError):
            return Refused(int(made.code), made.message)
        hosted, records = made
        self._append(records)
        self._partitions[(group_id, topic_id, partition)] = hosted
        return hosted

    def _make(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        topic: str,
        partition: int,
        key: ShareKey,
        reset: int,
        log_start_offset: int,
        now_ms: int,
    ) -> tuple[_Hosted, list[tuple[int, ShareStateRecord]]] | ShareError:
        """On the share thread: a share partition initialised from the persisted state."""
        records: list[tuple[int, ShareStateRecord]] = []
        sp = SharePartition(group_id, topic, partition, self.group_settings(group_id)[0])
        error = sp.initialize(self.store.read(key), reset)
        if error is not None:
            return error
        if log_start_offset > sp.start_offset:
            sp.update_log_start_offset(log_start_offset)
        return _Hosted(sp, key, topic_id, topic, partition), records

    async def acknowledge(
        self,
        group_id: str,
        member_id: str,
        entries: Sequence[tuple[uuid.UUID, str, int, Sequence[AcknowledgementBatch]]],
    ) -> list[tuple[int, str | None]]:
        """Apply each partition's acknowledgements (persisted before this returns): per entry, the
        error code (0: none) and message."""
        await self.wait_loaded()
        assert self._lock is not None
        async with self._lock:
            # a share partition this broker has not loaded (no fetch made it yet): Kafka's
            # SharePartitionManager answers UNKNOWN_TOPIC_OR_PARTITION
            hosted: list[_Hosted | Refused] = [
                self._partitions.get((group_id, topic_id, partition)) or _NOT_HOSTED
                for topic_id, _, partition, _ in entries
            ]
            now_ms = self.clock_ms()
            results = await self._on_thread(self._acknowledge_all, member_id, hosted, entries, now_ms)
            records = [r for _, _, _, rs in results for r in rs]
            if not await self._appended(records):
                return [(int(_UNKNOWN_SERVER_ERROR), None) for _ in entries]
            answers = []
            released = False
            for code, message, effects, _ in results:
                self._apply_effects(effects)
                answers.append((code, message))
                released = released or code == 0
        if released:
            self._wake()
        return answers

    def _acknowledge_all(
        self,
        member_id: str,
        hosted: list[_Hosted | Refused],
        entries: Sequence[tuple[uuid.UUID, str, int, Sequence[AcknowledgementBatch]]],
        now_ms: int,
    ) -> list[tuple[int, str | None, list[Any], list[tuple[int, ShareStateRecord]]]]:
        out: list[tuple[int, str | None, list[Any], list[tuple[int, ShareStateRecord]]]] = []
        for h, (_, _, _, batches) in zip(hosted, entries, strict=True):
            if isinstance(h, Refused):
                out.append((h.code, h.message, [], []))
                continue
            result = h.sp.acknowledge(member_id, now_ms, list(batches))
            records = self._write(h, result.write, now_ms)
            if result.error is None:
                self._observe(ACKNOWLEDGED, h, member_id, now_ms, acknowledged=batches, write=result.write)
            if result.error is not None:
                out.append((int(result.error.code), result.error.message, list(result.effects), records))
            else:
                out.append((0, None, list(result.effects), records))
        return out

    async def acquire(
        self,
        group_id: str,
        member_id: str,
        wanted: Sequence[tuple[uuid.UUID, str, int]],
        *,
        max_bytes: int,
        max_records: int,
        batch_size: int,
        record_limit: bool,
    ) -> dict[tuple[uuid.UUID, int], PartitionFetch]:
        """One acquisition round over ``wanted`` (partitions whose leader is here): the records
        acquired for ``member_id`` and the log batches holding them."""
        await self.wait_loaded()
        assert self._lock is not None
        out: dict[tuple[uuid.UUID, int], PartitionFetch] = {}
        async with self._lock:
            reads: list[
                tuple[_Hosted, int, list[FetchedBatch], memoryview, list[AbortedTransaction] | None]
            ] = []
            per_partition = max(1, max_bytes // max(1, len(wanted)))
            config, _, read_committed = self.group_settings(group_id)
            for count, (topic_id, topic, partition) in enumerate(wanted):
                if count % _READS_PER_TURN == _READS_PER_TURN - 1:
                    await asyncio.sleep(0)  # other connections get a turn between the log reads
                try:
                    h = await self._hosted(group_id, topic_id, topic, partition)
                except OSError as exc:
                    log.error("cannot append to %s: %s", SHARE_GROUP_STATE_TOPIC, exc)
                    h = Refused(_UNKNOWN_SERVER_ERROR, "share state not written")
                if isinstance(h, Refused):
                    out[(topic_id, partition)] = PartitionFetch(int(h.code), h.message)
                    continue
                out[(topic_id, partition)] = PartitionFetch()
                plog = self.cluster.partition_log(topic, partition)
                if plog is None or not h.sp.can_acquire_records():
                    continue
                if plog.log_start_offset > h.sp.start_offset:
                    h.sp.update_log_start_offset(plog.log_start_offset)
                offset = h.sp.next_fetch_offset()
                # share.isolation.level=read_committed: up to the last stable offset, with the
                # aborted transactions there (DelayedShareFetch's FetchIsolation.TXN_COMMITTED)
                hw = plog.last_stable_offset if read_committed else plog.high_watermark
                if offset >= hw or offset < plog.log_start_offset:
                    continue
                batches, data = _read_log(plog, offset, hw, per_partition, h.sp.end_offset, max_records)
                if not batches:
                    continue
                aborted = None
                if read_committed:
                    aborted = [
                        AbortedTransaction(a.producer_id, a.first_offset)
                        for a in plog.transactions.aborted_between(offset, batches[-1].last_offset + 1)
                    ]
                reads.append((h, offset, batches, data, aborted))
            if not reads:
                return out
            now_ms = self.clock_ms()
            results = await self._on_thread(
                self._acquire_all, member_id, reads, now_ms, max_records, batch_size, record_limit, config
            )
            for (h, _, _, data, _), (acquired, effects, error) in zip(reads, results, strict=True):
                self._apply_effects(effects)
                entry = out[(h.topic_id, h.partition)]
                if error is not None:
                    entry.error, entry.error_message = int(error.code), error.message
                    continue
                if acquired:
                    entry.acquired = acquired
                    entry.records = _slice(data, acquired[0].first_offset, acquired[-1].last_offset)
        return out

    def _acquire_all(
        self,
        member_id: str,
        reads: list[tuple[_Hosted, int, list[FetchedBatch], memoryview, list[AbortedTransaction] | None]],
        now_ms: int,
        max_records: int,
        batch_size: int,
        record_limit: bool,
        config: SharePartitionConfig,
    ) -> list[tuple[list[AcquiredRecords], list[Any], ShareError | None]]:
        out: list[tuple[list[AcquiredRecords], list[Any], ShareError | None]] = []
        left = max_records
        for h, offset, batches, _, aborted in reads:
            if left <= 0:
                out.append(([], [], None))
                continue
            h.sp.config = (
                config  # the group's configs as they are now (the lock duration at each acquisition)
            )
            result = h.sp.acquire(
                member_id,
                now_ms,
                offset,
                batches,
                max_fetch_records=left,
                batch_size=batch_size,
                record_limit=record_limit,
                isolation=IsolationLevel.READ_UNCOMMITTED
                if aborted is None
                else IsolationLevel.READ_COMMITTED,
                aborted_transactions=aborted,
            )
            left -= result.count
            if result.acquired and result.error is None:
                self._observe(ACQUIRED, h, member_id, now_ms, acquired=result.acquired)
            out.append(
                (list(result.acquired) if result.error is None else [], list(result.effects), result.error)
            )
        return out

    async def release_member(self, group_id: str, member_id: str) -> None:
        """A closed share session: what ``member_id`` holds in the group goes back (persisted)."""
        await self.wait_loaded()
        assert self._lock is not None
        async with self._lock:
            hosted = [h for (g, _, _), h in self._partitions.items() if g == group_id]
            if not hosted:
                return
            results = await self._on_thread(self._release_all, member_id, hosted, self.clock_ms())
            if not await self._appended([r for _, rs in results for r in rs]):
                return
            for effects, _ in results:
                self._apply_effects(effects)
        self._wake()

    async def close_session(self, group_id: str, member_id: str) -> None:
        """``releaseSession``: the session ends and what its member holds is released."""
        self.sessions.remove(group_id, member_id)
        await self.release_member(group_id, member_id)

    def on_connection_closed(self, connection: str) -> None:
        """A connection closed: Kafka 4.4's ``ClientConnectionDisconnectListener`` drops the share
        session it opened and releases what that member holds (``onMemberLeave``)."""
        gone = self.sessions.on_connection_closed(connection)
        if not gone or self._closed:
            return
        task = asyncio.get_running_loop().create_task(self._members_left(gone))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _members_left(self, sessions: Sequence[ShareSession]) -> None:
        for session in sessions:
            await self.release_member(session.group_id, session.member_id)

    def _release_all(
        self, member_id: str, hosted: list[_Hosted], now_ms: int
    ) -> list[tuple[list[Any], list[tuple[int, ShareStateRecord]]]]:
        out = []
        for h in hosted:
            result = h.sp.release_acquired_records(member_id)
            self._observe(MEMBER_RELEASED, h, member_id, now_ms, write=result.write)
            out.append((list(result.effects), self._write(h, result.write, now_ms)))
        return out

    def _observe(
        self,
        kind: str,
        h: _Hosted,
        member_id: str,
        now_ms: int,
        *,
        acquired: Sequence[AcquiredRecords] = (),
        acknowledged: Sequence[AcknowledgementBatch] = (),
        write: StateWrite | None = None,
    ) -> None:
        """On the share thread: tell the observer (``serve --record``) what a call did."""
        if self.observer is None or (write is None and not acquired):
            return
        event = ShareEvent(
            now_ms,
            h.key.group_id,
            h.topic,
            h.partition,
            kind,
            member_id,
            tuple(acquired),
            tuple(acknowledged),
            () if write is None else write.batches,
        )
        try:
            self.observer(event)
        except Exception:  # recording is best effort: the share partitions keep working
            log.exception("the share observer failed on %s", kind)

    # --- lock timers ----------------------------------------------------------------------------------

    def _apply_effects(self, effects: Iterable[Any]) -> None:
        loop = asyncio.get_running_loop()
        for effect in effects:
            if isinstance(effect, ScheduleLockTimer):
                old = self._timers.pop(effect.key, None)
                if old is not None:
                    old.cancel()
                delay = max(0.0, (effect.deadline_ms - self.clock_ms()) / 1000)
                self._timers[effect.key] = loop.call_later(delay, self._fire, effect.key)
            elif isinstance(effect, CancelLockTimer):
                handle = self._timers.pop(effect.key, None)
                if handle is not None:
                    handle.cancel()

    def _fire(self, key: LockKey) -> None:
        self._timers.pop(key, None)
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self._timed_out(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _timed_out(self, key: LockKey) -> None:
        assert self._lock is not None
        async with self._lock:
            hosted = next(
                (
                    h
                    for (g, _, p), h in self._partitions.items()
                    if g == key.group_id and p == key.partition and h.topic == key.topic
                ),
                None,
            )
            if hosted is None:
                return
            now_ms = self.clock_ms()

            def fire() -> tuple[list[Any], list[tuple[int, ShareStateRecord]]]:
                result = hosted.sp.on_lock_timeout(now_ms, key)
                self._observe(LOCK_TIMEOUT, hosted, "", now_ms, write=result.write)
                return list(result.effects), self._write(hosted, result.write, now_ms)

            effects, records = await self._on_thread(fire)
            if records and not await self._appended(records):
                return
            self._apply_effects(effects)
        self._wake()

    # --- waiting fetches ------------------------------------------------------------------------------

    def _wake(self) -> None:
        """Records became acquirable: parked share fetches look again."""
        event = self._released
        if event is not None:
            event.set()
            self._released = asyncio.Event()

    def released_event(self) -> asyncio.Event:
        assert self._released is not None
        return self._released

    # --- views (tests) --------------------------------------------------------------------------------

    def partition(self, group_id: str, topic_id: uuid.UUID, partition: int) -> SharePartition | None:
        hosted = self._partitions.get((group_id, topic_id, partition))
        return None if hosted is None else hosted.sp


_UNKNOWN_SERVER_ERROR = -1
#: ShareAcknowledge for a share partition not loaded here
_NOT_HOSTED = Refused(3, "This server does not host this topic-partition.")
#: ShareFetch of a share partition the group's coordinator never initialised
_NOT_INITIALISED = Refused(_UNKNOWN_SERVER_ERROR, None)


def _read_log(
    plog: Any, offset: int, hw: int, max_bytes: int, cached_end: int, wanted: int
) -> tuple[list[FetchedBatch], memoryview]:
    """The log's whole batches from ``offset`` below the high watermark, read a chunk at a time: until
    ``max_bytes`` (Kafka's read of the partition) or until ``wanted`` records lie past the share
    partition's cached window (``cached_end``: records there are all Available, so acquisition cannot
    need more), whichever comes first — a fetch of 500 records does not read a 50 MB share."""
    parts: list[memoryview] = []
    batches: list[FetchedBatch] = []
    size = 0
    fresh = 0
    at = offset
    while at < hw and size < max_bytes and (not batches or fresh < wanted):
        data = memoryview(plog.read(at, max(1, min(_CHUNK_BYTES, max_bytes - size))))
        found, end = _batches_below(data, hw)
        if not found:
            break
        parts.append(data[:end])
        batches.extend(found)
        size += end
        fresh += sum(
            b.last_offset - max(b.base_offset, cached_end + 1) + 1
            for b in found
            if b.last_offset > cached_end
        )
        at = found[-1].last_offset + 1
    if len(parts) == 1:
        return batches, parts[0]
    return batches, memoryview(b"".join(parts))


def _batches_below(data: memoryview, limit: int) -> tuple[list[FetchedBatch], int]:
    """The whole batches of ``data`` below ``limit`` (the high watermark) and where they end."""
    batches: list[FetchedBatch] = []
    at = 0
    while at + HEADER_SIZE <= len(data):
        header = parse_header(data, at)
        if header.base_offset >= limit or at + header.size > len(data):
            break
        abort = False
        if header.is_control and header.records_count > 0:
            abort = _control_type(data, at) == 0
        batches.append(
            FetchedBatch(
                header.base_offset,
                header.last_offset,
                producer_id=header.producer_id,
                transactional=header.is_transactional,
                control=header.is_control,
                abort_marker=abort,
            )
        )
        at += header.size
    return batches, at


def _control_type(data: memoryview, at: int) -> int:
    """The control record type of the (uncompressed) control batch at ``at`` (0 ABORT, 1 COMMIT)."""
    try:
        end = at + parse_header(data, at).size
        pos = at + HEADER_SIZE
        _, pos = read_uvarint(data, pos, end)  # record length
        pos += 1  # attributes
        _, pos = read_uvarint(data, pos, end)  # timestamp delta
        _, pos = read_uvarint(data, pos, end)  # offset delta
        raw, pos = read_uvarint(data, pos, end)  # key length (zigzag)
        if (raw >> 1) ^ -(raw & 1) < 4:
            return -1
        return int.from_bytes(data[pos + 2 : pos + 4], "big")
    except (ValueError, IndexError):
        return -1


def _slice(data: memoryview, first: int, last: int) -> bytes:
    """The batches of ``data`` holding offsets ``first``..``last``
    (``ShareFetchUtils.maybeSliceFetchRecords``)."""
    start = end = None
    at = 0
    while at + HEADER_SIZE <= len(data):
        header = parse_header(data, at)
        if header.last_offset >= first and start is None:
            start = at
        if header.base_offset > last:
            break
        at += header.size
        end = at
    if start is None or end is None:
        return b""
    return bytes(data[start:end])
