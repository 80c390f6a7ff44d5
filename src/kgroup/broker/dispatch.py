"""A frame in, a response frame (or nothing) out: the header, version checks, then the API's handler.

Kafka's rules (``SocketServer``, ``RequestContext``): an unknown API key, a version the broker does
not enable or a body that cannot be parsed is an ``InvalidRequestException`` and the connection is
closed; the one exception is ApiVersions at an unsupported version, answered with
``UNSUPPORTED_VERSION`` and the supported ranges in the v0 layout so the client can downgrade.

No request may hold the event loop for long, whatever its size (Kafka serves connections from
several threads; kgroup's broker has one loop, so a heavy request must give the others their turns):

* a frame larger than :data:`LARGE_FRAME_BYTES` is decoded in the broker's codec thread, in short
  native calls (:mod:`kgroup.wire.piecewise`), and so is a response of many entries built and
  encoded there — the interpreter hands the GIL back to the loop every few milliseconds;
* a body whose arrays hold more than ``max_request_elements`` elements is refused before it is
  decoded (the connection is closed, as for a frame over ``socket.request.max.bytes``), which bounds
  the memory and time one request can take;
* handlers that loop over a request's elements call :meth:`Pacer.due` and, every
  :data:`Pacer.SLICE_S`, give the loop a turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kio.schema.api_versions.v0.response import ApiVersionsResponse

from kgroup.security.acl import AclOperation, ResourceType
from kgroup.wire.codec import (
    API_VERSIONS_KEY,
    RequestHeader,
    build,
    decode_request,
    decode_request_header,
    encode_response,
    response_class,
)
from kgroup.wire.versions import API_NAMES, SUPPORTED_VERSIONS, supported

if TYPE_CHECKING:
    from kgroup.broker.broker import Broker
    from kgroup.security.session import Session

__all__ = [
    "LARGE_FRAME_BYTES",
    "CloseConnection",
    "Handler",
    "Pacer",
    "RequestContext",
    "dispatch",
    "register",
]

#: frames above this size are decoded off the event loop (a body of this size is read natively in
#: about 10 ms at worst: some 7,000 array elements)
LARGE_FRAME_BYTES = 128 * 1024
#: a response with more entries than this (array elements, counted until this is reached) is built
#: and encoded off the event loop
LARGE_RESPONSE_ENTRIES = 2_000


class CloseConnection(Exception):
    """Close the connection without an answer (Kafka does so e.g. for a failed acks=0 produce)."""


class Pacer:
    """Tells a handler looping over a request's elements when to give the event loop a turn.

    ``if ctx.pacer.due(): await ctx.pacer.pause()`` once per element: ``due`` is true once
    :data:`SLICE_S` has passed since the request started or last paused (a clock read, some 60 ns:
    a request holds at most ``max_request_elements`` elements).
    """

    SLICE_S = 0.005
    __slots__ = ("_since", "pauses")

    def __init__(self) -> None:
        self._since = time.monotonic()
        self.pauses = 0

    def due(self) -> bool:
        return time.monotonic() - self._since >= self.SLICE_S

    async def pause(self) -> None:
        await asyncio.sleep(0)
        self.pauses += 1
        self._since = time.monotonic()


@dataclass(frozen=True, slots=True)
class RequestContext:
    broker: Broker
    node_id: int
    header: RequestHeader
    connection: str  # unique per connection: where the coordinator addresses its replies
    client_host: str
    pacer: Pacer = field(default_factory=Pacer)
    #: the connection's authenticated principal (``User:ANONYMOUS`` without authentication)
    principal: str = "User:ANONYMOUS"
    #: the name of the listener the request came through ("": the default PLAINTEXT listener)
    listener: str = ""

    @property
    def version(self) -> int:
        return self.header.api_version

    def authorized(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """Whether this connection's principal may do ``operation`` on the resource (always, without
        an authorizer): the one security check handlers make (kgroup.security.acl)."""
        return self.broker.security.authorize(
            self.principal, self.client_host, operation, resource_type, name
        )


#: a handler returns the response as plain data (see :func:`kgroup.wire.codec.build`), as the kio
#: response entity itself (what a typed translation in :mod:`kgroup.wire` makes), or ``None`` for no
#: response at all
Handler = Callable[[RequestContext, Any], Awaitable[Any]]
_HANDLERS: dict[int, Handler] = {}


def register(api_key: int) -> Callable[[Handler], Handler]:
    def decorate(handler: Handler) -> Handler:
        _HANDLERS[api_key] = handler
        return handler

    return decorate


def api_version_ranges() -> list[dict[str, int]]:
    return [
        {"api_key": key, "min_version": low, "max_version": high}
        for key, (low, high) in sorted(SUPPORTED_VERSIONS.items())
        if key in _HANDLERS  # only what this broker answers
    ]


def _unsupported_api_versions(correlation_id: int) -> bytes:
    response = build(ApiVersionsResponse, {"error_code": 35, "api_keys": api_version_ranges()})
    return encode_response(correlation_id, response)


async def dispatch(
    broker: Broker,
    node_id: int,
    frame: bytes,
    connection: str = "-",
    client_host: str = "/127.0.0.1",
    session: Session | None = None,
) -> bytes | None:
    header = decode_request_header(frame)
    if header.api_key == API_VERSIONS_KEY and not supported(header.api_key, header.api_version):
        return _unsupported_api_versions(header.correlation_id)
    if not supported(header.api_key, header.api_version) or header.api_key not in _HANDLERS:
        if header.api_key in SUPPORTED_VERSIONS:
            low, high = SUPPORTED_VERSIONS[header.api_key]
            raise CloseConnection(
                f"{API_NAMES[header.api_key]} v{header.api_version} is not enabled (v{low}-v{high} are)"
            )
        raise CloseConnection(f"unknown or unsupported api key {header.api_key}")
    handler = _HANDLERS.get(header.api_key)
    if handler is None:
        raise CloseConnection(f"api key {header.api_key} has no handler")
    limit = broker.config.max_request_elements
    large = len(frame) > LARGE_FRAME_BYTES
    if large:
        request = await broker.off_loop(decode_request, frame, header, max_elements=limit, piecewise=True)
    else:
        request = decode_request(frame, header, max_elements=limit)
    principal = "User:ANONYMOUS" if session is None else session.principal
    listener = "" if session is None else session.listener
    ctx = RequestContext(
        broker, node_id, header, connection, client_host, principal=principal, listener=listener
    )
    data = await handler(ctx, request.body)
    if data is None:
        return None
    cls = response_class(header.api_key, header.api_version)
    assert cls is not None  # supported versions all have a schema
    if isinstance(data, cls):  # built by a typed translation: a few entries per group, encoded here
        return encode_response(header.correlation_id, data)
    if large or not _fewer_entries_than(data, LARGE_RESPONSE_ENTRIES):
        return await broker.off_loop(_build_and_encode, header.correlation_id, cls, data)
    return encode_response(header.correlation_id, build(cls, data))


def _build_and_encode(correlation_id: int, cls: type[Any], data: Mapping[str, Any]) -> bytes:
    return encode_response(correlation_id, build(cls, data))


def _fewer_entries_than(data: Any, limit: int) -> bool:
    """Whether the response data holds fewer than ``limit`` array elements (it stops counting there).

    An iterator (a lazily made array) counts as many: it is made where the response is built.
    """
    left = limit
    stack: list[Any] = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            stack.extend(v for v in value.values() if isinstance(v, Mapping | list | tuple | Iterator))
        elif isinstance(value, list | tuple):
            left -= len(value)
            if left <= 0:
                return False
            stack.extend(v for v in value if isinstance(v, Mapping | list | tuple | Iterator))
        elif isinstance(value, Iterator):
            return False
    return True
