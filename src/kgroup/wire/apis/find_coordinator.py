"""FindCoordinator (API key 10), v0-v6, both directions.

On the wire a request asks for one key's coordinator before v4 and a batch of keys from v4 (KIP-699):
:class:`FindCoordinatorBatchRequest` is that batch, typed, which the broker iterates and the client
builds (with one key), and :class:`FindCoordinatorBatchResponse` its answer, one
:class:`FoundCoordinator` per key. Shape changes: v1 adds the key type and the answer's error message;
v4 the batch (the answer names each key; before, it names none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgroup.messages import FindCoordinatorResponse
from kgroup.valuetypes import fast_init
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis._common import request_entity, response_entity
from kgroup.wire.codec import build, error_from_wire

__all__ = [
    "BATCHED",
    "FindCoordinatorBatchRequest",
    "FindCoordinatorBatchResponse",
    "FoundCoordinator",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
]

#: the first version with a batch of keys
BATCHED = 4
#: Kafka's key types: a group's coordinator, a transactional id's coordinator
GROUP_KEY, TRANSACTION_KEY = 0, 1


@fast_init
@dataclass(frozen=True, slots=True)
class FindCoordinatorBatchRequest:
    """A FindCoordinator request as the wire carries it: one key before v4, any number from v4."""

    keys: tuple[str, ...]
    key_type: int = GROUP_KEY


@fast_init
@dataclass(frozen=True, slots=True)
class FoundCoordinator:
    """One key's answer; ``key`` is ``None`` before v4, whose answer names no key."""

    key: str | None
    response: FindCoordinatorResponse
    error_message: str | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class FindCoordinatorBatchResponse:
    coordinators: tuple[FoundCoordinator, ...]


def request_to_wire(body: FindCoordinatorBatchRequest, version: int) -> Any:
    cls = request_entity(ApiKey.FIND_COORDINATOR, version)
    if version >= BATCHED:
        return build(cls, {"key_type": body.key_type, "coordinator_keys": body.keys})
    if len(body.keys) != 1:
        raise ValueError(f"FindCoordinator v{version} asks for one key, not {len(body.keys)}")
    if version == 0 and body.key_type != GROUP_KEY:
        raise ValueError("FindCoordinator v0 finds group coordinators only (key_type 0)")
    return build(cls, {"key": body.keys[0], "key_type": body.key_type})


def request_from_wire(request: Any) -> FindCoordinatorBatchRequest:
    keys = tuple(request.coordinator_keys) if hasattr(request, "coordinator_keys") else (request.key,)
    return FindCoordinatorBatchRequest(keys, int(getattr(request, "key_type", GROUP_KEY)))


def _fields(found: FoundCoordinator) -> dict[str, Any]:
    answer = found.response
    return {
        "node_id": answer.node_id,
        "host": answer.host,
        "port": answer.port,
        "error_code": answer.error_code,
        "error_message": found.error_message,
    }


def response_to_wire(body: FindCoordinatorBatchResponse, version: int) -> Any:
    cls = response_entity(ApiKey.FIND_COORDINATOR, version)
    if version >= BATCHED:
        coordinators = [{"key": c.key, **_fields(c)} for c in body.coordinators]
        return build(cls, {"throttle_time": 0, "coordinators": coordinators})
    if len(body.coordinators) != 1:
        raise ValueError(f"FindCoordinator v{version} answers one key, not {len(body.coordinators)}")
    return build(cls, {"throttle_time": 0, **_fields(body.coordinators[0])})


def _found(key: str | None, entry: Any) -> FoundCoordinator:
    return FoundCoordinator(
        key,
        FindCoordinatorResponse(
            error_from_wire(entry.error_code), int(entry.node_id), entry.host, int(entry.port)
        ),
        getattr(entry, "error_message", None),
    )


def response_from_wire(response: Any) -> FindCoordinatorBatchResponse:
    if hasattr(response, "coordinators"):
        return FindCoordinatorBatchResponse(tuple(_found(c.key, c) for c in response.coordinators))
    return FindCoordinatorBatchResponse((_found(None, response),))
