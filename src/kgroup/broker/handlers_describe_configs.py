"""DescribeConfigs (API key 32), as Kafka 4.4.0's ``ConfigHelper`` answers it.

The whole request is refused (every resource INVALID_REQUEST, Kafka's generic message) when one of its
resources has a type Kafka does not know; else each resource is authorized (DESCRIBE_CONFIGS on the
topic, the group, or the cluster for a broker, its loggers and client-metrics subscriptions; the denied
ones answered last) and described: a topic (its name checked as ``Topic.validate`` checks it), a
broker (an empty name: the cluster-wide dynamic defaults; else this broker's id, read as
``Integer.parseInt`` reads it), a broker's loggers (kgroup's own, below), a client-metrics
subscription (kgroup has none: their defaults), a group. An empty list of keys asks for every config.

Beyond Kafka: a broker describes the 13 configs kgroup honours (Kafka: several hundred), without
synonyms, read-only; its loggers are kgroup's Python loggers (``root`` and ``kgroup.*``, their levels
in log4j's names), not Kafka's log4j ones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kgroup.broker.cluster import topic_name_error
from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.handlers_admin import CLUSTER_DEFAULT_TOPIC_CONFIGS, TOPIC_CONFIG_DEFAULTS
from kgroup.javacompat import int32, java_parse_int, java_string_hash
from kgroup.model import ErrorCode
from kgroup.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kgroup.wire.api_keys import ApiKey

__all__ = ["CONFIG_TYPES"]

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32

#: ``Errors.INVALID_REQUEST.message()``: what a refused whole request says of each resource
#: (``DescribeConfigsRequest.getErrorResponse``)
INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or the message "
    "was sent to an incompatible broker. See the broker logs for more details."
)

#: DescribeConfigs' ``config_source``: DYNAMIC_TOPIC_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
#: DEFAULT_CONFIG, DYNAMIC_BROKER_LOGGER_CONFIG
_DYNAMIC_TOPIC, _DYNAMIC_DEFAULT_BROKER, _DEFAULT, _DYNAMIC_BROKER_LOGGER = 1, 3, 5, 6

#: DescribeConfigs v3+'s ``config_type`` of the configs kgroup describes, as Kafka's ``ConfigDef``
#: types them (``DescribeConfigsResponse.ConfigType``: 1 BOOLEAN, 2 STRING, 3 INT, 5 LONG, 7 LIST)
CONFIG_TYPES: dict[str, int] = {
    # topics (LogConfig)
    "cleanup.policy": 7,
    "compression.type": 2,
    "max.message.bytes": 3,
    "message.timestamp.type": 2,
    "min.insync.replicas": 3,
    "retention.bytes": 5,
    "retention.ms": 5,
    "segment.bytes": 3,
    # brokers (KafkaConfig)
    "auto.create.topics.enable": 1,
    "num.partitions": 3,
    "default.replication.factor": 3,
    "offsets.topic.num.partitions": 3,
    "socket.request.max.bytes": 3,
    "group.initial.rebalance.delay.ms": 3,
    "group.consumer.heartbeat.interval.ms": 3,
    "group.consumer.session.timeout.ms": 3,
    "group.consumer.assignment.interval.ms": 3,
    "group.consumer.min.heartbeat.interval.ms": 3,
    "group.consumer.max.heartbeat.interval.ms": 3,
    "group.consumer.min.session.timeout.ms": 3,
    "group.consumer.max.session.timeout.ms": 3,
}


#: the bucket count of the hash map Kafka 4.4.0 lists a resource's configs from (its ~40 topic configs:
#: 64; its several hundred broker configs: 512): DescribeConfigs answers in that map's order
_CONFIG_MAP_BUCKETS = {2: 64, 4: 512}


def _config_place(rtype: int) -> Callable[[tuple[str, str]], tuple[int, int]]:
    """The sort key of a config in Kafka's order for resource type ``rtype``: its bucket in the
    config map's table (``h ^ (h >>> 16)`` of its name's ``String.hashCode``), then that hash."""
    mask = _CONFIG_MAP_BUCKETS.get(rtype, 1) - 1

    def place(item: tuple[str, str]) -> tuple[int, int]:
        h = java_string_hash(item[0]) & 0xFFFFFFFF
        spread = int32(h ^ (h >> 16))
        return (spread & mask, spread)

    return place


#: DescribeConfigs resource type -> what Kafka's ``ConfigHelper`` checks DESCRIBE_CONFIGS on, and the
#: error and message of a denied one (BROKER, BROKER_LOGGER, CLIENT_METRICS: the cluster)
_DESCRIBE_CONFIGS_ACL: dict[int, tuple[ResourceType, ErrorCode, str]] = {
    2: (ResourceType.TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
    4: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
    8: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
    16: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
    32: (ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."),
}


def _describe_configs_denied(ctx: RequestContext, resource: Any) -> dict[str, Any] | None:
    """``ConfigHelper.handleDescribeConfigsRequest``: DESCRIBE_CONFIGS on the topic, the group or the
    cluster; the answer of a denied resource (answered after the allowed ones), else None."""
    acl = _DESCRIBE_CONFIGS_ACL.get(int(resource.resource_type))
    if acl is None:
        return None
    rtype, error, message = acl
    name = resource.resource_name if rtype is not ResourceType.CLUSTER else CLUSTER_NAME
    if ctx.authorized(AclOperation.DESCRIBE_CONFIGS, rtype, name):
        return None
    return {
        "error_code": error,
        "error_message": message,
        "resource_type": int(resource.resource_type),
        "resource_name": resource.resource_name,
        "configs": [],
    }


class _Refused(Exception):
    """A resource ``ConfigHelper.describeConfigs`` refuses (its exception: the code and message)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _result(resource: Any, configs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.NONE,
        "error_message": "",
        "resource_type": int(resource.resource_type),
        "resource_name": resource.resource_name,
        "configs": configs,
    }


def _entry(
    name: str,
    value: str,
    source: int,
    *,
    read_only: bool = False,
    synonyms: list[dict[str, Any]] | None = None,
    config_type: int | None = None,
    documentation: str | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "read_only": read_only,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": synonyms or [],
        "config_type": CONFIG_TYPES.get(name, 0) if config_type is None else config_type,
        "documentation": documentation,
    }


def _wanted(resource: Any) -> Callable[[str], bool]:
    """Which configs the resource asks for: every one for a null or empty list of keys."""
    keys = resource.configuration_keys
    if not keys:
        return lambda _: True
    chosen = set(keys)
    return chosen.__contains__


def _broker_id(name: str) -> int:
    """``ConfigHelper.resourceNameToBrokerId``: ``Integer.parseInt``, else INVALID_REQUEST."""
    node = java_parse_int(name)
    if node is None:
        raise _Refused(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}")
    return node


def _describe_topic(ctx: RequestContext, resource: Any) -> dict[str, Any]:
    name = resource.resource_name
    invalid = topic_name_error(name)
    if invalid is not None:
        raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, invalid)
    info = ctx.services.cluster.topics.get(name)
    if info is None:
        raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")  # (Kafka sets no message: its default)
    values = {**TOPIC_CONFIG_DEFAULTS, **info.configs}
    overridden = set(info.configs)
    cluster_defaults = CLUSTER_DEFAULT_TOPIC_CONFIGS - overridden
    wanted = _wanted(resource)
    return _result(
        resource,
        [
            _entry(
                k,
                v,
                _DYNAMIC_TOPIC
                if k in overridden
                else _DYNAMIC_DEFAULT_BROKER
                if k in cluster_defaults
                else _DEFAULT,
            )
            for k, v in sorted(values.items(), key=_config_place(TOPIC))
            if wanted(k)
        ],
    )


def _describe_broker(ctx: RequestContext, resource: Any, synonyms: bool) -> dict[str, Any]:
    name = resource.resource_name
    wanted = _wanted(resource)
    if not name:
        # the cluster-wide dynamic defaults (``currentDynamicDefaultConfigs``): on a Kafka 4.4.0 cluster,
        # min.insync.replicas, written as a config record (CLUSTER_DEFAULT_TOPIC_CONFIGS)
        defaults = {k: TOPIC_CONFIG_DEFAULTS[k] for k in sorted(CLUSTER_DEFAULT_TOPIC_CONFIGS)}
        return _result(
            resource,
            [
                _entry(
                    k,
                    v,
                    _DYNAMIC_DEFAULT_BROKER,
                    synonyms=[{"name": k, "value": v, "source": _DYNAMIC_DEFAULT_BROKER}]
                    if synonyms
                    else None,
                )
                for k, v in defaults.items()
                if wanted(k)
            ],
        )
    node = _broker_id(name)
    if node != ctx.node_id:
        raise _Refused(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {ctx.node_id} or empty string, but received {name}",
        )
    config = ctx.services.config
    values = {
        "auto.create.topics.enable": str(config.auto_create_topics).lower(),
        "num.partitions": str(config.num_partitions),
        "default.replication.factor": str(config.replication_factor),
        "offsets.topic.num.partitions": str(config.offsets_topic_partitions),
        "socket.request.max.bytes": str(config.max_request_bytes),
        "group.initial.rebalance.delay.ms": str(config.group_initial_rebalance_delay_ms),
        "group.consumer.heartbeat.interval.ms": str(config.group_consumer_heartbeat_interval_ms),
        "group.consumer.session.timeout.ms": str(config.group_consumer_session_timeout_ms),
        "group.consumer.assignment.interval.ms": str(config.group_consumer_assignment_interval_ms),
        **{
            f"group.consumer.{bound}.{what}.ms".replace("_", "."): str(
                getattr(config, f"group_consumer_{bound}_{what}_ms")
            )
            for bound in ("min", "max")
            for what in ("heartbeat_interval", "session_timeout")
        },
    }
    return _result(
        resource,
        [
            _entry(k, v, _DEFAULT, read_only=True)
            for k, v in sorted(values.items(), key=_config_place(BROKER))
            if wanted(k)
        ],
    )


#: Python's level names in log4j's (what Kafka's broker loggers answer)
_LOG4J_LEVELS = {"WARNING": "WARN", "CRITICAL": "FATAL", "NOTSET": "OFF"}


def kgroup_loggers() -> dict[str, str]:
    """kgroup's loggers and their effective levels, as a broker's loggers are described: ``root``,
    then every ``kgroup`` logger made so far, by name."""
    manager = logging.Logger.manager
    names = sorted(n for n in manager.loggerDict if n == "kgroup" or n.startswith("kgroup."))
    loggers = {"root": logging.getLogger()} | {n: logging.getLogger(n) for n in names}
    levels = {}
    for name, logger in loggers.items():
        level = logging.getLevelName(logger.getEffectiveLevel())
        levels[name] = _LOG4J_LEVELS.get(level, level)
    return levels


def _describe_broker_loggers(ctx: RequestContext, resource: Any) -> dict[str, Any]:
    name = resource.resource_name
    if not name:
        raise _Refused(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    node = _broker_id(name)
    if node != ctx.node_id:
        raise _Refused(
            ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {ctx.node_id} but received {name}"
        )
    wanted = _wanted(resource)
    # (Kafka builds these entries without a documentation: the field's default, an empty string)
    return _result(
        resource,
        [
            _entry(k, v, _DYNAMIC_BROKER_LOGGER, config_type=0, documentation="")
            for k, v in kgroup_loggers().items()
            if wanted(k)
        ],
    )


#: a client-metrics subscription's configs (``ClientMetricsConfigs``): name, default, type, documentation
_CLIENT_METRICS_DEFAULTS = (
    ("interval.ms", "300000", 3, "Metrics push interval in milliseconds"),
    ("match", "", 7, "Client match criteria"),
    ("metrics", "", 7, "Telemetry metric name prefix list"),
)


def _describe_client_metrics(resource: Any, documentation: bool) -> dict[str, Any]:
    """kgroup keeps no client-metrics subscription: any name is described with the defaults, as Kafka
    describes a subscription that was never set."""
    if not resource.resource_name:
        raise _Refused(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
    wanted = _wanted(resource)
    return _result(
        resource,
        [
            _entry(k, v, _DEFAULT, config_type=t, documentation=doc if documentation else None)
            for k, v, t, doc in _CLIENT_METRICS_DEFAULTS
            if wanted(k)
        ],
    )


def _describe_group(ctx: RequestContext, resource: Any, synonyms: bool) -> dict[str, Any]:
    """A GROUP resource's configs: what IncrementalAlterConfigs set on it, the rest the broker's
    defaults (any group name, existing or not, as Kafka answers it; an empty one refused)."""
    from kgroup.broker.group_configs import (
        broker_group_settings,
        describe_group_configs,
        group_config_defaults,
        store_of,
    )

    if not resource.resource_name:
        raise _Refused(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    services = ctx.services
    defaults = group_config_defaults(
        broker_group_settings(services.config, services.shares.config.auto_offset_reset)
    )
    keys = resource.configuration_keys
    return _result(
        resource,
        describe_group_configs(
            store_of(services.cluster).get(resource.resource_name),
            defaults,
            list(keys) if keys else None,
            synonyms=synonyms,
        ),
    )


def _refused_whole(request: Any) -> dict[str, Any]:
    """``DescribeConfigsRequest.getErrorResponse``: every resource INVALID_REQUEST (a resource type
    Kafka does not know makes ``handleDescribeConfigsRequest`` throw before anything is described)."""
    return {
        "throttle_time": 0,
        "results": [
            {
                "error_code": ErrorCode.INVALID_REQUEST,
                "error_message": INVALID_REQUEST_MESSAGE,
                "resource_type": int(r.resource_type),
                "resource_name": r.resource_name,
                "configs": [],
            }
            for r in request.resources
        ],
    }


@register(ApiKey.DESCRIBE_CONFIGS, versions=(1, 4))
async def describe_configs(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if any(int(r.resource_type) not in _DESCRIBE_CONFIGS_ACL for r in request.resources):
        return _refused_whole(request)
    synonyms = bool(request.include_synonyms)
    documentation = bool(getattr(request, "include_documentation", False))
    results = []
    denied: list[dict[str, Any]] = []
    for resource in request.resources:
        refused = _describe_configs_denied(ctx, resource)
        if refused is not None:
            denied.append(refused)
            continue
        if ctx.pacer.due():
            await ctx.pacer.pause()
        rtype = int(resource.resource_type)
        try:
            if rtype == TOPIC:
                results.append(_describe_topic(ctx, resource))
            elif rtype == BROKER:
                results.append(_describe_broker(ctx, resource, synonyms))
            elif rtype == BROKER_LOGGER:
                results.append(_describe_broker_loggers(ctx, resource))
            elif rtype == CLIENT_METRICS:
                results.append(_describe_client_metrics(resource, documentation))
            else:  # GROUP: kgroup.broker.group_configs (ConfigHelper.createGroupConfigEntry)
                results.append(_describe_group(ctx, resource, synonyms))
        except _Refused as refusal:
            results.append(
                {
                    "error_code": refusal.code,
                    "error_message": refusal.message,
                    "resource_type": rtype,
                    "resource_name": resource.resource_name,
                    "configs": [],
                }
            )
    return {"throttle_time": 0, "results": results + denied}
