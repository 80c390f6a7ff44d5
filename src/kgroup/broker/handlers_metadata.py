"""Metadata (API key 3), as ``KafkaApis.handleTopicMetadataRequest`` answers it: the brokers, then the
topics asked for — by name (a Scala ``Set`` of them: a name asked twice answered once, auto-creation
where allowed) or by id (v12+), or every topic — each group in the order Kafka 4.4.0's collections give
it (:mod:`kgroup.broker.answer_order`); a large topic's partition array encoded in the codec thread."""

from __future__ import annotations

import logging
import uuid
import weakref
from typing import Any

from kgroup.broker.answer_order import all_topics_order, metadata_name_groups
from kgroup.broker.cluster import INTERNAL_TOPICS, Cluster, TopicInfo, topic_name_error
from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.handlers_admin import ZERO_UUID, may_create_topic
from kgroup.javacompat import int32, java_string_hash
from kgroup.log.errors import LogError
from kgroup.model import ErrorCode, PeerError
from kgroup.partitioning.striped import InvalidReplicationFactor
from kgroup.scalacompat import ImmutableSetOrder
from kgroup.security.acl import CLUSTER_NAME, OPERATIONS_OMITTED, AclOperation, ResourceType
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.metadata_response import (
    EncodedPartitions,
    PartitionsCache,
    encode_partitions,
    metadata_response,
)

log = logging.getLogger("kgroup.broker")

__all__: list[str] = []


def _broker_entries(ctx: RequestContext) -> list[dict[str, Any]]:
    services = ctx.services
    host, ports = services.advertised(ctx.listener)
    return [
        {"node_id": b, "host": host, "port": ports[b], "rack": None}
        for b in sorted(services.cluster.alive)
        if b in ports
    ]


#: each cluster's encoded partition arrays (a topic's, per version, while its leaders stay); weakly
#: keyed, so a stopped broker's cluster takes its arrays with it
_PARTITION_ARRAYS: weakref.WeakKeyDictionary[Cluster, PartitionsCache] = weakref.WeakKeyDictionary()
#: a topic with this many partitions has its array encoded in the codec thread, off the loop
_ENCODE_OFF_LOOP_PARTITIONS = 1000


def _partition_entries(cluster: Cluster, info: TopicInfo) -> list[dict[str, Any]]:
    partitions = []
    for index, replicas in enumerate(info.replicas):
        leader = cluster.partition_leader(info.name, index)
        live = [r for r in replicas if r in cluster.alive]
        partitions.append(
            {
                "error_code": ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                "partition_index": index,
                "leader_id": leader,
                "leader_epoch": 0,
                "replica_nodes": list(replicas),
                "isr_nodes": live,
                "offline_replicas": [r for r in replicas if r not in cluster.alive],
            }
        )
    return partitions


async def _topic_entry(ctx: RequestContext, info: TopicInfo) -> dict[str, Any]:
    """The topic's Metadata entry, its partitions encoded once per version until a leader or the
    brokers alive change (:class:`~kgroup.wire.metadata_response.PartitionsCache`)."""
    cluster = ctx.services.cluster
    cache = _PARTITION_ARRAYS.get(cluster)
    if cache is None:
        cache = _PARTITION_ARRAYS[cluster] = PartitionsCache()
    stamp = cluster.leadership_version
    encoded = cache.get(info, stamp, ctx.version)
    if encoded is None:
        entries = _partition_entries(cluster, info)
        if len(entries) >= _ENCODE_OFF_LOOP_PARTITIONS:
            encoded = await ctx.services.off_loop(encode_partitions, ctx.version, entries)
        else:
            encoded = encode_partitions(ctx.version, entries)
        cache.put(info, stamp, ctx.version, encoded)
    return {
        "error_code": ErrorCode.NONE,
        "name": info.name,
        "topic_id": info.topic_id,
        "is_internal": info.name in INTERNAL_TOPICS,
        "partitions": EncodedPartitions(ctx.version, encoded, info.partitions),
        "topic_authorized_operations": OPERATIONS_OMITTED,
    }


def _error_topic(name: str | None, code: int, topic_id: uuid.UUID = ZERO_UUID) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": topic_id,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
        "topic_authorized_operations": OPERATIONS_OMITTED,
    }


@register(
    ApiKey.METADATA, versions=(0, 13), encoder=metadata_response
)  # v13: a top-level error code (KIP-1102)
async def metadata(ctx: RequestContext, request: Any) -> dict[str, Any]:
    services = ctx.services
    cluster = services.cluster
    topics: list[dict[str, Any]] = []
    requested = request.topics
    # v0: an empty list means every topic; v1+: null means every topic, empty means none
    pacer = ctx.pacer
    # v8+: what the principal may do to each topic found (or missing), and (v8-v10) to the cluster
    with_ops = ctx.version >= 8 and bool(request.include_topic_authorized_operations)
    cluster_ops = OPERATIONS_OMITTED
    if 8 <= ctx.version <= 10 and request.include_cluster_authorized_operations:
        cluster_ops = ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
    if requested is None or (ctx.version == 0 and not requested):
        # every topic: the ones the principal may not describe are left out (KafkaApis), the others in
        # Kafka's order (all_topics_order)
        allowed = [n for n in cluster.topics if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, n)]
        for name in all_topics_order(allowed):
            info = cluster.topics.get(name)
            if info is not None:
                topics.append(_with_operations(ctx, await _topic_entry(ctx, info), with_ops))
            if pacer.due():
                await pacer.pause()
    else:
        for wanted in requested if ctx.version < 12 else ():
            # MetadataRequest: topic ids (and so a topic without a name) only from v12
            if wanted.name is None:
                raise PeerError(
                    "Metadata request before v12 names a topic by id only", ErrorCode.INVALID_REQUEST
                )
            if getattr(wanted, "topic_id", None) not in (None, ZERO_UUID):
                raise PeerError(
                    f"Topic IDs are not supported in requests for version {ctx.version}",
                    ErrorCode.INVALID_REQUEST,
                )
        ids = [w.topic_id for w in requested if getattr(w, "topic_id", None) not in (None, ZERO_UUID)]
        if ids:
            topics = await _topics_by_id(ctx, ids, with_ops)
        else:
            allow_auto = bool(getattr(request, "allow_auto_topic_creation", True))
            # (v12+: an entry with neither a name nor an id is answered UNKNOWN_TOPIC_ID)
            topics = [_error_topic(None, ErrorCode.UNKNOWN_TOPIC_ID) for w in requested if w.name is None]
            named = [w.name for w in requested if w.name is not None]
            topics += await _topics_by_name(ctx, named, allow_auto, with_ops)
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,  # v13+
        "brokers": _broker_entries(ctx),
        "cluster_id": services.config.cluster_id,
        "controller_id": min(cluster.alive) if cluster.alive else -1,
        "topics": topics,
        "cluster_authorized_operations": cluster_ops,
    }


def _with_operations(ctx: RequestContext, entry: dict[str, Any], with_ops: bool) -> dict[str, Any]:
    """A topic's entry with what the principal may do to the topic, when asked
    (``AuthHelper.authorizedOperations``: for the topics found, auto-created or missing, not for those
    refused, nor for unknown ids)."""
    if with_ops:
        entry["topic_authorized_operations"] = ctx.authorized_operations(ResourceType.TOPIC, entry["name"])
    return entry


def _uuid_hash(topic_id: uuid.UUID) -> int:
    """``Uuid.hashCode``."""
    bits = topic_id.int
    folded = (bits >> 64) ^ (bits & 0xFFFFFFFFFFFFFFFF)
    return int32((folded >> 32) ^ (folded & 0xFFFFFFFF))


#: a Metadata request naming this many topics has their order worked out in the codec thread
_ORDER_OFF_LOOP_NAMES = 2000


async def _topics_by_name(
    ctx: RequestContext, names: list[str], allow_auto: bool, with_ops: bool = False
) -> list[dict[str, Any]]:
    """Named topics, in the groups and order Kafka 4.4.0 answers them
    (:func:`~kgroup.broker.answer_order.metadata_name_groups`): the existing topics, those that do
    not exist (auto-created or not), those the principal may not create, those it may not describe."""
    services = ctx.services
    cluster = services.cluster
    pacer = ctx.pacer
    distinct = list(dict.fromkeys(names))
    describable: dict[str, bool] = {}
    exists: dict[str, bool] = {}
    for name in distinct:
        describable[name] = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
        exists[name] = name in cluster.topics
        if pacer.due():
            await pacer.pause()
    creatable: dict[str, bool] | None = None
    may_create: dict[str, bool] | None = None
    if allow_auto and services.config.auto_create_topics:
        creatable = {n: topic_name_error(n) is None and n not in INTERNAL_TOPICS for n in distinct}
        if not ctx.authorized(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
            may_create = {n: may_create_topic(ctx, n) for n in distinct if not exists[n] and describable[n]}
            may_create.update((n, True) for n in distinct if n not in may_create)
    if len(distinct) >= _ORDER_OFF_LOOP_NAMES:
        groups = await services.off_loop(
            metadata_name_groups, names, describable, exists, creatable, may_create
        )
    else:
        groups = metadata_name_groups(names, describable, exists, creatable, may_create)
    topics: list[dict[str, Any]] = []
    for name in groups.found:
        info = cluster.topics.get(name)  # (it may have gone meanwhile: then it is not found)
        entry = _not_found(name) if info is None else await _topic_entry(ctx, info)
        topics.append(_with_operations(ctx, entry, with_ops))
        if pacer.due():
            await pacer.pause()
    topics.extend(_with_operations(ctx, _not_found(n), with_ops) for n in groups.missing)
    for name in groups.created:
        topics.append(_with_operations(ctx, _auto_create(ctx, name), with_ops))
    topics.extend(_error_topic(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for n in groups.not_creatable)
    # not disclosed whether they exist
    topics.extend(_error_topic(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for n in groups.denied)
    return topics


def _not_found(name: str) -> dict[str, Any]:
    """A topic that does not exist and is not created: its name invalid, or unknown."""
    invalid = topic_name_error(name) is not None
    return _error_topic(
        name, ErrorCode.INVALID_TOPIC_EXCEPTION if invalid else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )


def _auto_create(ctx: RequestContext, name: str) -> dict[str, Any]:
    """Kafka (KRaft) hands the creation to the controller and answers UNKNOWN_TOPIC_OR_PARTITION; the
    client asks again and finds the topic (created here at once). ZooKeeper-era Kafka answered
    LEADER_NOT_AVAILABLE."""
    services = ctx.services
    try:
        services.cluster.create_topic(
            name, services.config.num_partitions, services.config.replication_factor, {}
        )
    except LogError as exc:  # the log refused it: answer its error for this topic
        return _error_topic(name, exc.error_code)
    except InvalidReplicationFactor as exc:  # the controller refused it: the topic stays unknown
        log.warning("cannot auto-create topic %s: %s", name, exc.message)
        return _error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    log.info("auto-created topic %s with %d partition(s)", name, services.config.num_partitions)
    return _error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


async def _topics_by_id(
    ctx: RequestContext, ids: list[uuid.UUID], with_ops: bool = False
) -> list[dict[str, Any]]:
    """Topics named by id (v12+; a named entry beside them is not answered, as in Kafka): the unknown
    ids first, then the topics, then those the principal may not describe (named by id only), each
    group in its Scala ``Set``'s order."""
    cluster = ctx.services.cluster
    asked = ImmutableSetOrder.of(ids, _uuid_hash)
    unknown = asked.filter(lambda i: cluster.topic_by_id(i) is None)
    names_of = {i: info.name for i in asked.order() if (info := cluster.topic_by_id(i)) is not None}
    known = asked.filter(lambda i: i in names_of).map(names_of.__getitem__, java_string_hash)
    describable = {n: ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, n) for n in known.order()}
    topics = [_error_topic(None, ErrorCode.UNKNOWN_TOPIC_ID, i) for i in unknown.order()]
    for name in known.filter(describable.__getitem__).order():
        topics.append(_with_operations(ctx, await _topic_entry(ctx, cluster.topics[name]), with_ops))
        if ctx.pacer.due():
            await ctx.pacer.pause()
    topics.extend(
        _error_topic(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, cluster.topics[n].topic_id)
        for n in known.filter(lambda n: not describable[n]).order()
    )
    return topics
