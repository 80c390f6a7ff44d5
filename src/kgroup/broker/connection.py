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
import logging
from collections import Counter
from typing import TYPE_CHECKING

from kgroup.broker.dispatch import CloseConnection, dispatch
from kgroup.model import PeerError
from kgroup.wire.framing import FrameError, framed, read_frame

if TYPE_CHECKING:
    from kgroup.broker.broker import Broker

__all__ = ["CloseLog", "serve_connection"]

log = logging.getLogger("kgroup.broker")


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


async def serve_connection(
    broker: Broker, node_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    peer = writer.get_extra_info("peername")
    where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
    connections = broker.connections[node_id]
    closing = broker.close_log
    if len(connections) >= broker.config.max_connections:
        closing.closed(
            node_id,
            where,
            "refused at max.connections",
            f"max.connections ({broker.config.max_connections}) reached",
        )
        writer.close()
        return
    connections.add(writer)
    connection_id = broker.groups.new_connection_id(node_id, where)
    client_host = f"/{peer[0]}" if isinstance(peer, tuple) else "/127.0.0.1"
    try:
        while True:
            try:
                frame = await read_frame(
                    reader.readexactly,
                    max_bytes=broker.config.max_request_bytes,
                    limit_name="socket.request.max.bytes",
                )
            except FrameError as exc:
                closing.closed(node_id, where, exc.kind, exc.message)
                return
            if frame is None:
                return  # the client closed the connection between requests
            try:
                response = await dispatch(broker, node_id, frame, connection_id, client_host)
            except (PeerError, CloseConnection) as exc:
                closing.closed(node_id, where, "refused request", str(exc))
                return
            except Exception:  # a bug in kgroup: this connection ends, the server keeps serving
                log.exception("broker %d: internal error on a request from %s; closing it", node_id, where)
                return
            if response is not None:
                writer.write(framed(response))
                await writer.drain()
            # the next pipelined request waits for a turn of every other connection
            await asyncio.sleep(0)
    except ConnectionError:
        return
    finally:
        connections.discard(writer)
        writer.close()
