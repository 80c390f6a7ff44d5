"""The group coordinator's own log: its records (group metadata, committed offsets) as key/value pairs.

Kafka keeps these in the compacted ``__consumer_offsets`` topic and replays them when a broker
becomes a group's coordinator. kgroup keeps them in one file per coordinator log,
``<data dir>/coordinator/<name>.log``, with its own framing — one frame per :meth:`CoordinatorLog.append`,
so the records of one coordinator result are replayed all together or not at all::

    frame  = length u32 (bytes after this field) | crc u32 (CRC-32C of the bytes after it)
             | count u32 | entry * count
    entry  = key length i32 | key | value length i32 (-1: a tombstone) | value

On open, frames are checked by length and CRC; a torn or corrupt tail is cut off. The file is
compacted (the last value of each key, in the order of those last writes; tombstones dropped, as a
replay from the start would end with the key absent) by writing a new file and renaming it over the
old one, once it is both larger than ``compact_min_bytes`` and twice its live bytes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

from crc32c import crc32c

from kgroup.log.partition import FsyncPolicy

__all__ = ["CoordinatorLog"]

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


class CoordinatorLog:
    """An append-only, CRC-framed file of the coordinator's key/value records, replayed on start."""

    def __init__(
        self, path: Path, *, fsync: FsyncPolicy = FsyncPolicy.INTERVAL, compact_min_bytes: int = 16 << 20
    ) -> None:
        self.path = path
        self.fsync = fsync
        self.compact_min_bytes = compact_min_bytes
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.dirty = False
        self._live_bytes: dict[bytes, int] = {}
        self.truncated_bytes = self._recover()

    # -- opening -------------------------------------------------------------------------------

    def _frames(self) -> Iterator[tuple[int, list[tuple[bytes, bytes | None]]]]:
        """(end, entries) of each whole, CRC-valid frame from the start; stops at the first bad one."""
        position = 0
        buffer, buffer_start = b"", 0
        while position + _FRAME_HEAD.size <= self.size:
            if position + _FRAME_HEAD.size > buffer_start + len(buffer):
                buffer, buffer_start = os.pread(self._fd, _READ_CHUNK, position), position
            length, crc = _FRAME_HEAD.unpack_from(buffer, position - buffer_start)
            body_length = length - 4
            end = position + _FRAME_HEAD.size + body_length
            if body_length < _COUNT.size or length > _MAX_FRAME or end > self.size:
                return
            body_start = position + _FRAME_HEAD.size
            if end > buffer_start + len(buffer):
                buffer, buffer_start = (
                    os.pread(self._fd, max(_READ_CHUNK, end - position), position),
                    position,
                )
            body = memoryview(buffer)[body_start - buffer_start : end - buffer_start]
            if crc32c(body) != crc:
                return
            entries = decode_entries(body)
            if entries is None:
                return
            yield end, entries
            position = end

    def _recover(self) -> int:
        valid_end = 0
        for end, entries in self._frames():
            valid_end = end
            self._account(entries)
        truncated = self.size - valid_end
        if truncated:
            os.ftruncate(self._fd, valid_end)
            self.size = valid_end
            self.dirty = True
        return truncated

    def _account(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        for key, value in entries:
            if value is None:
                self._live_bytes.pop(key, None)
            else:
                self._live_bytes[key] = len(key) + len(value) + 8

    # -- the interface the coordinator uses -----------------------------------------------------

    def append(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Append the records of one coordinator result as one frame (all replayed or none).

        The bytes reach the OS before this returns, and the disk too under ``FsyncPolicy.ALWAYS``.
        Raises ``OSError`` when the write fails; the file is then cut back to where it was.
        """
        if not entries:
            return
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
        self.dirty = self.fsync is not FsyncPolicy.ALWAYS
        self._account(entries)
        if self.size > self.compact_min_bytes and self.size > 2 * self.live_bytes:
            self.compact()

    def replay(self) -> Iterator[tuple[bytes, bytes | None]]:
        """Every record in the order it was appended (after compaction: the last value of each key)."""
        for _, entries in self._frames():
            yield from entries

    @property
    def live_bytes(self) -> int:
        return sum(self._live_bytes.values())

    # -- compaction, flushing, closing ---------------------------------------------------------

    def compact(self) -> None:
        """Rewrite the file with the last value of each key: temp file, fsync, rename, fsync directory."""
        latest: dict[bytes, bytes | None] = {}
        for key, value in self.replay():
            latest.pop(key, None)  # keep the order of last writes
            latest[key] = value
        live = [(key, value) for key, value in latest.items() if value is not None]
        temp = self.path.with_name(self.path.name + ".compacting")
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for start in range(0, len(live), 1000):
                frame = memoryview(encode_frame(live[start : start + 1000]))
                while frame:
                    frame = frame[os.write(fd, frame) :]
            os.fsync(fd)
        except OSError:
            os.close(fd)
            temp.unlink(missing_ok=True)
            raise
        os.replace(temp, self.path)
        _sync_directory(self.path.parent)
        os.close(self._fd)
        self._fd = fd
        self.size = os.fstat(fd).st_size
        self.dirty = False
        self._live_bytes.clear()
        self._account(live)

    def flush(self) -> None:
        if self.dirty:
            os.fsync(self._fd)
            self.dirty = False

    def close(self) -> None:
        os.close(self._fd)


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
