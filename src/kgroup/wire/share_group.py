"""ShareGroupHeartbeat (API key 76) and ShareGroupDescribe (77), KIP-932, between kgroup's typed
messages and kio's wire entities, both directions, v1 (the only version Kafka 4.1–4.4 serve; v0 was
4.0's early access and is gone).

The broker reads requests with ``*_request_from_wire`` and answers with ``*_response_to_wire``; a
client does the opposite. Topic ids are :class:`kgroup.model.TopicId` here and ``uuid.UUID`` in kio
(the all-zero id reads as ``None`` there). ``SubscribedTopicNames`` is nullable (null: unchanged).
"""

from __future__ import annotations

from typing import Any

from kio.schema.share_group_describe.v1 import request as describe_req_v1
from kio.schema.share_group_describe.v1 import response as describe_resp_v1
from kio.schema.share_group_heartbeat.v1 import request as heartbeat_req_v1
from kio.schema.share_group_heartbeat.v1 import response as heartbeat_resp_v1
from kio.static.primitive import i32

from kgroup.messages import (
    DescribedShareGroup,
    DescribedShareMember,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kgroup.model import ErrorCode, KgroupError
from kgroup.wire.group_heartbeats import (
    describe_request_from_wire,
    describe_request_to_wire,
    described_group_from_wire,
    described_group_to_wire,
    described_member_from_wire,
    described_member_to_wire,
    heartbeat_response_from_wire,
    heartbeat_response_to_wire,
    timedelta,
)

__all__ = [
    "SHARE_GROUP_VERSIONS",
    "share_group_describe_error_answer",
    "share_group_describe_request_from_wire",
    "share_group_describe_request_to_wire",
    "share_group_describe_response_from_wire",
    "share_group_describe_response_to_wire",
    "share_group_heartbeat_error_answer",
    "share_group_heartbeat_request_from_wire",
    "share_group_heartbeat_request_to_wire",
    "share_group_heartbeat_response_from_wire",
    "share_group_heartbeat_response_to_wire",
]

#: the versions Kafka 4.4.0 serves (and kgroup): v1 only
SHARE_GROUP_VERSIONS = (1, 1)

# kio's modules, untyped here as in consumer_group.py (its NewType ids and names are plain strings)
_HEARTBEAT_REQUEST: Any = heartbeat_req_v1
_HEARTBEAT_RESPONSE: Any = heartbeat_resp_v1
_DESCRIBE_REQUEST: Any = describe_req_v1
_DESCRIBE_RESPONSE: Any = describe_resp_v1


def _check(version: int, what: str) -> None:
    if version != 1:
        raise KgroupError(f"{what} version: {version}; Kafka 4.4 and kgroup speak version 1 only")


# --- ShareGroupHeartbeat ----------------------------------------------------------------------------


def share_group_heartbeat_request_to_wire(msg: ShareGroupHeartbeatRequest, version: int = 1) -> Any:
    _check(version, "ShareGroupHeartbeat")
    names = msg.subscribed_topic_names
    return _HEARTBEAT_REQUEST.ShareGroupHeartbeatRequest(
        group_id=msg.group_id,
        member_id=msg.member_id,
        member_epoch=i32(msg.member_epoch),
        rack_id=msg.rack_id,
        subscribed_topic_names=None if names is None else tuple(names),
    )


def share_group_heartbeat_request_from_wire(obj: Any) -> ShareGroupHeartbeatRequest:
    names = obj.subscribed_topic_names
    return ShareGroupHeartbeatRequest(
        group_id=obj.group_id,
        member_id=obj.member_id,
        member_epoch=int(obj.member_epoch),
        rack_id=obj.rack_id,
        subscribed_topic_names=None if names is None else tuple(names),
    )


def share_group_heartbeat_response_to_wire(
    msg: ShareGroupHeartbeatResponse, version: int = 1, throttle_time_ms: int = 0
) -> Any:
    _check(version, "ShareGroupHeartbeat")
    module = _HEARTBEAT_RESPONSE
    return heartbeat_response_to_wire(module, module.ShareGroupHeartbeatResponse, msg, throttle_time_ms)


def share_group_heartbeat_response_from_wire(obj: Any) -> ShareGroupHeartbeatResponse:
    return heartbeat_response_from_wire(obj, ShareGroupHeartbeatResponse)


def share_group_heartbeat_error_answer(
    request: ShareGroupHeartbeatRequest, code: ErrorCode
) -> ShareGroupHeartbeatResponse:
    """The answer to ``request`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    return ShareGroupHeartbeatResponse(code)


# --- ShareGroupDescribe -----------------------------------------------------------------------------


def share_group_describe_request_to_wire(msg: ShareGroupDescribeRequest, version: int = 1) -> Any:
    _check(version, "ShareGroupDescribe")
    return describe_request_to_wire(_DESCRIBE_REQUEST.ShareGroupDescribeRequest, msg)


def share_group_describe_request_from_wire(obj: Any) -> ShareGroupDescribeRequest:
    return describe_request_from_wire(obj, ShareGroupDescribeRequest)


def share_group_describe_response_to_wire(
    msg: ShareGroupDescribeResponse, version: int = 1, throttle_time_ms: int = 0
) -> Any:
    _check(version, "ShareGroupDescribe")
    module = _DESCRIBE_RESPONSE

    return module.ShareGroupDescribeResponse(
        throttle_time=timedelta(throttle_time_ms),
        groups=tuple(
            described_group_to_wire(module, g, lambda m: described_member_to_wire(module, m))
            for g in msg.groups
        ),
    )


def share_group_describe_response_from_wire(obj: Any) -> ShareGroupDescribeResponse:
    return ShareGroupDescribeResponse(
        groups=tuple(
            described_group_from_wire(
                g, DescribedShareGroup, lambda m: described_member_from_wire(m, DescribedShareMember)
            )
            for g in obj.groups
        )
    )


def share_group_describe_error_answer(
    request: ShareGroupDescribeRequest, code: ErrorCode
) -> ShareGroupDescribeResponse:
    """The answer to ``request`` carrying only ``code``, for each group it names."""
    return ShareGroupDescribeResponse(tuple(DescribedShareGroup(code, g) for g in request.group_ids))
