"""ShareGroupHeartbeat / ShareGroupDescribe v1: kgroup's messages through kio's entities and bytes and
back, unchanged; other versions refused naming the version."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer

from kgroup.messages import (
    DescribedShareGroup,
    DescribedShareMember,
    DescribedTopicPartitions,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TopicPartitions,
)
from kgroup.model import ErrorCode, KgroupError, TopicId
from kgroup.wire.share_group import (
    share_group_describe_request_from_wire,
    share_group_describe_request_to_wire,
    share_group_describe_response_from_wire,
    share_group_describe_response_to_wire,
    share_group_heartbeat_request_from_wire,
    share_group_heartbeat_request_to_wire,
    share_group_heartbeat_response_from_wire,
    share_group_heartbeat_response_to_wire,
)

_text = st.text(max_size=8)
_i32 = st.integers(-(2**31), 2**31 - 1)
_topic_id = st.builds(TopicId.from_int, st.integers(1, 2**128 - 1))
_partitions = st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple)
_errors = st.sampled_from([ErrorCode.NONE, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.GROUP_ID_NOT_FOUND])


def _bytes_round_trip(entity: Any) -> Any:
    cls = type(entity)
    buffer = io.BytesIO()
    entity_writer(cls)(buffer, entity)
    raw = buffer.getvalue()
    read, used = entity_reader(cls)(raw, 0)
    assert used == len(raw)
    return read


@given(
    st.builds(
        ShareGroupHeartbeatRequest,
        _text,
        _text,
        _i32,
        st.none() | _text,
        st.none() | st.lists(_text, max_size=3).map(tuple),
    )
)
def test_heartbeat_request_round_trips(msg: ShareGroupHeartbeatRequest) -> None:
    wire = _bytes_round_trip(share_group_heartbeat_request_to_wire(msg, 1))
    assert share_group_heartbeat_request_from_wire(wire) == msg


@given(
    st.builds(
        ShareGroupHeartbeatResponse,
        _errors,
        st.none() | _text,
        st.none() | _text,
        _i32,
        st.integers(0, 2**31 - 1),
        st.none() | st.lists(st.builds(TopicPartitions, _topic_id, _partitions), max_size=3).map(tuple),
    )
)
def test_heartbeat_response_round_trips(msg: ShareGroupHeartbeatResponse) -> None:
    wire = _bytes_round_trip(share_group_heartbeat_response_to_wire(msg, 1))
    assert share_group_heartbeat_response_from_wire(wire) == msg


_members = st.builds(
    DescribedShareMember,
    _text,
    st.none() | _text,
    _i32,
    _text,
    _text,
    st.lists(_text, max_size=3).map(tuple),
    st.lists(st.builds(DescribedTopicPartitions, _topic_id, _text, _partitions), max_size=2).map(tuple),
)


@given(
    st.lists(
        st.builds(
            DescribedShareGroup,
            _errors,
            _text,
            st.none() | _text,
            _text,
            _i32,
            _i32,
            _text,
            st.lists(_members, max_size=2).map(tuple),
            _i32,
        ),
        max_size=3,
    ).map(tuple),
    st.lists(_text, max_size=3).map(tuple),
)
def test_describe_round_trips(groups: tuple[DescribedShareGroup, ...], ids: tuple[str, ...]) -> None:
    response = ShareGroupDescribeResponse(groups)
    assert (
        share_group_describe_response_from_wire(
            _bytes_round_trip(share_group_describe_response_to_wire(response))
        )
        == response
    )
    request = ShareGroupDescribeRequest(ids, True)
    assert (
        share_group_describe_request_from_wire(
            _bytes_round_trip(share_group_describe_request_to_wire(request))
        )
        == request
    )


def test_only_version_1_is_spoken() -> None:
    with pytest.raises(
        KgroupError, match=r"ShareGroupHeartbeat version: 0; Kafka 4\.4 and kgroup speak version 1 only"
    ):
        share_group_heartbeat_request_to_wire(ShareGroupHeartbeatRequest("g", "m", 0), 0)
