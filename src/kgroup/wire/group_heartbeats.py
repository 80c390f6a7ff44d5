"""What the KIP-848 (ConsumerGroupHeartbeat/Describe, :mod:`.consumer_group`) and KIP-932
(ShareGroupHeartbeat/Describe, :mod:`.share_group`) translations share: the two families carry the same
heartbeat answer (error, member id and epoch, interval, assignment by topic id) and describe groups with
the same fields, so one helper translates each part both ways; each family's module keeps only what
differs (its versions, its request's fields, its described member).

Topic ids are :class:`kgroup.model.TopicId` in kgroup and ``uuid.UUID`` in kio (kio reads the all-zero
id as ``None``; it maps back to the zero id).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from kio.static.primitive import i32, i32Timedelta

from kgroup.messages import (
    DescribedGroupBase,
    DescribedTopicPartitions,
    DescribeRequestBase,
    HeartbeatResponseBase,
    TopicPartitions,
)
from kgroup.model import TopicId
from kgroup.wire.codec import error_from_wire, error_to_wire

__all__ = [
    "describe_request_from_wire",
    "describe_request_to_wire",
    "described_group_from_wire",
    "described_group_to_wire",
    "described_member_from_wire",
    "described_member_to_wire",
    "described_topics_from_wire",
    "described_topics_to_wire",
    "heartbeat_response_from_wire",
    "heartbeat_response_to_wire",
    "ms",
    "timedelta",
    "topic_id",
    "topic_partitions_from_wire",
    "topic_partitions_to_wire",
    "wire_uuid",
]

_T = TypeVar("_T")


def wire_uuid(value: TopicId) -> uuid.UUID:
    return uuid.UUID(int=value.to_int())


def topic_id(value: uuid.UUID | None) -> TopicId:
    return TopicId(0, 0) if value is None else TopicId.from_int(value.int)


def timedelta(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def ms(value: datetime.timedelta) -> int:
    return int(value // datetime.timedelta(milliseconds=1))


def topic_partitions_to_wire(module: Any, topics: Iterable[TopicPartitions]) -> tuple[Any, ...]:
    """``module.TopicPartitions`` (topic id, partitions) for each of ``topics``."""
    return tuple(
        module.TopicPartitions(topic_id=wire_uuid(t.topic_id), partitions=tuple(i32(p) for p in t.partitions))
        for t in topics
    )


def topic_partitions_from_wire(topics: Iterable[Any]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(topic_id(t.topic_id), tuple(int(p) for p in t.partitions)) for t in topics)


# --- the heartbeat's answer -------------------------------------------------------------------------


def heartbeat_response_to_wire(
    module: Any, response_type: type, msg: HeartbeatResponseBase, throttle_time_ms: int
) -> Any:
    """The kio heartbeat response ``response_type`` (of ``module``) carrying ``msg`` (a Consumer- or
    ShareGroupHeartbeatResponse)."""
    assignment = None
    if msg.assignment is not None:
        assignment = module.Assignment(topic_partitions=topic_partitions_to_wire(module, msg.assignment))
    return response_type(
        throttle_time=timedelta(throttle_time_ms),
        error_code=error_to_wire(msg.error_code),
        error_message=msg.error_message,
        member_id=msg.member_id,
        member_epoch=i32(msg.member_epoch),
        heartbeat_interval=timedelta(msg.heartbeat_interval_ms),
        assignment=assignment,
    )


def heartbeat_response_from_wire(obj: Any, response_type: Callable[..., _T]) -> _T:
    """The typed heartbeat response ``response_type`` from a kio one."""
    assignment = obj.assignment
    return response_type(
        error_code=error_from_wire(obj.error_code),
        error_message=obj.error_message,
        member_id=obj.member_id,
        member_epoch=int(obj.member_epoch),
        heartbeat_interval_ms=ms(obj.heartbeat_interval),
        assignment=None if assignment is None else topic_partitions_from_wire(assignment.topic_partitions),
    )


# --- describe ------------------------------------------------------------------------------------------


def describe_request_to_wire(request_type: type, msg: DescribeRequestBase) -> Any:
    return request_type(
        group_ids=tuple(msg.group_ids), include_authorized_operations=msg.include_authorized_operations
    )


def describe_request_from_wire(obj: Any, request_type: Callable[..., _T]) -> _T:
    return request_type(
        group_ids=tuple(obj.group_ids), include_authorized_operations=bool(obj.include_authorized_operations)
    )


def described_topics_to_wire(module: Any, topics: Iterable[DescribedTopicPartitions]) -> Any:
    """A described member's partitions as ``module.Assignment`` (topic id, name, partitions)."""
    return module.Assignment(
        topic_partitions=tuple(
            module.TopicPartitions(
                topic_id=wire_uuid(t.topic_id),
                topic_name=t.topic_name,
                partitions=tuple(i32(p) for p in t.partitions),
            )
            for t in topics
        )
    )


def described_topics_from_wire(assignment: Any) -> tuple[DescribedTopicPartitions, ...]:
    return tuple(
        DescribedTopicPartitions(topic_id(t.topic_id), t.topic_name, tuple(int(p) for p in t.partitions))
        for t in assignment.topic_partitions
    )


def described_group_to_wire(
    module: Any, g: DescribedGroupBase[_T], member_to_wire: Callable[[_T], Any]
) -> Any:
    """``module.DescribedGroup`` for a described consumer or share group ``g``."""
    return module.DescribedGroup(
        error_code=error_to_wire(g.error_code),
        error_message=g.error_message,
        group_id=g.group_id,
        group_state=g.group_state,
        group_epoch=i32(g.group_epoch),
        assignment_epoch=i32(g.assignment_epoch),
        assignor_name=g.assignor_name,
        members=tuple(member_to_wire(m) for m in g.members),
        authorized_operations=i32(g.authorized_operations),
    )


def described_group_from_wire(
    g: Any, group_type: Callable[..., _T], member_from_wire: Callable[[Any], Any]
) -> _T:
    return group_type(
        error_code=error_from_wire(g.error_code),
        group_id=g.group_id,
        error_message=g.error_message,
        group_state=g.group_state,
        group_epoch=int(g.group_epoch),
        assignment_epoch=int(g.assignment_epoch),
        assignor_name=g.assignor_name,
        members=tuple(member_from_wire(m) for m in g.members),
        authorized_operations=int(g.authorized_operations),
    )


def described_member_to_wire(module: Any, m: Any, **extra: Any) -> Any:
    """``module.Member`` for a described consumer or share member: the fields both families carry,
    and the family's own ``extra`` (already in kio's types)."""
    return module.Member(
        member_id=m.member_id,
        rack_id=m.rack_id,
        member_epoch=i32(m.member_epoch),
        client_id=m.client_id,
        client_host=m.client_host,
        subscribed_topic_names=tuple(m.subscribed_topic_names),
        assignment=described_topics_to_wire(module, m.assignment),
        **extra,
    )


def described_member_from_wire(m: Any, typed: Callable[..., _T], **extra: Any) -> _T:
    """The typed described member (``typed``) from a kio one: the fields both families carry, and
    ``extra``."""
    return typed(
        member_id=m.member_id,
        rack_id=m.rack_id,
        member_epoch=int(m.member_epoch),
        client_id=m.client_id,
        client_host=m.client_host,
        subscribed_topic_names=tuple(m.subscribed_topic_names),
        assignment=described_topics_from_wire(m.assignment),
        **extra,
    )
