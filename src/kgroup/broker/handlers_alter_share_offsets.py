"""AlterShareGroupOffsets (API key 91), v0, as Kafka 4.4.0's ``KafkaApis`` and
``GroupCoordinatorService.alterShareGroupOffsets`` answer it.

READ on the group (``GROUP_AUTHORIZATION_FAILED`` for the whole answer); a topic the principal may
not read has each partition answered ``TOPIC_AUTHORIZATION_FAILED``, one the cluster does not have
``UNKNOWN_TOPIC_OR_PARTITION`` (both first, in the request's order); an empty group id is
``INVALID_GROUP_ID``; the rest goes to the group's coordinator
(:mod:`kgroup.group.share.offsets`: the group made if there is none, ``NON_EMPTY_GROUP`` while it has
members, unknown topics and partitions refused), then the share state of the accepted partitions
starts again at the given offsets (written to ``__share_group_state`` before the answer), then the
coordinator marks them initialised.
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.handlers_group import group_denied
from kgroup.broker.share_offsets import (
    ALTER_VERSIONS,
    MESSAGES,
    ZERO_UUID,
    call_share_coordinator,
    prepare_on_coordinator,
    to_uuid,
    topics_answer,
    whole_error,
)
from kgroup.group.share.offsets import (
    AlterShareOffsets,
    AlterShareOffsetsPrepared,
    ShareOffsetsDone,
    ShareOffsetsInitialized,
)
from kgroup.model import ErrorCode
from kgroup.security.acl import AclOperation, ResourceType
from kgroup.wire.api_keys import ApiKey

__all__: list[str] = []


@register(ApiKey.ALTER_SHARE_GROUP_OFFSETS, versions=ALTER_VERSIONS)
async def alter_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    group_id = request.group_id
    if group_denied(ctx, AclOperation.READ, group_id):
        return whole_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    # KafkaApis answers a topic the principal may not read, or one the metadata cache does not have,
    # itself (in the request's order, before the coordinator's answers); the rest goes on
    cluster = ctx.services.cluster
    answered: list[dict[str, Any]] = []
    allowed: list[tuple[str, tuple[tuple[int, int], ...]]] = []
    for topic in request.topics:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        name = topic.topic_name
        partitions = tuple((int(p.partition_index), int(p.start_offset)) for p in topic.partitions)
        if not ctx.authorized(AclOperation.READ, ResourceType.TOPIC, name):
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif name not in cluster.topics:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            allowed.append((name, partitions))
            continue
        info = cluster.topics.get(name)
        answered.append(
            {
                "topic_name": name,
                "topic_id": ZERO_UUID if info is None else info.topic_id,
                "partitions": [
                    {"partition_index": p, "error_code": code, "error_message": MESSAGES[code]}
                    for p, _ in partitions
                ],
            }
        )
    prepared = await prepare_on_coordinator(
        ctx, group_id, AlterShareOffsets(group_id, tuple(allowed)), AlterShareOffsetsPrepared
    )
    if isinstance(prepared, dict):
        return prepared
    if prepared.initialize:
        written = await ctx.services.shares.alter_start_offsets(
            group_id,
            prepared.group_epoch,
            [(to_uuid(t), p, start) for t, _, offsets in prepared.initialize for p, start in offsets],
        )
        if not written:
            return whole_error(ErrorCode.UNKNOWN_SERVER_ERROR)
        done = await call_share_coordinator(
            ctx,
            group_id,
            ShareOffsetsInitialized(
                group_id,
                prepared.group_epoch,
                tuple((t, n, tuple(p for p, _ in offsets)) for t, n, offsets in prepared.initialize),
            ),
        )
        if not isinstance(done, ShareOffsetsDone):
            return whole_error(ErrorCode.NOT_COORDINATOR)
    responses = [
        {
            "topic_name": name,
            "topic_id": to_uuid(topic_id),
            "partitions": [
                {"partition_index": p, "error_code": code, "error_message": message}
                for p, code, message in partitions
            ],
        }
        for name, topic_id, partitions in prepared.results
    ]
    return topics_answer([*answered, *responses])
