"""CreatePartitions (API key 37), v0–v3: a topic grown to more partitions, as Kafka 4.4.0 answers it
(a broker forwards the request to its controller: ``ControllerApis.createPartitions``, then
``ReplicationControlManager.createPartitions``).

The answer lists, in this order: each name the request repeats (``INVALID_REQUEST`` "Duplicate topic
name."), each topic the principal may not ALTER (``TOPIC_AUTHORIZATION_FAILED``, no message), then the
others' outcomes — each group in the order of Java's ``HashSet`` of the names — unless the allowed
topics would gain more than 10,000 partitions in all: then every topic of the request is answered
``POLICY_VIOLATION`` ("Excessively large number of additional partitions per request."), in the
request's order, and nothing changes. Per topic:
``UNKNOWN_TOPIC_OR_PARTITION`` (no message); ``INVALID_PARTITIONS`` when the count is no increase;
``INVALID_REPLICA_ASSIGNMENT`` for a request's own assignment that Kafka refuses (not one per new
partition, a replica list empty, naming an unknown broker or one twice, of another size than the
topic's replication factor, or of fenced brokers only); else the new partitions are placed by the
controller's placer with the topic's replication factor (``kgroup.broker.cluster``), their logs made
fifty at a time with turns for other connections in between, the topic's kept replicas extended (a
restart finds them all), and the groups' metadata image told, so a consumer group subscribed to the
topic gets a new target assignment. ``validate_only`` checks (and moves the placer's Random, as
Kafka's does) and changes nothing.

kgroup's own limits, not Kafka's: at most ``MAX_PARTITIONS_PER_TOPIC`` partitions per topic, and its
internal topics (whose partition counts place the coordinators) are not grown (``INVALID_REQUEST``).
"""

from __future__ import annotations

import logging
from typing import Any

from kgroup.broker.cluster import (
    INTERNAL_TOPICS,
    Cluster,
    PartitionCountError,
    ReplicaAssignmentError,
    TopicInfo,
    TopicPlacement,
)
from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.handlers_admin import MAX_PARTITIONS_PER_TOPIC, make_in_steps
from kgroup.javacompat import hashmap_order_of
from kgroup.log.errors import LogError
from kgroup.model import ErrorCode
from kgroup.partitioning.striped import InvalidReplicationFactor
from kgroup.security.acl import AclOperation, ResourceType
from kgroup.wire.api_keys import ApiKey

__all__: list[str] = []

log = logging.getLogger("kgroup.broker")

#: Kafka 4.4.0's controller refuses a request adding more partitions than this in all
#: (``MAX_RECORDS_PER_USER_OP``): POLICY_VIOLATION for every topic of the request
MAX_PARTITIONS_PER_REQUEST = 10_000


def _added(cluster: Cluster, topics: list[Any]) -> int:
    """The partitions the request adds to topics that exist (``validateTotalNumberOfPartitions``:
    negative counts, unknown topics and counts no larger add none)."""
    total = 0
    for topic in topics:
        info = cluster.topics.get(topic.name)
        if int(topic.count) >= 0 and info is not None:
            total += max(0, int(topic.count) - info.partitions)
    return total


def _result(name: str, code: int = ErrorCode.NONE, message: str | None = None) -> dict[str, Any]:
    return {"name": name, "error_code": code, "error_message": message}


async def _grow_paced(ctx: RequestContext, name: str, placement: TopicPlacement) -> TopicInfo:
    """Make the new partitions a few at a time, other connections served in between; all or nothing
    (the log removes what it made of a failed addition)."""
    cluster = ctx.services.cluster
    await make_in_steps(
        ctx, cluster.logs.begin_partitions(name, len(placement.replicas), placement.log_metadata())
    )
    return cluster.register_partitions(name, placement)


async def _grow(ctx: RequestContext, topic: Any, validate_only: bool) -> dict[str, Any]:
    """One topic's outcome (``ReplicationControlManager.createPartitions``'s checks, in its order)."""
    cluster = ctx.services.cluster
    name, count = topic.name, int(topic.count)
    info = cluster.topics.get(name)
    if info is None:
        return _result(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if name in INTERNAL_TOPICS and count > info.partitions:  # kgroup's refusal (Kafka grows it)
        return _result(
            name,
            ErrorCode.INVALID_REQUEST,
            f"kgroup does not add partitions to its internal topic {name}: its partition count places "
            "the coordinators.",
        )
    if count > MAX_PARTITIONS_PER_TOPIC and count > info.partitions:
        return _result(
            name,
            ErrorCode.INVALID_PARTITIONS,
            f"kgroup creates at most {MAX_PARTITIONS_PER_TOPIC} partitions per topic.",
        )
    assignments = (
        None if topic.assignments is None else [[int(b) for b in a.broker_ids] for a in topic.assignments]
    )
    try:
        placement = cluster.place_added(info, count, assignments)
    except PartitionCountError as exc:
        return _result(name, ErrorCode.INVALID_PARTITIONS, exc.message)
    except ReplicaAssignmentError as exc:
        return _result(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT, exc.message)
    except InvalidReplicationFactor as exc:
        return _result(name, ErrorCode.INVALID_REPLICATION_FACTOR, exc.message)
    if validate_only:
        return _result(name)
    try:
        await _grow_paced(ctx, name, placement)
    except LogError as exc:  # the disk refused (KAFKA_STORAGE_ERROR): nothing was added
        return _result(name, exc.error_code, str(exc))
    log.info("topic %s grown from %d to %d partition(s)", name, info.partitions, count)
    return _result(name)


@register(ApiKey.CREATE_PARTITIONS, versions=(0, 3))
async def create_partitions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    # ControllerApis.createPartitions: the names in a HashSet (capacity by every distinct name), the
    # repeated ones in another, answered first and taken out of the first
    first_seen: dict[str, None] = {}
    repeated: dict[str, None] = {}
    for topic in request.topics:
        if topic.name in first_seen:
            repeated.setdefault(topic.name)
        else:
            first_seen.setdefault(topic.name)
    results = [
        _result(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        for name in hashmap_order_of(repeated, len(repeated))
    ]
    names = hashmap_order_of([n for n in first_seen if n not in repeated], len(first_seen))
    allowed: list[str] = []
    for name in names:
        if ctx.authorized(AclOperation.ALTER, ResourceType.TOPIC, name):
            allowed.append(name)
        else:
            results.append(_result(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    by_name = {t.name: t for t in request.topics}
    validate_only = bool(request.validate_only)
    cluster = ctx.services.cluster
    # one request at a time grows or deletes topics, as the controller applies them
    async with cluster.topic_changes:
        if _added(cluster, [by_name[n] for n in allowed]) > MAX_PARTITIONS_PER_REQUEST:
            # the controller's whole operation fails: every topic of the request is answered so
            # (CreatePartitionsRequest.getErrorResponse), repeated and unauthorized names too
            return {
                "throttle_time": 0,
                "results": [
                    _result(
                        t.name,
                        ErrorCode.POLICY_VIOLATION,
                        "Excessively large number of additional partitions per request.",
                    )
                    for t in request.topics
                ],
            }
        for name in allowed:
            if ctx.pacer.due():
                await ctx.pacer.pause()
            results.append(await _grow(ctx, by_name[name], validate_only))
    return {"throttle_time": 0, "results": results}
