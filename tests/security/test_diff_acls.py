"""The same denied (and allowed) operations against kgroup and Apache Kafka 4.4.0 with the same ACLs:
the same error for each (confluent-kafka as the client, SASL/PLAIN, StandardAuthorizer on Kafka)."""

from __future__ import annotations

import time
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from tests.broker.rawclient import RawClient
from tests.broker.rawdata import fetch_request
from tests.security.apache_sasl import SaslApacheKafka
from tests.security.conftest import USERS

from kgroup.testing import KafkaBroker
from kgroup.wire.codec import build, request_class

TOPICS = ["d-write", "d-read", "d-none"]


def config(bootstrap: str, user: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def acl(rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        rtype, name, ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW
    )


def _code(error: Any) -> str:
    if error is None:
        return "NONE"
    if isinstance(error, confluent_kafka.KafkaException):
        error = error.args[0]
    return str(error.name())


TRANSIENT = {"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"}


def _commit(consumer: confluent_kafka.Consumer, topic: str) -> str:
    """A synchronous commit's outcome, past the coordinator's start-up (Apache Kafka creates
    ``__consumer_offsets`` on the first FindCoordinator and answers NOT_COORDINATOR meanwhile)."""
    outcome = "not tried"
    for _ in range(20):
        try:
            consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, 0, 0)], asynchronous=False)
            return "NONE"
        except confluent_kafka.KafkaException as exc:
            outcome = _code(exc)
        if outcome not in TRANSIENT:
            return outcome
        time.sleep(0.5)
    return outcome


def raw_requests(bootstrap: str) -> dict[str, Any]:
    """Fetch, ListOffsets and Metadata of named topics on a raw connection authenticated as alice:
    the per-partition / per-topic error codes (which clients retry or hide)."""
    seen: dict[str, Any] = {}
    with RawClient(bootstrap) as raw:
        raw.request(build(request_class(17, 1), {"mechanism": "PLAIN"}))
        answer = raw.request(
            build(request_class(36, 2), {"auth_bytes": f"\0alice\0{USERS['alice']}".encode()})
        )
        assert answer.error_code == 0
        fetched = raw.request(fetch_request([("d-read", 0, 0), ("d-none", 0, 0)]))
        seen["fetch"] = {t.topic: [int(p.error_code) for p in t.partitions] for t in fetched.responses}
        offsets = raw.request(
            build(
                request_class(2, 7),
                {
                    "replica_id": -1,
                    "isolation_level": 0,
                    "topics": [
                        {
                            "name": name,
                            "partitions": [
                                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                            ],
                        }
                        for name in ("d-read", "d-none")
                    ],
                },
            )
        )
        seen["list offsets"] = {t.name: [int(p.error_code) for p in t.partitions] for t in offsets.topics}
        metadata = raw.request(
            build(
                request_class(3, 12),
                {
                    "topics": [{"topic_id": None, "name": n} for n in ("d-read", "d-none", "d-missing")],
                    "allow_auto_topic_creation": True,
                    "include_topic_authorized_operations": False,
                },
            )
        )
        seen["metadata named"] = {t.name: int(t.error_code) for t in metadata.topics}
        seen.update(group_topic_requests(raw))
        seen.update(txn_offset_commit_requests(raw))
        seen.update(share_requests(raw, _topic_ids_as_admin(bootstrap)))
    return seen


def txn_offset_commit_requests(raw: RawClient) -> dict[str, Any]:
    """As alice, TxnOffsetCommit v3 (KafkaApis' order: the transactional id's WRITE, the group's READ,
    each topic's READ): a transactional id she may not write, a group she may not read, and a topic she
    may not read beside one she may (that one then answered by the coordinator: the producer is
    unknown)."""
    seen: dict[str, Any] = {}
    for what, txn, group in (
        ("txn offset commit d-tx-none", "d-tx-none", "d-group-ok"),
        ("txn offset commit d-group-denied", "d-tx", "d-group-denied"),
        ("txn offset commit d-group-ok", "d-tx", "d-group-ok"),
    ):
        answer = raw.request(
            build(
                request_class(28, 3),
                {
                    "transactional_id": txn,
                    "group_id": group,
                    "producer_id": 4242,
                    "producer_epoch": 0,
                    "generation_id": -1,
                    "member_id": "",
                    "group_instance_id": None,
                    "topics": _commit_topics(),
                },
            )
        )
        seen[what] = _commit_layout(answer)
    for group in ("d-group-denied", "d-group-ok"):
        answer = raw.request(
            build(
                request_class(8, 8),
                {
                    "group_id": group,
                    "generation_id_or_member_epoch": -1,
                    "member_id": "",
                    "group_instance_id": None,
                    "topics": _commit_topics(),
                },
            )
        )
        seen[f"offset commit {group}"] = _commit_layout(answer)
    return seen


def _commit_topics() -> list[dict[str, Any]]:
    """An (Txn)OffsetCommit's topics: partition 0 of a topic alice may read and of one she may not,
    and an entry without partitions of a topic that does not exist (answered empty by a refusal)."""
    partition = {
        "partition_index": 0,
        "committed_offset": 1,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    return [
        {"name": name, "partitions": [partition] if name != "d-missing" else []}
        for name in ("d-read", "d-none", "d-missing")
    ]


def _commit_layout(answer: Any) -> list[tuple[str, list[int]]]:
    return [(t.name, [int(p.error_code) for p in t.partitions]) for t in answer.topics]


def _topic_ids_as_admin(bootstrap: str) -> dict[str, Any]:
    with RawClient(bootstrap) as raw:
        raw.request(build(request_class(17, 1), {"mechanism": "PLAIN"}))
        raw.request(build(request_class(36, 2), {"auth_bytes": f"\0admin\0{USERS['admin']}".encode()}))
        answer = raw.request(
            build(
                request_class(3, 12),
                {
                    "topics": [{"topic_id": None, "name": n} for n in ("d-read", "d-none")],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
        )
    return {t.name: t.topic_id for t in answer.topics}


def share_requests(raw: RawClient, topic_ids: dict[str, Any]) -> dict[str, Any]:
    """As alice: ShareFetch (READ on the group, then READ on each topic) and ShareAcknowledge in a
    group alice may not read, and ShareFetch of a topic alice may not read in one she may."""
    import uuid

    seen: dict[str, Any] = {}

    def share_fetch(group: str, topics: list[str]) -> Any:
        return raw.request(
            build(
                request_class(78, 1),
                {
                    "group_id": group,
                    "member_id": str(uuid.uuid4()),
                    "share_session_epoch": 0,
                    "max_wait": 0,
                    "min_bytes": 1,
                    "max_bytes": 1 << 20,
                    "max_records": 10,
                    "batch_size": 10,
                    "topics": [
                        {
                            "topic_id": topic_ids[t],
                            "partitions": [{"partition_index": 0, "acknowledgement_batches": []}],
                        }
                        for t in topics
                    ],
                    "forgotten_topics_data": [],
                },
            )
        )

    denied = share_fetch("d-group-denied", ["d-read"])
    seen["share fetch d-group-denied"] = (int(denied.error_code), len(denied.responses))
    acknowledged = raw.request(
        build(
            request_class(79, 1),
            {
                "group_id": "d-group-denied",
                "member_id": str(uuid.uuid4()),
                "share_session_epoch": 1,
                "topics": [],
            },
        )
    )
    seen["share acknowledge d-group-denied"] = int(acknowledged.error_code)
    topic_denied = share_fetch("d-group-ok", ["d-none"])
    seen["share fetch d-group-ok [d-none]"] = (
        int(topic_denied.error_code),
        [int(p.error_code) for t in topic_denied.responses for p in t.partitions],
    )
    return seen


def _offsets(topics: Any) -> dict[str, list[tuple[int, int, int]]]:
    return {
        t.name: [(int(p.partition_index), int(p.committed_offset), int(p.error_code)) for p in t.partitions]
        for t in topics
    }


def group_topic_requests(raw: RawClient) -> dict[str, Any]:
    """As alice: DescribeConfigs (DESCRIBE_CONFIGS on topics and the cluster), OffsetFetch of named
    and of all topics (DESCRIBE on each topic), ConsumerGroupHeartbeat subscribing to a topic alice
    may or may not describe."""
    seen: dict[str, Any] = {}
    configs = raw.request(
        build(
            request_class(32, 4),
            {
                "resources": [
                    {"resource_type": rtype, "resource_name": name, "configuration_keys": ["cleanup.policy"]}
                    for rtype, name in ((2, "d-write"), (2, "d-read"), (4, "1"), (2, "d-none"))
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )
    )
    seen["describe configs"] = [
        (int(r.resource_type), r.resource_name, int(r.error_code), r.error_message, len(r.configs))
        for r in configs.results
    ]
    # what alice may do, as the authorizer says (AuthHelper.authorizedOperations): topics, cluster, group
    with_ops = raw.request(
        build(
            request_class(3, 10),
            {
                "topics": [{"topic_id": None, "name": n} for n in ("d-read", "d-write", "d-none")],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": True,
                "include_topic_authorized_operations": True,
            },
        )
    )
    seen["metadata authorized operations"] = (
        int(with_ops.cluster_authorized_operations),
        {t.name: (int(t.error_code), int(t.topic_authorized_operations)) for t in with_ops.topics},
    )
    groups_ops = raw.request(
        build(
            request_class(15, 5),
            {"groups": ["d-group-ok", "d-group-denied"], "include_authorized_operations": True},
        )
    )
    seen["describe groups authorized operations"] = {
        g.group_id: (int(g.error_code), int(g.authorized_operations)) for g in groups_ops.groups
    }
    described = raw.request(
        build(request_class(69, 0), {"group_ids": ["d-group-denied"], "include_authorized_operations": False})
    )
    seen["consumer group describe denied"] = [(int(g.error_code), g.error_message) for g in described.groups]
    named = [{"name": n, "partition_indexes": [0]} for n in ("d-none", "d-read")]
    v8 = raw.request(
        build(
            request_class(9, 8),
            {
                "groups": [
                    {"group_id": "d-group-ok", "topics": named},
                    {"group_id": "d-group-ok", "topics": None},
                ],
                "require_stable": False,
            },
        )
    )
    seen["offset fetch v8 named"] = (int(v8.groups[0].error_code), _offsets(v8.groups[0].topics))
    seen["offset fetch v8 all"] = (int(v8.groups[1].error_code), _offsets(v8.groups[1].topics))
    v7 = raw.request(
        build(request_class(9, 7), {"group_id": "d-group-ok", "topics": named, "require_stable": False})
    )
    seen["offset fetch v7 named"] = (int(v7.error_code), _offsets(v7.topics))
    for group, topic in (("d-group-hb", "d-none"), ("d-group-denied", "d-none"), ("d-group-hb", "d-read")):
        answer = raw.request(
            build(
                request_class(68, 0),
                {
                    "group_id": group,
                    "member_id": "",
                    "member_epoch": 0,
                    "instance_id": None,
                    "rack_id": None,
                    "rebalance_timeout": 30_000,
                    "subscribed_topic_names": [topic],
                    "server_assignor": None,
                    "topic_partitions": [],
                },
            )
        )
        seen[f"consumer heartbeat {group} [{topic}]"] = (int(answer.error_code), answer.error_message)
        if int(answer.error_code) == 0:  # leave the group again
            raw.request(
                build(
                    request_class(68, 0),
                    {
                        "group_id": group,
                        "member_id": answer.member_id,
                        "member_epoch": -1,
                        "instance_id": None,
                        "rack_id": None,
                        "rebalance_timeout": -1,
                        "subscribed_topic_names": None,
                        "server_assignor": None,
                        "topic_partitions": None,
                    },
                )
            )
    seen["regex heartbeat d-group-hb [d-.*] assigned"] = _regex_assignment(raw)
    # invalid (a first heartbeat without subscription / without rebalance timeout) and denied: which
    # check answers first
    for group, topics, timeout in (("d-group-denied", None, 30_000), ("d-group-hb", ["d-none"], -1)):
        answer = raw.request(
            build(
                request_class(68, 0),
                {
                    "group_id": group,
                    "member_id": "",
                    "member_epoch": 0,
                    "instance_id": None,
                    "rack_id": None,
                    "rebalance_timeout": timeout,
                    "subscribed_topic_names": topics,
                    "server_assignor": None,
                    "topic_partitions": [],
                },
            )
        )
        seen[f"invalid consumer heartbeat {group} {topics}"] = (int(answer.error_code), answer.error_message)
    return seen


def _regex_heartbeat(raw: RawClient, member_id: str, epoch: int, regex: str | None) -> Any:
    return raw.request(
        build(
            request_class(68, 1),
            {
                "group_id": "d-group-hb",
                "member_id": member_id,
                "member_epoch": epoch,
                "instance_id": None,
                "rack_id": None,
                "rebalance_timeout": 30_000 if epoch == 0 else -1,
                "subscribed_topic_names": None,
                "subscribed_topic_regex": regex,
                "server_assignor": None,
                "topic_partitions": [] if epoch == 0 else None,
            },
        )
    )


def _regex_assignment(raw: RawClient) -> list[str]:
    """As alice, subscribed with ``d-.*``: the topics assigned once the regex is resolved. Kafka
    resolves a regex in the context of the member whose heartbeat asked, keeping only the topics it
    may describe (``TopicRegexResolver.filterTopicDescribeAuthorizedTopics``): d-write and d-read,
    not d-none."""
    import uuid

    member = str(uuid.uuid4())
    answer = _regex_heartbeat(raw, member, 0, "d-.*")
    assert int(answer.error_code) == 0, answer
    epoch, assigned = answer.member_epoch, []
    deadline = time.monotonic() + 30
    while not assigned and time.monotonic() < deadline:
        time.sleep(0.5)
        answer = _regex_heartbeat(raw, member, epoch, None)
        assert int(answer.error_code) == 0, answer
        epoch = answer.member_epoch
        if answer.assignment is not None:
            assigned = [t.topic_id for t in answer.assignment.topic_partitions]
    metadata = raw.request(
        build(
            request_class(3, 12),
            {
                "topics": [{"topic_id": None, "name": n} for n in TOPICS],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
    )
    names = {t.topic_id: t.name for t in metadata.topics}
    _regex_heartbeat(raw, member, -1, None)  # leaves
    return sorted(names.get(topic_id, "a topic alice may not describe") for topic_id in assigned)


def scenario(bootstrap: str) -> dict[str, Any]:
    """Set up topics and ACLs as admin, then try each operation as alice; the observed errors."""
    admin = AdminClient(config(bootstrap, "admin"))
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS]).values():
        future.result(timeout=30)
    grants = [
        acl(ResourceType.TOPIC, "d-write", AclOperation.WRITE),
        acl(ResourceType.TOPIC, "d-read", AclOperation.READ),
        acl(ResourceType.GROUP, "d-group-ok", AclOperation.READ),
        acl(ResourceType.GROUP, "d-group-hb", AclOperation.READ),
        acl(ResourceType.TOPIC, "d-write", AclOperation.DESCRIBE_CONFIGS),
        acl(ResourceType.TRANSACTIONAL_ID, "d-tx", AclOperation.WRITE),
    ]
    for future in admin.create_acls(grants).values():
        future.result(timeout=30)
    time.sleep(1.0)  # Apache Kafka applies ACLs from its metadata log
    seen: dict[str, Any] = {}
    # ACLs the broker refuses before the controller sees them (issue 35): a CLUSTER resource named
    # other than kafka-cluster, an empty resource name
    for what, rtype, name in (
        ("cluster acl named foo", ResourceType.BROKER, "foo"),
        ("topic acl with an empty name", ResourceType.TOPIC, ""),
        ("cluster acl with an empty name", ResourceType.BROKER, ""),
    ):
        try:
            next(iter(admin.create_acls([acl(rtype, name, AclOperation.ALTER)]).values())).result(timeout=20)
            seen[what] = "NONE"
        except confluent_kafka.KafkaException as exc:
            error = exc.args[0]
            seen[what] = (_code(exc), error.str())
    alice = config(bootstrap, "alice")
    for topic in ("d-write", "d-read", "d-none"):
        producer = confluent_kafka.Producer({**alice, "message.timeout.ms": 10000})
        reports: list[Any] = []
        producer.produce(topic, b"v", on_delivery=lambda err, msg, into=reports: into.append(err))
        producer.flush(20)
        seen[f"produce {topic}"] = _code(reports[0]) if reports else "no report"
    idempotent = confluent_kafka.Producer({**alice, "enable.idempotence": True, "message.timeout.ms": 10000})
    reports_idempotent: list[Any] = []
    idempotent.produce("d-write", b"v", on_delivery=lambda err, msg: reports_idempotent.append(err))
    idempotent.flush(20)
    seen["idempotent produce d-write"] = _code(reports_idempotent[0]) if reports_idempotent else "no report"
    # an offset of a topic alice may not describe, committed by admin: OffsetFetch hides it from alice
    committer = confluent_kafka.Consumer(
        {**config(bootstrap, "admin"), "group.id": "d-group-ok", "enable.auto.commit": False}
    )
    try:
        seen["admin commit d-none"] = _commit(committer, "d-none")
    finally:
        committer.close()
    for topic in ("d-read", "d-none"):
        consumer = confluent_kafka.Consumer({**alice, "group.id": "d-group-ok", "enable.auto.commit": False})
        try:
            seen[f"commit {topic}"] = _commit(consumer, topic)
        finally:
            consumer.close()
    for protocol in ("classic", "consumer"):
        consumer = confluent_kafka.Consumer(
            {**alice, "group.id": "d-group-denied", "group.protocol": protocol}
        )
        try:
            consumer.subscribe(["d-read"])
            outcome = "nothing"
            for _ in range(40):
                message = consumer.poll(0.5)
                if message is not None and message.error() is not None:
                    outcome = _code(message.error())
                    break
            seen[f"join d-group-denied ({protocol})"] = outcome
        finally:
            consumer.close()
    seen.update(raw_requests(bootstrap))
    alice_admin = AdminClient(alice)
    listed = alice_admin.list_topics(timeout=20)
    seen["metadata"] = sorted(t for t in listed.topics if t in TOPICS)
    created = alice_admin.create_topics([NewTopic("d-new", 1, 1)])
    try:
        created["d-new"].result(timeout=20)
        seen["create topic"] = "NONE"
    except confluent_kafka.KafkaException as exc:
        seen["create topic"] = _code(exc)
    try:
        alice_admin.delete_topics(["d-read"])["d-read"].result(timeout=20)
        seen["delete topic"] = "NONE"
    except confluent_kafka.KafkaException as exc:
        seen["delete topic"] = _code(exc)
    try:
        alice_admin.describe_consumer_groups(["d-group-denied"])["d-group-denied"].result(timeout=20)
        seen["describe group"] = "NONE"
    except confluent_kafka.KafkaException as exc:
        seen["describe group"] = _code(exc)
    try:
        next(
            iter(alice_admin.create_acls([acl(ResourceType.TOPIC, "x", AclOperation.READ)]).values())
        ).result(timeout=20)
        seen["create acls"] = "NONE"
    except confluent_kafka.KafkaException as exc:
        seen["create acls"] = _code(exc)
    return seen


@pytest.mark.apache_kafka
def test_denied_operations_match_apache_kafka(apache_sasl: SaslApacheKafka) -> None:
    with KafkaBroker(
        listeners=["SASL_PLAINTEXT://127.0.0.1:0"],
        sasl_users=USERS,
        authorizer=True,
        super_users=["User:admin"],
        auto_create_topics=False,
    ) as kgroup_broker:
        ours = scenario(kgroup_broker.bootstrap_servers)
    theirs = scenario(apache_sasl.sasl_bootstrap)
    assert ours == theirs
    # and the table holds denials, not only successes
    assert theirs["produce d-none"] == "TOPIC_AUTHORIZATION_FAILED"
    assert theirs["join d-group-denied (classic)"] == "GROUP_AUTHORIZATION_FAILED"
    assert theirs["join d-group-denied (consumer)"] == "GROUP_AUTHORIZATION_FAILED"
    assert theirs["create acls"] == "CLUSTER_AUTHORIZATION_FAILED"
    assert theirs["fetch"] == {"d-read": [0], "d-none": [29]}
    assert [row[2] for row in theirs["describe configs"]] == [0, 29, 31, 29]
    assert theirs["offset fetch v8 named"][1]["d-none"] == [(0, -1, 29)]
    assert "d-none" not in theirs["offset fetch v8 all"][1]
    assert theirs["consumer heartbeat d-group-hb [d-none]"] == (29, None)
    assert theirs["cluster acl named foo"][0] == "INVALID_REQUEST"
    assert theirs["regex heartbeat d-group-hb [d-.*] assigned"] == ["d-read", "d-write"]
    # a whole-request refusal answers the entry without partitions too (getErrorResponse); else it is
    # answered (empty) among the topics refused aside, before the coordinator's answers
    assert theirs["txn offset commit d-tx-none"] == [("d-read", [53]), ("d-none", [53]), ("d-missing", [])]
    assert theirs["txn offset commit d-group-denied"] == [
        ("d-read", [30]),
        ("d-none", [30]),
        ("d-missing", []),
    ]
    assert [name for name, _ in theirs["txn offset commit d-group-ok"]] == ["d-none", "d-missing", "d-read"]
    assert dict(theirs["txn offset commit d-group-ok"])["d-none"] == [29]
    assert theirs["offset commit d-group-denied"] == [("d-read", [30]), ("d-none", [30]), ("d-missing", [])]
    assert theirs["offset commit d-group-ok"] == [("d-none", [29]), ("d-missing", []), ("d-read", [0])]
    assert theirs["metadata authorized operations"][1]["d-none"][0] == 29
    read_ops = theirs["metadata authorized operations"][1]["d-read"][1]
    assert read_ops & (1 << 3) and read_ops not in (-(2**31), 3576)  # READ (and what it implies), not all
    assert theirs["describe groups authorized operations"]["d-group-denied"] == (30, -(2**31))
    assert theirs["share fetch d-group-denied"] == (30, 0)
    assert theirs["share acknowledge d-group-denied"] == 30
    assert theirs["share fetch d-group-ok [d-none]"] == (0, [29])
