"""The authorizer against a brute-force reading of Kafka's StandardAuthorizer rules, plus examples."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Authorizer,
    PatternType,
    ResourceType,
    validate_new_acl,
)

Op, Perm, RT, PT = AclOperation, AclPermissionType, ResourceType, PatternType
NAMES = ["a", "ab", "abc", "b", "*"]
PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:alice"]
HOSTS = ["10.0.0.1", "10.0.0.2", "*"]
OPERATIONS = [op for op in Op if op not in (Op.UNKNOWN, Op.ANY)]

acls = st.builds(
    AclBinding,
    st.sampled_from([RT.TOPIC, RT.GROUP]),
    st.sampled_from(NAMES),
    st.sampled_from([PT.LITERAL, PT.PREFIXED]),
    st.sampled_from(PRINCIPALS),
    st.sampled_from(HOSTS),
    st.sampled_from(OPERATIONS),
    st.sampled_from([Perm.ALLOW, Perm.DENY]),
)


def brute_force(
    all_acls: list[AclBinding],
    super_users: set[str],
    allow_if_none: bool,
    principal: str,
    host: str,
    op: AclOperation,
    rtype: ResourceType,
    name: str,
) -> bool:
    """Kafka's rules read literally, one ACL at a time (docs/security.md, StandardAuthorizerData)."""
    if principal in super_users:
        return True
    for_resource = []
    for acl in all_acls:
        if acl.resource_type != rtype:
            continue
        literal_hit = acl.pattern_type == PT.LITERAL and (
            acl.resource_name == name or acl.resource_name == "*"
        )
        prefix_hit = acl.pattern_type == PT.PREFIXED and name[: len(acl.resource_name)] == acl.resource_name
        if literal_hit or prefix_hit:
            for_resource.append(acl)
    verdicts = []
    for acl in for_resource:
        if acl.principal != principal and acl.principal != "User:*":
            continue
        if acl.host != "*" and acl.host != host:
            continue
        if acl.operation == Op.ALL or acl.operation == op:
            verdicts.append(acl.permission)
        else:
            implied = {
                Op.DESCRIBE: (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER),
                Op.DESCRIBE_CONFIGS: (Op.ALTER_CONFIGS,),
            }
            if acl.permission == Perm.ALLOW and acl.operation in implied.get(op, ()):
                verdicts.append(Perm.ALLOW)
    if Perm.DENY in verdicts:
        return False
    if Perm.ALLOW in verdicts:
        return True
    return allow_if_none and not for_resource


@settings(max_examples=400, deadline=None)
@given(
    st.lists(acls, max_size=12),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["User:alice", "User:bob", "Group:alice"]),
    st.sampled_from(["10.0.0.1", "10.0.0.2"]),
    st.sampled_from(OPERATIONS),
    st.sampled_from([RT.TOPIC, RT.GROUP]),
    st.sampled_from(["a", "ab", "abc", "b", "ba", "x"]),
    st.lists(acls, max_size=4),
)
def test_authorizer_matches_brute_force(
    all_acls: list[AclBinding],
    allow_if_none: bool,
    bob_is_super: bool,
    principal: str,
    host: str,
    op: AclOperation,
    rtype: ResourceType,
    name: str,
    removed: list[AclBinding],
) -> None:
    supers = {"User:bob"} if bob_is_super else set()
    authorizer = Authorizer(all_acls + removed, supers, allow_if_none)
    for acl in removed:
        if acl not in all_acls:
            authorizer.remove(acl)
    kept = list(dict.fromkeys(all_acls))
    expected = brute_force(kept, supers, allow_if_none, principal, host, op, rtype, name)
    assert authorizer.authorize(principal, host, op, rtype, name) == expected
    assert sorted(map(repr, authorizer.acls())) == sorted(map(repr, kept))


def acl(
    name: str,
    op: AclOperation,
    perm: AclPermissionType = Perm.ALLOW,
    principal: str = "User:alice",
    pattern: PatternType = PT.LITERAL,
    rtype: ResourceType = RT.TOPIC,
    host: str = "*",
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def test_kafka_examples() -> None:
    a = Authorizer([acl("orders", Op.READ), acl("pay", Op.WRITE, pattern=PT.PREFIXED)])
    assert a.authorize("User:alice", "1.2.3.4", Op.READ, RT.TOPIC, "orders")
    assert a.authorize("User:alice", "1.2.3.4", Op.DESCRIBE, RT.TOPIC, "orders")  # READ implies DESCRIBE
    assert not a.authorize("User:alice", "1.2.3.4", Op.WRITE, RT.TOPIC, "orders")
    assert a.authorize("User:alice", "1.2.3.4", Op.WRITE, RT.TOPIC, "payments")
    assert not a.authorize("User:bob", "1.2.3.4", Op.READ, RT.TOPIC, "orders")
    # no ACL for the resource: allow.everyone.if.no.acl.found decides
    assert not a.authorize("User:bob", "1.2.3.4", Op.READ, RT.TOPIC, "other")
    assert Authorizer(a.acls(), (), True).authorize("User:bob", "h", Op.READ, RT.TOPIC, "other")
    assert not Authorizer(a.acls(), (), True).authorize("User:bob", "h", Op.READ, RT.TOPIC, "orders")
    # deny wins; a DENY of READ does not deny DESCRIBE
    d = Authorizer([acl("*", Op.ALL), acl("orders", Op.READ, Perm.DENY)])
    assert not d.authorize("User:alice", "h", Op.READ, RT.TOPIC, "orders")
    assert d.authorize("User:alice", "h", Op.DESCRIBE, RT.TOPIC, "orders")
    assert Authorizer(d.acls(), ["User:alice"]).authorize("User:alice", "h", Op.READ, RT.TOPIC, "orders")
    # host matching
    h = Authorizer([acl("t", Op.READ, host="10.0.0.1")])
    assert h.authorize("User:alice", "10.0.0.1", Op.READ, RT.TOPIC, "t")
    assert not h.authorize("User:alice", "10.0.0.2", Op.READ, RT.TOPIC, "t")


def test_filters_as_kafka_matches_them() -> None:
    acls_ = [
        acl("orders", Op.READ),
        acl("*", Op.READ, principal="User:bob"),
        acl("ord", Op.WRITE, pattern=PT.PREFIXED),
        acl("g", Op.READ, rtype=RT.GROUP),
    ]
    a = Authorizer(acls_)
    match = AclBindingFilter(RT.TOPIC, "orders", PT.MATCH)
    assert a.acls(match) == acls_[:3]
    assert a.acls(AclBindingFilter(RT.TOPIC, "orders", PT.LITERAL)) == acls_[:1]
    assert a.acls(AclBindingFilter(RT.ANY, "orders", PT.ANY)) == acls_[:1]
    assert a.acls(AclBindingFilter(principal="User:bob")) == acls_[1:2]
    assert a.acls(AclBindingFilter(operation=Op.WRITE)) == acls_[2:3]
    assert a.acls(AclBindingFilter()) == acls_


def test_validation_messages() -> None:
    assert validate_new_acl(acl("t", Op.READ)) is None
    assert validate_new_acl(acl("t", Op.ANY)) == "Invalid operation ANY"
    # the broker's own checks come first (AclApis), then the controller's (AclControlManager)
    assert validate_new_acl(acl("", Op.READ)) == "Invalid empty resource name"
    assert validate_new_acl(acl("", Op.READ, rtype=RT.ANY)) == "Invalid empty resource name"
    cluster_only = "The only valid name for the CLUSTER resource is kafka-cluster"
    assert validate_new_acl(acl("foo", Op.ALTER, rtype=RT.CLUSTER)) == cluster_only
    assert validate_new_acl(acl("", Op.ALTER, rtype=RT.CLUSTER)) == cluster_only
    assert validate_new_acl(acl("kafka-cluster", Op.ALTER, rtype=RT.CLUSTER)) is None
    assert validate_new_acl(acl("t", Op.READ, pattern=PT.MATCH)) == "Invalid patternType MATCH"
    assert validate_new_acl(acl("t", Op.READ, rtype=RT.ANY)) == "Invalid resourceType ANY"
    assert "no colon is present" in (validate_new_acl(acl("t", Op.READ, principal="alice")) or "")


def test_authorize_by_resource_type_as_kafkas_default() -> None:
    """Kafka's ``Authorizer.authorizeByResourceType`` (InitProducerId: WRITE on some topic)."""

    def may_write_some_topic(acls_: list[AclBinding], supers: tuple[str, ...] = ()) -> bool:
        return Authorizer(acls_, supers).authorize_by_resource_type("User:alice", "h", Op.WRITE, RT.TOPIC)

    assert not may_write_some_topic([])
    assert may_write_some_topic([], ("User:alice",))
    assert may_write_some_topic([acl("orders", Op.WRITE)])
    assert may_write_some_topic([acl("*", Op.ALL)])
    assert not may_write_some_topic([acl("orders", Op.READ)])
    assert not may_write_some_topic([acl("orders", Op.WRITE), acl("orders", Op.WRITE, Perm.DENY)])
    # a DENY prefix covering the allowed name (from its first character on) denies it
    assert not may_write_some_topic(
        [acl("orders", Op.WRITE), acl("or", Op.WRITE, Perm.DENY, pattern=PT.PREFIXED)]
    )
    assert may_write_some_topic([acl("orders", Op.WRITE), acl("x", Op.WRITE, Perm.DENY, pattern=PT.PREFIXED)])
    # a DENY of "*" wins over everything, an ALLOW of "*" over any other DENY
    assert not may_write_some_topic([acl("*", Op.WRITE), acl("*", Op.WRITE, Perm.DENY)])
    assert may_write_some_topic([acl("*", Op.WRITE), acl("a", Op.WRITE, Perm.DENY, pattern=PT.PREFIXED)])
    assert not may_write_some_topic([acl("orders", Op.WRITE, principal="User:bob")])
