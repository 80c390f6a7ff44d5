"""ShareGroupHeartbeat (API key 76) and ShareGroupDescribe (77), KIP-932, between kgroup's typed
messages and kio's wire entities, both directions, v1 (the only version Kafka 4.1–4.4 serve; v0 was
4.0's early access and is gone).

The broker reads requests with ``*_request_from_wire`` and answers with ``*_response_to_wire``; a
client does the opposite. Topic ids are :class:`kgroup.model.TopicId` here and ``uuid.UUID`` in kio
(the all-zero id reads as ``None`` there). ``SubscribedTopicNames`` is nullable (null: unchanged).
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kio.schema.share_group_describe.v1 import request as describe_req_v1
from kio.schema.share_group_describe.v1 import response as describe_resp_v1
from kio.schema.share_group_heartbeat.v1 import request as heartbeat_req_v1
from kio.schema.share_group_heartbeat.v1 import response as heartbeat_resp_v1
from kio.static.primitive import i32, i32Timedelta

from kgroup.messages import (
    DescribedShareGroup,
    DescribedShareMember,
    DescribedTopicPartitions,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TopicPartitions,
)
from kgroup.model import ErrorCode, KgroupError, TopicId
from kgroup.wire.codec import error_from_wire, error_to_wire

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


def _uuid(topic_id: TopicId) -> uuid.UUID:
    return uuid.UUID(int=topic_id.to_int())


def _topic_id(value: uuid.UUID | None) -> TopicId:
    return TopicId(0, 0) if value is None else TopicId.from_int(value.int)


def _timedelta(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def _ms(value: datetime.timedelta) -> int:
    return int(value // datetime.timedelta(milliseconds=1))


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
    assignment = None
    if msg.assignment is not None:
        assignment = module.Assignment(
            topic_partitions=tuple(
                module.TopicPartitions(
                    topic_id=_uuid(t.topic_id), partitions=tuple(i32(p) for p in t.partitions)
                )
                for t in msg.assignment
            )
        )
    return module.ShareGroupHeartbeatResponse(
        throttle_time=_timedelta(throttle_time_ms),
        error_code=error_to_wire(msg.error_code),
        error_message=msg.error_message,
        member_id=msg.member_id,
        member_epoch=i32(msg.member_epoch),
        heartbeat_interval=_timedelta(msg.heartbeat_interval_ms),
        assignment=assignment,
    )


def share_group_heartbeat_response_from_wire(obj: Any) -> ShareGroupHeartbeatResponse:
    assignment = obj.assignment
    return ShareGroupHeartbeatResponse(
        error_code=error_from_wire(obj.error_code),
        error_message=obj.error_message,
        member_id=obj.member_id,
        member_epoch=int(obj.member_epoch),
        heartbeat_interval_ms=_ms(obj.heartbeat_interval),
        assignment=None
        if assignment is None
        else tuple(
            TopicPartitions(_topic_id(t.topic_id), tuple(int(p) for p in t.partitions))
            for t in assignment.topic_partitions
        ),
    )


def share_group_heartbeat_error_answer(
    request: ShareGroupHeartbeatRequest, code: ErrorCode
) -> ShareGroupHeartbeatResponse:
    """The answer to ``request`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    return ShareGroupHeartbeatResponse(code)


# --- ShareGroupDescribe -----------------------------------------------------------------------------


def share_group_describe_request_to_wire(msg: ShareGroupDescribeRequest, version: int = 1) -> Any:
    _check(version, "ShareGroupDescribe")
    return _DESCRIBE_REQUEST.ShareGroupDescribeRequest(
        group_ids=tuple(msg.group_ids), include_authorized_operations=msg.include_authorized_operations
    )


def share_group_describe_request_from_wire(obj: Any) -> ShareGroupDescribeRequest:
    return ShareGroupDescribeRequest(
        group_ids=tuple(obj.group_ids), include_authorized_operations=bool(obj.include_authorized_operations)
    )


def share_group_describe_response_to_wire(
    msg: ShareGroupDescribeResponse, version: int = 1, throttle_time_ms: int = 0
) -> Any:
    _check(version, "ShareGroupDescribe")
    module = _DESCRIBE_RESPONSE

    def member(m: DescribedShareMember) -> Any:
        return module.Member(
            member_id=m.member_id,
            rack_id=m.rack_id,
            member_epoch=i32(m.member_epoch),
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(m.subscribed_topic_names),
            assignment=module.Assignment(
                topic_partitions=tuple(
                    module.TopicPartitions(
                        topic_id=_uuid(t.topic_id),
                        topic_name=t.topic_name,
                        partitions=tuple(i32(p) for p in t.partitions),
                    )
                    for t in m.assignment
                )
            ),
        )

    return module.ShareGroupDescribeResponse(
        throttle_time=_timedelta(throttle_time_ms),
        groups=tuple(
            module.DescribedGroup(
                error_code=error_to_wire(g.error_code),
                error_message=g.error_message,
                group_id=g.group_id,
                group_state=g.group_state,
                group_epoch=i32(g.group_epoch),
                assignment_epoch=i32(g.assignment_epoch),
                assignor_name=g.assignor_name,
                members=tuple(member(m) for m in g.members),
                authorized_operations=i32(g.authorized_operations),
            )
            for g in msg.groups
        ),
    )


def share_group_describe_response_from_wire(obj: Any) -> ShareGroupDescribeResponse:
    return ShareGroupDescribeResponse(
        groups=tuple(
            DescribedShareGroup(
                error_code=error_from_wire(g.error_code),
                group_id=g.group_id,
                error_message=g.error_message,
                group_state=g.group_state,
                group_epoch=int(g.group_epoch),
                assignment_epoch=int(g.assignment_epoch),
                assignor_name=g.assignor_name,
                members=tuple(
                    DescribedShareMember(
                        member_id=m.member_id,
                        rack_id=m.rack_id,
                        member_epoch=int(m.member_epoch),
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=tuple(m.subscribed_topic_names),
                        assignment=tuple(
                            DescribedTopicPartitions(
                                _topic_id(t.topic_id), t.topic_name, tuple(int(p) for p in t.partitions)
                            )
                            for t in m.assignment.topic_partitions
                        ),
                    )
                    for m in g.members
                ),
                authorized_operations=int(g.authorized_operations),
            )
            for g in obj.groups
        )
    )


def share_group_describe_error_answer(
    request: ShareGroupDescribeRequest, code: ErrorCode
) -> ShareGroupDescribeResponse:
    """The answer to ``request`` carrying only ``code``, for each group it names."""
    return ShareGroupDescribeResponse(tuple(DescribedShareGroup(code, g) for g in request.group_ids))
