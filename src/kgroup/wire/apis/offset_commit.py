"""OffsetCommit (API key 8), v2-v10, both directions.

The typed request is flat (one :class:`OffsetCommitPartition` per partition, in the request's order);
the wire groups partitions by topic. The typed answer has one entry per partition of the request, which
:func:`response_to_wire` groups by topic name in the order topics first appear; the broker lays its
answer out as Kafka's ``KafkaApis`` does (a topic named in two entries may be answered in two) and gives
the entries to :func:`entries_response_to_wire`. Versions change fields only: v6 adds each partition's
leader epoch, v7 the group instance id; v10 names each topic by its id instead of its name (KIP-848's
topic ids): the translation goes through a :class:`~kgroup.wire.apis._common.TopicIds` then, and an id
the side does not know stands under a name no topic has (``TopicIds.is_unknown``: the broker answers it
UNKNOWN_TOPIC_ID). v2-v4's retention time is not carried (kgroup keeps offsets until the group goes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgroup.messages import OffsetCommitRequest, OffsetCommitResponse
from kgroup.model import ErrorCode
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis._common import TopicIds, request_entity
from kgroup.wire.apis._offset_commits import (
    answer_from_wire,
    answer_to_wire,
    entries_to_wire,
    offsets_from_wire,
    offsets_to_wire,
    topic_names,
    wire_ids,
)
from kgroup.wire.codec import build

__all__ = [
    "TOPIC_IDS",
    "entries_response_to_wire",
    "error_answer",
    "request_from_wire",
    "request_to_wire",
    "request_topic_names",
    "response_from_wire",
    "response_to_wire",
]


#: the first version that names topics by id
TOPIC_IDS = 10


def request_to_wire(body: OffsetCommitRequest, version: int, topic_ids: TopicIds | None = None) -> Any:
    ids = wire_ids(ApiKey.OFFSET_COMMIT, version, TOPIC_IDS, topic_ids)
    return build(
        request_entity(ApiKey.OFFSET_COMMIT, version),
        {
            "group_id": body.group_id,
            "generation_id_or_member_epoch": body.generation_id,
            "member_id": body.member_id,
            "group_instance_id": body.group_instance_id,
            "topics": offsets_to_wire(body.offsets, ids),
        },
    )


def request_from_wire(request: Any, topic_ids: TopicIds | None = None) -> OffsetCommitRequest:
    names = topic_names(ApiKey.OFFSET_COMMIT, request, TOPIC_IDS, topic_ids)
    return OffsetCommitRequest(
        group_id=request.group_id,
        generation_id=int(request.generation_id_or_member_epoch),
        member_id=request.member_id,
        offsets=offsets_from_wire(request.topics, names),
        group_instance_id=getattr(request, "group_instance_id", None),
    )


def request_topic_names(request: Any, topic_ids: TopicIds | None = None) -> list[str]:
    """The name of each of a wire request's topic entries, in its order (an unknown id: a name no topic
    has, ``TopicIds.is_unknown``), an entry without partitions among them."""
    return topic_names(ApiKey.OFFSET_COMMIT, request, TOPIC_IDS, topic_ids)


def response_to_wire(body: OffsetCommitResponse, version: int, topic_ids: TopicIds | None = None) -> Any:
    return answer_to_wire(ApiKey.OFFSET_COMMIT, TOPIC_IDS, body.results, version, topic_ids)


def entries_response_to_wire(
    entries: Sequence[tuple[str, Sequence[tuple[int, ErrorCode]]]],
    version: int,
    topic_ids: TopicIds | None = None,
) -> Any:
    """An answer of explicit topic entries (the broker's: ``KafkaApis``' layout, which may name a topic
    in two entries)."""
    return entries_to_wire(ApiKey.OFFSET_COMMIT, TOPIC_IDS, entries, version, topic_ids)


def response_from_wire(response: Any, topic_ids: TopicIds | None = None) -> OffsetCommitResponse:
    return OffsetCommitResponse(answer_from_wire(ApiKey.OFFSET_COMMIT, TOPIC_IDS, response, topic_ids))


def error_answer(request: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    """The answer to ``request`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    return OffsetCommitResponse(tuple((o.partition, code) for o in request.offsets))
