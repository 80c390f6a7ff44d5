"""One partition's log: its segments, offsets, idempotent-producer state and timestamp lookups.

A directory ``<data dir>/<topic>-<partition>/`` (Kafka's name) holding segments named by base offset.
Offsets are assigned here; the batch bytes are the producer's (see :mod:`kgroup.log.batch`).
Single-threaded: the broker's event loop is the only caller.

Time: ``now_ms`` given to :meth:`PartitionLog.append` and :meth:`PartitionLog.apply_retention` must be
wall-clock milliseconds since the epoch (it becomes LogAppendTime and is compared with record
timestamps), not a monotonic clock.
"""

from __future__ import annotations

import bisect
import enum
import os
from dataclasses import dataclass
from pathlib import Path

from kgroup.log.batch import (
    HEADER_SIZE,
    NO_BOUNDS,
    BatchHeader,
    TimestampBounds,
    ValidatedBatch,
    parse_header,
    record_timestamps,
    stamp_header,
    validate_produce_records,
)
from kgroup.log.errors import LogErrorCode, OffsetOutOfRange, UnknownTopicOrPartition
from kgroup.log.handles import FileHandles
from kgroup.log.producer_state import ProducerStateManager
from kgroup.log.segment import INT32_MAX, FileSlice, Segment, SegmentRecovery
from kgroup.log.txn_index import TransactionIndex, control_batch, control_type
from kgroup.model import PeerError

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendResult",
    "FsyncPolicy",
    "PartitionLog",
    "PartitionSettings",
    "RecoveryReport",
    "sync_directory",
    "write_atomically",
]

# ListOffsets' special timestamps (ListOffsetsRequest)
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
NO_TIMESTAMP = -1


class FsyncPolicy(enum.Enum):
    """When appended bytes are forced to the disk (they reach the OS with write(2) in every case).

    * ``ALWAYS`` — fsync before ``append`` returns: an acknowledged write survives a machine crash.
    * ``INTERVAL`` — fsync from ``tick`` every ``fsync_interval_ms``: a process crash loses nothing,
      a machine crash loses at most the last interval.
    * ``NEVER`` — the OS writes back when it likes (segments are still fsynced when rolled, as Kafka
      does): a process crash loses nothing, a machine crash loses what the OS had not written.
    """

    ALWAYS = "always"
    INTERVAL = "interval"
    NEVER = "never"


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendResult:
    """What the Produce response reports for one partition (Kafka's ``LogAppendInfo``)."""

    base_offset: int
    last_offset: int
    log_append_time: int = -1  # the stamped time for a LogAppendTime topic; -1 for CreateTime
    duplicate: bool = False  # a retried batch of an idempotent producer: acknowledged, not re-appended
    log_start_offset: int
    valid_bytes: int = 0  # the bytes appended (Kafka's LogAppendInfo.validBytes); 0 for a duplicate


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionSettings:
    """The effective settings of one partition (broker defaults overridden by topic configs)."""

    segment_bytes: int
    index_interval_bytes: int
    max_message_bytes: int
    log_append_time: bool
    retention_bytes: int | None
    retention_ms: int | None
    fsync: FsyncPolicy
    timestamp_bounds: TimestampBounds = NO_BOUNDS


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What opening the partition found on disk."""

    truncated_bytes: int
    segments_removed: int
    indexes_rebuilt: int


class PartitionLog:
    """The log of one topic partition: append produced batches, read them back, look up offsets."""

    def __init__(
        self,
        directory: Path,
        settings: PartitionSettings,
        *,
        recover_tail: bool,
        handles: FileHandles | None = None,
    ) -> None:
        """Open (or create) the partition in ``directory``.

        ``recover_tail`` (after an unclean shutdown) re-reads and re-checks every batch of the last
        segment; otherwise only the bytes after its last index entry are checked. A torn or corrupt
        tail is cut off either way, and a segment cut short drops every segment after it.
        ``handles`` is the data directory's cache of open files (a log of its own by default); no
        file of a new partition is created before its first append.
        """
        self.directory = directory
        self.settings = settings
        self._handles = handles if handles is not None else FileHandles()
        self.leader_epoch = 0  # written into each stored batch's partitionLeaderEpoch
        directory.mkdir(parents=True, exist_ok=True)
        self._segments: list[Segment] = []
        self._bases: list[int] = []
        self.producers = ProducerStateManager()
        #: the open and aborted transactions (the last stable offset, read_committed's aborted list)
        self.transactions = TransactionIndex()
        self.recovery = self._open_segments(recover_tail)
        self._rebuild_producer_state()

    # -- offsets -------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._open()[0].base_offset

    @property
    def log_end_offset(self) -> int:
        return self._open()[-1].next_offset

    def _open(self) -> list[Segment]:
        """The segments; a closed log (its topic deleted, or the manager closed) raises."""
        if not self._segments:
            raise UnknownTopicOrPartition(f"partition log {self.directory.name} is closed")
        return self._segments

    @property
    def high_watermark(self) -> int:
        """One replica: every appended batch is committed, so the high watermark is the log end."""
        return self.log_end_offset

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segment_base_offsets(self) -> list[int]:
        return list(self._bases)

    # -- opening -------------------------------------------------------------------------------

    def _open_segments(self, recover_tail: bool) -> RecoveryReport:
        bases = sorted(int(path.stem) for path in self.directory.glob("*.log") if path.stem.isdigit())
        for path in self.directory.iterdir():  # index files whose log is gone, temp files
            if path.suffix in (".index", ".timeindex") and (
                not path.stem.isdigit() or int(path.stem) not in bases
            ):
                path.unlink()
        truncated = removed = rebuilt = 0
        for number, base in enumerate(bases):
            if self._segments and base != self._segments[-1].next_offset:
                # a gap or overlap: the log is only good up to the previous segment's end
                removed += self._delete_segment_files(bases[number:])
                break
            segment = Segment(self.directory, base, self.settings.index_interval_bytes, self._handles)
            is_last = number == len(bases) - 1
            result: SegmentRecovery = segment.open_existing(full_recovery=recover_tail and is_last)
            self._segments.append(segment)
            self._bases.append(base)
            truncated += result.truncated_bytes
            rebuilt += result.indexes_rebuilt
            if result.truncated_bytes and not is_last:
                removed += self._delete_segment_files(bases[number + 1 :])
                break
        if not self._segments:
            # no file yet: the first append creates the segment's log (and syncs the directory then)
            self._segments.append(
                Segment(self.directory, 0, self.settings.index_interval_bytes, self._handles)
            )
            self._bases.append(0)
        return RecoveryReport(truncated, removed, rebuilt)

    def _delete_segment_files(self, bases: list[int]) -> int:
        for base in bases:
            segment = Segment(self.directory, base, self.settings.index_interval_bytes, self._handles)
            segment.delete()
        return len(bases)

    def _rebuild_producer_state(self) -> None:
        for segment in self._segments:
            position = 0
            for header in segment.iter_headers():
                self.producers.record(header)
                if header.is_transactional:
                    kind = control_type(segment.read_batch(position, header)) if header.is_control else None
                    self.transactions.on_batch(header, kind)
                position += header.size

    # -- appending -----------------------------------------------------------------------------

    def validate(self, records: bytes | memoryview, *, now_ms: int) -> ValidatedBatch:
        """Kafka's checks of one partition's Produce ``records`` against this log's settings.

        A pure function of ``records``, ``now_ms`` and the (frozen) settings: the broker runs it in
        another thread for a compressed or large batch, then hands the result to :meth:`append`.
        Raises :class:`PeerError` with Kafka's code.
        """
        settings = self.settings
        batch = validate_produce_records(
            records,
            max_message_bytes=settings.max_message_bytes,
            log_append_time=settings.log_append_time,
            now_ms=now_ms,
            bounds=settings.timestamp_bounds,
        )
        if len(batch.data) > settings.segment_bytes:
            raise PeerError(
                f"message batch size is {len(batch.data)} bytes, which exceeds the maximum configured "
                f"segment size of {settings.segment_bytes}",
                LogErrorCode.RECORD_LIST_TOO_LARGE,
            )
        return batch

    def append(self, records: bytes | memoryview | ValidatedBatch | None, *, now_ms: int) -> AppendResult:
        """Append the ``records`` of a Produce request (one RecordBatch v2, as Kafka requires).

        ``None`` (a null records field) is treated as no batch at all (INVALID_RECORD), as in Kafka.
        ``records`` may also be what :meth:`validate` returned for them.

        Raises :class:`PeerError` (Kafka's code) for a batch Kafka would refuse; nothing is written
        then. On return the bytes were handed to the OS (and fsynced under ``FsyncPolicy.ALWAYS``).
        Raises ``OSError`` when the write fails; the log is then as before the call.
        """
        self._open()
        if isinstance(records, ValidatedBatch):
            batch = records
        else:
            batch = self.validate(records or b"", now_ms=now_ms)
        duplicate = self.producers.check_client_batch(batch.header)
        if duplicate is not None:
            return AppendResult(
                base_offset=duplicate.first_offset,
                last_offset=duplicate.last_offset,
                log_append_time=duplicate.timestamp,  # Kafka answers a duplicate with its batch timestamp
                duplicate=True,
                log_start_offset=self.log_start_offset,
            )
        return self._append_validated(batch, now_ms)

    def _append_validated(self, batch: ValidatedBatch, now_ms: int) -> AppendResult:
        base_offset = self.log_end_offset
        log_append_time = now_ms if self.settings.log_append_time else None
        head = stamp_header(
            batch, base_offset=base_offset, leader_epoch=self.leader_epoch, log_append_time_ms=log_append_time
        )
        header = parse_header(head)
        size = len(batch.data)
        segment = self._maybe_roll(size, header)
        created = segment.size == 0 and not segment.log_path.exists()
        segment.append((head, memoryview(batch.data)[HEADER_SIZE:]), header)
        if created and self.settings.fsync is not FsyncPolicy.NEVER:
            self._sync_directory()  # the new file's directory entry, as a rolled segment's
        self.producers.record(header)
        if header.is_transactional:
            self.transactions.on_batch(header, control_type(batch.data) if header.is_control else None)
        if self.settings.fsync is FsyncPolicy.ALWAYS:
            segment.flush()
        return AppendResult(
            base_offset=base_offset,
            last_offset=header.last_offset,
            log_append_time=-1 if log_append_time is None else log_append_time,
            log_start_offset=self.log_start_offset,
            valid_bytes=size,
        )

    def append_coordinator(self, records: bytes | memoryview, *, now_ms: int) -> AppendResult:
        """Append a batch the group coordinator wrote to ``__consumer_offsets`` (Kafka's
        ``AppendOrigin.COORDINATOR``): trusted as the broker's own, not checked as a client's (its
        transactional batches are all at sequence 0: no sequence is kept for them)."""
        self._open()
        data = bytes(records)
        header = parse_header(data)
        return self._append_validated(
            ValidatedBatch(header=header, data=data, records_max_timestamp=header.max_timestamp), now_ms
        )

    def append_marker(
        self, producer_id: int, producer_epoch: int, committed: bool, coordinator_epoch: int, *, now_ms: int
    ) -> AppendResult:
        """Append a transaction's commit or abort marker (``WriteTxnMarkers``' append): a control batch
        of the producer, which closes its open transaction here. A marker of an epoch older than the
        producer's is INVALID_PRODUCER_EPOCH (``ProducerAppendInfo.appendEndTxnMarker``)."""
        self._open()
        entry = self.producers.entry(producer_id)
        if entry is not None and producer_epoch < entry.producer_epoch:
            raise PeerError(
                f"epoch of the marker of producer {producer_id} is {producer_epoch}, which is smaller than "
                f"the last seen epoch {entry.producer_epoch}",
                LogErrorCode.INVALID_PRODUCER_EPOCH,
            )
        data = control_batch(producer_id, producer_epoch, committed, coordinator_epoch, now_ms)
        header = parse_header(data)
        return self._append_validated(
            ValidatedBatch(header=header, data=data, records_max_timestamp=now_ms), now_ms
        )

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, the high watermark when none is open."""
        return self.transactions.last_stable_offset(self.high_watermark)

    def _maybe_roll(self, size: int, header: BatchHeader) -> Segment:
        """Kafka's ``shouldRoll`` on size and relative-offset overflow (time-based rolling is not done)."""
        active = self._segments[-1]
        full = active.size > self.settings.segment_bytes - size
        overflow = header.last_offset - active.base_offset > INT32_MAX
        if active.size == 0 or not (full or overflow):
            return active
        active.flush()  # a rolled segment is flushed whatever the policy, as Kafka flushes on roll
        segment = Segment(
            self.directory, self.log_end_offset, self.settings.index_interval_bytes, self._handles
        )
        self._segments.append(segment)
        self._bases.append(segment.base_offset)
        return segment  # its files are created (and the directory synced) by the append that follows

    # -- reading -------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int) -> bytes | memoryview:
        """Whole batches from the one holding ``offset``; the first whole even if over ``max_bytes``.

        ``b""`` at the log end; a read-only ``memoryview`` of the bytes read when the last batch read
        did not fit (not copied to cut it off: use it as bytes, or ``bytes()`` it). Reads stay within
        one segment, as Kafka's do. Raises :class:`OffsetOutOfRange` for an offset below the log start
        or beyond the log end.
        """
        found = self._batch_holding(offset)
        return b"" if found is None else found[0].read(found[1], max_bytes)

    def read_slice(self, offset: int, max_bytes: int) -> bytes | memoryview | FileSlice:
        """What :meth:`read` answers, as a :class:`~kgroup.log.segment.FileSlice` of the segment file
        when it is 64 KiB or more (the Fetch answer sends it with sendfile; close it once sent)."""
        found = self._batch_holding(offset)
        return b"" if found is None else found[0].read_slice(found[1], max_bytes)

    def _batch_holding(self, offset: int) -> tuple[Segment, int] | None:
        """The segment and file position of the batch holding ``offset``, None at the log end; raises
        :class:`OffsetOutOfRange` for an offset below the log start or beyond the log end."""
        self._open()
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRange(
                f"offset {offset} is out of range [{self.log_start_offset}, {self.log_end_offset}]"
            )
        slot = bisect.bisect_right(self._bases, offset) - 1
        for segment in self._segments[slot:]:
            position = segment.position_for_offset(offset)
            if position is not None:
                return segment, position
        return None

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets: (timestamp, offset) for ``timestamp``, or None when no record qualifies.

        -2 earliest and -4 earliest-local give (-1, log start); -1 latest gives (-1, log end); -5
        latest-tiered gives (-1, -1) (no tiered storage); -3 the record with the largest timestamp;
        otherwise the first record whose timestamp is >= ``timestamp``
        (``UnifiedLog.fetchOffsetByTimestamp``).
        """
        self._open()
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return NO_TIMESTAMP, self.log_start_offset
        if timestamp == LATEST_TIMESTAMP:
            return NO_TIMESTAMP, self.log_end_offset
        if timestamp == LATEST_TIERED_TIMESTAMP:
            return NO_TIMESTAMP, -1
        if timestamp == MAX_TIMESTAMP:
            return self._max_timestamp_offset()
        if timestamp < 0:
            return None
        for segment in self._segments:
            if segment.max_timestamp < timestamp:
                continue
            position = segment.position_for_timestamp(timestamp)
            header = segment.header_at(position) if position is not None else None
            if position is None or header is None:
                continue
            entries = record_timestamps(segment.read_batch(position, header), header)
            if entries is None:  # a codec kgroup does not decode: batch granularity
                return header.max_timestamp, header.base_offset
            for offset, record_timestamp in entries:
                if record_timestamp >= timestamp:
                    return record_timestamp, offset
        return None

    def _max_timestamp_offset(self) -> tuple[int, int] | None:
        best = max(self._segments, key=lambda segment: segment.max_timestamp)
        if best.max_timestamp < 0:
            return None
        position = best.position_for_timestamp(best.max_timestamp)
        header = best.header_at(position) if position is not None else None
        if position is None or header is None:
            return None
        entries = record_timestamps(best.read_batch(position, header), header) or []
        offsets = [offset for offset, stamp in entries if stamp == header.max_timestamp]
        return header.max_timestamp, offsets[0] if offsets else header.base_offset

    # -- retention, flushing, closing ----------------------------------------------------------

    def apply_retention(self, now_ms: int) -> int:
        """Delete whole segments past ``retention.ms`` / beyond ``retention.bytes``; the count deleted.

        As Kafka's ``deleteRetentionMsBreachedSegments`` / ``deleteRetentionSizeBreachedSegments``,
        oldest first, except that the active segment is never deleted.
        """
        deletable = 0
        retention_ms, retention_bytes = self.settings.retention_ms, self.settings.retention_bytes
        if retention_ms is not None:
            for segment in self._segments[:-1]:
                if segment.max_timestamp < 0 or now_ms - segment.max_timestamp <= retention_ms:
                    break
                deletable += 1
        if retention_bytes is not None:
            excess = self.size_bytes - retention_bytes
            by_size = 0
            for segment in self._segments[:-1]:
                if excess - segment.size < 0:
                    break
                excess -= segment.size
                by_size += 1
            deletable = max(deletable, by_size)
        if not deletable:
            return 0
        doomed, self._segments = self._segments[:deletable], self._segments[deletable:]
        self._bases = self._bases[deletable:]
        for segment in doomed:
            segment.delete()
        self.producers.evict_before(self.log_start_offset)
        self.transactions.evict_before(self.log_start_offset)
        return deletable

    def flush(self) -> None:
        for segment in self._segments:
            segment.flush()

    def take_unsynced(self, taken: list[Segment] | None = None) -> list[int]:
        """:meth:`Segment.take_unsynced` of every segment: descriptors for the caller to fsync and close
        (the segments they came from appended to ``taken``)."""
        fds: list[int] = []
        try:
            for segment in self._segments:
                got = segment.take_unsynced()
                if got and taken is not None:
                    taken.append(segment)
                fds += got
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def close(self) -> None:
        for segment in self._segments:
            segment.close()
        self._segments.clear()

    def _sync_directory(self) -> None:
        sync_directory(self.directory)


def sync_directory(directory: Path) -> None:
    """``fsync`` a directory: the entries made or removed in it are durable (the log's one copy)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Write a temp file, fsync it, rename it over ``path``, fsync the directory."""
    temp = path.with_name(path.name + ".tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    sync_directory(path.parent)
