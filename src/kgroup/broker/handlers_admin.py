"""ApiVersions, CreateTopics and DeleteTopics (as ``KafkaApis`` answers them); Metadata:
:mod:`kgroup.broker.handlers_metadata`; DescribeConfigs: :mod:`kgroup.broker.handlers_describe_configs`."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from typing import Any

from kgroup.broker.cluster import (
    ReplicaAssignmentError,
    TopicInfo,
    TopicPlacement,
    topic_name_error,
)
from kgroup.broker.dispatch import RequestContext, api_version_ranges, register
from kgroup.broker.features import features
from kgroup.broker.logapi import TopicCreationLike
from kgroup.javacompat import JavaHashMap, java_string_hash
from kgroup.log.errors import LogError
from kgroup.model import ErrorCode
from kgroup.partitioning.striped import InvalidReplicationFactor
from kgroup.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kgroup.topic_configs import normalized_topic_configs, topic_config_error
from kgroup.wire.api_keys import ApiKey

log = logging.getLogger("kgroup.broker")

__all__: list[str] = []

ZERO_UUID = uuid.UUID(int=0)
#: KRaft's metadata log: no topic may be created under its name (ControllerApis)
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: kgroup's limit of one topic: a request for more partitions gets INVALID_PARTITIONS (Kafka's controller
#: instead refuses a whole request of over 10,000 partitions with POLICY_VIOLATION: not modelled yet)
MAX_PARTITIONS_PER_TOPIC = 10_000

#: topic configs a client may ask for (DescribeConfigs): Kafka's defaults
TOPIC_CONFIG_DEFAULTS: dict[str, str] = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "max.message.bytes": "1048588",
    "message.timestamp.type": "CreateTime",
    "min.insync.replicas": "1",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
}

#: topic configs Kafka 4.x's controller keeps as cluster-wide dynamic defaults: with eligible leader
#: replicas (KIP-966, finalized on a fresh 4.4.0 cluster) the cluster's min.insync.replicas is written as a
#: config record, so a topic describes it as DYNAMIC_DEFAULT_BROKER_CONFIG, not as a default
CLUSTER_DEFAULT_TOPIC_CONFIGS = frozenset({"min.insync.replicas"})


#: Kafka's ``ApiVersionsRequest`` rule for the client software name and version (v3+)
_SOFTWARE_NAME_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _api_versions_error(ctx: RequestContext, request: Any) -> ErrorCode | None:
    """``KafkaApis.handleApiVersionsRequest``'s checks: a request that is not valid
    (``ApiVersionsRequest.isValid``: a v3+ software name or version that is not a plain dotted word,
    or in v5 a cluster id without a node id or the other way round) is ``INVALID_REQUEST``; a v5
    request meant for another cluster or another node is ``REBOOTSTRAP_REQUIRED`` (KIP-1242: the
    client reached the wrong broker and must bootstrap again)."""
    if ctx.version >= 5 and (request.cluster_id is None) != (int(request.node_id) == -1):
        return ErrorCode.INVALID_REQUEST
    if ctx.version >= 3 and not (
        _SOFTWARE_NAME_VERSION.fullmatch(request.client_software_name)
        and _SOFTWARE_NAME_VERSION.fullmatch(request.client_software_version)
    ):
        return ErrorCode.INVALID_REQUEST
    if (
        ctx.version >= 5
        and request.cluster_id is not None
        and (request.cluster_id != ctx.services.config.cluster_id or int(request.node_id) != ctx.node_id)
    ):
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return None


@register(ApiKey.API_VERSIONS, versions=(0, 5))
async def api_versions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    error = _api_versions_error(ctx, request)
    if error is not None:  # Kafka's error answer: no ranges
        return {"error_code": error, "api_keys": [], "throttle_time": 0}
    return {
        "error_code": ErrorCode.NONE,
        "api_keys": api_version_ranges(),
        "throttle_time": 0,
        **features(ctx.version, ctx.services.transactions.config.transaction_version),
    }


def may_create_topic(ctx: RequestContext, name: str) -> bool:
    """CREATE on the cluster or on the topic (Kafka's rule for CreateTopics and auto-creation)."""
    return ctx.authorized(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME) or ctx.authorized(
        AclOperation.CREATE, ResourceType.TOPIC, name
    )


def _created(
    name: str,
    code: int,
    message: str | None,
    info: TopicInfo | None,
    partitions: int,
    rf: int,
    given: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A CreateTopics answer's topic; a created one lists its configs, the request's own as it gave them
    (``given``)."""
    configs = None
    if info is not None:
        given = info.configs if given is None else given
        merged = {**TOPIC_CONFIG_DEFAULTS, **given}
        # DYNAMIC_TOPIC_CONFIG (1) for the request's own, DYNAMIC_DEFAULT_BROKER_CONFIG (3) for a
        # cluster-wide default (min.insync.replicas on a 4.4.0 cluster), DEFAULT_CONFIG (5) otherwise
        configs = [
            {
                "name": k,
                "value": v,
                "read_only": False,
                "config_source": 1 if k in given else 3 if k in CLUSTER_DEFAULT_TOPIC_CONFIGS else 5,
                "is_sensitive": False,
            }
            for k, v in sorted(merged.items())
        ]
    return {
        "name": name,
        "topic_id": info.topic_id if info is not None else ZERO_UUID,
        "error_code": code,
        "error_message": message,
        "topic_config_error_code": ErrorCode.NONE,
        "num_partitions": partitions if code == ErrorCode.NONE else -1,
        "replication_factor": rf if code == ErrorCode.NONE else -1,
        "configs": configs,
    }


#: partitions made per step of a topic's creation, between the loop's turns for other connections
PARTITIONS_PER_STEP = 50
#: partitions closed and renamed per step of a topic's deletion
_PARTITIONS_PER_DELETION_STEP = 500


async def _create_paced(
    ctx: RequestContext, name: str, configs: dict[str, str], placement: TopicPlacement
) -> TopicInfo:
    """Make the topic's partitions a few at a time, giving other connections a turn in between (a
    10,000-partition topic is 10,000 directories); all or nothing (the log removes a half-made one)."""
    cluster = ctx.services.cluster
    partitions = len(placement.replicas)
    await make_in_steps(ctx, cluster.logs.begin_topic(name, partitions, configs, placement.log_metadata()))
    return cluster.register_topic(name, placement, configs)


async def make_in_steps(ctx: RequestContext, making: TopicCreationLike) -> None:
    """Carry out a topic's creation or growth :data:`PARTITIONS_PER_STEP` partitions at a time,
    giving other connections a turn in between; all or nothing (aborted on any failure, a no-op
    once the log aborted it itself)."""
    try:
        while not making.step(PARTITIONS_PER_STEP):
            await ctx.pacer.pause()
        making.finish()
    except BaseException:
        making.abort()
        raise


@register(ApiKey.CREATE_TOPICS, versions=(2, 7))
async def create_topics(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """``ControllerApis.createTopics``: the names in a ``java.util.HashSet``, a name met again moved to
    another; the controller answers the others (those the principal may create) in the request's
    order, then each repeated name once (``INVALID_REQUEST``) in its set's order, then the names it may
    not create (and ``__cluster_metadata``) in theirs."""
    services = ctx.services
    cluster = services.cluster
    results: list[dict[str, Any]] = []
    once: JavaHashMap[str, None] = JavaHashMap(java_string_hash)
    repeated: JavaHashMap[str, None] = JavaHashMap(java_string_hash)
    for topic in request.topics:
        if topic.name not in repeated:
            if topic.name in once:
                once.remove(topic.name)
                repeated.put(topic.name, None)
            else:
                once.put(topic.name, None)
    refused = {
        n: _created(
            n, ErrorCode.INVALID_REQUEST, f"Creation of internal topic {n} is prohibited.", None, 0, 0
        )
        if n == CLUSTER_METADATA_TOPIC
        else _created(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.", None, 0, 0)
        for n in once.keys_in_order()
        if n == CLUSTER_METADATA_TOPIC or not may_create_topic(ctx, n)
    }
    for topic in request.topics:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        name = topic.name
        if name in repeated or name in refused:
            continue  # not handed to the controller
        partitions = int(topic.num_partitions)
        rf = int(topic.replication_factor)
        if topic.assignments:
            if partitions != -1 or rf != -1:
                results.append(
                    _created(
                        name,
                        ErrorCode.INVALID_REQUEST,
                        "Both numPartitions or replicationFactor and replicasAssignments were set. "
                        "Both cannot be used at the same time.",
                        None,
                        0,
                        0,
                    )
                )
                continue
            partitions = len(topic.assignments)
            rf = len(topic.assignments[0].broker_ids)
        if partitions == -1:
            partitions = services.config.num_partitions
        if rf == -1:
            rf = services.config.replication_factor
        given = [(str(c.name), c.value) for c in topic.configs]
        error = topic_name_error(name)
        if error is not None:
            results.append(_created(name, ErrorCode.INVALID_TOPIC_EXCEPTION, error, None, 0, 0))
        elif name in cluster.topics:
            results.append(
                _created(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", None, 0, 0)
            )
        elif (invalid := topic_config_error(given)) is not None:
            # Kafka's LogConfig checks (a null value first), before the partitions and replicas
            results.append(_created(name, ErrorCode.INVALID_CONFIG, invalid, None, 0, 0))
        elif not topic.assignments and rf <= 0:  # (-1 was the default) Kafka checks this first
            results.append(
                _created(
                    name,
                    ErrorCode.INVALID_REPLICATION_FACTOR,
                    "Replication factor must be larger than 0, or -1 to use the default value.",
                    None,
                    0,
                    0,
                )
            )
        elif partitions <= 0 or partitions > MAX_PARTITIONS_PER_TOPIC:
            results.append(
                _created(
                    name,
                    ErrorCode.INVALID_PARTITIONS,
                    "Number of partitions was set to an invalid non-positive value."
                    if partitions <= 0
                    else f"kgroup creates at most {MAX_PARTITIONS_PER_TOPIC} partitions per topic.",
                    None,
                    0,
                    0,
                )
            )
        else:
            as_given = {n: v for n, v in given if v is not None}
            configs = normalized_topic_configs(as_given)  # (as Kafka describes them afterwards)
            # the controller places the topic (its Random moves on, even to validate only), or takes
            # the request's own assignment
            try:
                if topic.assignments:
                    placement = cluster.place_manually(
                        [(int(a.partition_index), [int(b) for b in a.broker_ids]) for a in topic.assignments]
                    )
                else:
                    placement = cluster.place(partitions, rf)
            except InvalidReplicationFactor as exc:
                message = f"Unable to replicate the partition {rf} time(s): {exc.message}"
                results.append(_created(name, ErrorCode.INVALID_REPLICATION_FACTOR, message, None, 0, 0))
                continue
            except ReplicaAssignmentError as exc:
                results.append(_created(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT, exc.message, None, 0, 0))
                continue
            if request.validate_only:
                info = TopicInfo(name, uuid.UUID(int=0), placement.replicas, configs)
            else:
                try:
                    info = await _create_paced(ctx, name, configs, placement)
                except LogError as exc:  # a bad topic config: INVALID_CONFIG and its message
                    results.append(_created(name, exc.error_code, exc.message, None, 0, 0))
                    continue
                log.info("created topic %s with %d partition(s)", name, partitions)
            results.append(_created(name, ErrorCode.NONE, None, info, partitions, rf, as_given))
    results.extend(
        _created(n, ErrorCode.INVALID_REQUEST, "Duplicate topic name.", None, 0, 0)
        for n in repeated.keys_in_order()
    )
    results.extend(refused.values())
    return {"throttle_time": 0, "topics": results}


def _deleted(name: str | None, topic_id: uuid.UUID | None, code: int, message: str | None) -> dict[str, Any]:
    return {"name": name, "topic_id": topic_id or ZERO_UUID, "error_code": code, "error_message": message}


_UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
_UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."
_TOPIC_AUTHORIZATION_MESSAGE = "Topic authorization failed."


@register(ApiKey.DELETE_TOPICS, versions=(1, 6))
async def delete_topics(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """As ``ControllerApis.deleteTopics``: a name or an id given twice is answered once
    (``INVALID_REQUEST``) and not deleted, as is an entry with both a name and an id, or neither, and a
    name whose id was given too (that id is then neither deleted nor answered); the others are
    resolved, authorized (DELETE; a topic the principal may not describe is not named) and deleted.
    Kafka shuffles the answers (``Collections.shuffle``); kgroup answers in the order it decided them."""
    cluster = ctx.services.cluster
    results: list[dict[str, Any]] = []
    names: dict[str, None] = {}
    repeated_names: dict[str, None] = {}
    ids: dict[uuid.UUID, None] = {}
    repeated_ids: dict[uuid.UUID, None] = {}

    def add_name(name: str) -> None:
        if name in repeated_names or name in names:
            repeated_names[name] = None
            names.pop(name, None)
        else:
            names[name] = None

    if ctx.version < 6:
        for name in request.topic_names:
            add_name(name)
    else:
        for topic in request.topics:
            topic_id = topic.topic_id or ZERO_UUID
            if topic.name is None and topic_id == ZERO_UUID:
                message = "Neither topic name nor id were specified."
                results.append(_deleted(None, ZERO_UUID, ErrorCode.INVALID_REQUEST, message))
            elif topic.name is None:
                if topic_id in repeated_ids or topic_id in ids:
                    repeated_ids[topic_id] = None
                    ids.pop(topic_id, None)
                else:
                    ids[topic_id] = None
            elif topic_id == ZERO_UUID:
                add_name(topic.name)
            else:
                message = "You may not specify both topic name and topic id."
                results.append(_deleted(topic.name, topic_id, ErrorCode.INVALID_REQUEST, message))
    results.extend(
        _deleted(n, None, ErrorCode.INVALID_REQUEST, "Duplicate topic name.") for n in repeated_names
    )
    results.extend(_deleted(None, i, ErrorCode.INVALID_REQUEST, "Duplicate topic id.") for i in repeated_ids)
    doomed: dict[uuid.UUID, str] = {}
    for topic_id in ids:
        info = cluster.topic_by_id(topic_id)
        if info is None:
            results.append(_deleted(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, _UNKNOWN_TOPIC_ID_MESSAGE))
        elif not ctx.authorized(AclOperation.DELETE, ResourceType.TOPIC, info.name):
            shown = (
                info.name if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, info.name) else None
            )
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            results.append(_deleted(shown, topic_id, code, _TOPIC_AUTHORIZATION_MESSAGE))
        else:
            doomed[topic_id] = info.name
    for name in names:
        info = cluster.topics.get(name)
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # whether it exists is not disclosed
            results.append(_deleted(name, None, code, _TOPIC_AUTHORIZATION_MESSAGE))
        elif info is None:
            results.append(_deleted(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _UNKNOWN_TOPIC_MESSAGE))
        elif not ctx.authorized(AclOperation.DELETE, ResourceType.TOPIC, name):
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            results.append(_deleted(name, None, code, _TOPIC_AUTHORIZATION_MESSAGE))
        elif info.topic_id in repeated_ids or info.topic_id in doomed:
            repeated_ids[info.topic_id] = None
            doomed.pop(info.topic_id, None)
            message = "The provided topic name maps to an ID that was already supplied."
            results.append(_deleted(name, info.topic_id, ErrorCode.INVALID_REQUEST, message))
        else:
            doomed[info.topic_id] = name
    for topic_id, name in doomed.items():
        if ctx.pacer.due():
            await ctx.pacer.pause()
        results.append(await _delete_one(ctx, topic_id, name))
    return {"throttle_time": 0, "responses": results}


async def _delete_one(ctx: RequestContext, topic_id: uuid.UUID, name: str) -> dict[str, Any]:
    cluster = ctx.services.cluster
    async with cluster.topic_changes:  # not while a CreatePartitions grows a topic
        current = cluster.topics.get(name)
        if current is None or current.topic_id != topic_id:  # gone while it waited
            return _deleted(name, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, _UNKNOWN_TOPIC_ID_MESSAGE)
        deletion = cluster.begin_deletion(name)
        # its directories renamed 500 at a time, other connections served in between; removed
        # in a thread (Kafka renames a deleted log and removes it in the background)
        while not deletion.step(_PARTITIONS_PER_DELETION_STEP):
            await ctx.pacer.pause()
        ctx.services.remove_later(deletion.finish())
    log.info("deleted topic %s", name)
    return _deleted(name, topic_id, ErrorCode.NONE, None)
