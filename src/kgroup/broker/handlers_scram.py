"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554): DESCRIBE / ALTER on the
cluster, then the credential store (kgroup.security.credentials). The client sends salt and salted
password, never the password; the broker keeps Kafka's ScramCredential form."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.model import ErrorCode
from kgroup.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kgroup.security.scram import SCRAM_MECHANISMS
from kgroup.wire.api_keys import ApiKey

UNSUPPORTED_SASL_MECHANISM = 33
RESOURCE_NOT_FOUND = 91
DUPLICATE_RESOURCE = 92
UNACCEPTABLE_CREDENTIAL = 93
_BY_CODE = {m.type_code: m for m in SCRAM_MECHANISMS.values()}


@register(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, versions=(0, 0))
async def describe_user_scram_credentials(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": None,
            "results": [],
        }
    held = ctx.services.security.credentials.users()
    wanted = [u.name for u in request.users] if request.users else sorted(held)
    counts = Counter(wanted)
    results: list[dict[str, Any]] = []
    for name in dict.fromkeys(wanted):
        if counts[name] > 1:
            results.append(
                {
                    "user": name,
                    "error_code": DUPLICATE_RESOURCE,
                    "error_message": f"Cannot describe SCRAM credentials for the same user twice in a single "
                    f"request: {name}",
                    "credential_infos": [],
                }
            )
        elif name not in held:
            results.append(
                {
                    "user": name,
                    "error_code": RESOURCE_NOT_FOUND,
                    "error_message": f"Attempt to describe a user credential that does not exist: {name}",
                    "credential_infos": [],
                }
            )
        else:
            infos = [
                {"mechanism": SCRAM_MECHANISMS[m].type_code, "iterations": c.iterations}
                for m, c in sorted(held[name].items())
            ]
            results.append({"user": name, "error_code": 0, "error_message": None, "credential_infos": infos})
    return {"throttle_time": 0, "error_code": 0, "error_message": None, "results": results}


@register(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, versions=(0, 0))
async def alter_user_scram_credentials(ctx: RequestContext, request: Any) -> dict[str, Any]:
    users = [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    if not ctx.authorized(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        results = [
            {"user": name, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
            for name in dict.fromkeys(users)
        ]
        return {"throttle_time": 0, "results": results}
    store = ctx.services.security.credentials
    counts = Counter(users)
    outcome: dict[str, tuple[int, str | None]] = {}
    for deletion in request.deletions:
        name, mechanism = deletion.name, _BY_CODE.get(int(deletion.mechanism))
        if counts[name] > 1:
            outcome[name] = (
                DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
        elif mechanism is None:
            outcome[name] = (UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism.")
        elif not store.delete(name, mechanism):
            outcome[name] = (RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        else:
            outcome[name] = (0, None)
    for upsertion in request.upsertions:
        name, mechanism = upsertion.name, _BY_CODE.get(int(upsertion.mechanism))
        iterations = int(upsertion.iterations)
        if counts[name] > 1:
            outcome[name] = (
                DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
        elif not name:
            outcome[name] = (UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif mechanism is None:
            outcome[name] = (UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism.")
        elif iterations < mechanism.min_iterations:
            outcome[name] = (UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif iterations > mechanism.max_iterations:
            outcome[name] = (UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        else:
            store.upsert(name, mechanism, bytes(upsertion.salt), bytes(upsertion.salted_password), iterations)
            outcome[name] = (0, None)
    results = [
        {"user": name, "error_code": code, "error_message": message}
        for name, (code, message) in outcome.items()
    ]
    return {"throttle_time": 0, "results": results}
