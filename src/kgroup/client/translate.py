"""kgroup's typed group messages (:mod:`kgroup.messages`) to and from kio's wire types, for a client.

The member speaks :mod:`kgroup.messages`; the wire speaks Kafka's versions. :func:`to_wire` builds the
kio request of a chosen version (fields a version lacks are dropped, as Kafka's generated
``write`` would refuse only non-default ones); :func:`from_wire` turns a kio response back into the
typed response the member expects. Protocol metadata and assignments are opaque bytes both ways.
"""

from __future__ import annotations

from typing import Any

from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Request,
    Response,
    SyncGroupRequest,
)
from kgroup.model import PeerError
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
from kgroup.wire.apis._common import TopicIds, ms
from kgroup.wire.apis.find_coordinator import FindCoordinatorBatchRequest
from kgroup.wire.apis.offset_fetch import OffsetFetchBatchRequest
from kgroup.wire.consumer_group import (
    consumer_group_describe_request_to_wire,
    consumer_group_describe_response_from_wire,
    consumer_group_heartbeat_request_to_wire,
    consumer_group_heartbeat_response_from_wire,
)

__all__ = ["API_KEY", "from_wire", "to_wire"]

#: Kafka's API key of each request type the member sends
API_KEY: dict[type, ApiKey] = {
    OffsetCommitRequest: ApiKey.OFFSET_COMMIT,
    OffsetFetchRequest: ApiKey.OFFSET_FETCH,
    FindCoordinatorRequest: ApiKey.FIND_COORDINATOR,
    JoinGroupRequest: ApiKey.JOIN_GROUP,
    HeartbeatRequest: ApiKey.HEARTBEAT,
    LeaveGroupRequest: ApiKey.LEAVE_GROUP,
    SyncGroupRequest: ApiKey.SYNC_GROUP,
    ConsumerGroupHeartbeatRequest: ApiKey.CONSUMER_GROUP_HEARTBEAT,
    ConsumerGroupDescribeRequest: ApiKey.CONSUMER_GROUP_DESCRIBE,
}


def to_wire(body: Request, version: int, topic_ids: TopicIds | None = None) -> Any:
    """The kio request of ``version`` carrying ``body`` (``topic_ids``: for OffsetCommit and
    OffsetFetch v10, which name topics by id)."""
    api_key = API_KEY.get(type(body))
    if api_key is None:
        raise TypeError(f"{type(body).__name__} is not a request kgroup's client sends")
    # KIP-848's APIs have their one home in kgroup.wire.consumer_group (the broker uses it too)
    if isinstance(body, ConsumerGroupHeartbeatRequest):
        return consumer_group_heartbeat_request_to_wire(body, version)
    if isinstance(body, ConsumerGroupDescribeRequest):
        return consumer_group_describe_request_to_wire(body, version)
    if isinstance(body, FindCoordinatorRequest):
        return find_coordinator.request_to_wire(
            FindCoordinatorBatchRequest((body.key,), body.key_type), version
        )
    if isinstance(body, OffsetCommitRequest):
        return offset_commit.request_to_wire(body, version, topic_ids)
    if isinstance(body, OffsetFetchRequest):
        return offset_fetch.request_to_wire(
            OffsetFetchBatchRequest((body,), require_stable=True), version, topic_ids
        )
    if isinstance(body, JoinGroupRequest):
        return join_group.request_to_wire(body, version)
    if isinstance(body, SyncGroupRequest):
        return sync_group.request_to_wire(body, version)
    if isinstance(body, HeartbeatRequest):
        return heartbeat.request_to_wire(body, version)
    if isinstance(body, LeaveGroupRequest):
        return leave_group.request_to_wire(body, version)
    raise TypeError(f"{type(body).__name__} is not a request kgroup's client sends")


def from_wire(request: Request, response: Any, topic_ids: TopicIds | None = None) -> Response:
    """The typed response to ``request`` from its kio response (:class:`PeerError` if it cannot be)."""
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return consumer_group_heartbeat_response_from_wire(response)
    if isinstance(request, ConsumerGroupDescribeRequest):
        return consumer_group_describe_response_from_wire(response)
    if isinstance(request, FindCoordinatorRequest):
        coordinators = find_coordinator.response_from_wire(response).coordinators
        if len(coordinators) != 1:
            raise PeerError(f"FindCoordinator: {len(coordinators)} coordinators for one key")
        return coordinators[0].response
    if isinstance(request, OffsetCommitRequest):
        return offset_commit.response_from_wire(response, topic_ids)
    if isinstance(request, OffsetFetchRequest):
        groups = offset_fetch.response_from_wire(response, topic_ids).groups
        if len(groups) != 1:
            raise PeerError(f"OffsetFetch: {len(groups)} groups in the answer for one")
        return groups[0].response
    if isinstance(request, JoinGroupRequest):
        return join_group.response_from_wire(response)
    if isinstance(request, SyncGroupRequest):
        return sync_group.response_from_wire(response)
    if isinstance(request, HeartbeatRequest):
        return heartbeat.response_from_wire(response)
    if isinstance(request, LeaveGroupRequest):
        return leave_group.response_from_wire(response)
    raise TypeError(f"{type(request).__name__} is not a request kgroup's client sends")


def throttle_ms(response: Any) -> int:
    value = getattr(response, "throttle_time", None)
    return 0 if value is None else ms(value)
