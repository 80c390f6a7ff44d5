"""One round trip per API and version through the translation the broker and the client share
(:mod:`kgroup.wire.apis`): a typed request → kio (the client's ``request_to_wire``) → bytes → kio →
typed (the broker's ``request_from_wire``), and a typed response → kio (the broker's
``response_to_wire``) → bytes → kio → typed (the client's ``response_from_wire``). What comes back is
what was sent, less what the version cannot carry (spelled out in ``_as_sent_*``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.broker.dispatch import registered_versions
from kgroup.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis import heartbeat, join_group, leave_group, sync_group
from kgroup.wire.codec import (
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    response_class,
)

_text = st.text(max_size=10)
_nullable = st.none() | _text
_i32 = st.integers(-(2**31), 2**31 - 1)
_ms = st.integers(0, 2**31 - 1)
_bytes = st.binary(max_size=16)
_errors = st.sampled_from(list(ErrorCode))

MODULES: dict[ApiKey, Any] = {
    ApiKey.JOIN_GROUP: join_group,
    ApiKey.SYNC_GROUP: sync_group,
    ApiKey.HEARTBEAT: heartbeat,
    ApiKey.LEAVE_GROUP: leave_group,
}
CASES = [
    (key, v)
    for key in MODULES
    for v in range(registered_versions()[key][0], registered_versions()[key][1] + 1)
]


def _through_bytes_request(module: Any, body: Any, version: int) -> Any:
    frame = encode_request(module.request_to_wire(body, version), correlation_id=3, client_id="c")
    return module.request_from_wire(decode_request(frame, decode_request_header(frame)).body)


def _through_bytes_response(module: Any, api_key: ApiKey, body: Any, version: int) -> Any:
    cls = response_class(api_key, version)
    assert cls is not None
    frame = encode_response(5, module.response_to_wire(body, version))
    correlation, decoded = decode_response(frame, cls)
    assert correlation == 5
    return module.response_from_wire(decoded)


# --- what each version carries ------------------------------------------------------------------


def _as_sent_request(key: ApiKey, body: Any, version: int) -> Any:
    replace = dataclasses.replace
    if key == ApiKey.JOIN_GROUP:
        if version == 0:
            body = replace(body, rebalance_timeout_ms=body.session_timeout_ms)
        if version < 5:
            body = replace(body, group_instance_id=None)
        if version < 8:
            body = replace(body, reason=None)
    elif key == ApiKey.SYNC_GROUP:
        if version < 3:
            body = replace(body, group_instance_id=None)
        if version < 5:
            body = replace(body, protocol_type=None, protocol_name=None)
    elif key == ApiKey.HEARTBEAT:
        if version < 3:
            body = replace(body, group_instance_id=None)
    elif key == ApiKey.LEAVE_GROUP:
        if version < 3:
            body = replace(body, members=(LeaveGroupMember(body.members[0].member_id),))
        elif version < 5:
            body = replace(body, members=tuple(replace(m, reason=None) for m in body.members))
    return body


def _as_sent_response(key: ApiKey, body: Any, version: int) -> Any:
    replace = dataclasses.replace
    if key == ApiKey.JOIN_GROUP:
        if version < 7:
            body = replace(body, protocol_type=None, protocol_name=body.protocol_name or "")
        if version < 5:
            body = replace(body, members=tuple(replace(m, group_instance_id=None) for m in body.members))
        if version < 9:
            body = replace(body, skip_assignment=False)
    elif key == ApiKey.SYNC_GROUP:
        if version < 5:
            body = replace(body, protocol_type=None, protocol_name=None)
    elif key == ApiKey.LEAVE_GROUP and version < 3:
        code = body.error_code
        if code == ErrorCode.NONE and body.members:
            code = body.members[0].error_code
        body = LeaveGroupResponse(code)
    return body


# --- strategies -----------------------------------------------------------------------------------


def _requests(key: ApiKey, version: int) -> st.SearchStrategy[Any]:
    if key == ApiKey.JOIN_GROUP:
        protocols = st.lists(st.builds(JoinGroupProtocol, _text, _bytes), max_size=3).map(tuple)
        return st.builds(JoinGroupRequest, _text, _ms, _ms, _text, protocols, _nullable, _text, _nullable)
    if key == ApiKey.SYNC_GROUP:
        assignments = st.lists(st.builds(SyncGroupAssignment, _text, _bytes), max_size=3).map(tuple)
        return st.builds(SyncGroupRequest, _text, _i32, _text, assignments, _nullable, _nullable, _nullable)
    if key == ApiKey.HEARTBEAT:
        return st.builds(HeartbeatRequest, _text, _i32, _text, _nullable)
    members = st.lists(st.builds(LeaveGroupMember, _text, _nullable, _nullable), min_size=1, max_size=3)
    if version < 3:
        members = st.builds(LeaveGroupMember, _text).map(lambda m: [m])  # one member, by id
    return st.builds(LeaveGroupRequest, _text, members.map(tuple))


def _responses(key: ApiKey) -> st.SearchStrategy[Any]:
    if key == ApiKey.JOIN_GROUP:
        members = st.lists(st.builds(JoinGroupMember, _text, _bytes, _nullable), max_size=3).map(tuple)
        return st.builds(
            JoinGroupResponse, _errors, _i32, _nullable, _nullable, _text, st.booleans(), _text, members
        )
    if key == ApiKey.SYNC_GROUP:
        return st.builds(SyncGroupResponse, _errors, _bytes, _nullable, _nullable)
    if key == ApiKey.HEARTBEAT:
        return st.builds(HeartbeatResponse, _errors)
    members = st.lists(st.builds(LeaveGroupMemberResponse, _text, _nullable, _errors), max_size=3).map(tuple)
    return st.builds(LeaveGroupResponse, _errors, members)


def _check(examples: Callable[..., None]) -> Callable[..., None]:
    return settings(max_examples=30, deadline=None, database=None)(examples)


@pytest.mark.parametrize(("key", "version"), CASES, ids=[f"{k.title}-v{v}" for k, v in CASES])
def test_request_round_trip(key: ApiKey, version: int) -> None:
    @_check
    @given(body=_requests(key, version))
    def check(body: Any) -> None:
        assert _through_bytes_request(MODULES[key], body, version) == _as_sent_request(key, body, version)

    check()


@pytest.mark.parametrize(("key", "version"), CASES, ids=[f"{k.title}-v{v}" for k, v in CASES])
def test_response_round_trip(key: ApiKey, version: int) -> None:
    @_check
    @given(body=_responses(key))
    def check(body: Any) -> None:
        got = _through_bytes_response(MODULES[key], key, body, version)
        assert got == _as_sent_response(key, body, version)

    check()


def test_leave_group_before_v3_names_one_member() -> None:
    two = LeaveGroupRequest("g", (LeaveGroupMember("a"), LeaveGroupMember("b")))
    with pytest.raises(ValueError, match="LeaveGroup v2 names one member, not 2"):
        leave_group.request_to_wire(two, 2)
