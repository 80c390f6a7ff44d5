"""ACLs on a live broker with confluent-kafka: CreateAcls/DescribeAcls/DeleteAcls from the admin
client, what a principal is denied (the errors Kafka answers), Metadata hiding topics, and ACLs
surviving a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from tests.security.conftest import USERS

from kgroup.testing import KafkaBroker


def client_config(kafka: KafkaBroker, user: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": kafka.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def allow(user: str, rtype: ResourceType, name: str, op: AclOperation, pattern: Any = None) -> AclBinding:
    return AclBinding(
        rtype, name, pattern or ResourcePatternType.LITERAL, f"User:{user}", "*", op, AclPermissionType.ALLOW
    )


def broker(data_dir: Path) -> KafkaBroker:
    return KafkaBroker(
        topics={"orders": 1, "secret": 1},
        data_dir=data_dir,
        listeners=["SASL_PLAINTEXT://127.0.0.1:0"],
        sasl_users=USERS,
        authorizer=True,
        super_users=["User:admin"],
        auto_create_topics=False,
    )


def produce_error(kafka: KafkaBroker, user: str, topic: str) -> Any:
    producer = confluent_kafka.Producer({**client_config(kafka, user), "message.timeout.ms": 8000})
    results: list[Any] = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: results.append(err))
    producer.flush(15)
    assert results, "no delivery report"
    return results[0]


def test_acls_enforced_and_kept(tmp_path: Path) -> None:
    with broker(tmp_path) as kafka:
        admin = AdminClient(client_config(kafka, "admin"))
        # alice may not do anything yet
        error = produce_error(kafka, "alice", "orders")
        assert error is not None and error.code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
        # ALTER on the cluster is needed to create ACLs: alice is refused
        alice_admin = AdminClient(client_config(kafka, "alice"))
        refused = alice_admin.create_acls([allow("alice", ResourceType.TOPIC, "orders", AclOperation.WRITE)])
        with pytest.raises(confluent_kafka.KafkaException) as failure:
            next(iter(refused.values())).result(timeout=15)
        assert failure.value.args[0].code() == confluent_kafka.KafkaError.CLUSTER_AUTHORIZATION_FAILED
        bindings = [
            allow("alice", ResourceType.TOPIC, "ord", AclOperation.WRITE, ResourcePatternType.PREFIXED),
            allow("alice", ResourceType.TOPIC, "orders", AclOperation.READ),
        ]
        for future in admin.create_acls(bindings).values():
            future.result(timeout=15)
        assert produce_error(kafka, "alice", "orders") is None
        # Metadata: alice sees the topics she may describe (READ/WRITE imply DESCRIBE) only
        topics = AdminClient(client_config(kafka, "alice")).list_topics(timeout=15).topics
        assert set(topics) == {"orders"}
        assert set(admin.list_topics(timeout=15).topics) >= {"orders", "secret"}
        # a consumer without READ on its group: GROUP_AUTHORIZATION_FAILED
        consumer = confluent_kafka.Consumer(
            {**client_config(kafka, "alice"), "group.id": "alice-group", "auto.offset.reset": "earliest"}
        )
        try:
            consumer.subscribe(["orders"])
            group_error = None
            for _ in range(40):
                message = consumer.poll(0.5)
                if message is not None and message.error() is not None:
                    group_error = message.error()
                    break
            assert group_error is not None
            assert group_error.code() == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
        finally:
            consumer.close()
        described = admin.describe_acls(
            AclBindingFilter(
                ResourceType.ANY,
                None,
                ResourcePatternType.ANY,
                None,
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        ).result(timeout=15)
        assert sorted(map(str, described)) == sorted(map(str, bindings))
    with broker(tmp_path) as kafka:  # the ACLs survived the restart
        admin = AdminClient(client_config(kafka, "admin"))
        match_all = AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        assert len(admin.describe_acls(match_all).result(timeout=15)) == 2
        assert produce_error(kafka, "alice", "orders") is None
        deleted = next(iter(admin.delete_acls([match_all]).values())).result(timeout=15)
        assert len(deleted) == 2
        error = produce_error(kafka, "alice", "orders")
        assert error is not None and error.code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_group_listing_describing_and_deleting_follow_acls(tmp_path: Path) -> None:
    with broker(tmp_path) as kafka:
        admin = AdminClient(client_config(kafka, "admin"))
        committer = confluent_kafka.Consumer({**client_config(kafka, "admin"), "group.id": "g1"})
        try:
            committer.commit(offsets=[confluent_kafka.TopicPartition("orders", 0, 0)], asynchronous=False)
        finally:
            committer.close()
        alice = AdminClient(client_config(kafka, "alice"))

        def listed(client: AdminClient) -> set[str]:
            result = client.list_consumer_groups().result(timeout=15)
            return {g.group_id for g in result.valid}

        assert "g1" in listed(admin)
        assert "g1" not in listed(alice)
        with pytest.raises(confluent_kafka.KafkaException) as failure:
            alice.describe_consumer_groups(["g1"])["g1"].result(timeout=15)
        assert failure.value.args[0].code() == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
        with pytest.raises(confluent_kafka.KafkaException) as failure:
            alice.delete_consumer_groups(["g1"])["g1"].result(timeout=15)
        assert failure.value.args[0].code() == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
        for future in admin.create_acls(
            [allow("alice", ResourceType.GROUP, "g", AclOperation.DESCRIBE, ResourcePatternType.PREFIXED)]
        ).values():
            future.result(timeout=15)
        assert "g1" in listed(alice)
        assert alice.describe_consumer_groups(["g1"])["g1"].result(timeout=15).group_id == "g1"


def test_acl_requests_without_an_authorizer_answer_security_disabled() -> None:
    with KafkaBroker(listeners=["SASL_PLAINTEXT://127.0.0.1:0"], sasl_users=USERS) as kafka:
        admin = AdminClient(client_config(kafka, "alice"))
        created = admin.create_acls([allow("alice", ResourceType.TOPIC, "orders", AclOperation.READ)])
        with pytest.raises(confluent_kafka.KafkaException) as failure:
            next(iter(created.values())).result(timeout=15)
        assert failure.value.args[0].code() == confluent_kafka.KafkaError.SECURITY_DISABLED


def test_create_partitions_needs_alter_on_the_topic(tmp_path: Path) -> None:
    """CreatePartitions: ALTER on the topic (Kafka's ``ControllerApis``), TOPIC_AUTHORIZATION_FAILED
    otherwise, whether or not the topic exists; a topic alice may alter is grown."""
    from confluent_kafka.admin import NewPartitions

    with broker(tmp_path) as kafka:
        admin = AdminClient(client_config(kafka, "admin"))
        for future in admin.create_acls(
            [allow("alice", ResourceType.TOPIC, "orders", AclOperation.ALTER)]
        ).values():
            future.result(timeout=15)
        alice = AdminClient(client_config(kafka, "alice"))
        futures = alice.create_partitions(
            [NewPartitions("orders", 3), NewPartitions("secret", 3), NewPartitions("nowhere", 3)]
        )
        futures["orders"].result(timeout=15)
        for name in ("secret", "nowhere"):
            with pytest.raises(confluent_kafka.KafkaException) as failure:
                futures[name].result(timeout=15)
            assert failure.value.args[0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
        topics = admin.list_topics(timeout=15).topics
        assert (len(topics["orders"].partitions), len(topics["secret"].partitions)) == (3, 1)
