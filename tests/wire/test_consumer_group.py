"""ConsumerGroupHeartbeat / ConsumerGroupDescribe: typed message -> kio -> bytes -> kio -> typed message
is the identity, for every version (fields a version lacks normalised to their defaults)."""

from __future__ import annotations

import dataclasses
import io
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer

from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedTopicPartitions,
    TopicPartitions,
)
from kgroup.model import ErrorCode, KgroupError, TopicId
from kgroup.wire.consumer_group import (
    consumer_group_describe_request_from_wire,
    consumer_group_describe_request_to_wire,
    consumer_group_describe_response_from_wire,
    consumer_group_describe_response_to_wire,
    consumer_group_heartbeat_request_from_wire,
    consumer_group_heartbeat_request_to_wire,
    consumer_group_heartbeat_response_from_wire,
    consumer_group_heartbeat_response_to_wire,
)

_i32 = st.integers(-(2**31), 2**31 - 1)
_text = st.text(max_size=8)
_opt_text = st.none() | _text
_topic_id = st.builds(TopicId.from_int, st.integers(0, 2**128 - 1))
_partitions = st.lists(st.integers(0, 2**31 - 1), max_size=5).map(tuple)
_topic_partitions = st.builds(TopicPartitions, _topic_id, _partitions)
_errors = st.sampled_from(list(ErrorCode))


def _bytes_round_trip(entity: Any) -> Any:
    """Write with kio's generic writer, read back with its reader; every byte must be consumed."""
    cls = type(entity)
    buffer = io.BytesIO()
    entity_writer(cls)(buffer, entity)
    raw = buffer.getvalue()
    read, used = entity_reader(cls)(raw, 0)
    assert used == len(raw)
    return read


_heartbeat_requests = st.builds(
    ConsumerGroupHeartbeatRequest,
    group_id=_text,
    member_id=_text,
    member_epoch=_i32,
    instance_id=_opt_text,
    rack_id=_opt_text,
    rebalance_timeout_ms=_i32,
    subscribed_topic_names=st.none() | st.lists(_text, max_size=4).map(tuple),
    subscribed_topic_regex=_opt_text,
    server_assignor=_opt_text,
    topic_partitions=st.none() | st.lists(_topic_partitions, max_size=4).map(tuple),
)


@given(msg=_heartbeat_requests, version=st.sampled_from([0, 1]))
def test_heartbeat_request_round_trips(msg: ConsumerGroupHeartbeatRequest, version: int) -> None:
    if version == 0:
        msg = dataclasses.replace(msg, subscribed_topic_regex=None)  # v0 has no SubscribedTopicRegex
    wire = consumer_group_heartbeat_request_to_wire(msg, version)
    assert type(wire).__version__ == version
    assert consumer_group_heartbeat_request_from_wire(_bytes_round_trip(wire)) == msg


_heartbeat_responses = st.builds(
    ConsumerGroupHeartbeatResponse,
    error_code=_errors,
    error_message=_opt_text,
    member_id=_opt_text,
    member_epoch=_i32,
    heartbeat_interval_ms=_i32,
    assignment=st.none() | st.lists(_topic_partitions, max_size=4).map(tuple),
)


@given(msg=_heartbeat_responses, version=st.sampled_from([0, 1]))
def test_heartbeat_response_round_trips(msg: ConsumerGroupHeartbeatResponse, version: int) -> None:
    wire = consumer_group_heartbeat_response_to_wire(msg, version)
    assert consumer_group_heartbeat_response_from_wire(_bytes_round_trip(wire)) == msg


@given(
    msg=st.builds(ConsumerGroupDescribeRequest, st.lists(_text, max_size=4).map(tuple), st.booleans()),
    version=st.sampled_from([0, 1]),
)
def test_describe_request_round_trips(msg: ConsumerGroupDescribeRequest, version: int) -> None:
    wire = consumer_group_describe_request_to_wire(msg, version)
    assert consumer_group_describe_request_from_wire(_bytes_round_trip(wire)) == msg


_described_topics = st.lists(
    st.builds(DescribedTopicPartitions, _topic_id, _text, _partitions), max_size=3
).map(tuple)
_members = st.builds(
    DescribedConsumerMember,
    member_id=_text,
    instance_id=_opt_text,
    rack_id=_opt_text,
    member_epoch=_i32,
    client_id=_text,
    client_host=_text,
    subscribed_topic_names=st.lists(_text, max_size=3).map(tuple),
    subscribed_topic_regex=_opt_text,
    assignment=_described_topics,
    target_assignment=_described_topics,
    member_type=st.integers(-128, 127),
)
_groups = st.builds(
    DescribedConsumerGroup,
    error_code=_errors,
    group_id=_text,
    error_message=_opt_text,
    group_state=_text,
    group_epoch=_i32,
    assignment_epoch=_i32,
    assignor_name=_text,
    members=st.lists(_members, max_size=3).map(tuple),
    authorized_operations=_i32,
)


@given(groups=st.lists(_groups, max_size=3).map(tuple), version=st.sampled_from([0, 1]))
def test_describe_response_round_trips(groups: tuple[DescribedConsumerGroup, ...], version: int) -> None:
    msg = ConsumerGroupDescribeResponse(groups)
    if version == 0:  # v0 has no MemberType: it reads as -1 (unknown)
        msg = ConsumerGroupDescribeResponse(
            tuple(
                dataclasses.replace(
                    g, members=tuple(dataclasses.replace(m, member_type=-1) for m in g.members)
                )
                for g in groups
            )
        )
    wire = consumer_group_describe_response_to_wire(msg, version)
    assert consumer_group_describe_response_from_wire(_bytes_round_trip(wire)) == msg


def test_topic_ids_are_kafkas_uuids_both_ways() -> None:
    topic = TopicId.from_string("AAAAAAAAAAAAAAAAAAAAAQ")  # Kafka's ONE_UUID (the metadata topic)
    wire = consumer_group_heartbeat_request_to_wire(
        ConsumerGroupHeartbeatRequest("g", "m", 0, topic_partitions=(TopicPartitions(topic, (3,)),)), 1
    )
    assert wire.topic_partitions[0].topic_id == uuid.UUID(int=1)
    zero = consumer_group_heartbeat_response_from_wire(
        _bytes_round_trip(
            consumer_group_heartbeat_response_to_wire(
                ConsumerGroupHeartbeatResponse(
                    ErrorCode.NONE, assignment=(TopicPartitions(TopicId(0, 0), ()),)
                ),
                1,
            )
        )
    )
    assert zero.assignment == (TopicPartitions(TopicId(0, 0), ()),)  # kio reads the zero id as None


def test_an_error_code_kgroup_does_not_know_reads_as_unknown_server_error() -> None:
    wire = consumer_group_heartbeat_response_to_wire(ConsumerGroupHeartbeatResponse(ErrorCode.NONE), 1)
    odd = dataclasses.replace(wire, error_code=125)  # kio's own enum knows it (INVALID_VOTER_KEY)
    assert consumer_group_heartbeat_response_from_wire(odd).error_code is ErrorCode.UNKNOWN_SERVER_ERROR


def test_a_regex_at_v0_and_an_unknown_version_are_refused_naming_the_field() -> None:
    with pytest.raises(KgroupError, match=r"^subscribed_topic_regex: ConsumerGroupHeartbeat v0 cannot"):
        consumer_group_heartbeat_request_to_wire(
            ConsumerGroupHeartbeatRequest("g", "m", 0, subscribed_topic_regex="t.*"), 0
        )
    with pytest.raises(KgroupError, match=r"^ConsumerGroupDescribe version: 2; kgroup speaks versions 0-1$"):
        consumer_group_describe_request_to_wire(ConsumerGroupDescribeRequest(("g",)), 2)


def test_the_clients_translation_goes_through_this_module() -> None:
    from kgroup.client.translate import API_KEY, from_wire, to_wire
    from kgroup.messages import OffsetFetchRequest
    from kgroup.model import TopicPartition

    request = ConsumerGroupHeartbeatRequest("g", "m", 3, subscribed_topic_regex="t.*")
    assert API_KEY[ConsumerGroupHeartbeatRequest] == 68 and API_KEY[ConsumerGroupDescribeRequest] == 69
    assert to_wire(request, 1) == consumer_group_heartbeat_request_to_wire(request, 1)
    response = ConsumerGroupHeartbeatResponse(ErrorCode.NONE, member_epoch=4, heartbeat_interval_ms=500)
    assert from_wire(request, consumer_group_heartbeat_response_to_wire(response, 1)) == response
    describe = ConsumerGroupDescribeRequest(("g",))
    answer = ConsumerGroupDescribeResponse((DescribedConsumerGroup(ErrorCode.GROUP_ID_NOT_FOUND, "g"),))
    assert to_wire(describe, 0) == consumer_group_describe_request_to_wire(describe, 0)
    assert from_wire(describe, consumer_group_describe_response_to_wire(answer, 0)) == answer
    # OffsetFetch v9 carries the member id and epoch a consumer-protocol member fetches with
    fetch = to_wire(OffsetFetchRequest("g", (TopicPartition("t", 0),), member_id="m", member_epoch=4), 9)
    assert (fetch.groups[0].member_id, fetch.groups[0].member_epoch) == ("m", 4)
