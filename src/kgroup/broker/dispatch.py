"""A frame in, a response frame (or nothing) out: the header, version checks, then the API's handler.

Kafka's rules (``SocketServer``, ``RequestContext``): an unknown API key, a version the broker does
not enable or a body that cannot be parsed is an ``InvalidRequestException`` and the connection is
closed; the one exception is ApiVersions at an unsupported version, answered with
``UNSUPPORTED_VERSION`` and the supported ranges in the v0 layout so the client can downgrade.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.api_versions.v0.response import ApiVersionsResponse

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

__all__ = ["CloseConnection", "Handler", "RequestContext", "dispatch", "register"]


class CloseConnection(Exception):
    """Close the connection without an answer (Kafka does so e.g. for a failed acks=0 produce)."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    broker: Broker
    node_id: int
    header: RequestHeader
    connection: str  # unique per connection: where the coordinator addresses its replies
    client_host: str

    @property
    def version(self) -> int:
        return self.header.api_version


#: a handler returns the response as plain data (see :func:`kgroup.wire.codec.build`), or ``None``
#: for no response at all
Handler = Callable[[RequestContext, Any], Awaitable[dict[str, Any] | None]]
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
    broker: Broker, node_id: int, frame: bytes, connection: str = "-", client_host: str = "/127.0.0.1"
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
    request = decode_request(frame, header)
    data = await handler(RequestContext(broker, node_id, header, connection, client_host), request.body)
    if data is None:
        return None
    cls = response_class(header.api_key, header.api_version)
    assert cls is not None  # supported versions all have a schema
    return encode_response(header.correlation_id, build(cls, data))
