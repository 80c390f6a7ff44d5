"""JoinGroup (API key 11), v0-v9, both directions.

Shape changes: v0 has no rebalance timeout (Kafka uses the session timeout); v5 adds the group
instance id (of the request and of each member of the answer); v7 adds the answer's protocol type and
makes its protocol name nullable (before, ``None`` is written as ``""``); v8 adds the reason; v9 the
answer's ``skip_assignment`` (KIP-814).
"""

from __future__ import annotations

from typing import Any

from kgroup.messages import JoinGroupMember, JoinGroupProtocol, JoinGroupRequest, JoinGroupResponse
from kgroup.model import ErrorCode
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis._common import ms, request_entity, response_entity
from kgroup.wire.codec import build, error_from_wire

__all__ = ["error_answer", "request_from_wire", "request_to_wire", "response_from_wire", "response_to_wire"]


def request_to_wire(body: JoinGroupRequest, version: int) -> Any:
    return build(
        request_entity(ApiKey.JOIN_GROUP, version),
        {
            "group_id": body.group_id,
            "session_timeout": body.session_timeout_ms,
            "rebalance_timeout": body.rebalance_timeout_ms,
            "member_id": body.member_id,
            "group_instance_id": body.group_instance_id,
            "protocol_type": body.protocol_type,
            "protocols": [{"name": p.name, "metadata": bytes(p.metadata)} for p in body.protocols],
            "reason": body.reason,
        },
    )


def request_from_wire(request: Any) -> JoinGroupRequest:
    session = ms(request.session_timeout)
    rebalance = ms(request.rebalance_timeout) if hasattr(request, "rebalance_timeout") else session
    return JoinGroupRequest(
        group_id=request.group_id,
        session_timeout_ms=session,
        rebalance_timeout_ms=rebalance,
        member_id=request.member_id,
        protocols=tuple(JoinGroupProtocol(p.name, bytes(p.metadata)) for p in request.protocols),
        group_instance_id=getattr(request, "group_instance_id", None),
        protocol_type=request.protocol_type,
        reason=getattr(request, "reason", None),
    )


def response_to_wire(body: JoinGroupResponse, version: int) -> Any:
    return build(
        response_entity(ApiKey.JOIN_GROUP, version),
        {
            "throttle_time": 0,
            "error_code": body.error_code,
            "generation_id": body.generation_id,
            "protocol_type": body.protocol_type,
            # before v7 the protocol name is not nullable
            "protocol_name": body.protocol_name if version >= 7 else (body.protocol_name or ""),
            "leader": body.leader,
            "skip_assignment": body.skip_assignment,
            "member_id": body.member_id,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
                for m in body.members
            ],
        },
    )


def response_from_wire(response: Any) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=error_from_wire(response.error_code),
        generation_id=int(response.generation_id),
        protocol_type=getattr(response, "protocol_type", None),
        protocol_name=response.protocol_name,
        leader=response.leader,
        skip_assignment=bool(getattr(response, "skip_assignment", False)),
        member_id=response.member_id,
        members=tuple(
            JoinGroupMember(m.member_id, bytes(m.metadata), getattr(m, "group_instance_id", None))
            for m in response.members
        ),
    )


def error_answer(request: JoinGroupRequest, code: ErrorCode) -> JoinGroupResponse:
    """The answer to ``request`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    return JoinGroupResponse(code, member_id=request.member_id)
