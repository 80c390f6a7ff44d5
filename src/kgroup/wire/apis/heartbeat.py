"""Heartbeat (API key 12), v0-v4, both directions: v3 adds the group instance id."""

from __future__ import annotations

from typing import Any

from kgroup.messages import HeartbeatRequest, HeartbeatResponse
from kgroup.model import ErrorCode
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis._common import request_entity, response_entity
from kgroup.wire.codec import build, error_from_wire

__all__ = ["error_answer", "request_from_wire", "request_to_wire", "response_from_wire", "response_to_wire"]


def request_to_wire(body: HeartbeatRequest, version: int) -> Any:
    return build(
        request_entity(ApiKey.HEARTBEAT, version),
        {
            "group_id": body.group_id,
            "generation_id": body.generation_id,
            "member_id": body.member_id,
            "group_instance_id": body.group_instance_id,
        },
    )


def request_from_wire(request: Any) -> HeartbeatRequest:
    return HeartbeatRequest(
        request.group_id,
        int(request.generation_id),
        request.member_id,
        getattr(request, "group_instance_id", None),
    )


def response_to_wire(body: HeartbeatResponse, version: int) -> Any:
    return build(
        response_entity(ApiKey.HEARTBEAT, version), {"throttle_time": 0, "error_code": body.error_code}
    )


def response_from_wire(response: Any) -> HeartbeatResponse:
    return HeartbeatResponse(error_from_wire(response.error_code))


def error_answer(request: HeartbeatRequest, code: ErrorCode) -> HeartbeatResponse:
    """The answer to ``request`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    return HeartbeatResponse(code)
