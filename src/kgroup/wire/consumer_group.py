"""ConsumerGroupHeartbeat (API key 68) and ConsumerGroupDescribe (69) between kgroup's typed messages
and kio's wire entities, both directions, v0 and v1.

One home for KIP-848's two group APIs: the broker reads requests with ``*_request_from_wire`` and
answers with ``*_response_to_wire``; the client does the opposite with the other two. Topic ids are
:class:`kgroup.model.TopicId` in kgroup and ``uuid.UUID`` in kio (kio reads the all-zero id as
``None``; it maps back to the zero id). An error code kgroup does not know reads as
``UNKNOWN_SERVER_ERROR``.

Versions: v1 of the heartbeat request added ``SubscribedTopicRegex`` (writing a regex at v0 is
refused, as Kafka's generated ``write`` refuses it); v1 of the describe response added
``MemberType``, which is ignorable, so v0 leaves it out and reads it as ``-1``.
"""

from __future__ import annotations

from typing import Any

from kio.schema.consumer_group_describe.v0 import request as describe_req_v0
from kio.schema.consumer_group_describe.v0 import response as describe_resp_v0
from kio.schema.consumer_group_describe.v1 import request as describe_req_v1
from kio.schema.consumer_group_describe.v1 import response as describe_resp_v1
from kio.schema.consumer_group_heartbeat.v0 import request as heartbeat_req_v0
from kio.schema.consumer_group_heartbeat.v0 import response as heartbeat_resp_v0
from kio.schema.consumer_group_heartbeat.v1 import request as heartbeat_req_v1
from kio.schema.consumer_group_heartbeat.v1 import response as heartbeat_resp_v1
from kio.static.primitive import i8, i32

from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
)
from kgroup.model import ErrorCode, KgroupError
from kgroup.wire.group_heartbeats import (
    describe_request_from_wire,
    describe_request_to_wire,
    described_group_from_wire,
    described_group_to_wire,
    described_member_from_wire,
    described_member_to_wire,
    described_topics_from_wire,
    described_topics_to_wire,
    heartbeat_response_from_wire,
    heartbeat_response_to_wire,
    ms,
    timedelta,
    topic_partitions_from_wire,
    topic_partitions_to_wire,
)

__all__ = [
    "consumer_group_describe_error_answer",
    "consumer_group_describe_request_from_wire",
    "consumer_group_describe_request_to_wire",
    "consumer_group_describe_response_from_wire",
    "consumer_group_describe_response_to_wire",
    "consumer_group_heartbeat_error_answer",
    "consumer_group_heartbeat_request_from_wire",
    "consumer_group_heartbeat_request_to_wire",
    "consumer_group_heartbeat_response_from_wire",
    "consumer_group_heartbeat_response_to_wire",
]


_HEARTBEAT_REQUEST = (heartbeat_req_v0, heartbeat_req_v1)
_HEARTBEAT_RESPONSE = (heartbeat_resp_v0, heartbeat_resp_v1)
_DESCRIBE_REQUEST = (describe_req_v0, describe_req_v1)
_DESCRIBE_RESPONSE = (describe_resp_v0, describe_resp_v1)


# --- shared conversions ---------------------------------------------------------------------------


def _module(modules: tuple[Any, ...], version: int, what: str) -> Any:
    if not 0 <= version < len(modules):
        raise KgroupError(f"{what} version: {version}; kgroup speaks versions 0-{len(modules) - 1}")
    return modules[version]


# --- ConsumerGroupHeartbeat -----------------------------------------------------------------------


def consumer_group_heartbeat_request_to_wire(msg: ConsumerGroupHeartbeatRequest, version: int) -> Any:
    """The kio ``ConsumerGroupHeartbeatRequest`` of ``version`` carrying ``msg``."""
    module = _module(_HEARTBEAT_REQUEST, version, "ConsumerGroupHeartbeat")
    values: dict[str, Any] = {
        "group_id": msg.group_id,
        "member_id": msg.member_id,
        "member_epoch": i32(msg.member_epoch),
        "instance_id": msg.instance_id,
        "rack_id": msg.rack_id,
        "rebalance_timeout": timedelta(msg.rebalance_timeout_ms),
        "subscribed_topic_names": msg.subscribed_topic_names,
        "server_assignor": msg.server_assignor,
        "topic_partitions": None
        if msg.topic_partitions is None
        else topic_partitions_to_wire(module, msg.topic_partitions),
    }
    if version >= 1:
        values["subscribed_topic_regex"] = msg.subscribed_topic_regex
    elif msg.subscribed_topic_regex is not None:
        raise KgroupError(
            "subscribed_topic_regex: ConsumerGroupHeartbeat v0 cannot carry a regex; the broker must "
            "support v1 (Kafka 4.0+) for a regex subscription"
        )
    return module.ConsumerGroupHeartbeatRequest(**values)


def consumer_group_heartbeat_request_from_wire(obj: Any) -> ConsumerGroupHeartbeatRequest:
    """The typed request from a kio ``ConsumerGroupHeartbeatRequest`` (v0 or v1)."""
    topic_partitions = obj.topic_partitions
    names = obj.subscribed_topic_names
    return ConsumerGroupHeartbeatRequest(
        group_id=obj.group_id,
        member_id=obj.member_id,
        member_epoch=int(obj.member_epoch),
        instance_id=obj.instance_id,
        rack_id=obj.rack_id,
        rebalance_timeout_ms=ms(obj.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(obj, "subscribed_topic_regex", None),
        server_assignor=obj.server_assignor,
        topic_partitions=None if topic_partitions is None else topic_partitions_from_wire(topic_partitions),
    )


def consumer_group_heartbeat_response_to_wire(
    msg: ConsumerGroupHeartbeatResponse, version: int, throttle_time_ms: int = 0
) -> Any:
    """The kio ``ConsumerGroupHeartbeatResponse`` of ``version`` carrying ``msg``."""
    module = _module(_HEARTBEAT_RESPONSE, version, "ConsumerGroupHeartbeat")
    return heartbeat_response_to_wire(module, module.ConsumerGroupHeartbeatResponse, msg, throttle_time_ms)


def consumer_group_heartbeat_response_from_wire(obj: Any) -> ConsumerGroupHeartbeatResponse:
    """The typed response from a kio ``ConsumerGroupHeartbeatResponse`` (v0 or v1)."""
    return heartbeat_response_from_wire(obj, ConsumerGroupHeartbeatResponse)


# --- ConsumerGroupDescribe ------------------------------------------------------------------------


def consumer_group_describe_request_to_wire(msg: ConsumerGroupDescribeRequest, version: int) -> Any:
    module = _module(_DESCRIBE_REQUEST, version, "ConsumerGroupDescribe")
    return describe_request_to_wire(module.ConsumerGroupDescribeRequest, msg)


def consumer_group_describe_request_from_wire(obj: Any) -> ConsumerGroupDescribeRequest:
    return describe_request_from_wire(obj, ConsumerGroupDescribeRequest)


def _described_member_to_wire(module: Any, version: int, m: DescribedConsumerMember) -> Any:
    extra: dict[str, Any] = {
        "instance_id": m.instance_id,
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "target_assignment": described_topics_to_wire(module, m.target_assignment),
    }
    if version >= 1:  # MemberType is ignorable: v0 leaves it out
        extra["member_type"] = i8(m.member_type)
    return described_member_to_wire(module, m, **extra)


def consumer_group_describe_response_to_wire(
    msg: ConsumerGroupDescribeResponse, version: int, throttle_time_ms: int = 0
) -> Any:
    module = _module(_DESCRIBE_RESPONSE, version, "ConsumerGroupDescribe")
    return module.ConsumerGroupDescribeResponse(
        throttle_time=timedelta(throttle_time_ms),
        groups=tuple(
            described_group_to_wire(module, g, lambda m: _described_member_to_wire(module, version, m))
            for g in msg.groups
        ),
    )


def _described_member_from_wire(m: Any) -> DescribedConsumerMember:
    return described_member_from_wire(
        m,
        DescribedConsumerMember,
        instance_id=m.instance_id,
        subscribed_topic_regex=m.subscribed_topic_regex,
        target_assignment=described_topics_from_wire(m.target_assignment),
        member_type=int(getattr(m, "member_type", -1)),
    )


def consumer_group_describe_response_from_wire(obj: Any) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(
        groups=tuple(
            described_group_from_wire(g, DescribedConsumerGroup, _described_member_from_wire)
            for g in obj.groups
        )
    )


def consumer_group_heartbeat_error_answer(
    request: ConsumerGroupHeartbeatRequest, code: ErrorCode
) -> ConsumerGroupHeartbeatResponse:
    """The answer to ``request`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    return ConsumerGroupHeartbeatResponse(code)


def consumer_group_describe_error_answer(
    request: ConsumerGroupDescribeRequest, code: ErrorCode
) -> ConsumerGroupDescribeResponse:
    """The answer to ``request`` carrying only ``code``, for each group it names."""
    return ConsumerGroupDescribeResponse(tuple(DescribedConsumerGroup(code, g) for g in request.group_ids))
