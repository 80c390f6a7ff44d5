"""What kgroup's clients route a member's request by (:func:`kgroup.client.translate.client_spec`), in
place of a branch on its type: the topics that decide the offsets APIs' version, whether a broker
without the API fails the member, and the coordinator an answer names."""

from __future__ import annotations

import pytest

from kgroup.client.translate import API_KEY, client_spec
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ShareGroupHeartbeatRequest,
)
from kgroup.model import ErrorCode, TopicPartition
from kgroup.wire.api_keys import ApiKey

pytestmark = pytest.mark.consumer_protocol  # issue 32's routing by spec (the clients of both protocols)

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_the_offsets_apis_name_the_topics_that_decide_their_version() -> None:
    commit = OffsetCommitRequest("g", -1, "", (OffsetCommitPartition(A0, 1), OffsetCommitPartition(B0, 2)))
    topics = client_spec(commit).topics
    assert topics is not None and topics(commit) == {"a", "b"}
    fetch = OffsetFetchRequest("g", (A0, A1))
    topics = client_spec(fetch).topics
    assert topics is not None and topics(fetch) == {"a"}
    every = OffsetFetchRequest("g", None)  # every committed partition: no topic named
    topics = client_spec(every).topics
    assert topics is not None and topics(every) == set()
    assert client_spec(FindCoordinatorRequest("g")).topics is None
    assert client_spec(HeartbeatRequest("g", 1, "m")).topics is None


def test_only_the_heartbeat_of_a_members_protocol_is_fatal_when_unsupported() -> None:
    # the spec is chosen by the request's type alone: an instance with no fields set will do
    fatal = {t for t in API_KEY if client_spec(object.__new__(t)).fatal_if_unsupported}
    assert fatal == {ConsumerGroupHeartbeatRequest, ShareGroupHeartbeatRequest}


def test_find_coordinator_names_the_coordinator_unless_it_failed() -> None:
    spec = client_spec(FindCoordinatorRequest("g"))
    assert spec.coordinator(FindCoordinatorResponse(ErrorCode.NONE, 3, "h", 9093)) == (3, "h", 9093)
    assert spec.coordinator(FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)) is None
    heartbeat = client_spec(HeartbeatRequest("g", 1, "m"))
    assert heartbeat.coordinator(HeartbeatResponse(ErrorCode.NONE)) is None


def test_every_request_type_has_its_api_key() -> None:
    assert client_spec(ShareGroupHeartbeatRequest("g", "m", 0)).api_key is ApiKey.SHARE_GROUP_HEARTBEAT
    assert client_spec(ConsumerGroupDescribeRequest(("g",))).api_key is ApiKey.CONSUMER_GROUP_DESCRIBE
    with pytest.raises(TypeError, match="FindCoordinatorResponse is not a request"):
        client_spec(FindCoordinatorResponse(ErrorCode.NONE))  # type: ignore[arg-type]
