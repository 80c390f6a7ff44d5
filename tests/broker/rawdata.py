"""Produce and Fetch requests for raw-socket tests (kio entities built from plain data), and the plain
fields of a KIP-848 join."""

from __future__ import annotations

from typing import Any

from kgroup.wire.codec import build, request_class


def produce_request(topic: str, partition: int, records: bytes, *, acks: int = 1, version: int = 9) -> Any:
    return build(
        request_class(0, version),
        {
            "transactional_id": None,
            "acks": acks,
            "timeout": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
        },
    )


def produce_code(answer: Any) -> int:
    (topic,) = answer.responses
    (partition,) = topic.partition_responses
    return int(partition.error_code)


def fetch_request(
    partitions: list[tuple[str, int, int]],
    *,
    min_bytes: int = 1,
    max_wait_ms: int = 0,
    partition_max_bytes: int = 1 << 20,
    max_bytes: int = 50 << 20,
) -> Any:
    """Fetch v12 of (topic, partition, offset) entries, one topic entry per partition."""
    return build(
        request_class(1, 12),
        {
            "cluster_id": None,
            "replica_id": -1,
            "max_wait": max_wait_ms,
            "min_bytes": min_bytes,
            "max_bytes": max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": partition_max_bytes,
                        }
                    ],
                }
                for topic, partition, offset in partitions
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )


def consumer_join(group: str, member: str, topic: str = "t") -> dict[str, Any]:
    """A ConsumerGroupHeartbeat's fields (v1) for ``member`` joining ``group`` subscribed to ``topic``."""
    return {
        "group_id": group,
        "member_id": member,
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000,
        "subscribed_topic_names": [topic],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }


def consumer_heartbeat(group: str, member: str, epoch: int, **fields: Any) -> dict[str, Any]:
    """A ConsumerGroupHeartbeat's fields (v1) for ``member`` at ``epoch`` (0: joining, with a
    rebalance timeout and no owned partitions), nothing else named unless ``fields`` names it."""
    body: dict[str, Any] = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000 if epoch == 0 else -1,
        "subscribed_topic_names": None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [] if epoch == 0 else None,
    }
    body.update(fields)
    return body
