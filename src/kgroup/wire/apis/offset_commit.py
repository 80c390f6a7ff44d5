"""OffsetCommit (API key 8), v2-v10, both directions.

The typed request is flat (one :class:`OffsetCommitPartition` per partition, in the request's order);
the wire groups partitions by topic. The answer has one entry per partition of the request, grouped
by topic name in the order topics first appear (a topic named twice is answered once, as Kafka's
response builder does). Versions change fields only: v6 adds each partition's leader epoch, v7 the
group instance id; v10 names each topic by its id instead of its name (KIP-848's topic ids): the
translation goes through a :class:`~kgroup.wire.apis._common.TopicIds` then, and an id the side does
not know stands under a name no topic has (``TopicIds.is_unknown``: the broker answers it
UNKNOWN_TOPIC_ID). v2-v4's retention time is not carried (kgroup keeps offsets until the group goes).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kgroup.messages import OffsetCommitPartition, OffsetCommitRequest, OffsetCommitResponse
from kgroup.model import ErrorCode, TopicPartition
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis._common import TopicIds, by_topic, need_topic_ids, request_entity, response_entity
from kgroup.wire.codec import build, error_from_wire

__all__ = [
    "TOPIC_IDS",
    "error_answer",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
]


#: the first version that names topics by id
TOPIC_IDS = 10


def request_to_wire(body: OffsetCommitRequest, version: int, topic_ids: TopicIds | None = None) -> Any:
    topics = by_topic((o.partition.topic, o) for o in body.offsets)
    ids = need_topic_ids(ApiKey.OFFSET_COMMIT, version, topic_ids) if version >= TOPIC_IDS else None
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
                    **({"topic_id": ids.id(name)} if ids is not None else {}),
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


def request_from_wire(request: Any, topic_ids: TopicIds | None = None) -> OffsetCommitRequest:
    version = int(request.__version__)
    if version >= TOPIC_IDS:
        ids = need_topic_ids(ApiKey.OFFSET_COMMIT, version, topic_ids)
        names = [ids.name(t.topic_id) for t in request.topics]
    else:
        names = [t.name for t in request.topics]
    return OffsetCommitRequest(
        group_id=request.group_id,
        generation_id=int(request.generation_id_or_member_epoch),
        member_id=request.member_id,
        offsets=tuple(
            OffsetCommitPartition(
                TopicPartition(name, int(p.partition_index)),
                int(p.committed_offset),
                p.committed_metadata,
                int(getattr(p, "committed_leader_epoch", -1)),
            )
            for t, name in zip(request.topics, names, strict=True)
            for p in t.partitions
        ),
        group_instance_id=getattr(request, "group_instance_id", None),
    )


def response_to_wire(body: OffsetCommitResponse, version: int, topic_ids: TopicIds | None = None) -> Any:
    ids = need_topic_ids(ApiKey.OFFSET_COMMIT, version, topic_ids) if version >= TOPIC_IDS else None
    return build(
        response_entity(ApiKey.OFFSET_COMMIT, version),
        {
            "throttle_time": 0,
            "topics": _topics(((tp.topic, (tp.partition, code)) for tp, code in body.results), ids),
        },
    )


def _topics(
    results: Iterable[tuple[str, tuple[int, ErrorCode]]], ids: TopicIds | None
) -> list[dict[str, Any]]:
    # the partitions are generators: a commit of a million partitions is not a million dicts at once
    return [
        {
            "name": name,
            **({"topic_id": ids.id(name)} if ids is not None else {}),
            "partitions": ({"partition_index": i, "error_code": c} for i, c in entries),
        }
        for name, entries in by_topic(results).items()
    ]


def response_from_wire(response: Any, topic_ids: TopicIds | None = None) -> OffsetCommitResponse:
    version = int(response.__version__)
    if version >= TOPIC_IDS:
        ids = need_topic_ids(ApiKey.OFFSET_COMMIT, version, topic_ids)
        names = [ids.name(t.topic_id) for t in response.topics]
    else:
        names = [t.name for t in response.topics]
    return OffsetCommitResponse(
        tuple(
            (TopicPartition(name, int(p.partition_index)), error_from_wire(p.error_code))
            for t, name in zip(response.topics, names, strict=True)
            for p in t.partitions
        )
    )


def error_answer(request: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    """The answer to ``request`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    return OffsetCommitResponse(tuple((o.partition, code) for o in request.offsets))
