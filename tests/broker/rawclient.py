"""A raw Kafka wire client for tests: send kio requests (or arbitrary bytes), read kio responses."""

from __future__ import annotations

import socket
from typing import Any

from kgroup.wire.codec import decode_response, encode_request, response_class
from kgroup.wire.framing import framed, read_frame_blocking


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
        self.sock.sendall(framed(frame))

    def read_frame(self) -> bytes:
        return read_frame_blocking(self.sock.recv)

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
