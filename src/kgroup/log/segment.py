"""One log segment: ``<base offset>.log`` and its sparse ``.index`` / ``.timeindex``, Kafka's layout.

* ``.log`` — record batches back to back, exactly the bytes the log stored.
* ``.index`` — 8-byte entries (offset - base as int32, file position as int32): every time more than
  ``index_interval_bytes`` were appended since the last entry, the batch just appended is indexed by
  its *last* offset (``LogSegment.append``). A lookup takes the greatest entry <= the target and
  scans batch headers forward from its position.
* ``.timeindex`` — 12-byte entries (max timestamp so far as int64, its offset - base as int32),
  written beside an offset-index entry when the segment's max timestamp grew.

The indexes are caches of the log: on open they are checked against the log and rebuilt from it when
they disagree. Batches are found by their length field and checked by CRC-32C; a torn tail is cut off.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgroup.log.batch import BatchHeader, batch_crc_ok, parse_header
from kgroup.log.errors import LogStorageError
from kgroup.log.handles import FileHandles
from kgroup.wire.record_batch import HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2

__all__ = ["FileSlice", "Segment", "SegmentRecovery", "segment_file_name"]

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_LENGTH = struct.Struct(">i")
_READ_CHUNK = 1 << 20  # the recovery scan reads the log in chunks of this size
#: a fetch's look-up of its offset reads the batch headers after the index entry this much at a time
_SCAN_CHUNK = 16384
_OFFSET_AND_LENGTH = struct.Struct(">qi")  # a batch's base offset and batch length
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23  # base offset, length, leader epoch, magic, CRC, attributes: 8+4+4+1+4+2
INT32_MAX = 2**31 - 1
#: a read of whole batches this large or larger is answered as a :class:`FileSlice` (sent with
#: sendfile); a smaller one is read into memory (a descriptor and a sendfile cost more than its copy)
SLICE_MIN_BYTES = 64 * 1024
#: the batch headers a slice's read looks at (one pread each) before it reads the bytes instead: many
#: small batches are cheaper to read in one go
SLICE_MAX_BATCHES = 16


class FileSlice:
    """``size`` bytes of a segment file from ``position``, on a descriptor of its own: Kafka's
    ``FileRecords.slice``, which the Fetch answer sends with sendfile(2) and never reads into memory.

    The descriptor is a duplicate (the file-handle cache may close its own meanwhile, and retention
    delete the file: the bytes stay readable). Whoever sends it closes it (it closes itself when
    collected). The bytes never change: a log only appends after them.
    """

    __slots__ = ("fd", "position", "size")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd = fd
        self.position = position
        self.size = size

    def __len__(self) -> int:
        return self.size

    def read(self, skip: int = 0) -> bytes:
        """The bytes (after the first ``skip``), read into memory."""
        chunks: list[bytes] = []
        position, left = self.position + skip, self.size - skip
        while left > 0:
            chunk = os.pread(self.fd, left, position)
            if not chunk:
                raise OSError(f"a segment file ends {left} bytes before its slice")
            chunks.append(chunk)
            position += len(chunk)
            left -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def __del__(self) -> None:
        self.close()


def segment_file_name(base_offset: int, suffix: str) -> str:
    """Kafka's name: the base offset as 20 zero-padded digits (``LogFileUtils.filenamePrefixFromOffset``)."""
    return f"{base_offset:020d}{suffix}"


@dataclass(frozen=True, slots=True)
class SegmentRecovery:
    """What opening a segment found: bytes cut from a torn tail; whether the indexes were rebuilt."""

    truncated_bytes: int
    indexes_rebuilt: bool


def _write_all(
    fd: int, pieces: Sequence[bytes | bytearray | memoryview], position: int | None = None
) -> None:
    """Write ``pieces`` one after the other, with writev(2) at the file's offset, or pwritev(2) at
    ``position`` (one system call, the offset untouched); a short write writes the rest."""
    views = [memoryview(piece) for piece in pieces if len(piece)]
    while views:
        if position is None:
            written = os.writev(fd, views)
        else:
            written = os.pwritev(fd, views, position)
            position += written
        while views and written >= len(views[0]):
            written -= len(views.pop(0))
        if written:
            views[0] = views[0][written:]


class Segment:
    """A segment: its three files and the in-memory copy of its indexes.

    Its files are opened through the data directory's :class:`FileHandles` cache, right before each
    system call, and created only when first written: an empty partition holds no file. Single-
    threaded: one caller (the broker's event loop) at a time.
    """

    def __init__(
        self, directory: Path, base_offset: int, index_interval_bytes: int, handles: FileHandles
    ) -> None:
        self.base_offset = base_offset
        self.log_path = directory / segment_file_name(base_offset, ".log")
        self.index_path = directory / segment_file_name(base_offset, ".index")
        self.time_index_path = directory / segment_file_name(base_offset, ".timeindex")
        self._index_interval_bytes = index_interval_bytes
        self._handles = handles
        try:
            self.size = os.stat(self.log_path).st_size
        except FileNotFoundError:
            self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset - 1
        self._index_offsets: list[int] = []  # absolute last offsets
        self._index_positions: list[int] = []
        self._time_stamps: list[int] = []
        self._time_offsets: list[int] = []
        self._bytes_since_index = 0
        self.dirty = False  # written since the last fsync

    # -- opening -------------------------------------------------------------------------------

    def open_existing(self, *, full_recovery: bool) -> SegmentRecovery:
        """Load the indexes and find the end; a full recovery re-reads and re-checks every batch."""
        if not full_recovery and self._load_indexes():
            start = self._index_positions[-1] if self._index_positions else 0
            truncated = self._scan(start, rebuild=False)
            if not self._index_positions or self._index_positions[-1] < self.size:
                return SegmentRecovery(truncated, indexes_rebuilt=False)
            # the indexed batch itself was torn: its entry is stale, so rebuild from the start
            self._reset_indexes()
            return SegmentRecovery(truncated + self._scan(0, rebuild=True), self._rewrite_index_files())
        self._reset_indexes()
        truncated = self._scan(0, rebuild=True)
        return SegmentRecovery(truncated, indexes_rebuilt=self._rewrite_index_files())

    def _reset_indexes(self) -> None:
        self._index_offsets.clear()
        self._index_positions.clear()
        self._time_stamps.clear()
        self._time_offsets.clear()
        self._bytes_since_index = 0
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset - 1

    def _load_indexes(self) -> bool:
        """Read both index files; False (rebuild) when they do not agree with the log."""
        raw = self._read_whole(self.index_path)
        times = self._read_whole(self.time_index_path)
        if len(raw) % _OFFSET_ENTRY.size or len(times) % _TIME_ENTRY.size:
            return False
        offsets: list[int] = []
        positions: list[int] = []
        for relative, position in _OFFSET_ENTRY.iter_unpack(raw):
            offset = self.base_offset + relative
            if relative < 0 or position < 0 or position >= self.size:
                return False
            if offsets and (offset <= offsets[-1] or position <= positions[-1]):
                return False
            offsets.append(offset)
            positions.append(position)
        stamps: list[int] = []
        stamp_offsets: list[int] = []
        for timestamp, relative in _TIME_ENTRY.iter_unpack(times):
            offset = self.base_offset + relative
            if stamps and (timestamp <= stamps[-1] or offset < stamp_offsets[-1]):
                return False
            if not offsets or offset > offsets[-1]:
                return False  # a time entry is written only beside an offset entry
            stamps.append(timestamp)
            stamp_offsets.append(offset)
        if offsets:
            header = self._header_at(positions[-1])
            if header is None or header.last_offset != offsets[-1] or header.base_offset < self.base_offset:
                return False
        self._index_offsets, self._index_positions = offsets, positions
        self._time_stamps, self._time_offsets = stamps, stamp_offsets
        if stamps:
            self.max_timestamp, self.offset_of_max_timestamp = stamps[-1], stamp_offsets[-1]
        return True

    def _scan(self, start: int, *, rebuild: bool) -> int:
        """Walk whole, CRC-valid batches from ``start``; cut the file after the last one.

        With ``rebuild`` the offset and time indexes are re-derived as appends would have written
        them; otherwise (the tail after the last loaded index entry) the batches are only counted.
        Returns the number of bytes cut.
        """
        position = start
        expected_base: int | None = self.base_offset if start == 0 else None
        self._bytes_since_index = 0
        buffer, buffer_start = b"", start
        while position + HEADER_SIZE <= self.size:
            if position + HEADER_SIZE > buffer_start + len(buffer):
                buffer, buffer_start = self._chunk_at(position, HEADER_SIZE), position
                if len(buffer) < HEADER_SIZE:
                    break
            header = parse_header(buffer, position - buffer_start)
            size = header.size
            if header.magic != MAGIC_V2 or size < HEADER_SIZE or position + size > self.size:
                break  # a torn length, a zero-filled tail or foreign bytes
            if header.last_offset_delta < 0 or header.base_offset < self.base_offset:
                break
            if expected_base is not None and header.base_offset < expected_base:
                break  # offsets never go backwards in a log
            if header.last_offset - self.base_offset > INT32_MAX:
                break
            if position + size > buffer_start + len(buffer):
                buffer, buffer_start = self._chunk_at(position, size), position
                if len(buffer) < size:
                    break
            relative = position - buffer_start
            if not batch_crc_ok(memoryview(buffer)[relative : relative + size], header):
                break
            self._note_batch(header, position, size, index=rebuild)
            if not rebuild:
                self._bytes_since_index += size
            expected_base = header.last_offset + 1
            position += size
        truncated = self.size - position
        if truncated:
            os.ftruncate(self._fd(), position)
            self.size = position
            self.dirty = True
        return truncated

    # -- the files, through the cache (a descriptor is valid until the next call) -----------------

    def _fd(self) -> int:
        return self._handles.fd(self.log_path)

    def _index_fd(self) -> int:
        return self._handles.fd(self.index_path)

    def _time_fd(self) -> int:
        return self._handles.fd(self.time_index_path)

    def _read_whole(self, path: Path) -> bytes:
        if not path.exists():
            return b""
        fd = self._handles.fd(path)
        size = os.fstat(fd).st_size
        return os.pread(fd, size, 0) if size else b""

    def _chunk_at(self, position: int, at_least: int) -> bytes:
        return os.pread(self._fd(), max(_READ_CHUNK, at_least), position)

    def _header_at(self, position: int) -> BatchHeader | None:
        raw = os.pread(self._fd(), HEADER_SIZE, position)
        return parse_header(raw) if len(raw) == HEADER_SIZE else None

    def _rewrite_index_files(self) -> bool:
        os.ftruncate(self._index_fd(), 0)
        os.ftruncate(self._time_fd(), 0)
        index = b"".join(
            _OFFSET_ENTRY.pack(offset - self.base_offset, position)
            for offset, position in zip(self._index_offsets, self._index_positions, strict=True)
        )
        times = b"".join(
            _TIME_ENTRY.pack(stamp, offset - self.base_offset)
            for stamp, offset in zip(self._time_stamps, self._time_offsets, strict=True)
        )
        os.pwrite(self._index_fd(), index, 0)
        os.pwrite(self._time_fd(), times, 0)
        self.dirty = True
        return True

    # -- appending -----------------------------------------------------------------------------

    def append(self, pieces: Sequence[bytes | bytearray | memoryview], header: BatchHeader) -> None:
        """Write the batch (``pieces`` one after the other: its stamped header, then the produced
        records) at the end with pwritev(2): in the OS's hands (not yet on disk) on return.

        A failed or short write is cut back off so the log never holds half a batch it acknowledged.
        """
        position = self.size
        size = sum(len(piece) for piece in pieces)
        try:
            _write_all(self._fd(), pieces, position)
        except OSError:
            try:
                os.ftruncate(self._fd(), position)
            finally:
                raise
        self.size = position + size
        self.dirty = True
        entries_before = len(self._index_offsets), len(self._time_stamps)
        self._note_batch(header, position, size, index=True)
        if len(self._index_offsets) > entries_before[0]:
            _write_all_at_end(
                self._index_fd(), _OFFSET_ENTRY.pack(header.last_offset - self.base_offset, position)
            )
        if len(self._time_stamps) > entries_before[1]:
            _write_all_at_end(
                self._time_fd(),
                _TIME_ENTRY.pack(self._time_stamps[-1], self._time_offsets[-1] - self.base_offset),
            )

    def _note_batch(self, header: BatchHeader, position: int, size: int, *, index: bool) -> None:
        """Account for a batch at ``position``: end offset, max timestamp and (``index``) index entries."""
        self.next_offset = header.last_offset + 1
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset
        if not index:
            return
        if self._bytes_since_index > self._index_interval_bytes:
            self._index_offsets.append(header.last_offset)
            self._index_positions.append(position)
            if not self._time_stamps or self.max_timestamp > self._time_stamps[-1]:
                self._time_stamps.append(self.max_timestamp)
                self._time_offsets.append(self.offset_of_max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += size

    # -- reading -------------------------------------------------------------------------------

    def position_for_offset(self, offset: int) -> int | None:
        """The file position of the batch holding ``offset`` (or the first batch after it), or None.

        From the last index entry at or below ``offset``, the batch headers are read
        :data:`_SCAN_CHUNK` bytes at a time (an index entry comes every ``index.interval.bytes``, so
        a fetch's look-up is usually one read), only each batch's offset, length and last offset
        delta looked at."""
        slot = bisect.bisect_right(self._index_offsets, offset) - 1
        position = self._index_positions[slot] if slot >= 0 else 0
        size = self.size
        if position >= size:
            return None
        fd = self._fd()
        buffer, start = b"", position
        while position < size:
            at = position - start
            if at + HEADER_SIZE > len(buffer):
                buffer, start, at = os.pread(fd, max(_SCAN_CHUNK, HEADER_SIZE), position), position, 0
                if len(buffer) < HEADER_SIZE:
                    raise self._damaged(position)
            base, length = _OFFSET_AND_LENGTH.unpack_from(buffer, at)
            batch_size = length + LOG_OVERHEAD
            if batch_size < HEADER_SIZE or position + batch_size > size:
                raise self._damaged(position)
            if base + _LAST_OFFSET_DELTA.unpack_from(buffer, at + _LAST_OFFSET_DELTA_AT)[0] >= offset:
                return position
            position += batch_size
        return None

    def _damaged(self, position: int) -> LogStorageError:
        return LogStorageError(f"{self.log_path}: no record batch at position {position} (damaged file)")

    def position_for_timestamp(self, timestamp: int) -> int | None:
        """The position of the first batch whose max timestamp is >= ``timestamp``, or None."""
        slot = bisect.bisect_right(self._time_stamps, timestamp) - 1
        start_offset = self._time_offsets[slot] if slot >= 0 else self.base_offset
        position = self.position_for_offset(start_offset)
        while position is not None and position < self.size:
            header = self._valid_header_at(position)
            if header.max_timestamp >= timestamp:
                return position
            position += header.size
        return None

    def _valid_header_at(self, position: int) -> BatchHeader:
        header = self._header_at(position)
        if header is None or header.size < HEADER_SIZE or position + header.size > self.size:
            raise self._damaged(position)
        return header

    def iter_headers(self) -> Iterator[BatchHeader]:
        """Every batch header in file order, read in chunks (batch bodies are skipped, not read)."""
        position = 0
        buffer, buffer_start = b"", 0
        while position + HEADER_SIZE <= self.size:
            if position + HEADER_SIZE > buffer_start + len(buffer):
                buffer, buffer_start = self._chunk_at(position, HEADER_SIZE), position
            header = parse_header(buffer, position - buffer_start)
            if header.size < HEADER_SIZE:
                return
            yield header
            position += header.size

    def header_at(self, position: int) -> BatchHeader | None:
        return self._header_at(position) if position < self.size else None

    def read_batch(self, position: int, header: BatchHeader) -> bytes:
        return os.pread(self._fd(), header.size, position)

    def read(self, position: int, max_bytes: int) -> bytes | memoryview:
        """Whole batches from ``position``: the first always whole, then as many as fit in ``max_bytes``.

        A read-only view of the bytes read when it stops short of them (a batch that did not fit):
        the batches are not copied once more only to cut that tail off."""
        if position >= self.size:
            return b""
        want = min(self.size - position, max(max_bytes, HEADER_SIZE))
        data = os.pread(self._fd(), want, position)
        first = _LENGTH.unpack_from(data, 8)[0] + LOG_OVERHEAD
        if first < HEADER_SIZE or position + first > self.size:
            raise LogStorageError(f"{self.log_path}: no record batch at position {position} (damaged file)")
        if first > len(data):
            return os.pread(self._fd(), first, position)
        end = first
        while end + LOG_OVERHEAD <= len(data):
            size = _LENGTH.unpack_from(data, end + 8)[0] + LOG_OVERHEAD
            if size < HEADER_SIZE or end + size > len(data):
                break
            end += size
        return data if end == len(data) else memoryview(data)[:end]

    def read_slice(self, position: int, max_bytes: int) -> bytes | memoryview | FileSlice:
        """What :meth:`read` answers (the same batches, the same checks of the first one's length),
        as a :class:`FileSlice` when it is :data:`SLICE_MIN_BYTES` or more: only the batches'
        12-byte length prefixes are read, one pread each (a read of more than
        :data:`SLICE_MAX_BATCHES` batches reads them instead, as :meth:`read`)."""
        if position >= self.size:
            return b""
        limit = position + min(self.size - position, max(max_bytes, HEADER_SIZE))
        fd = self._fd()
        end = position + self._length_at(fd, position)
        if end - position < HEADER_SIZE or end > self.size:
            raise LogStorageError(f"{self.log_path}: no record batch at position {position} (damaged file)")
        batches = 1
        while end + LOG_OVERHEAD <= limit:
            if batches == SLICE_MAX_BATCHES:
                return self.read(position, max_bytes)
            size = self._length_at(fd, end)
            if size < HEADER_SIZE or end + size > limit:
                break
            end += size
            batches += 1
        if end - position < SLICE_MIN_BYTES:
            return os.pread(fd, end - position, position)
        return FileSlice(os.dup(fd), position, end - position)

    @staticmethod
    def _length_at(fd: int, position: int) -> int:
        """The size of the batch at ``position``, its offset and length fields included (-1 when the
        file ends first)."""
        raw = os.pread(fd, LOG_OVERHEAD, position)
        if len(raw) < LOG_OVERHEAD:
            return -1
        size: int = _LENGTH.unpack_from(raw, 8)[0] + LOG_OVERHEAD
        return size

    # -- lifecycle -----------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync what was written since the last flush (reopening a file the cache had closed)."""
        if self.dirty:
            for path in (self.log_path, self.index_path, self.time_index_path):
                if path.exists():
                    os.fsync(self._handles.fd(path))
            self.dirty = False

    def take_unsynced(self) -> list[int]:
        """Duplicates of the descriptors of this segment's files if they were written since the last
        fsync, which counts them synced from now on: the caller fsyncs and closes the duplicates (in
        any thread; the cache may close its own descriptors meanwhile, and retention delete the files)."""
        if not self.dirty:
            return []
        fds: list[int] = []
        try:
            for path in (self.log_path, self.index_path, self.time_index_path):
                if path.exists():
                    fds.append(os.dup(self._handles.fd(path)))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        self.dirty = False
        return fds

    def close(self) -> None:
        for path in (self.log_path, self.index_path, self.time_index_path):
            self._handles.close(path)

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.index_path, self.time_index_path):
            path.unlink(missing_ok=True)


def _write_all_at_end(fd: int, data: bytes) -> None:
    os.lseek(fd, 0, os.SEEK_END)
    _write_all(fd, (data,))
