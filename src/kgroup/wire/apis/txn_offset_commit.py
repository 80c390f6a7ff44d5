"""TxnOffsetCommit (API key 28), v0-v6, both directions.

As OffsetCommit's translation (:mod:`kgroup.wire.apis.offset_commit`): the typed request is flat, one
:class:`~kgroup.messages.OffsetCommitPartition` per partition in the request's order, and the answer is
grouped by topic in the order topics first appear. v2 adds each partition's leader epoch, v3 the
generation (or member epoch), member id and group instance id (KIP-447); v6 (KIP-1319) names each topic
by its id, translated through a :class:`~kgroup.wire.apis._common.TopicIds` (an id the side does not
know stands under a name no topic has, answered UNKNOWN_TOPIC_ID).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgroup.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse
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
TOPIC_IDS = 6
_KEY = ApiKey.TXN_OFFSET_COMMIT


def request_to_wire(body: TxnOffsetCommitRequest, version: int, topic_ids: TopicIds | None = None) -> Any:
    ids = wire_ids(_KEY, version, TOPIC_IDS, topic_ids)
    return build(
        request_entity(_KEY, version),
        {
            "transactional_id": body.transactional_id,
            "group_id": body.group_id,
            "producer_id": body.producer_id,
            "producer_epoch": body.producer_epoch,
            "generation_id": body.generation_id,
            "member_id": body.member_id,
            "group_instance_id": body.group_instance_id,
            "topics": offsets_to_wire(body.offsets, ids),
        },
    )


def request_from_wire(request: Any, topic_ids: TopicIds | None = None) -> TxnOffsetCommitRequest:
    names = topic_names(_KEY, request, TOPIC_IDS, topic_ids)
    return TxnOffsetCommitRequest(
        group_id=request.group_id,
        transactional_id=request.transactional_id,
        producer_id=int(request.producer_id),
        producer_epoch=int(request.producer_epoch),
        offsets=offsets_from_wire(request.topics, names),
        generation_id=int(getattr(request, "generation_id", -1)),
        member_id=getattr(request, "member_id", ""),
        group_instance_id=getattr(request, "group_instance_id", None),
    )


def request_topic_names(request: Any, topic_ids: TopicIds | None = None) -> list[str]:
    """The name of each of a wire request's topic entries, in its order (an unknown id: a name no topic
    has, ``TopicIds.is_unknown``), an entry without partitions among them."""
    return topic_names(_KEY, request, TOPIC_IDS, topic_ids)


def entries_response_to_wire(
    entries: Sequence[tuple[str, Sequence[tuple[int, ErrorCode]]]],
    version: int,
    topic_ids: TopicIds | None = None,
) -> Any:
    """An answer of explicit topic entries (the broker's: ``KafkaApis``' layout, which may name a topic
    in two entries)."""
    return entries_to_wire(_KEY, TOPIC_IDS, entries, version, topic_ids)


def response_to_wire(body: TxnOffsetCommitResponse, version: int, topic_ids: TopicIds | None = None) -> Any:
    return answer_to_wire(_KEY, TOPIC_IDS, body.results, version, topic_ids)


def response_from_wire(response: Any, topic_ids: TopicIds | None = None) -> TxnOffsetCommitResponse:
    return TxnOffsetCommitResponse(answer_from_wire(_KEY, TOPIC_IDS, response, topic_ids))


def error_answer(request: TxnOffsetCommitRequest, code: ErrorCode) -> TxnOffsetCommitResponse:
    """The answer to ``request`` carrying only ``code`` for every partition."""
    return TxnOffsetCommitResponse(tuple((o.partition, code) for o in request.offsets))
