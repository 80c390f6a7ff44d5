"""One client connection: size-prefixed frames in, responses out, strictly one request at a time.

Kafka's broker mutes a connection while a request is being handled and reads the next one only
after the response is sent, so responses leave in request order (a JoinGroup parked until the
rebalance completes holds back the requests behind it on that connection, exactly as on Kafka). A
frame larger than ``socket.request.max.bytes``, a header that cannot be read, an unknown API key, a
version out of range or a body that cannot be parsed closes this connection; every other connection
keeps being served.

Pipelined requests are served one at a time with a turn for the other connections after each (Kafka's
processors interleave connections): a client that sends 10,000 requests at once does not hold the
loop until all are answered. Closing warnings are logged through a :class:`CloseLog`: the first
of a burst with its reason, the rest of the burst as one summary line.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from kgroup.model import PeerError
from kgroup.wire.framing import (
    RECEIVE_BUFFER_BYTES,
    BufferPool,
    FileRegion,
    Frame,
    FrameError,
    FrameReceiver,
    Pieces,
    framed,
    framed_pieces,
)

__all__ = [
    "CloseConnection",
    "CloseLog",
    "Connection",
    "ConnectionLimits",
    "FrameHandler",
    "Peer",
    "Response",
    "serve_connection",
]

log = logging.getLogger("kgroup.broker")


class CloseConnection(Exception):
    """Close the connection (Kafka does so e.g. for a failed acks=0 produce), after sending ``reply``
    if there is one (a failed SASL authentication is answered, then closed); ``kind`` names why in
    the close log."""

    def __init__(self, message: str, *, reply: bytes | None = None, kind: str = "refused request") -> None:
        super().__init__(message)
        self.reply = reply
        self.kind = kind


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """``max.connections`` (per listener) and ``socket.request.max.bytes``."""

    max_connections: int
    max_request_bytes: int


@dataclass(frozen=True, slots=True)
class Peer:
    """Who a connection is: ``connection_id`` is unique in the process (the coordinator addresses its
    replies by it), ``client_host`` is Kafka's ``/address`` form (DescribeGroups shows it)."""

    node_id: int
    connection_id: str
    client_host: str


#: a response frame (without its size): one buffer, or the buffers that make it up in order
Response = bytes | Pieces

#: a request frame (without its size) of ``peer`` in, the response frame (or ``None``: no answer)
#: out; :class:`~kgroup.model.PeerError` or :class:`CloseConnection` close the connection
FrameHandler = Callable[[Frame, Peer], Awaitable[Response | None]]

_connection_numbers = itertools.count(1)


class CloseLog:
    """Warnings about closed or refused connections: one line per burst, not one per connection.

    The first close of a burst is logged at once with its reason and peer; the closes in the next
    ``window_s`` seconds are counted by kind and logged as one summary line when the window ends (or
    at :meth:`flush`): 200 slow clients dropped together make two lines, not 200.
    """

    def __init__(self, window_s: float = 10.0) -> None:
        self.window_s = window_s
        self._counts: Counter[str] = Counter()
        self._timer: asyncio.TimerHandle | None = None

    def closed(self, node_id: int, where: str, kind: str, detail: str) -> None:
        """Connection ``where`` of broker ``node_id`` was closed or refused: ``kind`` names why."""
        if self._timer is None:
            log.warning("broker %d: closing connection from %s: %s", node_id, where, detail)
            self._timer = asyncio.get_running_loop().call_later(self.window_s, self.flush)
        else:
            self._counts[kind] += 1

    def flush(self) -> None:
        """Log the summary of the current burst (if it had more than its first close) and end it."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._counts:
            total = sum(self._counts.values())
            kinds = ", ".join(f"{count} {kind}" for kind, count in self._counts.most_common())
            log.warning(
                "%d more connection(s) closed within %g s of that one (%s)", total, self.window_s, kinds
            )
            self._counts.clear()


#: a response at least this large is written as its size prefix, then itself (not joined into one new
#: buffer first: a fetch answer of a megabyte is not copied once more only to put 4 bytes before it)
SEPARATE_PREFIX_BYTES = 64 * 1024
#: bytes read ahead of the request being served (Kafka mutes a channel while it serves a request;
#: asyncio's StreamReader read up to 128 KiB ahead): past this, reading stops until the request is
#: answered; a large frame's own buffer is allocated only once the connection asks for that frame
READ_AHEAD_BYTES = RECEIVE_BUFFER_BYTES
#: the most buffers one writev(2) takes (Linux's IOV_MAX)
_IOV_MAX = 1024


class Connection(asyncio.BufferedProtocol):
    """One accepted connection: frames in through a :class:`~kgroup.wire.framing.FrameReceiver` (each
    large frame received straight into its own buffer), responses out (on a plain TCP socket, a
    response of several buffers with one ``writev``, the stored batches of a Fetch answer with
    ``sendfile``, as Kafka's ``FileRecords.writeTo`` does), flow control both ways.

    Large frames' buffers come from ``pool`` (shared by the broker's connections) and go back to it.
    ``serve(connection)`` runs as a task once the connection is made (after the TLS handshake, on a
    TLS listener): the connection's whole life, as :func:`serve_connection`. Reading stops while a
    request is served once :data:`READ_AHEAD_BYTES` are buffered ahead of it, and whenever the client
    does not read its answers (:meth:`drain` waits, the next request is not read).
    """

    def __init__(
        self,
        serve: Callable[[Connection], Coroutine[Any, Any, None]],
        *,
        max_request_bytes: int,
        pool: BufferPool | None = None,
    ) -> None:
        self._serve = serve
        self._receiver = FrameReceiver(
            max_bytes=max_request_bytes, limit_name="socket.request.max.bytes", pool=pool
        )
        self._transport: asyncio.Transport | None = None
        self._fd = -1  # the plain TCP socket's descriptor (-1 over TLS: its transport encrypts)
        self._over_ssl = False
        self._task: asyncio.Task[None] | None = None
        self._reading = True
        self._waiting = False  # the server waits for the next frame
        self._read_waiter: asyncio.Future[None] | None = None
        self._eof = False
        self._lost = False
        self._write_paused = False
        self._drain_waiter: asyncio.Future[None] | None = None

    # --- asyncio's protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._over_ssl = transport.get_extra_info("sslcontext") is not None
        sock = transport.get_extra_info("socket")
        if sock is not None and not self._over_ssl:
            self._fd = sock.fileno()
        self._task = asyncio.get_running_loop().create_task(self._serve(self))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._receiver.buffer(allocate=self._waiting)

    def buffer_updated(self, nbytes: int) -> None:
        self._receiver.received(nbytes)
        if self._receiver.has_frame or self._receiver.error is not None:
            self._wake_reader()
        self._update_reading()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake_reader()
        # plain TCP: stay open for the answers to the requests already received (a half-closed
        # client still reads); TLS ends the session at its close_notify (asyncio's stream reader did so)
        return not self._over_ssl

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._wake_reader()
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionResetError("Connection lost"))

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- what the server uses --------------------------------------------------------------------

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default if self._transport is None else self._transport.get_extra_info(name, default)

    async def next_frame(self) -> Frame | None:
        """The next request frame; ``None`` once the client has closed (or reset) the connection
        between frames; :class:`FrameError` for a size out of range or a frame cut short by the
        client's close (the frames before either are served first)."""
        receiver = self._receiver
        while True:
            frame = receiver.next_frame()
            if frame is not None:
                self._update_reading()
                return frame
            if receiver.error is not None:
                raise receiver.error
            if self._lost or self._eof:
                truncated = receiver.truncated() if self._eof else None
                if truncated is not None:
                    raise truncated
                return None
            waiter = self._read_waiter = asyncio.get_running_loop().create_future()
            self._waiting = True
            self._update_reading()
            try:
                await waiter
            finally:
                self._waiting = False
                self._read_waiter = None

    def write(self, response: bytes | Pieces) -> None:
        """Send one response frame (its size prefix is added here); file regions among its pieces
        are sent and closed here."""
        transport = self._transport
        assert transport is not None
        if isinstance(response, bytes) and len(response) < SEPARATE_PREFIX_BYTES:
            transport.write(framed(response))
            return
        pieces = framed_pieces(response)
        try:
            index = skip = 0
            if self._fd >= 0 and not transport.is_closing() and not transport.get_write_buffer_size():
                # nothing of this connection waits in the transport: write to the socket directly,
                # as the transport's own write does then, but the buffers with one writev (none
                # copied) and the stored batches with sendfile (never read into memory)
                index, skip = _send(self._fd, pieces)
            for piece in pieces[index:]:
                # the rest waits in the transport (copied there; a file region read) until writable;
                # over TLS, all of it goes this way
                transport.write(_in_memory(piece, skip))
                skip = 0
        finally:
            for piece in pieces:
                if not isinstance(piece, _BUFFERS):
                    piece.close()

    async def drain(self) -> None:
        """Wait while the transport holds more unsent bytes than its high-water mark (a client not
        reading its answers); :class:`ConnectionResetError` once the connection is lost."""
        transport = self._transport
        assert transport is not None
        if transport.is_closing():
            await asyncio.sleep(0)  # let connection_lost run first, as asyncio's StreamWriter does
        if self._lost:
            raise ConnectionResetError("Connection lost")
        if not self._write_paused:
            return
        waiter = self._drain_waiter = asyncio.get_running_loop().create_future()
        await waiter

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    # --- inside ----------------------------------------------------------------------------------

    def _wake_reader(self) -> None:
        waiter = self._read_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _update_reading(self) -> None:
        """Read while the server waits for a frame, or while little is buffered ahead of it."""
        receiver = self._receiver
        if self._eof or self._lost or receiver.error is not None:
            return
        if self._waiting and not receiver.has_frame:
            want = True
        else:
            ahead = receiver.queued_bytes + receiver.partial_bytes
            want = ahead < READ_AHEAD_BYTES and receiver.room() > 0
        if want != self._reading and self._transport is not None:
            self._reading = want
            if want:
                self._transport.resume_reading()
            else:
                self._transport.pause_reading()


_BUFFERS = (bytes, bytearray, memoryview)


def _send(fd: int, pieces: Pieces) -> tuple[int, int]:
    """Write ``pieces`` to the socket while it takes them (non-blocking): buffers with writev,
    file regions with sendfile. The index of the first piece not wholly sent, and how much of it was."""
    index, count = 0, len(pieces)
    while index < count:
        piece = pieces[index]
        if isinstance(piece, _BUFFERS):
            stop = index + 1
            while stop < count and stop - index < _IOV_MAX and isinstance(pieces[stop], _BUFFERS):
                stop += 1
            try:
                written = os.writev(fd, pieces[index:stop])  # type: ignore[arg-type]
            except OSError:  # would block, or a broken connection the transport's own write meets too
                return index, 0
            for at in range(index, stop):
                size = len(pieces[at])
                if written < size:
                    return at, written
                written -= size
            index = stop
        else:
            sent = 0
            while sent < piece.size:
                try:
                    written = os.sendfile(fd, piece.fd, piece.position + sent, piece.size - sent)
                except OSError:
                    return index, sent
                if written == 0:  # the file ends early: reading it says so
                    return index, sent
                sent += written
            index += 1
    return index, 0


def _in_memory(
    piece: bytes | bytearray | memoryview | FileRegion, skip: int
) -> bytes | bytearray | memoryview:
    if isinstance(piece, _BUFFERS):
        return memoryview(piece)[skip:] if skip else piece
    return piece.read(skip)


async def serve_connection(
    connection: Connection,
    *,
    node_id: int,
    handle: FrameHandler,
    limits: ConnectionLimits,
    open_connections: set[Connection],
    close_log: CloseLog,
    on_closed: Callable[[str], None] | None = None,
) -> None:
    """Serve one accepted connection of node ``node_id`` until either side closes it (then
    ``on_closed`` hears its connection id).

    ``open_connections`` holds the node's open connections (this one is added while it is served);
    a connection beyond ``limits.max_connections`` is closed at once.
    """
    address = connection.get_extra_info("peername")
    where = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
    closing = close_log
    if len(open_connections) >= limits.max_connections:
        closing.closed(
            node_id,
            where,
            "refused at max.connections",
            f"max.connections ({limits.max_connections}) reached",
        )
        connection.close()
        return
    open_connections.add(connection)
    peer = Peer(
        node_id,
        f"{node_id}/{where}/{next(_connection_numbers)}",
        f"/{address[0]}" if isinstance(address, tuple) else "/127.0.0.1",
    )
    try:
        while True:
            try:
                frame = await connection.next_frame()
            except FrameError as exc:
                closing.closed(node_id, where, exc.kind, exc.message)
                return
            if frame is None:
                return  # the client closed the connection between requests
            try:
                response = await handle(frame, peer)
            except CloseConnection as exc:
                if exc.reply is not None:
                    connection.write(exc.reply)
                    await connection.drain()
                closing.closed(node_id, where, exc.kind, str(exc))
                return
            except PeerError as exc:
                closing.closed(node_id, where, "refused request", str(exc))
                return
            except Exception:  # a bug in kgroup: this connection ends, the server keeps serving
                log.exception("broker %d: internal error on a request from %s; closing it", node_id, where)
                return
            del frame  # a large frame's buffer is freed before the next one is read
            if response is not None:
                connection.write(response)
                await connection.drain()
            # the next pipelined request waits for a turn of every other connection
            await asyncio.sleep(0)
    except ConnectionError:
        return
    finally:
        open_connections.discard(connection)
        connection.close()
        if on_closed is not None:
            on_closed(peer.connection_id)
