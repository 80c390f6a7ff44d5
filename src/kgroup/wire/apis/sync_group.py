"""SyncGroup (API key 14), v0-v5, both directions: v3 adds the group instance id, v5 the protocol
type and name (of the request and of the answer)."""

from __future__ import annotations

from typing import Any

from kgroup.messages import SyncGroupAssignment, SyncGroupRequest, SyncGroupResponse
from kgroup.model import ErrorCode
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis._common import request_entity, response_entity
from kgroup.wire.codec import build, error_from_wire

__all__ = ["error_answer", "request_from_wire", "request_to_wire", "response_from_wire", "response_to_wire"]


def request_to_wire(body: SyncGroupRequest, version: int) -> Any:
    return build(
        request_entity(ApiKey.SYNC_GROUP, version),
        {
            "group_id": body.group_id,
            "generation_id": body.generation_id,
            "member_id": body.member_id,
            "group_instance_id": body.group_instance_id,
            "protocol_type": body.protocol_type,
            "protocol_name": body.protocol_name,
            "assignments": [
                {"member_id": a.member_id, "assignment": bytes(a.assignment)} for a in body.assignments
            ],
        },
    )


def request_from_wire(request: Any) -> SyncGroupRequest:
    return SyncGroupRequest(
        group_id=request.group_id,
        generation_id=int(request.generation_id),
        member_id=request.member_id,
        assignments=tuple(SyncGroupAssignment(a.member_id, bytes(a.assignment)) for a in request.assignments),
        group_instance_id=getattr(request, "group_instance_id", None),
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
    )


def response_to_wire(body: SyncGroupResponse, version: int) -> Any:
    return build(
        response_entity(ApiKey.SYNC_GROUP, version),
        {
            "throttle_time": 0,
            "error_code": body.error_code,
            "protocol_type": body.protocol_type,
            "protocol_name": body.protocol_name,
            "assignment": body.assignment,
        },
    )


def response_from_wire(response: Any) -> SyncGroupResponse:
    return SyncGroupResponse(
        error_code=error_from_wire(response.error_code),
        assignment=bytes(response.assignment),
        protocol_type=getattr(response, "protocol_type", None),
        protocol_name=getattr(response, "protocol_name", None),
    )


def error_answer(request: SyncGroupRequest, code: ErrorCode) -> SyncGroupResponse:
    """The answer to ``request`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    return SyncGroupResponse(code)
