"""Reaching a cluster from its bootstrap list, shared by the wire clients (:mod:`kgroup.client.consumer`,
:mod:`kgroup.client.share_consumer`): parsing ``bootstrap.servers`` and connecting to the first server
that answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from kgroup.client.connection import ConnectionLost
from kgroup.client.security import SaslAuthenticationError
from kgroup.client.versions import UnsupportedApi
from kgroup.model import KgroupError, PeerError

__all__ = ["ClientError", "connect_first", "parse_bootstrap"]


class ClientError(ConnectionError):
    """The client cannot reach the cluster, or the group failed fatally (the message says which)."""


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """``kafka.bootstrap.servers``: ``host:port[,host:port...]`` (KgroupError naming the bad entry)."""
    out: list[tuple[str, int]] = []
    for entry in (s.strip() for s in servers.split(",")):
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise KgroupError(
                f"bootstrap servers: {entry!r} is not host:port; give e.g. 127.0.0.1:9092 (comma-separated)"
            )
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise KgroupError("bootstrap servers: empty; give at least one host:port, e.g. 127.0.0.1:9092")
    return out


async def connect_first(
    servers: Sequence[tuple[str, int]],
    connect: Callable[[int, tuple[str, int]], Awaitable[None]],
    *,
    setting: str,
    sasl_hint: str = "",
    on_connection_lost: Callable[[str, int], Awaitable[None]] | None = None,
) -> int:
    """Try ``connect(index, (host, port))`` for each bootstrap server in turn; the index of the first
    that answers.

    A failed SASL handshake ends the search at once (a :class:`ClientError` naming the server, then
    ``sasl_hint``); an unreachable server, a timeout or a refused ApiVersions moves on to the next, after
    ``on_connection_lost(host, port)`` (which may raise a clearer error) when the broker closed the
    connection. When none answers: a :class:`ClientError` naming ``setting`` and each server's error.
    """
    errors: list[str] = []
    for index, (host, port) in enumerate(servers):
        try:
            await connect(index, (host, port))
            return index
        except SaslAuthenticationError as exc:
            raise ClientError(f"{host}:{port}: SASL authentication failed: {exc}{sasl_hint}") from None
        except (ConnectionLost, UnsupportedApi, TimeoutError, PeerError) as exc:
            if on_connection_lost is not None and isinstance(exc, ConnectionLost):
                await on_connection_lost(host, port)
            errors.append(f"{host}:{port}: {exc}")
    raise ClientError(
        f"{setting}: no broker reachable (" + "; ".join(errors) + "); check that the broker runs and the "
        "address is right"
    )
