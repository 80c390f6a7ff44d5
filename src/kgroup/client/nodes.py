"""Which node a client asks when no particular node must answer (FindCoordinator, Metadata): Kafka's
``NetworkClient.leastLoadedNode``."""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["ConnectionState", "least_loaded_node"]

N = TypeVar("N", bound=Hashable)


class ConnectionState(enum.Enum):
    """What the client knows about its connection to a node."""

    #: connected and able to send (``canSendRequest``)
    READY = "ready"
    #: connecting, checking API versions or authenticating (``isPreparingConnection``)
    CONNECTING = "connecting"
    #: not connected and out of reconnect backoff (``canConnect``)
    DISCONNECTED = "disconnected"
    #: not connected and still in reconnect backoff, or connected but unable to send more
    BLOCKED = "blocked"


def least_loaded_node(
    nodes: Sequence[N],
    in_flight: Mapping[N, int],
    connection_states: Mapping[N, ConnectionState],
    offset: int,
    *,
    last_connect_attempt_ms: Mapping[N, int] | None = None,
    max_in_flight: int = 5,
) -> N | None:
    """The node Kafka's client would send a FindCoordinator (or metadata) request to.

    Nodes are scanned from ``offset`` (the client draws it at random: inject it) round the list: the
    first ready node with nothing in flight wins at once; else the ready node with fewest requests in
    flight (first found on ties); else the last connecting node seen; else the connectable node whose
    last connection attempt is oldest. A ready node with ``max_in_flight`` requests in flight cannot
    send and counts as blocked. ``None`` when no node qualifies. Nodes missing from
    ``connection_states`` are disconnected; missing from ``in_flight``, idle.
    """
    if not nodes:
        return None
    attempts = last_connect_attempt_ms or {}
    best_in_flight = 2**31 - 1
    found_ready: N | None = None
    found_connecting: N | None = None
    found_can_connect: N | None = None
    for i in range(len(nodes)):
        node = nodes[(offset + i) % len(nodes)]
        state = connection_states.get(node, ConnectionState.DISCONNECTED)
        count = in_flight.get(node, 0)
        if state is ConnectionState.READY and count < max_in_flight:
            if count == 0:
                return node
            if count < best_in_flight:
                best_in_flight = count
                found_ready = node
        elif state is ConnectionState.CONNECTING:
            found_connecting = node
        elif state is ConnectionState.DISCONNECTED and (
            found_can_connect is None or attempts.get(found_can_connect, 0) > attempts.get(node, 0)
        ):
            found_can_connect = node
    if found_ready is not None:
        return found_ready
    if found_connecting is not None:
        return found_connecting
    return found_can_connect
