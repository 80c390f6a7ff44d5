"""OffsetCommit (API key 8), v2-v9, both directions.

The typed request is flat (one :class:`OffsetCommitPartition` per partition, in the request's order);
the wire groups partitions by topic. The answer has one entry per partition of the request, grouped
by topic name in the order topics first appear (a topic named twice is answered once, as Kafka's
response builder does). Versions change fields only: v6 adds each partition's leader epoch, v7 the
group instance id; v2-v4's retention time is not carried (kgroup keeps offsets until the group goes).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kgroup.messages import OffsetCommitPartition, OffsetCommitRequest, OffsetCommitResponse
from kgroup.model import ErrorCode, TopicPartition
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis._common import by_topic, request_entity, response_entity
from kgroup.wire.codec import build, error_from_wire

__all__ = ["request_from_wire", "request_to_wire", "response_from_wire", "response_to_wire"]


def request_to_wire(body: OffsetCommitRequest, version: int) -> Any:
    topics = by_topic((o.partition.topic, o) for o in body.offsets)
    return build(
        request_entity(ApiKey.OFFSET_COMMIT, version),
        {
            "group_id": body.group_id,
            "generation_id_or_member_epoch": body.generation_id,
            "member_id": body.member_id,
            "group_instance_id": body.group_instance_id,
            "topics": [
                {
                    "name": name,
                    "partitions": [
                        {
                            "partition_index": o.partition.partition,
                            "committed_offset": o.committed_offset,
                            "committed_leader_epoch": o.committed_leader_epoch,
                            "committed_metadata": o.committed_metadata,
                        }
                        for o in offsets
                    ],
                }
                for name, offsets in topics.items()
            ],
        },
    )


def request_from_wire(request: Any) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=request.group_id,
        generation_id=int(request.generation_id_or_member_epoch),
        member_id=request.member_id,
        offsets=tuple(
            OffsetCommitPartition(
                TopicPartition(t.name, int(p.partition_index)),
                int(p.committed_offset),
                p.committed_metadata,
                int(getattr(p, "committed_leader_epoch", -1)),
            )
            for t in request.topics
            for p in t.partitions
        ),
        group_instance_id=getattr(request, "group_instance_id", None),
    )


def response_to_wire(body: OffsetCommitResponse, version: int) -> Any:
    return build(
        response_entity(ApiKey.OFFSET_COMMIT, version),
        {
            "throttle_time": 0,
            "topics": _topics((tp.topic, (tp.partition, code)) for tp, code in body.results),
        },
    )


def _topics(results: Iterable[tuple[str, tuple[int, ErrorCode]]]) -> list[dict[str, Any]]:
    # the partitions are generators: a commit of a million partitions is not a million dicts at once
    return [
        {"name": name, "partitions": ({"partition_index": i, "error_code": c} for i, c in entries)}
        for name, entries in by_topic(results).items()
    ]


def response_from_wire(response: Any) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        tuple(
            (TopicPartition(t.name, int(p.partition_index)), error_from_wire(p.error_code))
            for t in response.topics
            for p in t.partitions
        )
    )
