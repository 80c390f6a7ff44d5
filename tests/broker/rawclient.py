"""A raw Kafka wire client for tests: send kio requests (or arbitrary bytes), read kio responses."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kgroup.wire.codec import decode_response, encode_request, response_class

_SIZE = struct.Struct(">i")


class RawClient:
    def __init__(self, bootstrap: str, timeout_s: float = 10.0) -> None:
        host, _, port = bootstrap.split(",")[0].rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_frame(self, frame: bytes) -> None:
        self.sock.sendall(_SIZE.pack(len(frame)) + frame)

    def _read_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def read_frame(self) -> bytes:
        (size,) = _SIZE.unpack(self._read_exactly(4))
        return self._read_exactly(size)

    def is_closed_by_peer(self) -> bool:
        """True when the broker closed the connection (reads EOF / reset within the timeout)."""
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True

    def request(self, request: Any, response_type: type[Any] | None = None) -> Any:
        self.correlation += 1
        self.send_frame(encode_request(request, self.correlation))
        rtype = response_type or response_class(int(request.__api_key__), int(request.__version__))
        correlation, body = decode_response(self.read_frame(), rtype)
        assert correlation == self.correlation
        return body
