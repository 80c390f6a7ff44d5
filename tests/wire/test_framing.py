"""kgroup's one framing implementation (:mod:`kgroup.wire.framing`), read over a real loopback socket."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.wire.framing import (
    BufferPool,
    Frame,
    FrameError,
    FrameReceiver,
    framed,
    read_frame,
    read_frame_blocking,
)


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


# --- FrameReceiver: the buffered protocol's half (the broker's connections) -----------------------


def _feed(
    receiver: FrameReceiver, data: bytes, chunks: list[int], allocate: list[bool], *, keep: bool = True
) -> list[Frame]:
    """Receive ``data`` as a transport would: into the receiver's buffers, ``chunks`` bytes at a time
    at most (cycled), taking complete frames as they come (``keep=False``: their bytes, the frames
    themselves dropped, as the broker drops a request once served)."""
    out: list[Frame] = []
    position = step = 0
    while position < len(data) and receiver.error is None:
        buffer = receiver.buffer(allocate=allocate[step % len(allocate)])
        assert len(buffer) > 0
        count = min(len(buffer), chunks[step % len(chunks)], len(data) - position)
        buffer[:count] = data[position : position + count]
        receiver.received(count)
        position += count
        step += 1
        while (frame := receiver.next_frame()) is not None:
            out.append(frame if keep else bytes(frame))
            del frame
    return out


@given(
    payloads=st.lists(st.binary(max_size=300), max_size=12),
    chunks=st.lists(st.integers(1, 400), min_size=1, max_size=8),
    allocate=st.lists(st.booleans(), min_size=1, max_size=4),
)
@settings(max_examples=300, deadline=None)
def test_the_receiver_hands_out_every_frame_in_order_however_the_bytes_arrive(
    payloads: list[bytes], chunks: list[int], allocate: list[bool]
) -> None:
    receiver = FrameReceiver(max_bytes=1000, buffer_bytes=64)
    frames = _feed(receiver, b"".join(framed(p) for p in payloads), chunks, allocate)
    assert [bytes(f) for f in frames] == payloads
    assert receiver.error is None and receiver.truncated() is None
    assert receiver.partial_bytes == 0 and receiver.queued_bytes == 0
    for frame, payload in zip(frames, payloads, strict=True):
        # a frame larger than the small buffer is a read-only view of its own buffer, never copied
        large = len(payload) + 4 > 64
        assert isinstance(frame, memoryview if large else bytes)
        if isinstance(frame, memoryview):
            assert frame.readonly and len(frame.obj) == len(payload)  # type: ignore[arg-type]


def test_a_large_frame_waits_in_the_small_buffer_until_its_buffer_may_be_allocated() -> None:
    receiver = FrameReceiver(max_bytes=1000, buffer_bytes=64)
    data = framed(b"x" * 200)
    buffer = receiver.buffer(allocate=False)
    buffer[:30] = data[:30]
    receiver.received(30)
    assert receiver.room() == 34 and receiver.partial_bytes == 30
    buffer = receiver.buffer(allocate=False)
    assert len(buffer) == 34
    buffer[:] = data[30:64]
    receiver.received(34)
    assert receiver.room() == 0  # the reader stops here until the frame is asked for
    buffer = receiver.buffer(allocate=True)
    assert len(buffer) == 200 - 60  # the frame's own buffer, after the 60 bytes already received
    buffer[:] = data[64:]
    receiver.received(len(buffer))
    assert receiver.next_frame() == b"x" * 200


def test_the_receiver_refuses_a_size_out_of_range_after_the_frames_before_it() -> None:
    receiver = FrameReceiver(max_bytes=10, min_bytes=1, limit_name="test.limit", buffer_bytes=64)
    data = framed(b"one") + framed(b"x" * 11) + framed(b"two")
    assert _feed(receiver, data, [len(data)], [True]) == [b"one"]
    assert receiver.error is not None
    assert receiver.error.message == "frame size 11 outside 1..10 (test.limit)"
    assert receiver.room() == 0 and len(receiver.buffer(allocate=True)) > 0  # what lands there is dropped
    receiver.received(5)
    assert receiver.next_frame() is None


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\x00\x00", None),  # inside the size: the end, as read_frame
        (struct.pack(">i", 8) + b"abc", "truncated frame (3 of 8 bytes)"),
        (struct.pack(">i", 100) + b"a" * 70, "truncated frame (70 of 100 bytes)"),  # in its own buffer
        (framed(b"whole"), None),
    ],
)
def test_the_end_of_the_stream_inside_a_frame_is_a_truncated_frame(data: bytes, expected: str | None) -> None:
    receiver = FrameReceiver(max_bytes=1000, buffer_bytes=64)
    _feed(receiver, data, [7], [True])
    truncated = receiver.truncated()
    assert (truncated.message if truncated is not None else None) == expected


@given(
    payloads=st.lists(st.binary(max_size=300), max_size=12),
    chunks=st.lists(st.integers(1, 400), min_size=1, max_size=8),
)
@settings(max_examples=200, deadline=None)
def test_reused_buffers_give_every_frame_its_own_bytes(payloads: list[bytes], chunks: list[int]) -> None:
    pool = BufferPool(max_bytes=2048, max_buffer_bytes=512)  # frames of 61-300 bytes: buffers of 64-512
    receiver = FrameReceiver(max_bytes=1000, buffer_bytes=64, pool=pool)
    assert _feed(receiver, b"".join(framed(p) for p in payloads), chunks, [True], keep=False) == payloads
    assert pool.kept_bytes <= 2048


def test_a_large_frames_buffer_is_reused_once_nothing_holds_the_frame() -> None:
    pool = BufferPool()
    receiver = FrameReceiver(max_bytes=1 << 20, pool=pool)
    first = _feed(receiver, framed(b"a" * 100_000), [1 << 20], [True])[0]
    assert isinstance(first, memoryview)
    held = first.obj
    second = _feed(receiver, framed(b"b" * 90_000), [1 << 20], [True])[0]
    assert isinstance(second, memoryview) and second.obj is not held  # the first is still held
    assert bytes(first) == b"a" * 100_000
    del first
    third = _feed(receiver, framed(b"c" * 120_000), [1 << 20], [True])[0]
    assert isinstance(third, memoryview) and third.obj is held  # 100,000 rounded up to 128 KiB
    assert bytes(third) == b"c" * 120_000 and bytes(second) == b"b" * 90_000


def test_the_pool_keeps_at_most_its_bytes_and_no_huge_buffer() -> None:
    pool = BufferPool(max_bytes=300_000, max_buffer_bytes=200_000)
    assert len(pool.take(100_000)) == 128 * 1024 and len(pool.take(10)) == 16
    assert len(pool.take(250_000)) == 250_000  # over max_buffer_bytes: exactly its size
    pool.give(bytearray(250_000))
    assert pool.kept_bytes == 0
    pool.give(bytearray(131_072))
    pool.give(bytearray(131_072))
    pool.give(bytearray(131_072))  # over max_bytes
    assert pool.kept_bytes == 262_144
    assert len(pool.take(1000)) == 131_072 and pool.kept_bytes == 131_072
