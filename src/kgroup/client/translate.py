"""kgroup's typed group messages (:mod:`kgroup.messages`) to and from kio's wire types, for a client.

The member speaks :mod:`kgroup.messages`; the wire speaks Kafka's versions. :func:`to_wire` builds the
kio request of a chosen version (fields a version lacks are dropped, as Kafka's generated
``write`` would refuse only non-default ones); :func:`from_wire` turns a kio response back into the
typed response the member expects. Protocol metadata and assignments are opaque bytes both ways.
"""

from __future__ import annotations

import datetime
import sys
from dataclasses import fields
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
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Request,
    Response,
    SyncGroupRequest,
)
from kgroup.model import PeerError, TopicPartition
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis import heartbeat, join_group, leave_group, sync_group
from kgroup.wire.codec import error_from_wire, request_class
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


def _ms(value: Any) -> int:
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    return int(value)


def _make(cls: type, **values: Any) -> Any:
    """Build a kio entity from the values its version has (others must be at their defaults)."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def _nested(request_cls: type, name: str) -> type:
    cls = getattr(sys.modules[request_cls.__module__], name, None)
    if not isinstance(cls, type):
        raise AssertionError(f"{request_cls.__name__} v{request_cls.__version__} has no {name}")  # type: ignore[attr-defined]
    return cls


def to_wire(body: Request, version: int) -> Any:
    """The kio request of ``version`` carrying ``body``."""
    api_key = API_KEY.get(type(body))
    if api_key is None:
        raise TypeError(f"{type(body).__name__} is not a request kgroup's client sends")
    # KIP-848's APIs have their one home in kgroup.wire.consumer_group (the broker uses it too)
    if isinstance(body, ConsumerGroupHeartbeatRequest):
        return consumer_group_heartbeat_request_to_wire(body, version)
    if isinstance(body, ConsumerGroupDescribeRequest):
        return consumer_group_describe_request_to_wire(body, version)
    cls: Any = request_class(api_key, version)
    if isinstance(body, FindCoordinatorRequest):
        return _make(cls, key=body.key, key_type=body.key_type, coordinator_keys=(body.key,))
    if isinstance(body, JoinGroupRequest):
        return join_group.request_to_wire(body, version)
    if isinstance(body, SyncGroupRequest):
        return sync_group.request_to_wire(body, version)
    if isinstance(body, HeartbeatRequest):
        return heartbeat.request_to_wire(body, version)
    if isinstance(body, LeaveGroupRequest):
        return leave_group.request_to_wire(body, version)
    if isinstance(body, OffsetCommitRequest):
        topic_cls = _nested(cls, "OffsetCommitRequestTopic")
        partition_cls = _nested(cls, "OffsetCommitRequestPartition")
        by_topic: dict[str, list[Any]] = {}
        for entry in body.offsets:
            by_topic.setdefault(entry.partition.topic, []).append(
                _make(
                    partition_cls,
                    partition_index=entry.partition.partition,
                    committed_offset=entry.committed_offset,
                    committed_leader_epoch=entry.committed_leader_epoch,
                    committed_metadata=entry.committed_metadata,
                )
            )
        return _make(
            cls,
            group_id=body.group_id,
            generation_id_or_member_epoch=body.generation_id,
            member_id=body.member_id,
            group_instance_id=body.group_instance_id,
            topics=tuple(topic_cls(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
        )
    if isinstance(body, OffsetFetchRequest):
        topics: tuple[Any, ...] | None = None
        if version >= 8:
            group_cls = _nested(cls, "OffsetFetchRequestGroup")
            topic_cls = _nested(cls, "OffsetFetchRequestTopics")
        else:
            topic_cls = _nested(cls, "OffsetFetchRequestTopic")
        if body.partitions is not None:
            grouped: dict[str, list[int]] = {}
            for tp in body.partitions:
                grouped.setdefault(tp.topic, []).append(tp.partition)
            topics = tuple(topic_cls(name=t, partition_indexes=tuple(ps)) for t, ps in grouped.items())
        if version >= 8:
            group = _make(
                group_cls,
                group_id=body.group_id,
                member_id=body.member_id,
                member_epoch=body.member_epoch,
                topics=topics,
            )
            return _make(cls, groups=(group,), require_stable=True)
        return _make(cls, group_id=body.group_id, topics=topics, require_stable=True)
    raise TypeError(f"{type(body).__name__} is not a request kgroup's client sends")


def from_wire(request: Request, response: Any) -> Response:
    """The typed response to ``request`` from its kio response (:class:`PeerError` if it cannot be)."""
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return consumer_group_heartbeat_response_from_wire(response)
    if isinstance(request, ConsumerGroupDescribeRequest):
        return consumer_group_describe_response_from_wire(response)
    if isinstance(request, FindCoordinatorRequest):
        coordinators = getattr(response, "coordinators", None)
        if coordinators is not None:  # v4+: batched
            if len(coordinators) != 1:
                raise PeerError(f"FindCoordinator: {len(coordinators)} coordinators for one key")
            response = coordinators[0]
        return FindCoordinatorResponse(
            error_from_wire(response.error_code), int(response.node_id), response.host, int(response.port)
        )
    if isinstance(request, JoinGroupRequest):
        return join_group.response_from_wire(response)
    if isinstance(request, SyncGroupRequest):
        return sync_group.response_from_wire(response)
    if isinstance(request, HeartbeatRequest):
        return heartbeat.response_from_wire(response)
    if isinstance(request, LeaveGroupRequest):
        return leave_group.response_from_wire(response)
    if isinstance(request, OffsetCommitRequest):
        return OffsetCommitResponse(
            tuple(
                (TopicPartition(t.name, int(p.partition_index)), error_from_wire(p.error_code))
                for t in response.topics
                for p in t.partitions
            )
        )
    if isinstance(request, OffsetFetchRequest):
        groups = getattr(response, "groups", None)
        if groups is not None:  # v8+: batched
            if len(groups) != 1:
                raise PeerError(f"OffsetFetch: {len(groups)} groups in the answer for one")
            response = groups[0]
        return OffsetFetchResponse(
            error_from_wire(response.error_code),
            tuple(
                OffsetFetchPartition(
                    TopicPartition(t.name, int(p.partition_index)),
                    int(p.committed_offset),
                    p.metadata,
                    error_from_wire(p.error_code),
                    int(p.committed_leader_epoch),
                )
                for t in response.topics
                for p in t.partitions
            ),
        )
    raise TypeError(f"{type(request).__name__} is not a request kgroup's client sends")


def throttle_ms(response: Any) -> int:
    value = getattr(response, "throttle_time", None)
    return 0 if value is None else _ms(value)
