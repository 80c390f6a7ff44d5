"""The broker's answer carrying only an error code, for every group request the coordinator serves:
each API's ``error_answer`` (beside its translation in ``kgroup.wire.apis``), read from one table."""

from __future__ import annotations

from typing import Any

import pytest

from kgroup.broker.coordinator_host import error_response
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, TopicPartition

CODE = ErrorCode.NOT_COORDINATOR
TP = TopicPartition("t", 3)


def _codes(answer: Any) -> list[ErrorCode]:
    """Every error code an answer carries (the whole answer's and its entries')."""
    if isinstance(answer, OffsetCommitResponse):
        return [code for _, code in answer.results]
    if isinstance(answer, DescribeGroupsResponse | ConsumerGroupDescribeResponse):
        return [group.error_code for group in answer.groups]
    if isinstance(answer, LeaveGroupResponse):
        return [answer.error_code, *(m.error_code for m in answer.members)]
    return [answer.error_code]


@pytest.mark.parametrize(
    ("request_body", "answer_type", "entries"),
    [
        (JoinGroupRequest("g", 10, 20, "m", ()), JoinGroupResponse, 1),
        (SyncGroupRequest("g", 1, "m"), SyncGroupResponse, 1),
        (HeartbeatRequest("g", 1, "m"), HeartbeatResponse, 1),
        (LeaveGroupRequest("g", (LeaveGroupMember("a"), LeaveGroupMember("b", "i"))), LeaveGroupResponse, 3),
        (OffsetCommitRequest("g", 1, "m", (OffsetCommitPartition(TP, 5),)), OffsetCommitResponse, 1),
        (OffsetFetchRequest("g"), OffsetFetchResponse, 1),
        (ConsumerGroupHeartbeatRequest("g", "m", 0), ConsumerGroupHeartbeatResponse, 1),
        (ConsumerGroupDescribeRequest(("g", "h")), ConsumerGroupDescribeResponse, 2),
        (DescribeGroupsRequest(("g", "h", "k")), DescribeGroupsResponse, 3),
        (ListGroupsRequest(), ListGroupsResponse, 1),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, int | type) else None,
)
def test_every_group_request_has_its_error_answer(request_body: Any, answer_type: type, entries: int) -> None:
    answer = error_response(request_body, CODE)
    assert type(answer) is answer_type
    assert _codes(answer) == [CODE] * entries


def test_the_join_answer_keeps_the_member_id_and_the_commit_its_partitions() -> None:
    assert error_response(JoinGroupRequest("g", 10, 20, "m-1", ()), CODE) == JoinGroupResponse(
        CODE, member_id="m-1"
    )
    commit = OffsetCommitRequest("g", 1, "m", (OffsetCommitPartition(TP, 5),))
    assert error_response(commit, CODE) == OffsetCommitResponse(((TP, CODE),))


def test_a_request_the_coordinator_does_not_serve_has_none() -> None:
    with pytest.raises(TypeError, match="no error answer for str"):
        error_response("not a request", CODE)  # type: ignore[arg-type]
