"""DescribeShareGroupOffsets (API key 90), v0–v1, as Kafka 4.4.0's ``KafkaApis`` and
``GroupCoordinatorService`` answer it: each share partition's start offset from the share
coordinator's state, and from v1 its lag.

* per group: DESCRIBE on the group (``GROUP_AUTHORIZATION_FAILED`` with its message otherwise);
* topics named: those the principal may not describe are answered after the others, each partition
  ``TOPIC_AUTHORIZATION_FAILED``; a topic the cluster does not have is answered with the zero id and
  each partition's start offset −1 (no error: absence of data, as OffsetFetch answers it); the others
  are read from the share coordinator's state (``ReadShareGroupStateSummary``) — no group is needed;
* no topics (null): the group's initialised partitions (its coordinator's
  ``initializedShareGroupPartitions``: ``NOT_COORDINATOR`` at another node), topics the principal may
  not describe left out;
* a partition with state: its start offset and leader epoch, and in v1 its lag — the partition's end
  offset (the high watermark, ListOffsets' latest) minus the start offset minus the records delivered
  to completion beyond it (``computeShareGroupLagAndBuildResponse``); a partition without state (or
  never given a start offset): start offset −1, leader epoch 0, lag −1.
"""

from __future__ import annotations

import uuid
from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.handlers_group import group_denied
from kgroup.broker.share_offsets import (
    DESCRIBE_VERSIONS,
    MESSAGES,
    ZERO_UUID,
    call_share_coordinator,
    to_uuid,
)
from kgroup.group.share.offsets import ShareInitializedPartitions, ShareInitializedPartitionsAnswer
from kgroup.model import ErrorCode
from kgroup.security.acl import AclOperation, ResourceType
from kgroup.wire.api_keys import ApiKey

__all__: list[str] = []


def _group_error(group_id: str, code: ErrorCode) -> dict[str, Any]:
    """``DescribeShareGroupOffsetsRequest.getErrorDescribedGroup``."""
    return {"group_id": group_id, "topics": [], "error_code": code, "error_message": MESSAGES.get(code)}


def _partition(index: int, start: int, leader_epoch: int, lag: int) -> dict[str, Any]:
    return {
        "partition_index": index,
        "start_offset": start,
        "leader_epoch": leader_epoch,
        "lag": lag,
        "error_code": ErrorCode.NONE,
        "error_message": None,
    }


async def _summaries(
    ctx: RequestContext, group_id: str, topics: list[tuple[str, uuid.UUID, list[int]]]
) -> list[dict[str, Any]]:
    """The topics' partitions as the share coordinator's state describes them, with their lag."""
    wanted = [(topic_id, p) for _, topic_id, partitions in topics for p in partitions]
    summaries = iter(await ctx.services.shares.read_summary(group_id, wanted))
    cluster = ctx.services.cluster
    out = []
    for name, topic_id, partitions in topics:
        answered = []
        for p in partitions:
            start, complete, leader_epoch = next(summaries)
            if start == -1 or complete == -1:
                answered.append(_partition(p, start, leader_epoch, -1))
                continue
            plog = cluster.partition_log(name, p)
            end = start if plog is None else plog.high_watermark
            answered.append(_partition(p, start, leader_epoch, end - start - complete))
        out.append({"topic_name": name, "topic_id": topic_id, "partitions": answered})
    return out


async def _describe_named(ctx: RequestContext, group_id: str, requested: Any) -> dict[str, Any]:
    """``describeShareGroupOffsetsForGroup``."""
    cluster = ctx.services.cluster
    known: list[tuple[str, uuid.UUID, list[int]]] = []
    absent: list[dict[str, Any]] = []
    denied: list[dict[str, Any]] = []
    for topic in requested:
        name = topic.topic_name
        partitions = [int(p) for p in topic.partitions]
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            denied.append(
                {
                    "topic_name": name,
                    "topic_id": ZERO_UUID,
                    "partitions": [
                        {
                            "partition_index": p,
                            "start_offset": 0,
                            "leader_epoch": 0,
                            "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            "error_message": MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED],
                        }
                        for p in partitions
                    ],
                }
            )
            continue
        info = cluster.topics.get(name)
        if info is None:
            absent.append(
                {
                    "topic_name": name,
                    "topic_id": ZERO_UUID,
                    "partitions": [_partition(p, -1, 0, -1) for p in partitions],
                }
            )
        else:
            known.append((name, info.topic_id, partitions))
    described = await _summaries(ctx, group_id, known) if known else []
    return {"group_id": group_id, "topics": [*described, *absent, *denied], "error_code": ErrorCode.NONE}


async def _describe_all(ctx: RequestContext, group_id: str) -> dict[str, Any]:
    """``describeShareGroupAllOffsetsForGroup``: the group's initialised partitions."""
    answer = await call_share_coordinator(ctx, group_id, ShareInitializedPartitions(group_id))
    if answer is None:
        return _group_error(group_id, ErrorCode.NOT_COORDINATOR)
    assert isinstance(answer, ShareInitializedPartitionsAnswer)
    cluster = ctx.services.cluster
    topics: list[tuple[str, uuid.UUID, list[int]]] = []
    for topic_id, partitions in answer.topics:
        info = cluster.topic_by_id(to_uuid(topic_id))
        if info is None:
            continue  # no longer in the metadata image: left out
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, info.name):
            continue
        topics.append((info.name, info.topic_id, list(partitions)))
    described = await _summaries(ctx, group_id, topics) if topics else []
    return {"group_id": group_id, "topics": described, "error_code": ErrorCode.NONE}


@register(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, versions=DESCRIBE_VERSIONS)
async def describe_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    groups = []
    for group in request.groups:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        group_id = group.group_id
        if group_denied(ctx, AclOperation.DESCRIBE, group_id):
            groups.append(_group_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
        elif group.topics is None:
            groups.append(await _describe_all(ctx, group_id))
        else:
            groups.append(await _describe_named(ctx, group_id, group.topics))
    return {"throttle_time": 0, "groups": groups}
