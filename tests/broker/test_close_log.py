"""200 slow connections dropped together log two lines, not 200 (issue 17)."""

from __future__ import annotations

import logging
import socket
import struct
import time

import pytest

from kgroup.testing import KafkaBroker


def _broker_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "kgroup.broker" and r.levelno >= logging.WARNING
    ]


def test_two_hundred_truncated_frames_make_one_line_and_a_summary(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kgroup.broker")
    with KafkaBroker() as kafka:
        sockets = []
        for _ in range(200):  # each announces 100 bytes, sends 10, and goes away
            sock = socket.create_connection(("127.0.0.1", kafka.port(0)), timeout=10)
            sock.sendall(struct.pack(">i", 100) + b"x" * 10)
            sockets.append(sock)
        for sock in sockets:
            sock.close()
        deadline = time.monotonic() + 20
        while not _broker_warnings(caplog) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the other 199 close meanwhile: counted, not logged
        assert len(_broker_warnings(caplog)) == 1
    lines = _broker_warnings(caplog)  # stopping the broker ends the burst: its summary
    assert len(lines) == 2, lines
    assert "truncated frame (10 of 100 bytes)" in lines[0]
    assert lines[1] == "199 more connection(s) closed within 10 s of that one (199 truncated frame)"


def test_a_burst_ends_with_its_window(caplog: pytest.LogCaptureFixture) -> None:
    import asyncio

    from kgroup.broker.connection import CloseLog

    caplog.set_level(logging.WARNING, logger="kgroup.broker")

    async def run() -> None:
        closing = CloseLog(window_s=0.1)
        for n in range(3):
            closing.closed(0, f"peer{n}", "truncated frame", f"truncated frame ({n} of 9 bytes)")
        closing.closed(0, "peer3", "frame size out of range", "frame size -1 outside 0..100")
        await asyncio.sleep(0.3)  # the window ends: its summary
        closing.closed(0, "peer4", "truncated frame", "truncated frame (4 of 9 bytes)")  # a new burst
        closing.flush()

    asyncio.run(run())
    assert _broker_warnings(caplog) == [
        "broker 0: closing connection from peer0: truncated frame (0 of 9 bytes)",
        "3 more connection(s) closed within 0.1 s of that one (2 truncated frame, 1 frame size out of range)",
        "broker 0: closing connection from peer4: truncated frame (4 of 9 bytes)",
    ]
