"""kgroup's typed group messages (:mod:`kgroup.messages`) to and from kio's wire types, for a client.

The member speaks :mod:`kgroup.messages`; the wire speaks Kafka's versions. :func:`to_wire` builds the
kio request of a chosen version (fields a version lacks are dropped, as Kafka's generated
``write`` would refuse only non-default ones); :func:`from_wire` turns a kio response back into the
typed response the member expects. Protocol metadata and assignments are opaque bytes both ways.

One table (``_SPECS``) holds every request type a member sends, with all a client needs to send it
(:class:`ClientSpec`): its API key, its translation both ways, and what a host does apart for it —
the topics whose ids decide its version (OffsetCommit, OffsetFetch), whether a broker without it is
fatal (the heartbeat of the member's protocol), the coordinator its answer names (FindCoordinator).
The clients route by it (:func:`client_spec`), never by the request's type: a new API is one entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Request,
    Response,
    ShareGroupHeartbeatRequest,
    SyncGroupRequest,
)
from kgroup.model import ErrorCode, PeerError
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis import (
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    offset_commit,
    offset_fetch,
    sync_group,
)
from kgroup.wire.apis._common import TopicIds
from kgroup.wire.apis.find_coordinator import FindCoordinatorBatchRequest
from kgroup.wire.apis.offset_fetch import OffsetFetchBatchRequest
from kgroup.wire.consumer_group import (
    consumer_group_describe_request_to_wire,
    consumer_group_describe_response_from_wire,
    consumer_group_heartbeat_request_to_wire,
    consumer_group_heartbeat_response_from_wire,
)
from kgroup.wire.share_group import (
    share_group_heartbeat_request_to_wire,
    share_group_heartbeat_response_from_wire,
)

__all__ = ["API_KEY", "ClientSpec", "client_spec", "from_wire", "to_wire"]


def _no_coordinator(response: Response) -> tuple[int, str, int] | None:
    return None


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """How the client speaks one request type: its API key, its translation both ways, and what a
    host does apart for it."""

    api_key: ApiKey
    #: (body, version, topic ids) -> the kio request
    to_wire: Callable[[Any, int, TopicIds | None], Any]
    #: (kio response, topic ids) -> the typed response
    from_wire: Callable[[Any, TopicIds | None], Response]
    #: body -> the topics it names, for a request whose version depends on whether their ids are
    #: known (OffsetCommit and OffsetFetch v10 name topics by id: ``versions.offsets_version``)
    topics: Callable[[Any], set[str]] | None = None
    #: a broker that supports no version of it fails the member (Kafka's client fails building the
    #: heartbeat of the member's protocol, naming ``group.protocol``), not just this request
    fatal_if_unsupported: bool = False
    #: typed response -> the coordinator it names (node id, host, port), if it names one
    coordinator: Callable[[Response], tuple[int, str, int] | None] = _no_coordinator


def _one_coordinator(response: Any, topic_ids: TopicIds | None) -> Response:
    coordinators = find_coordinator.response_from_wire(response).coordinators
    if len(coordinators) != 1:
        raise PeerError(f"FindCoordinator: {len(coordinators)} coordinators for one key")
    return coordinators[0].response


def _one_group(response: Any, topic_ids: TopicIds | None) -> Response:
    groups = offset_fetch.response_from_wire(response, topic_ids).groups
    if len(groups) != 1:
        raise PeerError(f"OffsetFetch: {len(groups)} groups in the answer for one")
    return groups[0].response


def _found(response: Response) -> tuple[int, str, int] | None:
    """FindCoordinator's answer: the coordinator, unless it is an error."""
    assert isinstance(response, FindCoordinatorResponse)
    if response.error_code is not ErrorCode.NONE:
        return None
    return response.node_id, response.host, response.port


def _plain(
    api_key: ApiKey,
    to_wire: Callable[[Any, int], Any],
    from_wire: Callable[[Any], Response],
    *,
    fatal_if_unsupported: bool = False,
) -> ClientSpec:
    """The spec of an API whose translation needs no topic ids."""
    return ClientSpec(
        api_key,
        lambda body, version, ids: to_wire(body, version),
        lambda response, ids: from_wire(response),
        fatal_if_unsupported=fatal_if_unsupported,
    )


#: every request type a member sends (KIP-848's APIs have their one home in kgroup.wire.consumer_group,
#: KIP-932's in kgroup.wire.share_group, the others in kgroup.wire.apis: the broker uses the same)
_SPECS: dict[type, ClientSpec] = {
    OffsetCommitRequest: ClientSpec(
        ApiKey.OFFSET_COMMIT,
        offset_commit.request_to_wire,
        offset_commit.response_from_wire,
        topics=lambda body: {o.partition.topic for o in body.offsets},
    ),
    OffsetFetchRequest: ClientSpec(
        ApiKey.OFFSET_FETCH,
        lambda body, version, ids: offset_fetch.request_to_wire(
            OffsetFetchBatchRequest((body,), require_stable=True), version, ids
        ),
        _one_group,
        topics=lambda body: {tp.topic for tp in body.partitions or ()},
    ),
    FindCoordinatorRequest: ClientSpec(
        ApiKey.FIND_COORDINATOR,
        lambda body, version, ids: find_coordinator.request_to_wire(
            FindCoordinatorBatchRequest((body.key,), body.key_type), version
        ),
        _one_coordinator,
        coordinator=_found,
    ),
    JoinGroupRequest: _plain(ApiKey.JOIN_GROUP, join_group.request_to_wire, join_group.response_from_wire),
    HeartbeatRequest: _plain(ApiKey.HEARTBEAT, heartbeat.request_to_wire, heartbeat.response_from_wire),
    LeaveGroupRequest: _plain(
        ApiKey.LEAVE_GROUP, leave_group.request_to_wire, leave_group.response_from_wire
    ),
    SyncGroupRequest: _plain(ApiKey.SYNC_GROUP, sync_group.request_to_wire, sync_group.response_from_wire),
    ConsumerGroupHeartbeatRequest: _plain(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        consumer_group_heartbeat_request_to_wire,
        consumer_group_heartbeat_response_from_wire,
        fatal_if_unsupported=True,
    ),
    ConsumerGroupDescribeRequest: _plain(
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        consumer_group_describe_request_to_wire,
        consumer_group_describe_response_from_wire,
    ),
    ShareGroupHeartbeatRequest: _plain(
        ApiKey.SHARE_GROUP_HEARTBEAT,
        share_group_heartbeat_request_to_wire,
        share_group_heartbeat_response_from_wire,
        fatal_if_unsupported=True,
    ),
}

#: Kafka's API key of each request type a member sends
API_KEY: dict[type, ApiKey] = {request_type: spec.api_key for request_type, spec in _SPECS.items()}


def client_spec(request: Request) -> ClientSpec:
    """How the client sends ``request`` (a :class:`TypeError` for a type no member sends)."""
    spec = _SPECS.get(type(request))
    if spec is None:
        raise TypeError(f"{type(request).__name__} is not a request kgroup's client sends")
    return spec


def to_wire(body: Request, version: int, topic_ids: TopicIds | None = None) -> Any:
    """The kio request of ``version`` carrying ``body`` (``topic_ids``: for OffsetCommit and
    OffsetFetch v10, which name topics by id)."""
    return client_spec(body).to_wire(body, version, topic_ids)


def from_wire(request: Request, response: Any, topic_ids: TopicIds | None = None) -> Response:
    """The typed response to ``request`` from its kio response (:class:`PeerError` if it cannot be)."""
    return client_spec(request).from_wire(response, topic_ids)
