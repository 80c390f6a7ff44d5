"""What the client knows of the cluster: brokers (node id -> address, rack) and topic metadata."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgroup.model import ErrorCode, TopicId, TopicMetadata

__all__ = ["Broker", "ClusterView", "cluster_from_metadata"]


@dataclass(frozen=True, slots=True)
class Broker:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterView:
    brokers: dict[int, Broker]
    topics: dict[str, TopicMetadata]
    #: topic -> partition -> leader node id (-1: no leader)
    leaders: dict[str, tuple[int, ...]]
    #: topic -> its id (Metadata v10+; the consumer protocol names topics by id)
    topic_ids: dict[str, TopicId] = field(default_factory=dict)


def cluster_from_metadata(response: Any) -> ClusterView:
    """A kio MetadataResponse as the member needs it: partition counts and replica racks per topic.

    Internal topics (``__consumer_offsets``) are left out, as Kafka's consumer does by default
    (``exclude.internal.topics``); topics with an error (being created, deleted) are left out too.
    """
    brokers = {
        int(b.node_id): Broker(int(b.node_id), b.host, int(b.port), getattr(b, "rack", None))
        for b in response.brokers
    }
    topics: dict[str, TopicMetadata] = {}
    leaders: dict[str, tuple[int, ...]] = {}
    topic_ids: dict[str, TopicId] = {}
    for topic in response.topics:
        if topic.name is None or int(topic.error_code) != ErrorCode.NONE or topic.is_internal:
            continue
        parts = sorted(topic.partitions, key=lambda p: int(p.partition_index))
        if [int(p.partition_index) for p in parts] != list(range(len(parts))):
            continue  # a partial answer (partitions being added): wait for the next refresh
        racks: list[frozenset[str]] = []
        any_rack = False
        for p in parts:
            rack_set = frozenset(
                r for r in (brokers[int(n)].rack if int(n) in brokers else None for n in p.replica_nodes) if r
            )
            any_rack = any_rack or bool(rack_set)
            racks.append(rack_set)
        topics[topic.name] = TopicMetadata(topic.name, len(parts), tuple(racks) if any_rack else None)
        leaders[topic.name] = tuple(int(p.leader_id) for p in parts)
        topic_id = getattr(topic, "topic_id", None)
        if topic_id is not None and topic_id.int:
            topic_ids[topic.name] = TopicId.from_int(topic_id.int)
    return ClusterView(brokers, topics, leaders, topic_ids)
