"""What Describe/Alter/DeleteShareGroupOffsets' handlers share: the versions Kafka 4.4.0 serves, the
call to the group's coordinator (kgroup.group.share.offsets), the whole-answer errors of Alter and
Delete and their messages, topic ids on the wire."""

from __future__ import annotations

import uuid
from typing import Any, Protocol, TypeVar

from kgroup.broker.cluster import OFFSETS_TOPIC
from kgroup.broker.dispatch import RequestContext
from kgroup.messages import Envelope
from kgroup.model import ErrorCode, TopicId

__all__ = [
    "ALTER_VERSIONS",
    "DELETE_VERSIONS",
    "DESCRIBE_VERSIONS",
    "MESSAGES",
    "ZERO_UUID",
    "call_share_coordinator",
    "prepare_on_coordinator",
    "to_uuid",
    "topics_answer",
    "whole_error",
]


class _Prepared(Protocol):
    """What the coordinator prepares for Alter/DeleteShareGroupOffsets: a top-level error or none."""

    @property
    def error_code(self) -> ErrorCode: ...

    @property
    def error_message(self) -> str | None: ...


P = TypeVar("P", bound=_Prepared)

#: the versions Kafka 4.4.0 serves: DescribeShareGroupOffsets v0-v1 (v1 adds each partition's lag),
#: AlterShareGroupOffsets v0, DeleteShareGroupOffsets v0
DESCRIBE_VERSIONS = (0, 1)
ALTER_VERSIONS = (0, 0)
DELETE_VERSIONS = (0, 0)

ZERO_UUID = uuid.UUID(int=0)

#: ``Errors.X.message()`` for the errors these handlers answer without a message of the coordinator's
MESSAGES = {
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.INVALID_GROUP_ID: "The configured groupId is invalid.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.UNKNOWN_SERVER_ERROR: (
        "The server experienced an unexpected error when processing the request."
    ),
}


def to_uuid(topic_id: TopicId | None) -> uuid.UUID:
    return ZERO_UUID if topic_id is None else uuid.UUID(int=topic_id.to_int())


async def call_share_coordinator(ctx: RequestContext, group_id: str, body: object) -> Any | None:
    """The answer of ``group_id``'s coordinator to one of kgroup.group.share.offsets' requests, or
    ``None`` when another node coordinates the group (the caller answers NOT_COORDINATOR)."""
    services = ctx.services
    cluster = services.cluster
    if OFFSETS_TOPIC not in cluster.topics:
        await services.make_offsets_topic()
    if cluster.coordinator_for(group_id) != ctx.node_id:
        return None
    coordinators = services.coordinators
    await coordinators.wait_loaded()
    envelope = Envelope(
        ctx.connection,
        ctx.header.correlation_id,
        body,  # type: ignore[arg-type]  # the share kind's own request types
        ctx.header.client_id,
        ctx.client_host,
        ctx.version,
        ctx.principal,
    )
    return await coordinators.call(ctx.node_id, envelope)


def whole_error(code: ErrorCode, message: str | None = None) -> dict[str, Any]:
    """Alter/DeleteShareGroupOffsets' answer of one error for the whole request
    (``AlterShareGroupOffsetsRequest.getErrorResponseData``,
    ``DeleteShareGroupOffsetsRequest.getErrorDeleteResponseData``): the code and message, no topics."""
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message if message is not None else MESSAGES.get(code),
        "responses": [],
    }


def topics_answer(responses: list[dict[str, Any]]) -> dict[str, Any]:
    """Alter/DeleteShareGroupOffsets' answer with no error for the whole request: each topic's in
    ``responses``."""
    return {"throttle_time": 0, "error_code": ErrorCode.NONE, "error_message": None, "responses": responses}


async def prepare_on_coordinator(
    ctx: RequestContext, group_id: str, body: object, prepared: type[P]
) -> P | dict[str, Any]:
    """What ``group_id``'s coordinator prepared for Alter/DeleteShareGroupOffsets' ``body`` (of type
    ``prepared``), or the whole answer's error: ``INVALID_GROUP_ID`` for an empty group id,
    ``NOT_COORDINATOR`` at another node, the coordinator's own error with its message."""
    if not group_id:
        return whole_error(ErrorCode.INVALID_GROUP_ID)
    answer = await call_share_coordinator(ctx, group_id, body)
    if answer is None:
        return whole_error(ErrorCode.NOT_COORDINATOR)
    assert isinstance(answer, prepared)
    if answer.error_code != ErrorCode.NONE:
        return whole_error(answer.error_code, answer.error_message)
    return answer
