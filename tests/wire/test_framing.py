"""kgroup's one framing implementation (:mod:`kgroup.wire.framing`), read over a real loopback socket."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from kgroup.wire.framing import FrameError, framed, read_frame, read_frame_blocking


async def _read_all(payload: bytes, **limits: int) -> list[bytes | str | None]:
    """Serve ``payload`` from a loopback server; read frames until the stream ends or a fault."""

    async def serve(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(payload)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    out: list[bytes | str | None] = []
    try:
        for _ in range(10):  # bounded: every case below ends within a few frames
            try:
                got = await asyncio.wait_for(
                    read_frame(reader.readexactly, limit_name="test.limit", **limits), 5
                )
            except FrameError as exc:
                out.append(f"{exc.kind}: {exc.message}")
                break
            out.append(got)
            if got is None:
                break
    finally:
        writer.close()
        server.close()
        await server.wait_closed()
    return out


def test_frames_are_read_in_order_then_the_end() -> None:
    data = framed(b"one") + framed(b"") + framed(b"three")
    assert asyncio.run(_read_all(data, max_bytes=100)) == [b"one", b"", b"three", None]


def test_a_size_over_the_limit_names_the_limit() -> None:
    assert asyncio.run(_read_all(framed(b"x" * 11), max_bytes=10)) == [
        "frame size out of range: frame size 11 outside 0..10 (test.limit)"
    ]


def test_a_negative_or_too_small_size_is_refused() -> None:
    assert asyncio.run(_read_all(struct.pack(">i", -5), max_bytes=10)) == [
        "frame size out of range: frame size -5 outside 0..10 (test.limit)"
    ]
    assert asyncio.run(_read_all(framed(b"abc"), max_bytes=10, min_bytes=4)) == [
        "frame size out of range: frame size 3 outside 4..10 (test.limit)"
    ]


def test_a_stream_ending_inside_a_frame_is_a_truncated_frame() -> None:
    assert asyncio.run(_read_all(struct.pack(">i", 8) + b"abc", max_bytes=10)) == [
        "truncated frame: truncated frame (3 of 8 bytes)"
    ]


def test_a_stream_ending_inside_the_size_is_the_end() -> None:
    assert asyncio.run(_read_all(b"\x00\x00", max_bytes=10)) == [None]


def test_the_blocking_reader_reads_what_framed_writes() -> None:
    left, right = socket.socketpair()
    with left, right:
        right.settimeout(5)
        left.sendall(framed(b"hello") + framed(b"x" * 20))
        assert read_frame_blocking(right.recv) == b"hello"
        with pytest.raises(FrameError, match=r"frame size 20 outside 0\.\.10"):
            read_frame_blocking(right.recv, max_bytes=10)
        left.close()
        with pytest.raises(ConnectionError):
            read_frame_blocking(right.recv)
