"""DeleteShareGroupOffsets (API key 92), v0, as Kafka 4.4.0's ``KafkaApis`` and
``GroupCoordinatorService.deleteShareGroupOffsets`` answer it.

DELETE on the group (``GROUP_AUTHORIZATION_FAILED`` for the whole answer); a topic the principal may
not read is answered ``TOPIC_AUTHORIZATION_FAILED``; an empty group id is ``INVALID_GROUP_ID``; the
group's coordinator (:mod:`kgroup.group.share.offsets`) refuses a group that is not a share group
(``GROUP_ID_NOT_FOUND``) or has members (``NON_EMPTY_GROUP``) and a topic the group has no share state
for (``UNKNOWN_TOPIC_OR_PARTITION``, "There is no offset information to delete."); the others' share
state is deleted (tombstones in ``__share_group_state``) before the coordinator forgets them. The
deleted topics are answered first, then the refused ones.
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.handlers_group import group_denied
from kgroup.broker.share_offsets import (
    DELETE_VERSIONS,
    MESSAGES,
    ZERO_UUID,
    call_share_coordinator,
    prepare_on_coordinator,
    to_uuid,
    topics_answer,
    whole_error,
)
from kgroup.group.share.offsets import DeleteShareOffsets, DeleteShareOffsetsPrepared, ShareOffsetsDeleted
from kgroup.model import ErrorCode
from kgroup.security.acl import AclOperation, ResourceType
from kgroup.wire.api_keys import ApiKey

__all__: list[str] = []


@register(ApiKey.DELETE_SHARE_GROUP_OFFSETS, versions=DELETE_VERSIONS)
async def delete_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    group_id = request.group_id
    if group_denied(ctx, AclOperation.DELETE, group_id):
        return whole_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    allowed: list[str] = []
    denied: list[dict[str, Any]] = []
    for topic in request.topics:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        name = topic.topic_name
        if ctx.authorized(AclOperation.READ, ResourceType.TOPIC, name):
            allowed.append(name)
        else:
            denied.append(
                {
                    "topic_name": name,
                    "topic_id": ZERO_UUID,
                    "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    "error_message": MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED],
                }
            )
    prepared = await prepare_on_coordinator(
        ctx, group_id, DeleteShareOffsets(group_id, tuple(allowed)), DeleteShareOffsetsPrepared
    )
    if isinstance(prepared, dict):
        return prepared
    deleted: list[dict[str, Any]] = []
    if prepared.delete:
        written = await ctx.services.shares.delete_state(
            group_id, [(to_uuid(t), p) for t, _, partitions in prepared.delete for p in partitions]
        )
        if not written:
            return whole_error(ErrorCode.UNKNOWN_SERVER_ERROR)
        await call_share_coordinator(
            ctx, group_id, ShareOffsetsDeleted(group_id, tuple(t for t, _, _ in prepared.delete))
        )
        deleted = [
            {"topic_name": name, "topic_id": to_uuid(t), "error_code": ErrorCode.NONE, "error_message": None}
            for t, name, _ in prepared.delete
        ]
    refused = [
        {"topic_name": name, "topic_id": ZERO_UUID, "error_code": code, "error_message": message}
        for name, code, message in prepared.refused
    ]
    return topics_answer([*deleted, *refused, *denied])
