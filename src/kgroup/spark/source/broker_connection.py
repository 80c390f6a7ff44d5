"""A blocking connection to one Kafka broker: what an executor task's bulk paths speak Kafka's protocol on.

The bulk read (:mod:`kgroup.spark.source.partition_fetcher`) asks and waits; the bulk write
(:mod:`kgroup.spark.source.bulk_producer`) keeps several requests in flight on one connection, so a
request's sending and its answer's reading are two calls (:meth:`BrokerConnection.send`,
:meth:`BrokerConnection.receive`). Requests and answers are kgroup's ``kio`` codec
(:mod:`kgroup.wire.codec`), frames :mod:`kgroup.wire.framing`'s.

Which version of an API to speak is asked, as Kafka's clients ask it: ApiVersions once per
connection (:meth:`BrokerConnection.version`), then the highest version both sides support.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
from dataclasses import dataclass
from typing import Any

from kgroup.model import ErrorCode, KgroupError, PeerError
from kgroup.wire.api_keys import ApiKey, api_name
from kgroup.wire.codec import decode_response, encode_request, request_class, response_class
from kgroup.wire.framing import framed, read_frame_blocking

__all__ = ["MAX_ANSWER_BYTES", "BrokerConnection", "InFlight", "RetriableBrokerError", "bootstrap_addresses"]

#: the ApiVersions version asked first: the newest kgroup's codec has (a broker that does not know it
#: answers UNSUPPORTED_VERSION in v0's layout, KIP-511, and is asked again at v0)
API_VERSIONS_VERSION = 5

#: at most this many bytes in one answer (the 100 MiB frame limit of kgroup's client)
MAX_ANSWER_BYTES = 100 * 1024 * 1024


class RetriableBrokerError(Exception):
    """The broker could not answer now (no leader, moved leader, connection lost); try again."""


def bootstrap_addresses(bootstrap_servers: str) -> list[tuple[str, int]]:
    """``host:port,host:port`` as (host, port) pairs (``[v6]:port`` unbracketed); a one-line
    :class:`KgroupError` when it names no address."""
    out = []
    for entry in bootstrap_servers.split(","):
        entry = entry.strip()
        if not entry:
            continue
        host, _, port = entry.rpartition(":")
        out.append((host.strip("[]") or "localhost", int(port)))
    if not out:
        raise KgroupError("kafka.bootstrap.servers: no address given; give host:port[,host:port]")
    return out


@dataclass(frozen=True, slots=True)
class InFlight:
    """A request sent and not yet answered: its correlation id and the class of its answer."""

    correlation: int
    answer_class: type[Any]


class BrokerConnection:
    """A blocking connection to one broker: requests out, their answers in, in order."""

    def __init__(self, host: str, port: int, timeout_s: float, client_id: str) -> None:
        self.address = f"{host}:{port}"
        self._client_id = client_id
        self._correlation = itertools.count()
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise RetriableBrokerError(f"cannot connect to {self.address}: {exc}") from None
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self._ranges: dict[int, tuple[int, int]] | None = None

    def version(self, api_key: ApiKey, ours: tuple[int, int], timeout_s: float) -> int:
        """The highest version of ``api_key`` in ``ours`` (lowest, highest) that the broker supports
        too (Kafka's ``NetworkClient`` rule; ApiVersions asked on the connection's first use); one
        line naming the API when there is none."""
        if self._ranges is None:
            self._ranges = self._api_versions(timeout_s)
        theirs = self._ranges.get(int(api_key))
        low, high = ours
        if theirs is None or min(high, theirs[1]) < max(low, theirs[0]):
            offered = "none" if theirs is None else f"v{theirs[0]}-v{theirs[1]}"
            raise KgroupError(
                f"kafka.bootstrap.servers: {self.address} speaks {api_name(api_key)} {offered}, "
                f"kgroup's Spark source and sink v{low}-v{high}; use a Kafka 2.4+ broker"
            )
        return min(high, theirs[1])

    def _api_versions(self, timeout_s: float) -> dict[int, tuple[int, int]]:
        cls: Any = request_class(ApiKey.API_VERSIONS, API_VERSIONS_VERSION)
        request = self.send(cls(client_software_name="kgroup-spark", client_software_version="1"), timeout_s)
        try:
            answer = self.receive(request, timeout_s)
        except PeerError:  # not the asked layout: v0's (KIP-511)
            answer = None
        if answer is None or int(answer.error_code) == ErrorCode.UNSUPPORTED_VERSION:
            v0: Any = request_class(ApiKey.API_VERSIONS, 0)
            answer = self.request(v0(), timeout_s)
        if int(answer.error_code) != ErrorCode.NONE:
            raise RetriableBrokerError(
                f"{self.address} answered ApiVersions with error {int(answer.error_code)}"
            )
        return {int(a.api_key): (int(a.min_version), int(a.max_version)) for a in answer.api_keys}

    def send(self, body: Any, timeout_s: float) -> InFlight:
        """Send one request; its answer is read by :meth:`receive` (answers come in sending order)."""
        correlation = next(self._correlation)
        cls = response_class(int(body.__api_key__), int(body.__version__))
        assert cls is not None
        try:
            self._sock.settimeout(timeout_s)
            self._sock.sendall(framed(encode_request(body, correlation, self._client_id)))
        except OSError as exc:
            self.close()
            raise RetriableBrokerError(f"connection to {self.address} lost: {exc}") from None
        return InFlight(correlation, cls)

    def receive(self, request: InFlight, timeout_s: float) -> Any:
        """The answer to ``request``, the oldest request not yet answered on this connection."""
        try:
            self._sock.settimeout(timeout_s)
            frame = read_frame_blocking(self._recv, max_bytes=MAX_ANSWER_BYTES)
        except (OSError, ConnectionError) as exc:
            self.close()
            raise RetriableBrokerError(f"connection to {self.address} lost: {exc}") from None
        got, answer = decode_response(frame, request.answer_class)
        if got != request.correlation:
            self.close()
            raise RetriableBrokerError(f"{self.address} answered request {got}, not {request.correlation}")
        return answer

    def request(self, body: Any, timeout_s: float) -> Any:
        """Send one request and wait for its answer."""
        return self.receive(self.send(body, timeout_s), timeout_s)

    def _recv(self, count: int) -> bytes:
        return self._sock.recv(min(count, 8 << 20))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
