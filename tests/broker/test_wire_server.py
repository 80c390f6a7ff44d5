"""The server's framing and Kafka's rules for bad requests, over raw sockets (kio-encoded requests)."""

from __future__ import annotations

import socket
import struct
import time

import pytest
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsV3
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v1.request import MetadataRequest as MetadataV1
from kio.schema.metadata.v12.request import MetadataRequest as MetadataV12
from kio.schema.metadata.v12.request import MetadataRequestTopic
from tests.broker.rawclient import RawClient

from kgroup.broker.dispatch import registered_versions
from kgroup.testing import KafkaBroker
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import encode_request

SUPPORTED_VERSIONS = registered_versions()


def _api_versions_frame(version: int, correlation: int) -> bytes:
    # api key 18 at any version, v1 header (client id "t"), plus the flexible header's empty tags
    return struct.pack(">hhih", 18, version, correlation, 1) + b"t" + b"\x00" + b"\x00\x00\x00"


def test_api_versions_lists_the_implemented_ranges(broker: KafkaBroker) -> None:
    with RawClient(broker.bootstrap_servers) as client:
        v3 = client.request(ApiVersionsV3(client_software_name="t", client_software_version="1"))
        v0 = client.request(ApiVersionsV0())
    for answer in (v3, v0):
        assert answer.error_code == ErrorCode.none
        ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys}
        # exactly the handler registry: every registered API, nothing else — Produce advertised from
        # v0 as Kafka 4.4.0 does (KAFKA-18659), though v0-v2 are refused
        assert ranges == {**{int(k): span for k, span in SUPPORTED_VERSIONS.items()}, 0: (0, 13)}
        assert SUPPORTED_VERSIONS[ApiKey.PRODUCE] == (3, 13)
        assert ranges[18] == (0, 5)
        assert ranges[3] == (0, 13)


def test_unsupported_api_versions_version_answers_v0_layout_with_the_ranges(broker: KafkaBroker) -> None:
    from kgroup.wire.codec import decode_response

    with RawClient(broker.bootstrap_servers) as client:
        client.send_frame(_api_versions_frame(99, 7))
        correlation, answer = decode_response(client.read_frame(), ApiVersionsResponseV0)
        assert correlation == 7
        assert answer.error_code == ErrorCode.unsupported_version
        assert {int(k.api_key) for k in answer.api_keys} >= {0, 1, 3, 18}
        # the connection stays usable: the client now downgrades
        assert client.request(ApiVersionsV0()).error_code == ErrorCode.none


def _assert_closed_and_server_alive(broker: KafkaBroker, client: RawClient) -> None:
    assert client.is_closed_by_peer()
    with RawClient(broker.bootstrap_servers) as other:
        assert other.request(ApiVersionsV0()).error_code == ErrorCode.none


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(struct.pack(">hhih", 1000, 0, 1, -1), id="unknown-api-key"),
        pytest.param(struct.pack(">hhih", 0, 2, 1, -1) + b"\x00" * 16, id="produce-v2-removed-in-kafka-4"),
        pytest.param(struct.pack(">hhih", 3, 99, 1, -1), id="metadata-version-out-of-range"),
        pytest.param(struct.pack(">hhih", 3, 12, 1, -1) + b"\x00\x05\xff\xff", id="garbage-metadata-body"),
        pytest.param(b"\x00\x03", id="header-too-short"),
        pytest.param(struct.pack(">hhih", 3, 1, 1, 50) + b"abc", id="client-id-past-the-end"),
    ],
)
def test_bad_requests_close_only_their_connection(broker: KafkaBroker, frame: bytes) -> None:
    with RawClient(broker.bootstrap_servers, timeout_s=5) as client:
        client.send_frame(frame)
        _assert_closed_and_server_alive(broker, client)


def test_frame_larger_than_socket_request_max_bytes_closes_the_connection() -> None:
    with KafkaBroker(max_request_bytes=4096) as kafka, RawClient(kafka.bootstrap_servers) as client:
        client.send_bytes(struct.pack(">i", 4097))
        _assert_closed_and_server_alive(kafka, client)


def test_negative_frame_size_closes_the_connection(broker: KafkaBroker) -> None:
    with RawClient(broker.bootstrap_servers) as client:
        client.send_bytes(struct.pack(">i", -5))
        _assert_closed_and_server_alive(broker, client)


def test_truncated_frame_then_close_leaves_the_server_serving(broker: KafkaBroker) -> None:
    with RawClient(broker.bootstrap_servers) as client:
        client.send_bytes(struct.pack(">i", 100) + b"\x00" * 10)
        client.sock.shutdown(socket.SHUT_WR)
        _assert_closed_and_server_alive(broker, client)


def test_connection_limit_refuses_extra_connections() -> None:
    with KafkaBroker(max_connections=2) as kafka:
        first, second = RawClient(kafka.bootstrap_servers), RawClient(kafka.bootstrap_servers)
        try:
            for c in (first, second):
                assert c.request(ApiVersionsV0()).error_code == ErrorCode.none
            with RawClient(kafka.bootstrap_servers, timeout_s=5) as third:
                assert third.is_closed_by_peer()
        finally:
            first.close()
            second.close()
        deadline = time.monotonic() + 5
        while True:  # the freed slots are usable again
            try:
                with RawClient(kafka.bootstrap_servers, timeout_s=2) as again:
                    assert again.request(ApiVersionsV0()).error_code == ErrorCode.none
                break
            except ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.05)


def test_metadata_lists_topics_with_leaders_and_replicas(broker: KafkaBroker) -> None:
    with RawClient(broker.bootstrap_servers) as client:
        answer = client.request(MetadataV12(topics=None, include_topic_authorized_operations=False))
    assert [(b.node_id, b.port) for b in answer.brokers] == [(0, broker.port(0))]
    (topic,) = [t for t in answer.topics if t.name == "orders"]
    assert topic.error_code == ErrorCode.none
    assert [(p.partition_index, p.leader_id, tuple(p.replica_nodes)) for p in topic.partitions] == [
        (0, 0, (0,)),
        (1, 0, (0,)),
        (2, 0, (0,)),
    ]


def test_metadata_auto_creates_as_kafka_does(broker: KafkaBroker) -> None:
    request = MetadataV12(
        topics=(MetadataRequestTopic(topic_id=None, name="fresh"),),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    with RawClient(broker.bootstrap_servers) as client:
        first = client.request(request)
        second = client.request(request)
        invalid = client.request(MetadataV1(topics=(_v1_topic("bad name!"),)))
    # Kafka 4.4.0 (KRaft) answers UNKNOWN_TOPIC_OR_PARTITION while the controller creates the topic
    assert first.topics[0].error_code == ErrorCode.unknown_topic_or_partition
    assert second.topics[0].error_code == ErrorCode.none
    assert len(second.topics[0].partitions) == 1
    assert invalid.topics[0].error_code == ErrorCode.invalid_topic_exception


def _v1_topic(name: str) -> object:
    from kio.schema.metadata.v1.request import MetadataRequestTopic as TopicV1

    return TopicV1(name=name)


def test_metadata_without_auto_create_answers_unknown_topic(broker: KafkaBroker) -> None:
    request = MetadataV12(
        topics=(MetadataRequestTopic(topic_id=None, name="absent"),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    with RawClient(broker.bootstrap_servers) as client:
        answer = client.request(request)
    assert answer.topics[0].error_code == ErrorCode.unknown_topic_or_partition


def test_responses_leave_in_request_order(broker: KafkaBroker) -> None:
    """A long-polling fetch sent first is answered first, although the request behind it is instant."""
    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
    from kio.schema.fetch.v12.response import FetchResponse

    from kgroup.wire.codec import decode_response, response_class

    fetch = FetchRequest(
        cluster_id=None,
        replica_id=-1,
        max_wait=__import__("datetime").timedelta(milliseconds=400),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(
            FetchTopic(
                topic="orders",
                partitions=(
                    FetchPartition(
                        partition=0,
                        current_leader_epoch=-1,
                        fetch_offset=0,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    with RawClient(broker.bootstrap_servers) as client:
        started = time.monotonic()
        client.send_frame(encode_request(fetch, 1) + b"")
        client.send_frame(encode_request(ApiVersionsV0(), 2))
        first_id, first = decode_response(client.read_frame(), FetchResponse)
        second_id, _ = decode_response(client.read_frame(), response_class(18, 0))  # type: ignore[arg-type]
        waited = time.monotonic() - started
    assert (first_id, second_id) == (1, 2)
    assert first.responses[0].partitions[0].records == b""
    assert waited >= 0.35  # max_wait was honoured (no data arrived)


@pytest.mark.parametrize("name", ["", ".", "..", "a b", "new\n", "x" * 250, "ü"])
def test_illegal_topic_names_as_kafka_topic_validate(name: str) -> None:
    from kgroup.broker.cluster import topic_name_error

    assert topic_name_error(name) is not None


@pytest.mark.parametrize("name", ["orders", "a.b_c-1", "x" * 249])
def test_legal_topic_names(name: str) -> None:
    from kgroup.broker.cluster import topic_name_error

    assert topic_name_error(name) is None
