"""The share group's coordinator APIs (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe, v1, as
Kafka 4.4.0's ``KafkaApis`` and ``GroupCoordinatorService`` answer them. (ShareFetch and
ShareAcknowledge, the share partitions' APIs, are not here.)"""

from __future__ import annotations

from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.handlers_group import call_coordinator, describe_each_group, described_answer, group_denied
from kgroup.broker.topic_acls import any_topic_denied
from kgroup.group.share.heartbeat import invalid_share_heartbeat_answer
from kgroup.messages import (
    DescribedShareGroup,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatResponse,
)
from kgroup.model import ErrorCode
from kgroup.security.acl import AclOperation
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.share_group import (
    SHARE_GROUP_VERSIONS,
    share_group_describe_request_from_wire,
    share_group_describe_response_to_wire,
    share_group_heartbeat_request_from_wire,
    share_group_heartbeat_response_to_wire,
)

__all__: list[str] = []

#: ``KafkaApis.isMemberIdValid``: a share member's own id (a ``Uuid``'s 22 characters) is at most 36
_MAX_MEMBER_ID_CHARS = 36


@register(ApiKey.SHARE_GROUP_HEARTBEAT, versions=SHARE_GROUP_VERSIONS)
async def share_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    """``KafkaApis.handleShareGroupHeartbeat``: READ on the group, a member id of 1 to 36 characters
    (``isMemberIdValid``), DESCRIBE on every subscribed topic (these answers carry no message), then
    the service's own checks (INVALID_REQUEST at any broker), then the group's coordinator
    (NOT_COORDINATOR at another broker)."""
    body = share_group_heartbeat_request_from_wire(request)
    answer: ShareGroupHeartbeatResponse | None
    if group_denied(ctx, AclOperation.READ, body.group_id):
        answer = ShareGroupHeartbeatResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    elif not 0 < len(body.member_id) <= _MAX_MEMBER_ID_CHARS:
        # "Invalid member id in the request.": getErrorResponse keeps only the code
        answer = ShareGroupHeartbeatResponse(ErrorCode.INVALID_REQUEST)
    elif body.subscribed_topic_names and await any_topic_denied(ctx, body.subscribed_topic_names):
        answer = ShareGroupHeartbeatResponse(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    else:
        answer = invalid_share_heartbeat_answer(body)
    if answer is None:
        response = await call_coordinator(ctx, body.group_id, body)
        assert isinstance(response, ShareGroupHeartbeatResponse)
        answer = response
    return share_group_heartbeat_response_to_wire(answer, ctx.version)


@register(ApiKey.SHARE_GROUP_DESCRIBE, versions=SHARE_GROUP_VERSIONS)
async def share_group_describe(ctx: RequestContext, request: Any) -> Any:
    """``GroupCoordinatorService.shareGroupDescribe`` (:func:`.handlers_group.describe_each_group`)."""
    body = share_group_describe_request_from_wire(request)
    groups = await describe_each_group(
        ctx,
        body.group_ids,
        ShareGroupDescribeRequest,
        ShareGroupDescribeResponse,
        DescribedShareGroup,
        body.include_authorized_operations,
    )
    response = ShareGroupDescribeResponse(tuple(groups))
    return described_answer(share_group_describe_response_to_wire, response, ctx.version)
