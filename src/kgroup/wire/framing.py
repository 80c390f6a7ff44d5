"""Kafka's framing, the one implementation in kgroup: every request and response on a connection is a
big-endian int32 size followed by that many bytes.

The broker (:mod:`kgroup.broker.connection`), the client (:mod:`kgroup.client.connection`) and the
tests' raw client read and write frames only through this module; each passes its own size limits
(the broker's ``socket.request.max.bytes``, the client's largest answer). The module stays sans-IO:
the caller hands in its stream's read (``asyncio.StreamReader.readexactly``, ``socket.recv``).
"""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable

__all__ = ["SIZE", "FrameError", "framed", "read_frame", "read_frame_blocking"]

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
