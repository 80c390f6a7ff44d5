"""One TCP connection to a Kafka-protocol broker: framing, headers, correlation ids, in-flight requests.

Kafka's framing: every request and response is a big-endian int32 size followed by that many bytes.
A request starts with its header (v1, or v2 with tagged fields when the API version is flexible), a
response with its header (v0, or v1 when flexible — except ApiVersions, whose response header is always
v0 so that a client can read it whatever version it asked for). ``kio``'s generated classes carry
those rules (``__header_schema__``) and the message layouts of every version.

A broken connection fails every in-flight request at once with :class:`ConnectionLost` (Kafka's
``NetworkClient`` disconnect); a response that does not parse is a :class:`~kgroup.model.PeerError`
and closes the connection, as Kafka's client does.

With a :class:`~kgroup.client.security.ClientSecurity`, :meth:`BrokerConnection.open` speaks TLS
(``SSL``, ``SASL_SSL``) and authenticates (``SASL_*``) before the connection is handed out; a refused
authentication is a :class:`~kgroup.client.security.SaslAuthenticationError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any

from kgroup.client.security import ClientSecurity, authenticate
from kgroup.model import PeerError
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import decode_response, encode_request, response_class
from kgroup.wire.framing import FrameError, framed, read_frame

__all__ = ["BrokerConnection", "ConnectionLost"]

#: responses larger than this are refused (Kafka's client has ``receive.buffer`` limits per request
#: type; a fetch is the only large answer and kgroup's client does not fetch records)
MAX_RESPONSE_BYTES = 100 * 1024 * 1024


class ConnectionLost(ConnectionError):
    """The connection closed or failed before the response came (Kafka's ``DisconnectException``)."""


class BrokerConnection:
    """A connection to one broker; :meth:`request` sends and awaits the matching response."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "kgroup",
        node_id: int | None = None,
        security: ClientSecurity | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``ssl_context`` replaces ``security``'s TLS context (:mod:`kgroup.client.probe`'s
        unchecked one, which only asks whether a port speaks TLS)."""
        self.host = host
        self.port = port
        self.security = security or ClientSecurity()
        self.client_id = client_id
        self.node_id = node_id
        self._ssl_context = ssl_context
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._next_correlation = 0
        self._in_flight: dict[int, tuple[type, asyncio.Future[Any]]] = {}
        self._read_task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._closed

    async def open(self, timeout_s: float = 10.0) -> None:
        """Connect (TLS and SASL as ``security`` says); on failure the connection is closed."""
        context = self._ssl_context or self.security.ssl_context()
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(
                    self.host, self.port, ssl=context, server_hostname=self.host if context else None
                ),
                timeout_s,
            )
        except ssl.SSLError as exc:
            self._closed = True
            raise ConnectionLost(
                f"TLS handshake with {self.host}:{self.port} failed ({exc.reason or exc}); check "
                "ssl.ca.location (the CA that signed the broker's certificate) and that the listener is "
                f"{self.security.protocol}"
            ) from None
        except (OSError, TimeoutError) as exc:
            self._closed = True
            raise ConnectionLost(f"cannot connect to {self.host}:{self.port}: {exc}") from None
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())
        if self.security.sasl:
            try:
                await authenticate(self, self.security, timeout_s)
            except BaseException:
                self.close()
                raise

    def send(self, body: Any) -> asyncio.Future[Any]:
        """Write one request (a kio request entity) now; the future gets its response entity.

        Requests are written in call order, which is what lets a group member rely on the broker
        handling one connection's requests in order ("commit, then JoinGroup").
        """
        if self._writer is None or self._closed:
            raise ConnectionLost(f"connection to {self.host}:{self.port} is closed")
        api_key = int(body.__api_key__)
        version = int(body.__version__)
        correlation_id = self._next_correlation
        self._next_correlation = (self._next_correlation + 1) & 0x7FFFFFFF
        response_cls = response_class(api_key, version)
        if response_cls is None:
            raise TypeError(f"no response schema for api key {api_key} v{version}")
        payload = encode_request(body, correlation_id, self.client_id)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._in_flight[correlation_id] = (response_cls, future)
        self._writer.write(framed(payload))
        return future

    async def request(self, body: Any, *, timeout_s: float = 30.0) -> Any:
        """Send one request and await its response; after ``timeout_s`` (``request.timeout.ms``) the
        connection is closed, failing every other request on it, as Kafka's client does."""
        future = self.send(body)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            self.close(ConnectionLost(f"request to {self.host}:{self.port} timed out after {timeout_s} s"))
            raise

    async def _read_loop(self) -> None:
        assert self._reader is not None
        error: Exception = ConnectionLost(f"connection to {self.host}:{self.port} closed by the broker")
        try:
            while True:
                try:
                    data = await read_frame(
                        self._reader.readexactly,
                        min_bytes=4,
                        max_bytes=MAX_RESPONSE_BYTES,
                        limit_name="largest response",
                    )
                except FrameError as exc:
                    raise PeerError(
                        f"broker {self.host}:{self.port} sent a bad frame: {exc.message}"
                    ) from None
                if data is None:
                    break  # closed by the broker
                correlation_id = int.from_bytes(data[:4], "big", signed=True)
                entry = self._in_flight.get(correlation_id)
                if entry is None:
                    raise PeerError(
                        f"broker {self.host}:{self.port} answered unknown correlation id {correlation_id}"
                    )
                response_cls, future = entry
                del self._in_flight[correlation_id]
                try:
                    response = self._parse(response_cls, data)
                except PeerError as exc:
                    if not future.done():
                        future.set_exception(ConnectionLost(exc.message))
                        future.exception()
                    raise
                if not future.done():
                    future.set_result(response)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        except PeerError as exc:
            error = ConnectionLost(exc.message)
        except asyncio.CancelledError:
            error = ConnectionLost(f"connection to {self.host}:{self.port} closed")
        self._fail_all(error)
        self._closed = True
        self._close_writer()

    def _parse(self, response_cls: type, data: bytes) -> Any:
        try:
            _correlation_id, response = decode_response(data, response_cls)
            return response
        except PeerError as exc:
            api_key = int(response_cls.__api_key__)  # type: ignore[attr-defined]
            if api_key == ApiKey.API_VERSIONS and int(response_cls.__version__) > 0:  # type: ignore[attr-defined]
                # A broker that does not support our ApiVersions version answers in v0's layout with
                # UNSUPPORTED_VERSION and its ranges (KIP-511); read it as v0.
                v0 = response_class(ApiKey.API_VERSIONS, 0)
                assert v0 is not None
                return self._parse(v0, data)
            raise PeerError(
                f"broker {self.host}:{self.port} sent a malformed response: {exc.message}"
            ) from None

    def _fail_all(self, error: Exception) -> None:
        for _cls, future in list(self._in_flight.values()):
            if not future.done():
                future.set_exception(error)
                future.exception()  # retrieved: no "never retrieved" warning for abandoned requests
        self._in_flight.clear()

    def close(self, error: Exception | None = None) -> None:
        if self._closed and self._writer is None:
            return
        self._closed = True
        self._fail_all(error or ConnectionLost(f"connection to {self.host}:{self.port} closed"))
        if self._read_task is not None and not self._read_task.done():
            self._read_task.cancel()
        self._close_writer()
        self._writer = None

    def _close_writer(self) -> None:
        if self._writer is None:
            return
        with contextlib.suppress(Exception):
            if self._ssl_context is not None or self.security.tls:
                # no TLS close_notify exchange (Kafka's client just closes the socket): a TLS
                # transport's graceful close outlives an event loop that ends now
                self._writer.transport.abort()
            else:
                self._writer.close()

    async def wait_closed(self) -> None:
        if self._read_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._read_task
