"""IncrementalAlterConfigs (API key 44), v0–v1, for TOPIC (type 2) and GROUP (type 32) resources, as
Kafka 4.4.0 checks and keeps them.

First, for every resource (``ConfigAdminManager.preprocess``): a resource named twice is refused both
times ("Each resource must appear at most once."), a config named twice in one resource ("Error due to
duplicate config keys"), a null value for anything but DELETE ("Null value not supported for : a,
b"), a resource type Kafka does not know — each ``INVALID_REQUEST``. Then the controller's:

* TOPIC: ALTER_CONFIGS on the topic (``TOPIC_AUTHORIZATION_FAILED``), then the operations and checks of
  :mod:`kgroup.broker.topic_config_changes` (Kafka's ``LogConfig`` messages, ``INVALID_CONFIG``); the
  configs are kept on disk and every partition of the topic acts on them before the answer.
* GROUP: the group configs of :mod:`kgroup.broker.group_configs`: ALTER_CONFIGS on the group
  (``GROUP_AUTHORIZATION_FAILED``); an empty group name is ``INVALID_REQUEST`` ("Default group
  resources are not allowed."); each operation — SET (0), DELETE (1), APPEND (2) and SUBTRACT (3)
  only on LIST configs ("Can't APPEND to key … because its type is not LIST.") — then every config set
  checked (``INVALID_CONFIG`` with Kafka's message); written to disk before the answer.

``validate_only`` checks and keeps nothing. Broker, broker-logger and client-metrics resources are
answered ``INVALID_REQUEST``: kgroup alters topic and group configs here and no others (Kafka alters
them all).
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.group_configs import (
    GROUP_CONFIG_NAMES,
    GroupConfigError,
    broker_bounds,
    store_of,
    validate_group_config,
)
from kgroup.broker.topic_config_changes import TopicConfigRefused, TopicOperation, altered_topic_configs
from kgroup.log.errors import LogError
from kgroup.model import ErrorCode
from kgroup.security.acl import AclOperation, ResourceType
from kgroup.topic_configs import normalized_topic_configs
from kgroup.wire.api_keys import ApiKey

__all__: list[str] = []

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
_KNOWN_TYPES = frozenset({TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP})
_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3
#: the group configs of type LIST (APPEND and SUBTRACT apply to them)
_LISTS = frozenset({"streams.rack.aware.assignment.tags"})


def _answer(resource: Any, code: int = 0, message: str | None = None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": int(resource.resource_type),
        "resource_name": resource.resource_name,
    }


def _altered(current: dict[str, str], operations: Any, bounds: dict[str, tuple[int, int]]) -> dict[str, str]:
    """The group's configs after ``operations`` (:class:`GroupConfigError` for a refused one)."""
    configs = dict(current)
    for op in operations:
        name, kind, value = op.name, int(op.config_operation), op.value
        if kind == _SET:
            if value is None:
                raise GroupConfigError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}")
            configs[name] = value
        elif kind == _DELETE:
            configs.pop(name, None)
        elif kind in (_APPEND, _SUBTRACT):
            what = "APPEND" if kind == _APPEND else "SUBTRACT"
            if name not in _LISTS:
                if name not in GROUP_CONFIG_NAMES:
                    raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
                raise GroupConfigError(
                    ErrorCode.INVALID_CONFIG, f"Can't {what} to key {name} because its type is not LIST."
                )
            items = [v for v in configs.get(name, "").split(",") if v]
            given = [v.strip() for v in (value or "").split(",") if v.strip()]
            if kind == _APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            configs[name] = ",".join(items)
        else:
            raise GroupConfigError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {kind}")
    for name, value in configs.items():
        if name not in current or current[name] != value:
            validate_group_config(name, value, bounds)
    for op in operations:  # a DELETE of a name Kafka does not know
        if op.name not in GROUP_CONFIG_NAMES:
            raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {op.name}")
    return configs


def _preprocess(request: Any) -> dict[int, tuple[ErrorCode, str]]:
    """``ConfigAdminManager.preprocess``: the refusals of resources before the controller sees them
    (by ``id`` of the resource)."""
    refused: dict[int, tuple[ErrorCode, str]] = {}
    first: dict[tuple[int, str], Any] = {}
    for resource in request.resources:
        key = (int(resource.resource_type), resource.resource_name)
        earlier = first.get(key)
        first[key] = resource
        if earlier is not None:
            for twice in (earlier, resource):
                refused[id(twice)] = (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
    for resource in request.resources:
        if id(resource) in refused:
            continue
        names = [c.name for c in resource.configs]
        nulls = [c.name for c in resource.configs if int(c.config_operation) != _DELETE and c.value is None]
        if len(set(names)) != len(names):
            refused[id(resource)] = (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        elif nulls:
            refused[id(resource)] = (
                ErrorCode.INVALID_REQUEST,
                f"Null value not supported for : {', '.join(nulls)}",
            )
        elif int(resource.resource_type) not in _KNOWN_TYPES:
            refused[id(resource)] = (
                ErrorCode.INVALID_REQUEST,
                f"Unknown resource type {int(resource.resource_type)}",
            )
    return refused


def _alter_topic(ctx: RequestContext, resource: Any, validate_only: bool) -> dict[str, Any]:
    name = resource.resource_name
    if not ctx.authorized(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, name):
        return _answer(resource, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    cluster = ctx.services.cluster
    info = cluster.topics.get(name)
    operations = [TopicOperation(c.name, int(c.config_operation), c.value) for c in resource.configs]
    try:
        configs = altered_topic_configs(name, info.configs if info else {}, operations, info is not None)
    except TopicConfigRefused as refusal:
        return _answer(resource, refusal.code, refusal.message)
    if not validate_only:
        try:
            cluster.alter_topic_configs(name, normalized_topic_configs(configs))
        except LogError as exc:  # (the log's own refusal: a topic being grown meanwhile)
            return _answer(resource, exc.error_code, exc.message)
        except OSError as exc:
            return _answer(resource, ErrorCode.UNKNOWN_SERVER_ERROR, f"cannot keep it: {exc}")
    return _answer(resource)


def _alter_group(ctx: RequestContext, resource: Any, validate_only: bool) -> dict[str, Any]:
    name = resource.resource_name
    store = store_of(ctx.services.cluster)
    if not ctx.authorized(AclOperation.ALTER_CONFIGS, ResourceType.GROUP, name):
        return _answer(resource, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    if not name:
        return _answer(resource, ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    try:
        configs = _altered(store.get(name), resource.configs, broker_bounds(ctx.services.config))
    except GroupConfigError as exc:
        return _answer(resource, exc.code, exc.message)
    if not validate_only:
        try:
            store.put(name, configs)
        except OSError as exc:
            return _answer(resource, ErrorCode.UNKNOWN_SERVER_ERROR, f"cannot keep it: {exc}")
    return _answer(resource)


@register(ApiKey.INCREMENTAL_ALTER_CONFIGS, versions=(0, 1))
async def incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    refused = _preprocess(request)
    responses = []
    for resource in request.resources:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        rtype = int(resource.resource_type)
        if id(resource) in refused:
            code, message = refused[id(resource)]
            responses.append(_answer(resource, code, message))
        elif rtype == TOPIC:
            responses.append(_alter_topic(ctx, resource, bool(request.validate_only)))
        elif rtype == GROUP:
            responses.append(_alter_group(ctx, resource, bool(request.validate_only)))
        else:
            responses.append(
                _answer(
                    resource,
                    ErrorCode.INVALID_REQUEST,
                    "kgroup serves IncrementalAlterConfigs for TOPIC (2) and GROUP (32) resources only",
                )
            )
    return {"throttle_time": 0, "responses": responses}
