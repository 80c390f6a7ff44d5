"""One round trip per API and version through the translation the broker and the client share
(:mod:`kgroup.wire.apis`): a typed request → kio (the client's ``request_to_wire``) → bytes → kio →
typed (the broker's ``request_from_wire``), and a typed response → kio (the broker's
``response_to_wire``) → bytes → kio → typed (the client's ``response_from_wire``). What comes back is
what was sent, less what the version cannot carry (spelled out in ``_as_sent_*``)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.broker.dispatch import registered_versions
from kgroup.messages import (
    FindCoordinatorResponse,
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
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, TopicPartition
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis import (
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    offset_commit,
    offset_fetch,
    sync_group,
)
from kgroup.wire.apis._common import ZERO_UUID, TopicIds
from kgroup.wire.apis.find_coordinator import (
    FindCoordinatorBatchRequest,
    FindCoordinatorBatchResponse,
    FoundCoordinator,
)
from kgroup.wire.apis.offset_fetch import FetchedGroup, OffsetFetchBatchRequest, OffsetFetchBatchResponse
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
_i64 = st.integers(-(2**63), 2**63 - 1)
_errors = st.sampled_from(list(ErrorCode))
_partitions = st.builds(TopicPartition, st.sampled_from(["a", "b", "c"]), st.integers(0, 2**31 - 1))

MODULES: dict[ApiKey, Any] = {
    ApiKey.JOIN_GROUP: join_group,
    ApiKey.SYNC_GROUP: sync_group,
    ApiKey.HEARTBEAT: heartbeat,
    ApiKey.LEAVE_GROUP: leave_group,
    ApiKey.OFFSET_COMMIT: offset_commit,
    ApiKey.OFFSET_FETCH: offset_fetch,
    ApiKey.FIND_COORDINATOR: find_coordinator,
}
CASES = [
    (key, v)
    for key in MODULES
    for v in range(registered_versions()[key][0], registered_versions()[key][1] + 1)
]


#: the topics both sides know, for the versions that name topics by id (OffsetCommit/OffsetFetch v10)
_IDS = {"a": uuid.UUID(int=1), "b": uuid.UUID(int=2), "c": uuid.UUID(int=3)}
TOPIC_IDS = TopicIds({i: n for n, i in _IDS.items()}.get, _IDS.get)


def _ids(module: Any, version: int) -> dict[str, Any]:
    """The topic ids argument, for the translations of the versions that name topics by id."""
    return {"topic_ids": TOPIC_IDS} if version >= getattr(module, "TOPIC_IDS", 99) else {}


def _through_bytes_request(module: Any, body: Any, version: int) -> Any:
    ids = _ids(module, version)
    frame = encode_request(module.request_to_wire(body, version, **ids), correlation_id=3, client_id="c")
    return module.request_from_wire(decode_request(frame, decode_request_header(frame)).body, **ids)


def _through_bytes_response(module: Any, api_key: ApiKey, body: Any, version: int) -> Any:
    cls = response_class(api_key, version)
    assert cls is not None
    ids = _ids(module, version)
    frame = encode_response(5, module.response_to_wire(body, version, **ids))
    correlation, decoded = decode_response(frame, cls)
    assert correlation == 5
    return module.response_from_wire(decoded, **ids)


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
    elif key == ApiKey.OFFSET_COMMIT:
        offsets = _grouped(body.offsets, lambda o: o.partition.topic)
        if version < 6:
            offsets = tuple(replace(o, committed_leader_epoch=-1) for o in offsets)
        body = replace(body, offsets=offsets)
        if version < 7:
            body = replace(body, group_instance_id=None)
    elif key == ApiKey.OFFSET_FETCH:
        groups = []
        for g in body.groups:
            if g.partitions is not None:
                g = replace(g, partitions=_grouped(g.partitions, lambda tp: tp.topic))
            if version < 9:
                g = replace(g, member_id=None, member_epoch=-1)
            groups.append(g)
        body = replace(body, groups=tuple(groups), require_stable=body.require_stable and version >= 7)
    return body


def _grouped(items: Any, topic: Callable[[Any], str]) -> tuple[Any, ...]:
    """``items`` in the wire's order: grouped by topic, topics in the order they first appear."""
    order: dict[str, list[Any]] = {}
    for item in items:
        order.setdefault(topic(item), []).append(item)
    return tuple(item for grouped in order.values() for item in grouped)


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
    elif key == ApiKey.OFFSET_COMMIT:
        body = OffsetCommitResponse(_grouped(body.results, lambda r: r[0].topic))
    elif key == ApiKey.OFFSET_FETCH:
        groups = []
        for g in body.groups:
            answer = g.response
            partitions = _grouped(answer.partitions, lambda p: p.partition.topic)
            if version < 5:
                partitions = tuple(replace(p, committed_leader_epoch=-1) for p in partitions)
            code = answer.error_code if version >= 2 else ErrorCode.NONE
            group_id = g.group_id if version >= 8 else None
            groups.append(FetchedGroup(group_id, OffsetFetchResponse(code, partitions)))
        body = OffsetFetchBatchResponse(tuple(groups))
    elif key == ApiKey.FIND_COORDINATOR and version < 4:
        (found,) = body.coordinators
        message = found.error_message if version >= 1 else None
        body = FindCoordinatorBatchResponse((FoundCoordinator(None, found.response, message),))
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
    if key == ApiKey.OFFSET_COMMIT:
        offsets = st.lists(st.builds(OffsetCommitPartition, _partitions, _i64, _nullable, _i32), max_size=5)
        return st.builds(OffsetCommitRequest, _text, _i32, _text, offsets.map(tuple), _nullable)
    if key == ApiKey.OFFSET_FETCH:
        partitions = st.lists(_partitions, max_size=5).map(tuple)
        if version >= 2:
            partitions = st.none() | partitions  # None: every committed partition (v2+)
        group = st.builds(OffsetFetchRequest, _text, partitions, _nullable, _i32)
        groups = st.lists(group, max_size=3) if version >= 8 else group.map(lambda g: [g])
        return st.builds(OffsetFetchBatchRequest, groups.map(tuple), st.booleans())
    if key == ApiKey.FIND_COORDINATOR:
        key_type = st.just(0) if version == 0 else st.integers(0, 1)
        keys = st.lists(_text, max_size=3) if version >= 4 else _text.map(lambda k: [k])
        return st.builds(FindCoordinatorBatchRequest, keys.map(tuple), key_type)
    members = st.lists(st.builds(LeaveGroupMember, _text, _nullable, _nullable), min_size=1, max_size=3)
    if version < 3:
        members = st.builds(LeaveGroupMember, _text).map(lambda m: [m])  # one member, by id
    return st.builds(LeaveGroupRequest, _text, members.map(tuple))


def _responses(key: ApiKey, version: int) -> st.SearchStrategy[Any]:
    if key == ApiKey.JOIN_GROUP:
        members = st.lists(st.builds(JoinGroupMember, _text, _bytes, _nullable), max_size=3).map(tuple)
        return st.builds(
            JoinGroupResponse, _errors, _i32, _nullable, _nullable, _text, st.booleans(), _text, members
        )
    if key == ApiKey.SYNC_GROUP:
        return st.builds(SyncGroupResponse, _errors, _bytes, _nullable, _nullable)
    if key == ApiKey.HEARTBEAT:
        return st.builds(HeartbeatResponse, _errors)
    if key == ApiKey.OFFSET_COMMIT:
        return st.builds(
            OffsetCommitResponse, st.lists(st.tuples(_partitions, _errors), max_size=5).map(tuple)
        )
    if key == ApiKey.OFFSET_FETCH:
        partition = st.builds(OffsetFetchPartition, _partitions, _i64, _nullable, _errors, _i32)
        answer = st.builds(OffsetFetchResponse, _errors, st.lists(partition, max_size=5).map(tuple))
        group = st.builds(FetchedGroup, _text, answer)
        groups = st.lists(group, max_size=3) if version >= 8 else group.map(lambda g: [g])
        return st.builds(OffsetFetchBatchResponse, groups.map(tuple))
    if key == ApiKey.FIND_COORDINATOR:
        answer = st.builds(FindCoordinatorResponse, _errors, _i32, _text, _i32)
        found = st.builds(FoundCoordinator, _text, answer, _nullable)
        coordinators = st.lists(found, max_size=3) if version >= 4 else found.map(lambda c: [c])
        return st.builds(FindCoordinatorBatchResponse, coordinators.map(tuple))
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
    @given(body=_responses(key, version))
    def check(body: Any) -> None:
        got = _through_bytes_response(MODULES[key], key, body, version)
        assert got == _as_sent_response(key, body, version)

    check()


def test_leave_group_before_v3_names_one_member() -> None:
    two = LeaveGroupRequest("g", (LeaveGroupMember("a"), LeaveGroupMember("b")))
    with pytest.raises(ValueError, match="LeaveGroup v2 names one member, not 2"):
        leave_group.request_to_wire(two, 2)


def test_offset_fetch_before_v8_fetches_one_group() -> None:
    two = OffsetFetchBatchRequest((OffsetFetchRequest("g"), OffsetFetchRequest("h")))
    with pytest.raises(ValueError, match="OffsetFetch v7 fetches one group, not 2"):
        offset_fetch.request_to_wire(two, 7)


def test_offset_fetch_v1_names_its_partitions() -> None:
    with pytest.raises(ValueError, match="OffsetFetch v1 names its partitions"):
        offset_fetch.request_to_wire(OffsetFetchBatchRequest((OffsetFetchRequest("g", None),)), 1)


def test_find_coordinator_before_v4_asks_for_one_key() -> None:
    with pytest.raises(ValueError, match="FindCoordinator v3 asks for one key, not 2"):
        find_coordinator.request_to_wire(FindCoordinatorBatchRequest(("g", "h")), 3)


@pytest.mark.parametrize("module", [offset_commit, offset_fetch])
def test_a_version_that_names_topics_by_id_needs_the_ids(module: Any) -> None:
    body = (
        OffsetCommitRequest("g", 1, "m", ())
        if module is offset_commit
        else OffsetFetchBatchRequest((OffsetFetchRequest("g", ()),))
    )
    with pytest.raises(ValueError, match="v10 addresses topics by id: pass topic_ids"):
        module.request_to_wire(body, 10)


def test_an_unknown_topic_id_comes_back_as_the_same_id() -> None:
    """The broker does not know the id a client sent: the typed request names it by a name no topic
    has, and the answer names the same id (Kafka echoes it, with UNKNOWN_TOPIC_ID)."""
    stranger = uuid.UUID(int=99)
    client = TopicIds({stranger: "gone"}.get, {"gone": stranger}.get)
    sent = OffsetCommitRequest("g", 1, "m", (OffsetCommitPartition(TopicPartition("gone", 0), 5),))
    frame = encode_request(offset_commit.request_to_wire(sent, 10, client), correlation_id=1)
    received = offset_commit.request_from_wire(
        decode_request(frame, decode_request_header(frame)).body, TOPIC_IDS
    )
    (offset,) = received.offsets
    assert TopicIds.is_unknown(offset.partition.topic) and TOPIC_IDS.id(offset.partition.topic) == stranger
    answer = OffsetCommitResponse(((offset.partition, ErrorCode.UNKNOWN_TOPIC_ID),))
    wire = offset_commit.response_to_wire(answer, 10, TOPIC_IDS)
    assert [t.topic_id for t in wire.topics] == [stranger]
    assert offset_commit.response_from_wire(wire, client).results == (
        (TopicPartition("gone", 0), ErrorCode.UNKNOWN_TOPIC_ID),
    )
    assert TOPIC_IDS.id("no-such-topic") == ZERO_UUID
