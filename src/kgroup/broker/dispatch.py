"""A frame in, a response frame (or nothing) out: the header, version checks, then the API's handler.

Each handler registers with the range of versions it answers (:func:`register`); the ApiVersions
answer is made from that registry, so the broker advertises exactly what it serves. The ranges are
Apache Kafka 4.4.0's (``tests/apache_kafka/test_diff_wire.py`` compares the two answers), including
its one advertised version it does not serve: Produce's range starts at v0 for old librdkafka
(KAFKA-18659), but v0-v2 are refused like any version the broker does not enable.

Kafka's rules (``SocketServer``, ``RequestContext``): an unknown API key, a version the broker does
not enable or a body that cannot be parsed is an ``InvalidRequestException`` and the connection is
closed; the one exception is ApiVersions at an unsupported version, answered with
``UNSUPPORTED_VERSION`` and the supported ranges in the v0 layout so the client can downgrade.

No request may hold the event loop for long, whatever its size (Kafka serves connections from
several threads; kgroup's broker has one loop, so a heavy request must give the others their turns):

* a frame larger than :data:`LARGE_FRAME_BYTES` is decoded in the broker's codec thread, in short
  native calls (:mod:`kgroup.wire.piecewise`), unless it holds at most :data:`FEW_ELEMENTS` array
  elements (its size is then a few blobs, record batches, copied at once), and a response of many
  entries is built and encoded there (a handler whose small request has a large answer — a group of
  thousands described — returns a :class:`LargeAnswer`) — the interpreter hands the GIL back to the
  loop every few milliseconds;
* a body whose arrays hold more than ``max_request_elements`` elements is refused before it is
  decoded (the connection is closed, as for a frame over ``socket.request.max.bytes``), which bounds
  the memory and time one request can take;
* handlers that loop over a request's elements call :meth:`Pacer.due` and, every
  :data:`Pacer.SLICE_S`, give the loop a turn.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgroup.broker.connection import CloseConnection
from kgroup.broker.services import BrokerServices
from kgroup.model import ErrorCode, PeerError
from kgroup.security.acl import SUPPORTED_OPERATIONS, AclOperation, ResourceType, operations_bit_field
from kgroup.wire.api_keys import ApiKey, api_name
from kgroup.wire.codec import (
    BodyReader,
    RequestHeader,
    build,
    decode_request,
    decode_request_header,
    encode_response,
    entity_reader,
    entity_writer,
    has_schemas,
    request_class,
    response_class,
)
from kgroup.wire.framing import Frame, Pieces
from kgroup.wire.guard import check_body

if TYPE_CHECKING:
    from kgroup.security.session import Session

__all__ = [
    "LARGE_FRAME_BYTES",
    "CloseConnection",
    "Encoder",
    "Handler",
    "LargeAnswer",
    "Pacer",
    "Registration",
    "RequestContext",
    "api_version_ranges",
    "dispatch",
    "register",
    "registered_versions",
]

#: frames above this size are decoded off the event loop (a body of this size is read natively in
#: about 10 ms at worst: some 7,000 array elements)
LARGE_FRAME_BYTES = 128 * 1024
#: a large frame of at most this many array elements (a Produce of a few big record batches) is decoded
#: on the loop all the same: its bytes are a few blobs that one native call copies in well under a
#: millisecond, less than handing the frame to the codec thread and back costs
FEW_ELEMENTS = 64
#: a response with more entries than this (array elements, counted until this is reached) is built
#: and encoded off the event loop
LARGE_RESPONSE_ENTRIES = 2_000


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
    """One request as its handler sees it: the broker's services, the node and connection it came
    to, and its header."""

    services: BrokerServices
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
        return self.services.security.authorize(
            self.principal, self.client_host, operation, resource_type, name
        )

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        """The operations this connection's principal may do on the resource, as an answer's
        ``authorized_operations`` bit field (``AuthHelper.authorizedOperations``: every operation the
        resource type has, without an authorizer)."""
        return operations_bit_field(
            op for op in SUPPORTED_OPERATIONS[resource_type] if self.authorized(op, resource_type, name)
        )


#: a handler returns the response as plain data (see :func:`kgroup.wire.codec.build`), as the kio
#: response entity itself (what a typed translation in :mod:`kgroup.wire` makes), as a
#: :class:`LargeAnswer`, or ``None`` for no response at all
Handler = Callable[[RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class LargeAnswer:
    """A handler's answer too large to make on the event loop: ``translate(*args)`` makes the kio
    response entity, which is then encoded, both in the broker's codec thread. (A 5,000-member
    group's ConsumerGroupDescribe answer is some 60 ms of translation and 90 ms of encoding: on the
    loop, every connection waited them out.)"""

    translate: Callable[..., Any]
    args: tuple[Any, ...]


#: an API's own encoder of its answers (correlation id, version, the handler's plain data) -> the
#: response frame as buffers: what ``encode_response(correlation_id, build(cls, data))`` makes,
#: written by hand (the Fetch answer, around the stored batches: :mod:`kgroup.wire.fetch_response`)
Encoder = Callable[[int, int, Mapping[str, Any]], Pieces]


@dataclass(frozen=True, slots=True)
class Registration:
    """The handler of one API and the versions of it the broker answers."""

    api_key: ApiKey
    min_version: int
    max_version: int
    handler: Handler
    encoder: Encoder | None = None
    decoder: BodyReader | None = None
    #: the lowest version ApiVersions names, where it is below ``min_version`` (Kafka's Produce)
    advertised_min: int | None = None

    def answers(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


_REGISTRY: dict[int, Registration] = {}


def register(
    api_key: ApiKey,
    versions: tuple[int, int],
    *,
    encoder: Encoder | None = None,
    decoder: BodyReader | None = None,
    advertised_min: int | None = None,
) -> Callable[[Handler], Handler]:
    """Make the decorated function the handler of ``api_key`` at ``versions`` (both ends included).

    Every version must have a request and a response schema in kio's index (a range kio cannot read
    is a bug here, found at import; the schemas' modules are imported at a version's first request);
    an API has one handler. With ``encoder``, the handler's plain-data answers are written by it
    instead of kio (it must write every version of the range exactly as kio would); with
    ``decoder``, requests are read by it instead of kio (after the same guard), as kio reads them.
    ``advertised_min`` is the lowest version the ApiVersions answer names when Kafka names one it
    does not serve (requests below ``versions`` are still refused).
    """
    low, high = versions
    missing = [v for v in range(low, high + 1) if not has_schemas(api_key, v)]
    if low > high or missing:
        raise ValueError(f"{api_key.title}: versions {low}-{high} are not all known to the codec ({missing})")

    def decorate(handler: Handler) -> Handler:
        if api_key in _REGISTRY:
            raise ValueError(f"{api_key.title} has a handler already")
        _REGISTRY[api_key] = Registration(api_key, low, high, handler, encoder, decoder, advertised_min)
        return handler

    return decorate


def supports(api_key: int, version: int) -> bool:
    """Whether a handler is registered for ``api_key`` and answers ``version``."""
    registration = _REGISTRY.get(api_key)
    return registration is not None and registration.answers(version)


def registered_versions() -> dict[ApiKey, tuple[int, int]]:
    """api key -> (min version, max version) of every registered handler: the versions it answers."""
    return {r.api_key: (r.min_version, r.max_version) for r in _REGISTRY.values()}


def warm_codec() -> None:
    """Read the schemas (and make the readers and writers) of every registered API at its newest
    version — what current clients speak — and of every ApiVersions version. A broker runs this in a
    thread when it starts: read on first use instead, an API's first request held the loop, and so
    every other connection, for 0.1-1 s while its modules were imported."""
    for api_key, (low, high) in registered_versions().items():
        versions = range(low, high + 1) if api_key is ApiKey.API_VERSIONS else (high,)
        for version in versions:
            request, response = request_class(int(api_key), version), response_class(int(api_key), version)
            if request is not None:
                entity_reader(request)
            if response is not None:
                entity_writer(response)


def api_version_ranges() -> list[dict[str, int]]:
    """The ``api_keys`` of the ApiVersions answer: the registry, in api key order."""
    return [
        {
            "api_key": int(r.api_key),
            "min_version": r.min_version if r.advertised_min is None else r.advertised_min,
            "max_version": r.max_version,
        }
        for r in sorted(_REGISTRY.values(), key=lambda r: r.api_key)
    ]


def _unsupported_api_versions(correlation_id: int) -> bytes:
    v0 = response_class(ApiKey.API_VERSIONS, 0)
    assert v0 is not None
    response = build(v0, {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": api_version_ranges()})
    return encode_response(correlation_id, response)


async def dispatch(
    services: BrokerServices,
    node_id: int,
    frame: Frame,
    connection: str = "-",
    client_host: str = "/127.0.0.1",
    session: Session | None = None,
) -> bytes | Pieces | None:
    """The response frame (without its size) to one request frame, or ``None`` for no response;
    :class:`~kgroup.model.PeerError` or :class:`CloseConnection` to close the connection."""
    header = decode_request_header(frame)
    registration = _REGISTRY.get(header.api_key)
    if registration is None:
        if header.api_key == ApiKey.API_VERSIONS:
            return _unsupported_api_versions(header.correlation_id)
        raise CloseConnection(f"unknown or unsupported api key {header.api_key}")
    if not registration.answers(header.api_version):
        if header.api_key == ApiKey.API_VERSIONS:
            return _unsupported_api_versions(header.correlation_id)
        raise CloseConnection(
            f"{api_name(header.api_key)} v{header.api_version} is not enabled "
            f"(v{registration.min_version}-v{registration.max_version} are)"
        )
    limit = services.config.max_request_elements
    large = len(frame) > LARGE_FRAME_BYTES and not _few_elements(frame, header)
    read_body = registration.decoder
    if large:
        request = await services.off_loop(
            decode_request, frame, header, max_elements=limit, piecewise=True, read_body=read_body
        )
    else:
        request = decode_request(frame, header, max_elements=limit, read_body=read_body)
    principal = "User:ANONYMOUS" if session is None else session.principal
    listener = "" if session is None else session.listener
    ctx = RequestContext(
        services, node_id, header, connection, client_host, principal=principal, listener=listener
    )
    data = await registration.handler(ctx, request.body)
    if data is None:
        return None
    if isinstance(data, LargeAnswer):
        return await services.off_loop(_translate_and_encode, header.correlation_id, data)
    encoder = registration.encoder
    if encoder is not None and isinstance(data, Mapping):
        if not _fewer_entries_than(data, LARGE_RESPONSE_ENTRIES):
            return await services.off_loop(encoder, header.correlation_id, header.api_version, data)
        return encoder(header.correlation_id, header.api_version, data)
    cls = response_class(header.api_key, header.api_version)
    assert cls is not None  # supported versions all have a schema
    if isinstance(data, cls):  # built by a typed translation: encoded here unless the request was large
        if large:
            return await services.off_loop(encode_response, header.correlation_id, data)
        return encode_response(header.correlation_id, data)
    if not _fewer_entries_than(data, LARGE_RESPONSE_ENTRIES):  # (a large request's answer may be small)
        return await services.off_loop(_build_and_encode, header.correlation_id, cls, data)
    return encode_response(header.correlation_id, build(cls, data))


def _few_elements(frame: Frame, header: RequestHeader) -> bool:
    """Whether the body holds at most :data:`FEW_ELEMENTS` array elements (a walk bounded by that)."""
    cls = request_class(header.api_key, header.api_version)
    if cls is None:
        return False
    try:
        check_body(cls, frame, header.size, max_elements=FEW_ELEMENTS)
    except PeerError:  # more elements, or malformed: the full decode (off the loop) says which
        return False
    return True


def _translate_and_encode(correlation_id: int, answer: LargeAnswer) -> bytes:
    return encode_response(correlation_id, answer.translate(*answer.args))


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
        kind = type(value)
        if kind is dict or (kind not in _SEQUENCES and isinstance(value, Mapping)):
            inner: Iterable[Any] = value.values()
        elif kind in _SEQUENCES or isinstance(value, list | tuple):
            left -= len(value)
            if left <= 0:
                return False
            inner = value
        elif isinstance(value, Iterator):
            return False
        else:
            continue
        for v in inner:  # (the common types by identity: an ABC's isinstance is slow)
            kind = type(v)
            if kind in _LEAVES:
                continue
            if kind is dict or kind in _SEQUENCES or isinstance(v, Mapping | list | tuple | Iterator):
                stack.append(v)
    return True


_SEQUENCES = frozenset((list, tuple))
#: the types a response's fields usually are that hold no array element
_LEAVES = frozenset((int, str, bytes, bool, float, type(None), uuid.UUID, memoryview))
