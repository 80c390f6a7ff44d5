"""The group coordinator's own log: its records (group metadata, committed offsets) as key/value pairs.

Kafka keeps these in the compacted ``__consumer_offsets`` topic and replays them when a broker
becomes a group's coordinator. kgroup keeps them in one file per coordinator log,
``<data dir>/coordinator/<name>.log``, with its own framing — one frame per :meth:`CoordinatorLog.append`,
so the records of one coordinator result are replayed all together or not at all::

    frame  = length u32 (bytes after this field) | crc u32 (CRC-32C of the bytes after it)
             | count u32 | entry * count
    entry  = key length i32 | key | value length i32 (-1: a tombstone) | value

On open, frames are checked by length and CRC; a torn or corrupt tail is cut off.

The log is not compacted by key: kgroup's records are deltas (a member joined, a state changed), and
keeping the last record of each key loses state. Its owner compacts it with a **checkpoint**
instead (``kgroup.broker.coordinator_host``): the records that rebuild the current state, written by
another thread from the frames up to some position (:func:`read_frames`, :func:`write_checkpoint`),
then swapped in by :meth:`CoordinatorLog.replace_with`, which copies the frames appended meanwhile
after them. An append costs the same whatever the size of the log.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from crc32c import crc32c

from kgroup.log.partition import FsyncPolicy, sync_directory

__all__ = ["CoordinatorLog", "read_frames", "write_checkpoint"]

_FRAME_HEAD = struct.Struct(">II")  # length, crc
_COUNT = struct.Struct(">I")
_LENGTH = struct.Struct(">i")
_MAX_FRAME = 1 << 30  # a length above this is a torn or foreign header, not a frame
_READ_CHUNK = 1 << 20


def encode_frame(entries: Sequence[tuple[bytes, bytes | None]]) -> bytes:
    parts = [_COUNT.pack(len(entries))]
    for key, value in entries:
        parts.append(_LENGTH.pack(len(key)))
        parts.append(key)
        if value is None:
            parts.append(_LENGTH.pack(-1))
        else:
            parts.append(_LENGTH.pack(len(value)))
            parts.append(value)
    body = b"".join(parts)
    return _FRAME_HEAD.pack(len(body) + 4, crc32c(body)) + body


def decode_entries(body: bytes | memoryview) -> list[tuple[bytes, bytes | None]] | None:
    """The entries of a frame body (after the CRC), or None when they do not fill it exactly."""
    if len(body) < _COUNT.size:
        return None
    (count,) = _COUNT.unpack_from(body, 0)
    position = _COUNT.size
    entries: list[tuple[bytes, bytes | None]] = []
    for _ in range(count):
        if position + 4 > len(body):
            return None
        (key_length,) = _LENGTH.unpack_from(body, position)
        position += 4
        if key_length < 0 or position + key_length + 4 > len(body):
            return None
        key = bytes(body[position : position + key_length])
        position += key_length
        (value_length,) = _LENGTH.unpack_from(body, position)
        position += 4
        value: bytes | None = None
        if value_length >= 0:
            if position + value_length > len(body):
                return None
            value = bytes(body[position : position + value_length])
            position += value_length
        elif value_length != -1:
            return None
        entries.append((key, value))
    return entries if position == len(body) else None


def _iter_frames(fd: int, size: int) -> Iterator[tuple[int, list[tuple[bytes, bytes | None]]]]:
    """(end, entries) of each whole, CRC-valid frame of ``fd`` below ``size``; stops at the first bad one."""
    position = 0
    buffer, buffer_start = b"", 0
    while position + _FRAME_HEAD.size <= size:
        if position + _FRAME_HEAD.size > buffer_start + len(buffer):
            buffer, buffer_start = os.pread(fd, _READ_CHUNK, position), position
        length, crc = _FRAME_HEAD.unpack_from(buffer, position - buffer_start)
        body_length = length - 4
        end = position + _FRAME_HEAD.size + body_length
        if body_length < _COUNT.size or length > _MAX_FRAME or end > size:
            return
        body_start = position + _FRAME_HEAD.size
        if end > buffer_start + len(buffer):
            buffer, buffer_start = os.pread(fd, max(_READ_CHUNK, end - position), position), position
        body = memoryview(buffer)[body_start - buffer_start : end - buffer_start]
        if crc32c(body) != crc:
            return
        entries = decode_entries(body)
        if entries is None:
            return
        yield end, entries
        position = end


def read_frames(path: Path, end: int) -> Iterator[list[tuple[bytes, bytes | None]]]:
    """The entries of each frame of the log file ``path`` below ``end``, through a descriptor of its
    own: for a checkpoint made in another thread while the owner appends after ``end``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        for _, entries in _iter_frames(fd, end):
            yield entries
    finally:
        os.close(fd)


def write_checkpoint(path: Path, frames: Iterable[Sequence[tuple[bytes, bytes | None]]]) -> int:
    """Write ``frames`` to a new file ``path`` and fsync it; the bytes written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    written = 0
    try:
        for entries in frames:
            if entries:
                frame = memoryview(encode_frame(entries))
                written += len(frame)
                while frame:
                    frame = frame[os.write(fd, frame) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)
    return written


class CoordinatorLog:
    """An append-only, CRC-framed file of the coordinator's key/value records, replayed on start."""

    def __init__(
        self, path: Path, *, fsync: FsyncPolicy = FsyncPolicy.INTERVAL, recover: bool = True
    ) -> None:
        self.path = path
        self.fsync = fsync
        path.parent.mkdir(parents=True, exist_ok=True)
        self.checkpoint_path.unlink(missing_ok=True)  # a checkpoint a crash interrupted: never swapped in
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.dirty = False
        #: what the owner's thread did: bytes appended, and bytes copied when a checkpoint was swapped
        #: in (the frames appended while it was being made)
        self.appended_bytes = 0
        self.copied_bytes = 0
        #: the file has been read to its last whole frame and cut there (a torn tail removed): at
        #: open, or (``recover=False``: a broker listens before its log is read) by the first replay
        self.recovered = False
        self.truncated_bytes = self._recover() if recover else 0

    @property
    def checkpoint_path(self) -> Path:
        return self.path.with_name(self.path.name + ".checkpoint")

    # -- for a checkpoint made in another thread (these touch only the files, never this object) --

    def read_frames(self, end: int) -> Iterator[list[tuple[bytes, bytes | None]]]:
        """The entries of each frame below position ``end`` (see :func:`read_frames`)."""
        return read_frames(self.path, end)

    def write_checkpoint(self, frames: Iterable[Sequence[tuple[bytes, bytes | None]]]) -> int:
        """Write ``frames`` to :attr:`checkpoint_path` (see :func:`write_checkpoint`)."""
        return write_checkpoint(self.checkpoint_path, frames)

    # -- opening -------------------------------------------------------------------------------

    def _recover(self) -> int:
        valid_end = 0
        for end, _ in _iter_frames(self._fd, self.size):
            valid_end = end
        return self._cut(valid_end)

    def _cut(self, valid_end: int) -> int:
        truncated = self.size - valid_end
        if truncated:
            os.ftruncate(self._fd, valid_end)
            self.size = valid_end
            self.dirty = True
        self.recovered = True
        return truncated

    # -- the interface the coordinator uses -----------------------------------------------------

    def append(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Append the records of one coordinator result as one frame (all replayed or none).

        The bytes reach the OS before this returns, and the disk too under ``FsyncPolicy.ALWAYS``.
        Raises ``OSError`` when the write fails; the file is then cut back to where it was. The
        cost is the frame's, whatever the size of the log.
        """
        if not entries:
            return
        if not self.recovered:  # never after a torn tail
            self.truncated_bytes += self._recover()
        frame = encode_frame(entries)
        position = self.size
        try:
            os.lseek(self._fd, position, os.SEEK_SET)
            view = memoryview(frame)
            while view:
                view = view[os.write(self._fd, view) :]
            if self.fsync is FsyncPolicy.ALWAYS:
                os.fsync(self._fd)
        except OSError:
            try:
                os.ftruncate(self._fd, position)
            finally:
                raise
        self.size = position + len(frame)
        self.appended_bytes += len(frame)
        self.dirty = self.fsync is not FsyncPolicy.ALWAYS

    def replay(self) -> Iterator[tuple[bytes, bytes | None]]:
        """Every record in the order it was appended (after a checkpoint: the checkpoint's first); the
        first replay of a log opened unrecovered also cuts a torn tail off once it has read it all."""
        valid_end = 0
        for end, entries in _iter_frames(self._fd, self.size):
            valid_end = end
            yield from entries
        if not self.recovered:
            self.truncated_bytes += self._cut(valid_end)

    # -- checkpoints, flushing, closing ----------------------------------------------------------

    def replace_with(self, checkpoint: Path, since: int) -> int:
        """Swap in ``checkpoint`` (the state up to position ``since`` of this log, written by
        :func:`write_checkpoint`): the frames appended since are copied after it, the file is fsynced
        and renamed over this log, and the directory fsynced; a crash leaves one file or the other.
        Returns the bytes copied. On ``OSError`` the checkpoint is removed and the log is as it was.
        """
        tail = self.size - since
        try:
            fd = os.open(checkpoint, os.O_WRONLY | os.O_APPEND)
            try:
                position = since
                while position < self.size:
                    chunk = os.pread(self._fd, min(_READ_CHUNK, self.size - position), position)
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
                    position += len(chunk)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(checkpoint, self.path)
            sync_directory(self.path.parent)
        except OSError:
            checkpoint.unlink(missing_ok=True)
            raise
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_RDWR)
        self.size = os.fstat(self._fd).st_size
        self.dirty = False
        self.copied_bytes += tail
        return tail

    def flush(self) -> None:
        if self.dirty:
            os.fsync(self._fd)
            self.dirty = False

    def close(self) -> None:
        os.close(self._fd)
