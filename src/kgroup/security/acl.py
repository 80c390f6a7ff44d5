"""Kafka's ACL model and ``StandardAuthorizer`` semantics.

An ACL binds a resource pattern (type, name, LITERAL or PREFIXED) to an entry (principal, host,
operation, ALLOW/DENY). To authorize principal P from host H for operation O on resource R:

* a super user (``super.users``, e.g. ``User:admin``) may do anything;
* the ACLs *for R* are those of R's type whose pattern matches R's name: LITERAL with the same name,
  LITERAL ``*``, or PREFIXED with a prefix of the name;
* of those, an ACL *applies* when its principal is P or ``User:*``, its host is H or ``*``, and its
  operation is O or ALL — an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and an ALLOW
  of ALTER_CONFIGS also allows DESCRIBE_CONFIGS (DENY ACLs imply nothing);
* an applying DENY wins; otherwise an applying ALLOW allows; otherwise, if R has no ACLs at all,
  ``allow.everyone.if.no.acl.found`` decides; otherwise it is denied.

:class:`Authorizer` indexes the ACLs (by type and literal name, and prefixed ones by type) so a
check reads only the ACLs that can match; the tests check it against a brute-force reading of the
rules above.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "CLUSTER_NAME",
    "OPERATIONS_OMITTED",
    "SUPPORTED_OPERATIONS",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "Authorizer",
    "PatternType",
    "ResourceType",
    "acl_applies",
    "operations_bit_field",
    "pattern_matches_resource",
    "validate_new_acl",
]

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


IMPLIES_DESCRIBE = frozenset(
    {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
)
IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def to_json(self) -> dict[str, object]:
        return {
            "resource_type": self.resource_type.name,
            "resource_name": self.resource_name,
            "pattern_type": self.pattern_type.name,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation.name,
            "permission": self.permission.name,
        }

    @classmethod
    def from_json(cls, data: dict[str, str]) -> AclBinding:
        return cls(
            ResourceType[data["resource_type"]],
            data["resource_name"],
            PatternType[data["pattern_type"]],
            data["principal"],
            data["host"],
            AclOperation[data["operation"]],
            AclPermissionType[data["permission"]],
        )


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Kafka's ``AclBindingFilter``: None (null) or ANY matches everything; MATCH finds the ACLs
    that would apply to a resource of that name."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def matches(self, acl: AclBinding) -> bool:
        # ResourcePatternFilter.matches
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.resource_name is not None:
            if self.pattern_type in (PatternType.ANY, acl.pattern_type):
                if self.resource_name != acl.resource_name:
                    return False
            elif acl.pattern_type is PatternType.LITERAL:
                if self.resource_name != acl.resource_name and acl.resource_name != WILDCARD:
                    return False
            elif not self.resource_name.startswith(acl.resource_name):
                return False
        # AccessControlEntryFilter.matches
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation not in (AclOperation.ANY, acl.operation):
            return False
        return self.permission in (AclPermissionType.ANY, acl.permission)


def validate_new_acl(acl: AclBinding) -> str | None:
    """Why CreateAcls refuses ``acl`` (INVALID_REQUEST with this message), or None: first as the
    broker's ``AclApis.handleCreateAcls`` does, then as the controller's
    ``AclControlManager.validateNewAcl`` does."""
    if acl.resource_type is ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.resource_name:
        return "Invalid empty resource name"
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {acl.permission.name}"
    if not acl.resource_name:
        return "Resource name should not be empty"
    if ":" not in acl.principal:
        return (
            f"Could not parse principal from `{acl.principal}` (no colon is present separating the "
            "principal type from the principal name)"
        )
    return None


def pattern_matches_resource(acl: AclBinding, resource_type: ResourceType, name: str) -> bool:
    """Whether ``acl`` is one of the ACLs *for* the resource (name matching only)."""
    if acl.resource_type != resource_type:
        return False
    if acl.pattern_type is PatternType.LITERAL:
        return acl.resource_name in (name, WILDCARD)
    return acl.pattern_type is PatternType.PREFIXED and name.startswith(acl.resource_name)


#: what an answer says when its authorized operations were not asked for (``Integer.MIN_VALUE``)
OPERATIONS_OMITTED = -(2**31)

#: the operations each concrete resource type has (Kafka's ``AclEntry.supportedOperations``): what an
#: answer's authorized operations are taken from
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        AclOperation.READ,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE, AclOperation.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


def operations_bit_field(operations: Iterable[AclOperation]) -> int:
    """An answer's ``authorized_operations``: bit ``code`` set for each operation (``Utils.to32BitField``)."""
    field = 0
    for operation in operations:
        field |= 1 << int(operation)
    return field


def acl_applies(acl: AclBinding, principal: str, host: str, operation: AclOperation) -> bool:
    """Whether ``acl`` (already one of the resource's) applies to this principal, host and operation
    (Kafka's ``StandardAuthorizerData.findResult`` returning non-null)."""
    if acl.principal not in (principal, WILDCARD_PRINCIPAL):
        return False
    if acl.host not in (WILDCARD, host):
        return False
    if acl.operation is AclOperation.ALL:
        return True
    if acl.permission is AclPermissionType.ALLOW:
        if operation is AclOperation.DESCRIBE:
            return acl.operation in IMPLIES_DESCRIBE
        if operation is AclOperation.DESCRIBE_CONFIGS:
            return acl.operation in IMPLIES_DESCRIBE_CONFIGS
    return acl.operation == operation


class Authorizer:
    """ACLs in memory with Kafka's ``StandardAuthorizer`` answers (see the module docs)."""

    def __init__(
        self,
        acls: Iterable[AclBinding] = (),
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._acls: dict[AclBinding, None] = {}  # insertion-ordered set
        self._literal: dict[tuple[ResourceType, str], set[AclBinding]] = {}
        self._prefixed: dict[ResourceType, set[AclBinding]] = {}
        for acl in acls:
            self.add(acl)

    def __len__(self) -> int:
        return len(self._acls)

    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        if acl_filter is None:
            return list(self._acls)
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def add(self, acl: AclBinding) -> None:
        if acl in self._acls:
            return
        self._acls[acl] = None
        if acl.pattern_type is PatternType.PREFIXED:
            self._prefixed.setdefault(acl.resource_type, set()).add(acl)
        else:
            self._literal.setdefault((acl.resource_type, acl.resource_name), set()).add(acl)

    def remove(self, acl: AclBinding) -> None:
        if self._acls.pop(acl, 0) is None:
            if acl.pattern_type is PatternType.PREFIXED:
                self._prefixed[acl.resource_type].discard(acl)
            else:
                self._literal[(acl.resource_type, acl.resource_name)].discard(acl)

    def _resource_acls(self, resource_type: ResourceType, name: str) -> Iterable[AclBinding]:
        yield from self._literal.get((resource_type, name), ())
        if name != WILDCARD:
            yield from self._literal.get((resource_type, WILDCARD), ())
        for acl in self._prefixed.get(resource_type, ()):
            if name.startswith(acl.resource_name):
                yield acl

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        found_any = False
        allowed = False
        for acl in self._resource_acls(resource_type, name):
            found_any = True
            if acl_applies(acl, principal, host, operation):
                if acl.permission is AclPermissionType.DENY:
                    return False
                if acl.permission is AclPermissionType.ALLOW:
                    allowed = True
        if allowed:
            return True
        return not found_any and self.allow_everyone_if_no_acl_found

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether the principal may do ``operation`` on *some* resource of the type (Kafka's
        ``Authorizer.authorizeByResourceType``, which ``StandardAuthorizer`` keeps): allowed as for a
        resource named ``hardcode``, or by an ALLOW (``*``, or a name no DENY covers)."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow_literal: set[str] = set()
        allow_prefixed: set[str] = set()
        wildcard_allow = False
        for acl in self._acls:
            if acl.resource_type != resource_type or acl.host not in (host, WILDCARD):
                continue
            if acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.operation not in (operation, AclOperation.ALL):
                continue
            literal = acl.pattern_type is PatternType.LITERAL
            if acl.permission is AclPermissionType.DENY:
                if literal and acl.resource_name == WILDCARD:
                    return False
                (deny_literal if literal else deny_prefixed).add(acl.resource_name)
            elif acl.permission is AclPermissionType.ALLOW:
                if literal and acl.resource_name == WILDCARD:
                    wildcard_allow = True
                    continue
                (allow_literal if literal else allow_prefixed).add(acl.resource_name)
        if wildcard_allow:
            return True
        for kind, names in ((PatternType.LITERAL, allow_literal), (PatternType.PREFIXED, allow_prefixed)):
            for name in names:
                if kind is PatternType.LITERAL and name in deny_literal:
                    continue
                if not any(name[:end] in deny_prefixed for end in range(1, len(name) + 1)):
                    return True
        return False
