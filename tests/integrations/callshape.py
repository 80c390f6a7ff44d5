"""Each client's own call shape for a kgroup assignment request: its ClusterMetadata, its member objects.

A vector's members are encoded with Java's ``ConsumerProtocol`` (what a member sends) and decoded by
the client's own code (what its coordinator hands the assignor); the topics become the client's own
``ClusterMetadata``, filled by its own ``update_metadata`` from a ``MetadataResponse`` with one broker
per rack (and one rack-less broker), so partition racks come out as the vector gives them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kgroup.assignors.api import AssignmentRequest
from kgroup.messages import ConsumerAssignment, ConsumerSubscription
from kgroup.model import Member, TopicMetadata, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment, encode_assignment, encode_subscription

RACKLESS_BROKER = 0


def subscription_of(member: Member) -> ConsumerSubscription:
    return ConsumerSubscription(
        topics=member.topics,
        user_data=member.user_data,
        owned_partitions=member.owned,
        generation_id=member.generation,
        rack_id=member.rack_id,
    )


def _brokers(topics: Mapping[str, TopicMetadata]) -> dict[str | None, int]:
    racks = sorted({r for t in topics.values() for rs in (t.racks or ()) for r in rs})
    ids: dict[str | None, int] = {None: RACKLESS_BROKER}
    for i, rack in enumerate(racks, start=1):
        ids[rack] = i
    return ids


def _replicas(meta: TopicMetadata, p: int, brokers: Mapping[str | None, int]) -> list[int]:
    racks = meta.racks[p] if meta.racks is not None else frozenset()
    return [brokers[r] for r in sorted(racks)] or [RACKLESS_BROKER]


def kafka_python_cluster(topics: Mapping[str, TopicMetadata]) -> Any:
    from kafka.cluster import ClusterMetadata
    from kafka.protocol.metadata import MetadataResponse

    v = 9
    broker = MetadataResponse.MetadataResponseBroker
    topic = MetadataResponse.MetadataResponseTopic
    partition = topic.MetadataResponsePartition
    brokers = _brokers(topics)
    response = MetadataResponse(
        version=v,
        throttle_time_ms=0,
        brokers=[
            broker(version=v, node_id=i, host="127.0.0.1", port=9092 + i, rack=r) for r, i in brokers.items()
        ],
        cluster_id="kgroup",
        controller_id=RACKLESS_BROKER,
        topics=[
            topic(
                version=v,
                error_code=0,
                name=name,
                is_internal=False,
                partitions=[
                    partition(
                        version=v,
                        error_code=0,
                        partition_index=p,
                        leader_id=_replicas(meta, p, brokers)[0],
                        leader_epoch=0,
                        replica_nodes=_replicas(meta, p, brokers),
                        isr_nodes=_replicas(meta, p, brokers),
                        offline_replicas=[],
                    )
                    for p in range(meta.partitions)
                ],
            )
            for name, meta in topics.items()
        ],
    )
    cluster = ClusterMetadata()
    cluster.update_metadata(response)
    return cluster


def kafka_python_members(request: AssignmentRequest) -> list[Any]:
    from kafka.protocol.consumer.group import JoinGroupResponse
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    out = []
    for m in request.members:
        raw = encode_subscription(subscription_of(m), 3)
        out.append(
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=ConsumerProtocolSubscription.decode(raw),
            )
        )
    return out


def aiokafka_cluster(topics: Mapping[str, TopicMetadata]) -> Any:
    from aiokafka.cluster import ClusterMetadata
    from aiokafka.protocol.metadata import MetadataResponse_v1

    brokers = _brokers(topics)
    response = MetadataResponse_v1(
        [(i, "127.0.0.1", 9092 + i, r) for r, i in brokers.items()],
        RACKLESS_BROKER,
        [
            (
                0,
                name,
                False,
                [
                    (
                        0,
                        p,
                        _replicas(meta, p, brokers)[0],
                        _replicas(meta, p, brokers),
                        _replicas(meta, p, brokers),
                    )
                    for p in range(meta.partitions)
                ],
            )
            for name, meta in topics.items()
        ],
    )
    cluster = ClusterMetadata()
    cluster.update_metadata(response)
    return cluster


def aiokafka_members(request: AssignmentRequest, version: int) -> dict[str, Any]:
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

    return {
        m.member_id: ConsumerProtocolMemberMetadata.decode(encode_subscription(subscription_of(m), version))
        for m in request.members
    }


def decoded(result: Mapping[str, Any]) -> dict[str, list[TopicPartition]]:
    """The plug-in's answer (bytes per member) read back with kgroup's own decoder.

    Each member's bytes must also be exactly what kgroup's consumer-protocol codec writes for that
    assignment (one grouping per topic, in order of first appearance, as Java's leader writes them).
    """
    out = {member: list(decode_assignment(raw).partitions) for member, raw in result.items()}
    for member, raw in result.items():
        assert raw == encode_assignment(ConsumerAssignment(partitions=tuple(out[member]))), member
    return out
