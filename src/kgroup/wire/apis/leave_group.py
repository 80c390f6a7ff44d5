"""LeaveGroup (API key 13), v0-v5, both directions.

Shape change at v3 (KIP-345): v0-v2 name one member by its id and answer with one error; v3+ name a
batch of members (with instance ids; v5 adds each one's reason) and answer per member. A v0-v2 answer
carries the member's error when the group's is NONE, as Kafka's ``LeaveGroupResponse`` does.
"""

from __future__ import annotations

from typing import Any

from kgroup.messages import LeaveGroupMember, LeaveGroupMemberResponse, LeaveGroupRequest, LeaveGroupResponse
from kgroup.model import ErrorCode
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis._common import request_entity, response_entity
from kgroup.wire.codec import build, error_from_wire

__all__ = ["error_answer", "request_from_wire", "request_to_wire", "response_from_wire", "response_to_wire"]

#: the first version with a batch of members
BATCHED = 3


def request_to_wire(body: LeaveGroupRequest, version: int) -> Any:
    cls = request_entity(ApiKey.LEAVE_GROUP, version)
    if version < BATCHED:
        if len(body.members) != 1:
            raise ValueError(f"LeaveGroup v{version} names one member, not {len(body.members)}")
        return build(cls, {"group_id": body.group_id, "member_id": body.members[0].member_id})
    members = [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "reason": m.reason}
        for m in body.members
    ]
    return build(cls, {"group_id": body.group_id, "members": members})


def request_from_wire(request: Any) -> LeaveGroupRequest:
    if hasattr(request, "members"):
        members = tuple(
            LeaveGroupMember(m.member_id, m.group_instance_id, getattr(m, "reason", None))
            for m in request.members
        )
    else:
        members = (LeaveGroupMember(request.member_id),)
    return LeaveGroupRequest(request.group_id, members)


def response_to_wire(body: LeaveGroupResponse, version: int) -> Any:
    code = body.error_code
    if version < BATCHED and code == ErrorCode.NONE and body.members:
        code = body.members[0].error_code  # v0-v2: one member, its error is the answer's
    members = [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "error_code": m.error_code}
        for m in body.members
    ]
    return build(
        response_entity(ApiKey.LEAVE_GROUP, version),
        {"throttle_time": 0, "error_code": code, "members": members},
    )


def response_from_wire(response: Any) -> LeaveGroupResponse:
    return LeaveGroupResponse(
        error_from_wire(response.error_code),
        tuple(
            LeaveGroupMemberResponse(m.member_id, m.group_instance_id, error_from_wire(m.error_code))
            for m in getattr(response, "members", ())
        ),
    )


def error_answer(request: LeaveGroupRequest, code: ErrorCode) -> LeaveGroupResponse:
    """The answer to ``request`` carrying only ``code`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    return LeaveGroupResponse(
        code, tuple(LeaveGroupMemberResponse(m.member_id, m.group_instance_id, code) for m in request.members)
    )
