"""OffsetFetch (API key 9), v1-v10, both directions.

On the wire a request fetches one group's offsets before v8 and a batch of groups from v8 (KIP-709):
:class:`OffsetFetchBatchRequest` is that batch, typed — one :class:`~kgroup.messages.OffsetFetchRequest`
per group — which the broker iterates and the client builds (with one group), and
:class:`OffsetFetchBatchResponse` its answer. Shape changes: v1 names the partitions (``None``, every
committed partition, needs v2); v2 adds the answer's group error; v5 each partition's leader epoch; v7
``require_stable``; v8 the batch (the answer names each group); v9 the consumer-protocol member's id
and epoch (KIP-848); v10 names each topic by its id, in the request and the answer (translated
through a :class:`~kgroup.wire.apis._common.TopicIds`, as OffsetCommit v10).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgroup.messages import OffsetFetchPartition, OffsetFetchRequest, OffsetFetchResponse
from kgroup.model import ErrorCode, TopicPartition
from kgroup.valuetypes import fast_init
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis._common import TopicIds, by_topic, need_topic_ids, request_entity, response_entity
from kgroup.wire.codec import build, error_from_wire

__all__ = [
    "BATCHED",
    "TOPIC_IDS",
    "FetchedGroup",
    "OffsetFetchBatchRequest",
    "OffsetFetchBatchResponse",
    "entries_response_to_wire",
    "error_answer",
    "request_entries",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
]

#: the first version with a batch of groups
BATCHED = 8
#: the first version whose request may ask for every committed partition (null topics)
_ALL_PARTITIONS = 2
#: the first version that names topics by id
TOPIC_IDS = 10


@fast_init
@dataclass(frozen=True, slots=True)
class OffsetFetchBatchRequest:
    """An OffsetFetch request as the wire carries it: one group before v8, any number from v8."""

    groups: tuple[OffsetFetchRequest, ...]
    require_stable: bool = False


@fast_init
@dataclass(frozen=True, slots=True)
class FetchedGroup:
    """One group's answer; ``group_id`` is ``None`` before v8, whose answer names no group."""

    group_id: str | None
    response: OffsetFetchResponse


@fast_init
@dataclass(frozen=True, slots=True)
class OffsetFetchBatchResponse:
    groups: tuple[FetchedGroup, ...]


def _request_topics(
    partitions: tuple[TopicPartition, ...] | None, ids: TopicIds | None
) -> list[dict[str, Any]] | None:
    if partitions is None:
        return None
    grouped = by_topic((tp.topic, tp.partition) for tp in partitions)
    return [
        {"name": name, **({"topic_id": ids.id(name)} if ids else {}), "partition_indexes": indexes}
        for name, indexes in grouped.items()
    ]


def _ids(version: int, topic_ids: TopicIds | None) -> TopicIds | None:
    return need_topic_ids(ApiKey.OFFSET_FETCH, version, topic_ids) if version >= TOPIC_IDS else None


def request_to_wire(body: OffsetFetchBatchRequest, version: int, topic_ids: TopicIds | None = None) -> Any:
    cls = request_entity(ApiKey.OFFSET_FETCH, version)
    ids = _ids(version, topic_ids)
    if version >= BATCHED:
        groups = [
            {
                "group_id": g.group_id,
                "member_id": g.member_id,
                "member_epoch": g.member_epoch,
                "topics": _request_topics(g.partitions, ids),
            }
            for g in body.groups
        ]
        return build(cls, {"groups": groups, "require_stable": body.require_stable})
    if len(body.groups) != 1:
        raise ValueError(f"OffsetFetch v{version} fetches one group, not {len(body.groups)}")
    (group,) = body.groups
    if group.partitions is None and version < _ALL_PARTITIONS:
        raise ValueError(f"OffsetFetch v{version} names its partitions (every partition needs v2+)")
    return build(
        cls,
        {
            "group_id": group.group_id,
            "topics": _request_topics(group.partitions, None),
            "require_stable": body.require_stable,
        },
    )


def _request_group(group: Any, ids: TopicIds | None) -> OffsetFetchRequest:
    partitions = None
    if group.topics is not None:
        partitions = tuple(
            TopicPartition(t.name if ids is None else ids.name(t.topic_id), int(p))
            for t in group.topics
            for p in t.partition_indexes
        )
    return OffsetFetchRequest(
        group.group_id,
        partitions,
        # v9+: a consumer-protocol member says who it is (its epoch is checked)
        getattr(group, "member_id", None),
        int(getattr(group, "member_epoch", -1)),
    )


def request_from_wire(request: Any, topic_ids: TopicIds | None = None) -> OffsetFetchBatchRequest:
    ids = _ids(int(request.__version__), topic_ids)
    groups = request.groups if hasattr(request, "groups") else (request,)
    return OffsetFetchBatchRequest(
        tuple(_request_group(g, ids) for g in groups), bool(getattr(request, "require_stable", False))
    )


def request_entries(
    request: Any, topic_ids: TopicIds | None = None
) -> list[list[tuple[str, list[int]]] | None]:
    """Each group's topic entries as the wire request names them (``None``: every committed
    partition): (topic name, partition indexes), a topic perhaps in two entries."""
    ids = _ids(int(request.__version__), topic_ids)
    groups = request.groups if hasattr(request, "groups") else (request,)
    return [
        None
        if g.topics is None
        else [
            (t.name if ids is None else ids.name(t.topic_id), [int(p) for p in t.partition_indexes])
            for t in g.topics
        ]
        for g in groups
    ]


def _entry_topics(
    entries: list[tuple[str, list[OffsetFetchPartition]]], ids: TopicIds | None
) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            **({"topic_id": ids.id(name)} if ids else {}),
            "partitions": [
                {
                    "partition_index": p.partition.partition,
                    "committed_offset": p.committed_offset,
                    "committed_leader_epoch": p.committed_leader_epoch,
                    "metadata": p.metadata,
                    "error_code": p.error_code,
                }
                for p in partitions
            ],
        }
        for name, partitions in entries
    ]


def entries_response_to_wire(
    body: OffsetFetchBatchResponse,
    entries: list[list[tuple[str, list[OffsetFetchPartition]]] | None],
    version: int,
    topic_ids: TopicIds | None = None,
) -> Any:
    """:func:`response_to_wire` with each group's topic entries as given (``None``: grouped by topic),
    the broker's layout (``KafkaApis``: a topic named in two entries is answered in two)."""
    cls = response_entity(ApiKey.OFFSET_FETCH, version)
    ids = _ids(version, topic_ids)

    def topics(g: FetchedGroup, laid_out: list[tuple[str, list[OffsetFetchPartition]]] | None) -> Any:
        return _response_topics(g.response, ids) if laid_out is None else _entry_topics(laid_out, ids)

    if version >= BATCHED:
        groups = [
            {"group_id": g.group_id, "topics": topics(g, laid_out), "error_code": g.response.error_code}
            for g, laid_out in zip(body.groups, entries, strict=True)
        ]
        return build(cls, {"throttle_time": 0, "groups": groups})
    ((group, laid_out),) = zip(body.groups, entries, strict=True)
    return build(
        cls, {"throttle_time": 0, "topics": topics(group, laid_out), "error_code": group.response.error_code}
    )


def _response_topics(answer: OffsetFetchResponse, ids: TopicIds | None) -> list[dict[str, Any]]:
    return _entry_topics(list(by_topic((p.partition.topic, p) for p in answer.partitions).items()), ids)


def response_to_wire(body: OffsetFetchBatchResponse, version: int, topic_ids: TopicIds | None = None) -> Any:
    cls = response_entity(ApiKey.OFFSET_FETCH, version)
    ids = _ids(version, topic_ids)
    if version >= BATCHED:
        groups = [
            {
                "group_id": g.group_id,
                "topics": _response_topics(g.response, ids),
                "error_code": g.response.error_code,
            }
            for g in body.groups
        ]
        return build(cls, {"throttle_time": 0, "groups": groups})
    if len(body.groups) != 1:
        raise ValueError(f"OffsetFetch v{version} answers one group, not {len(body.groups)}")
    answer = body.groups[0].response
    return build(
        cls, {"throttle_time": 0, "topics": _response_topics(answer, None), "error_code": answer.error_code}
    )


def _response_group(group: Any, ids: TopicIds | None) -> OffsetFetchResponse:
    return OffsetFetchResponse(
        # v0-v1 have no group error: errors are the partitions'
        error_from_wire(getattr(group, "error_code", 0)),
        tuple(
            OffsetFetchPartition(
                TopicPartition(t.name if ids is None else ids.name(t.topic_id), int(p.partition_index)),
                int(p.committed_offset),
                p.metadata,
                error_from_wire(p.error_code),
                int(getattr(p, "committed_leader_epoch", -1)),
            )
            for t in group.topics
            for p in t.partitions
        ),
    )


def response_from_wire(response: Any, topic_ids: TopicIds | None = None) -> OffsetFetchBatchResponse:
    ids = _ids(int(response.__version__), topic_ids)
    if hasattr(response, "groups"):
        return OffsetFetchBatchResponse(
            tuple(FetchedGroup(g.group_id, _response_group(g, ids)) for g in response.groups)
        )
    return OffsetFetchBatchResponse((FetchedGroup(None, _response_group(response, None)),))


def error_answer(request: OffsetFetchRequest, code: ErrorCode) -> OffsetFetchResponse:
    """The answer to ``request`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    return OffsetFetchResponse(code)
