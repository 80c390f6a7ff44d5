"""One client connection: size-prefixed frames in, responses out, strictly one request at a time.

Kafka's broker mutes a connection while a request is being handled and reads the next one only
after the response is sent, so responses leave in request order (a JoinGroup parked until the
rebalance completes holds back the requests behind it on that connection, exactly as on Kafka). A
frame larger than ``socket.request.max.bytes``, a header that cannot be read, an unknown API key, a
version out of range or a body that cannot be parsed closes this connection with one log line; every
other connection keeps being served.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import TYPE_CHECKING

from kgroup.broker.dispatch import CloseConnection, dispatch
from kgroup.model import PeerError

if TYPE_CHECKING:
    from kgroup.broker.broker import Broker

__all__ = ["serve_connection"]

log = logging.getLogger("kgroup.broker")
_SIZE = struct.Struct(">i")


async def serve_connection(
    broker: Broker, node_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    peer = writer.get_extra_info("peername")
    where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
    connections = broker.connections[node_id]
    if len(connections) >= broker.config.max_connections:
        log.warning(
            "broker %d: refusing connection from %s: max.connections (%d) reached",
            node_id,
            where,
            broker.config.max_connections,
        )
        writer.close()
        return
    connections.add(writer)
    connection_id = broker.groups.new_connection_id(node_id, where)
    client_host = f"/{peer[0]}" if isinstance(peer, tuple) else "/127.0.0.1"
    try:
        while True:
            try:
                size_bytes = await reader.readexactly(4)
            except (asyncio.IncompleteReadError, ConnectionError):
                return  # the client closed the connection between requests
            (size,) = _SIZE.unpack(size_bytes)
            if size < 0 or size > broker.config.max_request_bytes:
                log.warning(
                    "broker %d: closing connection from %s: frame size %d outside 0..%d "
                    "(socket.request.max.bytes)",
                    node_id,
                    where,
                    size,
                    broker.config.max_request_bytes,
                )
                return
            try:
                frame = await reader.readexactly(size)
            except asyncio.IncompleteReadError as exc:
                log.warning(
                    "broker %d: closing connection from %s: truncated frame (%d of %d bytes)",
                    node_id,
                    where,
                    len(exc.partial),
                    size,
                )
                return
            try:
                response = await dispatch(broker, node_id, frame, connection_id, client_host)
            except (PeerError, CloseConnection) as exc:
                log.warning("broker %d: closing connection from %s: %s", node_id, where, exc)
                return
            except Exception:  # a bug in kgroup: this connection ends, the server keeps serving
                log.exception("broker %d: internal error on a request from %s; closing it", node_id, where)
                return
            if response is not None:
                writer.write(_SIZE.pack(len(response)) + response)
                await writer.drain()
    except ConnectionError:
        return
    finally:
        connections.discard(writer)
        writer.close()
