"""CreateAcls, DescribeAcls and DeleteAcls as Kafka's ``KafkaApis``/``AclControlManager`` answer
them: ALTER (create, delete) or DESCRIBE (describe) on the cluster, SECURITY_DISABLED without an
authorizer, each new ACL validated; ACLs are kept in the data directory (kgroup.security.runtime)."""

from __future__ import annotations

from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.model import ErrorCode
from kgroup.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    validate_new_acl,
)
from kgroup.wire.api_keys import ApiKey

INVALID_REQUEST = 42
SECURITY_DISABLED = 54
NO_AUTHORIZER = "No Authorizer is configured."


def _enum(kind: Any, value: int) -> Any:
    try:
        return kind(value)
    except ValueError:
        return kind(0)  # UNKNOWN


def _filter(entry: Any) -> AclBindingFilter:
    return AclBindingFilter(
        _enum(ResourceType, int(entry.resource_type_filter)),
        entry.resource_name_filter,
        _enum(PatternType, int(getattr(entry, "pattern_type_filter", PatternType.LITERAL))),
        entry.principal_filter,
        entry.host_filter,
        _enum(AclOperation, int(entry.operation)),
        _enum(AclPermissionType, int(entry.permission_type)),
    )


def _cluster_allowed(ctx: RequestContext, operation: AclOperation) -> bool:
    return ctx.authorized(operation, ResourceType.CLUSTER, CLUSTER_NAME)


@register(ApiKey.CREATE_ACLS, versions=(1, 3))
async def create_acls(ctx: RequestContext, request: Any) -> dict[str, Any]:
    security = ctx.services.security
    results = []
    if not security.enforcing:
        results = [
            {"error_code": SECURITY_DISABLED, "error_message": NO_AUTHORIZER} for _ in request.creations
        ]
    elif not _cluster_allowed(ctx, AclOperation.ALTER):
        results = [
            {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
            for _ in request.creations
        ]
    else:
        changed = False
        for creation in request.creations:
            acl = AclBinding(
                _enum(ResourceType, int(creation.resource_type)),
                creation.resource_name,
                _enum(PatternType, int(getattr(creation, "resource_pattern_type", PatternType.LITERAL))),
                creation.principal,
                creation.host,
                _enum(AclOperation, int(creation.operation)),
                _enum(AclPermissionType, int(creation.permission_type)),
            )
            problem = validate_new_acl(acl)
            if problem is not None:
                results.append({"error_code": INVALID_REQUEST, "error_message": problem})
                continue
            security.authorizer.add(acl)
            changed = True
            results.append({"error_code": 0, "error_message": None})
        if changed:
            security.save_acls()
    return {"throttle_time": 0, "results": results}


@register(ApiKey.DESCRIBE_ACLS, versions=(1, 3))
async def describe_acls(ctx: RequestContext, request: Any) -> dict[str, Any]:
    security = ctx.services.security
    if not security.enforcing:
        return {
            "throttle_time": 0,
            "error_code": SECURITY_DISABLED,
            "error_message": NO_AUTHORIZER,
            "resources": [],
        }
    if not _cluster_allowed(ctx, AclOperation.DESCRIBE):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": None,
            "resources": [],
        }
    by_resource: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in security.authorizer.acls(_filter(request)):
        key = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
        by_resource.setdefault(key, []).append(
            {
                "principal": acl.principal,
                "host": acl.host,
                "operation": int(acl.operation),
                "permission_type": int(acl.permission),
            }
        )
    resources = [
        {"resource_type": rtype, "resource_name": name, "pattern_type": ptype, "acls": acls}
        for (rtype, name, ptype), acls in by_resource.items()
    ]
    return {"throttle_time": 0, "error_code": 0, "error_message": None, "resources": resources}


@register(ApiKey.DELETE_ACLS, versions=(1, 3))
async def delete_acls(ctx: RequestContext, request: Any) -> dict[str, Any]:
    security = ctx.services.security
    if not security.enforcing:
        results = [
            {"error_code": SECURITY_DISABLED, "error_message": NO_AUTHORIZER, "matching_acls": []}
            for _ in request.filters
        ]
        return {"throttle_time": 0, "filter_results": results}
    if not _cluster_allowed(ctx, AclOperation.ALTER):
        results = [
            {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None, "matching_acls": []}
            for _ in request.filters
        ]
        return {"throttle_time": 0, "filter_results": results}
    results = []
    removed_any = False
    for entry in request.filters:
        matching = security.authorizer.acls(_filter(entry))
        for acl in matching:
            security.authorizer.remove(acl)
            removed_any = True
        results.append(
            {
                "error_code": 0,
                "error_message": None,
                "matching_acls": [
                    {
                        "error_code": 0,
                        "error_message": None,
                        "resource_type": int(acl.resource_type),
                        "resource_name": acl.resource_name,
                        "pattern_type": int(acl.pattern_type),
                        "principal": acl.principal,
                        "host": acl.host,
                        "operation": int(acl.operation),
                        "permission_type": int(acl.permission),
                    }
                    for acl in matching
                ],
            }
        )
    if removed_any:
        security.save_acls()
    return {"throttle_time": 0, "filter_results": results}
