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
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kgroup.model import PeerError
from kgroup.wire.framing import SIZE, FrameError, framed, read_frame

__all__ = ["CloseConnection", "CloseLog", "ConnectionLimits", "FrameHandler", "Peer", "serve_connection"]

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


#: a request frame (without its size) of ``peer`` in, the response frame (or ``None``: no answer)
#: out; :class:`~kgroup.model.PeerError` or :class:`CloseConnection` close the connection
FrameHandler = Callable[[bytes, Peer], Awaitable[bytes | None]]

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


def _write_framed(writer: asyncio.StreamWriter, response: bytes) -> None:
    if len(response) < SEPARATE_PREFIX_BYTES:
        writer.write(framed(response))
    else:
        writer.write(SIZE.pack(len(response)))
        writer.write(response)


async def serve_connection(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    node_id: int,
    handle: FrameHandler,
    limits: ConnectionLimits,
    open_connections: set[asyncio.StreamWriter],
    close_log: CloseLog,
) -> None:
    """Serve one accepted connection of node ``node_id`` until either side closes it.

    ``open_connections`` holds the node's open connections (this one is added while it is served);
    a connection beyond ``limits.max_connections`` is closed at once.
    """
    address = writer.get_extra_info("peername")
    where = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
    closing = close_log
    if len(open_connections) >= limits.max_connections:
        closing.closed(
            node_id,
            where,
            "refused at max.connections",
            f"max.connections ({limits.max_connections}) reached",
        )
        writer.close()
        return
    open_connections.add(writer)
    peer = Peer(
        node_id,
        f"{node_id}/{where}/{next(_connection_numbers)}",
        f"/{address[0]}" if isinstance(address, tuple) else "/127.0.0.1",
    )
    try:
        while True:
            try:
                frame = await read_frame(
                    reader.readexactly,
                    max_bytes=limits.max_request_bytes,
                    limit_name="socket.request.max.bytes",
                )
            except FrameError as exc:
                closing.closed(node_id, where, exc.kind, exc.message)
                return
            if frame is None:
                return  # the client closed the connection between requests
            try:
                response = await handle(frame, peer)
            except CloseConnection as exc:
                if exc.reply is not None:
                    writer.write(framed(exc.reply))
                    await writer.drain()
                closing.closed(node_id, where, exc.kind, str(exc))
                return
            except PeerError as exc:
                closing.closed(node_id, where, "refused request", str(exc))
                return
            except Exception:  # a bug in kgroup: this connection ends, the server keeps serving
                log.exception("broker %d: internal error on a request from %s; closing it", node_id, where)
                return
            if response is not None:
                _write_framed(writer, response)
                await writer.drain()
            # the next pipelined request waits for a turn of every other connection
            await asyncio.sleep(0)
    except ConnectionError:
        return
    finally:
        open_connections.discard(writer)
        writer.close()
