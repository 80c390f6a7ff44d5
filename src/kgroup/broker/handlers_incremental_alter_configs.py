"""IncrementalAlterConfigs (API key 44), v0–v1, for GROUP resources (type 32): the group configs of
:mod:`kgroup.broker.group_configs`, as Kafka 4.4.0 checks and keeps them.

Per resource: ALTER_CONFIGS on the group (``GROUP_AUTHORIZATION_FAILED``); an empty group name is
``INVALID_REQUEST`` ("Default group resources are not allowed."); each operation — SET (0) with a
value (a null one is ``INVALID_REQUEST`` "Null value not supported for : …"), DELETE (1), APPEND (2)
and SUBTRACT (3) only on LIST configs ("Can't APPEND to key … because its type is not LIST.") — then
every config set checked (``INVALID_CONFIG`` with Kafka's message); ``validate_only`` checks and keeps
nothing. The group's configs are written to disk before the answer. Other resource types (topics,
brokers …) are answered ``INVALID_REQUEST``: kgroup serves group configs here and no others (Kafka
alters them all).
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
from kgroup.model import ErrorCode
from kgroup.security.acl import AclOperation, ResourceType
from kgroup.wire.api_keys import ApiKey

__all__: list[str] = []

GROUP = 32
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


@register(ApiKey.INCREMENTAL_ALTER_CONFIGS, versions=(0, 1))
async def incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    store = store_of(ctx.services.cluster)
    responses = []
    for resource in request.resources:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        if int(resource.resource_type) != GROUP:
            responses.append(
                _answer(
                    resource,
                    ErrorCode.INVALID_REQUEST,
                    "kgroup serves IncrementalAlterConfigs for GROUP resources (32) only",
                )
            )
            continue
        name = resource.resource_name
        if not ctx.authorized(AclOperation.ALTER_CONFIGS, ResourceType.GROUP, name):
            responses.append(_answer(resource, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
            continue
        if not name:
            responses.append(
                _answer(resource, ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
            )
            continue
        try:
            configs = _altered(store.get(name), resource.configs, broker_bounds(ctx.services.config))
        except GroupConfigError as exc:
            responses.append(_answer(resource, exc.code, exc.message))
            continue
        if not request.validate_only:
            try:
                store.put(name, configs)
            except OSError as exc:
                responses.append(_answer(resource, ErrorCode.UNKNOWN_SERVER_ERROR, f"cannot keep it: {exc}"))
                continue
        responses.append(_answer(resource))
    return {"throttle_time": 0, "responses": responses}
