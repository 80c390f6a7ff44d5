"""Kafka's framing, the one implementation in kgroup: every request and response on a connection is a
big-endian int32 size followed by that many bytes.

The broker (:mod:`kgroup.broker.connection`), the client (:mod:`kgroup.client.connection`) and the
tests' raw client read and write frames only through this module; each passes its own size limits
(the broker's ``socket.request.max.bytes``, the client's largest answer). The module stays sans-IO:
the caller hands in its stream's read (``asyncio.StreamReader.readexactly``, ``socket.recv``), or
lets the bytes land in the buffers a :class:`FrameReceiver` hands out (an
``asyncio.BufferedProtocol``: the broker's connections).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol

__all__ = [
    "RECEIVE_BUFFER_BYTES",
    "SIZE",
    "BufferPool",
    "FileRegion",
    "Frame",
    "FrameError",
    "FrameReceiver",
    "Pieces",
    "framed",
    "framed_pieces",
    "read_frame",
    "read_frame_blocking",
]

#: the size prefix of a frame
SIZE = struct.Struct(">i")


class FrameError(Exception):
    """A frame that cannot be read: its size is out of range or the stream ends inside it.

    ``kind`` is a short name of the fault (for summaries of many closed connections); the message
    says what was read.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def framed(payload: bytes) -> bytes:
    """``payload`` with its size prefix."""
    return SIZE.pack(len(payload)) + payload


class FileRegion(Protocol):
    """Bytes of a file to send as they are (sendfile(2)), never read into memory on the way: a
    stored batch's bytes in a Fetch answer (``kgroup.log.FileSlice``). The sender closes it."""

    fd: int
    position: int
    size: int

    def __len__(self) -> int: ...

    def read(self, skip: int = 0) -> bytes:
        """The bytes after the first ``skip``, read into memory (where sendfile cannot go: TLS)."""
        ...

    def close(self) -> None: ...


#: a frame to send as the pieces that make it up, in order (a Fetch answer around the stored
#: batches): written without joining them into one new buffer
Pieces = list[bytes | bytearray | memoryview | FileRegion]


def framed_pieces(payload: bytes | Pieces) -> Pieces:
    """The size prefix, then ``payload`` (one buffer or several pieces), as pieces to write in order."""
    if isinstance(payload, bytes):
        return [SIZE.pack(len(payload)), payload]
    return [SIZE.pack(sum(len(piece) for piece in payload)), *payload]


def _check_size(size: int, min_bytes: int, max_bytes: int, limit_name: str) -> None:
    if size < min_bytes or size > max_bytes:
        raise FrameError(
            "frame size out of range", f"frame size {size} outside {min_bytes}..{max_bytes} ({limit_name})"
        )


async def read_frame(
    read_exactly: Callable[[int], Awaitable[bytes]],
    *,
    max_bytes: int,
    min_bytes: int = 0,
    limit_name: str = "the limit",
) -> bytes | None:
    """The next frame's bytes; ``None`` if the stream ends (or is reset) before a frame starts.

    ``read_exactly(n)`` is the stream's read of exactly ``n`` bytes, raising :class:`EOFError` (as
    asyncio's ``IncompleteReadError`` is, with the bytes it got as ``partial``) when the stream ends
    first. :class:`FrameError` if the size is outside ``min_bytes..max_bytes`` (nothing more is read)
    or the stream ends inside the frame.
    """
    try:
        prefix = await read_exactly(SIZE.size)
    except (EOFError, ConnectionError):
        return None
    (size,) = SIZE.unpack(prefix)
    _check_size(size, min_bytes, max_bytes, limit_name)
    try:
        return await read_exactly(size)
    except EOFError as exc:
        got = len(getattr(exc, "partial", b""))
        raise FrameError("truncated frame", f"truncated frame ({got} of {size} bytes)") from None


def _recv_exactly(recv: Callable[[int], bytes], count: int) -> bytes:
    chunks = []
    while count:
        chunk = recv(count)
        if not chunk:
            raise ConnectionError("closed by the peer")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def read_frame_blocking(
    recv: Callable[[int], bytes],
    *,
    max_bytes: int = 0x7FFFFFFF,
    min_bytes: int = 0,
    limit_name: str = "the limit",
) -> bytes:
    """The next frame's bytes through a blocking ``recv`` (a socket's: tools and tests);
    :class:`ConnectionError` if the peer closes first, :class:`FrameError` for a size out of range."""
    (size,) = SIZE.unpack(_recv_exactly(recv, SIZE.size))
    _check_size(size, min_bytes, max_bytes, limit_name)
    return _recv_exactly(recv, size)


#: a received frame: ``bytes``, or a read-only view of the buffer a large frame was received into
Frame = bytes | memoryview

#: a :class:`FrameReceiver`'s buffer for small frames; a frame larger than this (its size prefix
#: included) is received into a buffer of its own
RECEIVE_BUFFER_BYTES = 64 * 1024


class BufferPool:
    """Large frames' buffers, kept for the frames that follow (Kafka's broker has a ``MemoryPool``):
    a fresh megabyte is faulted into memory page by page, a kept one is not.

    :meth:`take` hands out the smallest kept buffer that fits, or a new one (its size rounded up to a
    power of two, so that the next frames of about the same size fit it); :meth:`give` takes a buffer
    back. At most ``max_bytes`` are kept, and no buffer over ``max_buffer_bytes`` (a rare huge frame
    is not held on to). Used from one thread (the event loop's).
    """

    def __init__(self, *, max_bytes: int = 16 << 20, max_buffer_bytes: int = 4 << 20) -> None:
        self.max_bytes = max_bytes
        self.max_buffer_bytes = max_buffer_bytes
        self._free: list[bytearray] = []
        #: bytes kept now
        self.kept_bytes = 0

    def take(self, size: int) -> bytearray:
        """A buffer of at least ``size`` bytes (its contents are whatever was there)."""
        best = None
        for index, buffer in enumerate(self._free):
            if len(buffer) >= size and (best is None or len(buffer) < len(self._free[best])):
                best = index
        if best is not None:
            buffer = self._free.pop(best)
            self.kept_bytes -= len(buffer)
            return buffer
        if size > self.max_buffer_bytes:
            return bytearray(size)
        return bytearray(1 << max(size - 1, 1).bit_length())

    def give(self, buffer: bytearray) -> None:
        """Take ``buffer`` back (nothing may use it any more), if it is kept."""
        if len(buffer) <= self.max_buffer_bytes and self.kept_bytes + len(buffer) <= self.max_bytes:
            self._free.append(buffer)
            self.kept_bytes += len(buffer)


def _unused(buffer: bytearray) -> bool:
    """Whether no view of ``buffer`` is alive: a bytearray with a live export cannot be resized (the
    byte popped is put back; neither step reallocates)."""
    try:
        last = buffer.pop()
    except BufferError:
        return False
    buffer.append(last)
    return True


class FrameReceiver:
    """Frames received straight into their buffers: the sans-IO half of an ``asyncio.BufferedProtocol``.

    The transport asks :meth:`buffer` where its next bytes go, receives into it and reports how many
    with :meth:`received`; complete frames queue up for :meth:`next_frame`, in order. Small frames
    arrive, many at a time, in one reused buffer of :data:`RECEIVE_BUFFER_BYTES` and are copied out
    whole. A larger frame gets a buffer of exactly its size once the caller allows the allocation
    (``buffer(allocate=True)``): the socket's bytes land in it directly and the frame is handed out as
    a read-only view of it, never copied (``asyncio.StreamReader`` copies each frame twice more).

    With a :class:`BufferPool`, a large frame's buffer comes from it and goes back to it once no view
    of the frame is alive any more (checked when the next frame is asked for).

    A size outside ``min_bytes..max_bytes`` is :attr:`error` (a :class:`FrameError`) once the frames
    before it are taken; nothing after it is read.
    """

    def __init__(
        self,
        *,
        max_bytes: int,
        min_bytes: int = 0,
        limit_name: str = "the limit",
        buffer_bytes: int = RECEIVE_BUFFER_BYTES,
        pool: BufferPool | None = None,
    ) -> None:
        self._pool = pool
        self._lent: list[bytearray] = []  # the buffers of large frames handed out
        self._max_bytes = max_bytes
        self._min_bytes = min_bytes
        self._limit_name = limit_name
        self._small = bytearray(max(buffer_bytes, SIZE.size))
        self._small_view = memoryview(self._small)
        self._start = 0  # the unparsed bytes of the small buffer are [_start, _end)
        self._end = 0
        self._large: memoryview | None = None  # the large frame being received, and how much of it
        self._large_filled = 0
        self._frames: deque[Frame] = deque()
        #: bytes of the frames queued and not yet taken
        self.queued_bytes = 0
        #: the first size out of range; frames queued before it are taken first
        self.error: FrameError | None = None

    # --- the transport's side --------------------------------------------------------------------

    def buffer(self, *, allocate: bool) -> memoryview:
        """Where the next bytes go (never empty). With ``allocate``, a large frame whose size is known
        gets its own buffer now; without it, its first bytes wait in the small buffer (the caller stops
        reading once :meth:`room` is 0: bytes ahead of what it asked for are bounded by that)."""
        if self.error is not None:
            return self._small_view  # nothing after a bad size is read: whatever lands here is dropped
        if self._large is not None:
            return self._large[self._large_filled :]
        size = self._partial_size()
        if size is not None and SIZE.size + size > len(self._small) and allocate:
            return self._start_large(size)
        if self._end == len(self._small) or (self._start and len(self._small) - self._end < SIZE.size):
            self._compact()
        if self._end == len(self._small) and size is not None:  # full of a large frame's start
            return self._start_large(size)  # (the caller should have stopped reading: never empty)
        return self._small_view[self._end :]

    def received(self, count: int) -> None:
        """``count`` bytes were written at the start of the last :meth:`buffer`."""
        if self.error is not None or count <= 0:
            return
        if self._large is not None:
            self._large_filled += count
            if self._large_filled == len(self._large):
                self._queue(self._large.toreadonly())
                self._large = None
                self._large_filled = 0
            return
        self._end += count
        self._parse()

    def room(self) -> int:
        """How many bytes can be received without allocating a large frame's buffer."""
        if self.error is not None:
            return 0
        if self._large is not None:
            return len(self._large) - self._large_filled
        return len(self._small) - (self._end - self._start)

    # --- the reader's side -----------------------------------------------------------------------

    def next_frame(self) -> Frame | None:
        """The next complete frame, or ``None`` if none is queued."""
        if self._lent:
            self._give_back()
        if not self._frames:
            return None
        frame = self._frames.popleft()
        self.queued_bytes -= len(frame)
        return frame

    @property
    def has_frame(self) -> bool:
        return bool(self._frames)

    @property
    def partial_bytes(self) -> int:
        """Bytes received of the frame not yet complete (its size prefix included)."""
        return self._large_filled + SIZE.size if self._large is not None else self._end - self._start

    def truncated(self) -> FrameError | None:
        """At the end of the stream: the error of a frame cut short once its size was read (the
        stream may end inside a size prefix: that is the end, not an error, as :func:`read_frame`)."""
        if self._large is not None:
            got, size = self._large_filled, len(self._large)
        else:
            known = self._partial_size()
            if known is None:
                return None
            got, size = self._end - self._start - SIZE.size, known
        return FrameError("truncated frame", f"truncated frame ({got} of {size} bytes)")

    # --- inside ----------------------------------------------------------------------------------

    def _partial_size(self) -> int | None:
        if self._end - self._start < SIZE.size:
            return None
        size: int = SIZE.unpack_from(self._small, self._start)[0]
        return size

    def _queue(self, frame: Frame) -> None:
        self._frames.append(frame)
        self.queued_bytes += len(frame)

    def _parse(self) -> None:
        start, end, view = self._start, self._end, self._small_view
        while end - start >= SIZE.size:
            (size,) = SIZE.unpack_from(self._small, start)
            if size < self._min_bytes or size > self._max_bytes:
                self.error = FrameError(
                    "frame size out of range",
                    f"frame size {size} outside {self._min_bytes}..{self._max_bytes} ({self._limit_name})",
                )
                start = end = 0
                break
            stop = start + SIZE.size + size
            if stop > end:
                break
            self._queue(bytes(view[start + SIZE.size : stop]))
            start = stop
        if start == end:
            start = end = 0
        self._start, self._end = start, end

    def _give_back(self) -> None:
        """Return to the pool the buffers of frames nobody holds any more."""
        pool = self._pool
        assert pool is not None
        for buffer in [b for b in self._lent if _unused(b)]:
            self._lent.remove(buffer)
            pool.give(buffer)

    def _start_large(self, size: int) -> memoryview:
        if self._pool is None:
            large = memoryview(bytearray(size))
        else:
            buffer = self._pool.take(size)
            self._lent.append(buffer)
            large = memoryview(buffer)[:size]
        have = self._end - self._start - SIZE.size
        large[:have] = self._small_view[self._start + SIZE.size : self._end]
        self._start = self._end = 0
        self._large, self._large_filled = large, have
        return large[have:]

    def _compact(self) -> None:
        kept = self._end - self._start
        self._small_view[:kept] = self._small_view[self._start : self._end]
        self._start, self._end = 0, kept
