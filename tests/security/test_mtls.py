"""Mutual TLS: the client certificate's subject is the principal ACLs name (Kafka's
``User:CN=…,O=…``), and ``ssl.client.auth=required`` refuses a client without a certificate."""

from __future__ import annotations

from typing import Any

import confluent_kafka

from kgroup.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from kgroup.security.testca import CaFiles
from kgroup.testing import KafkaBroker


def produce(config: dict[str, Any], topic: str) -> str:
    """The delivery report's error name ("NONE" when delivered)."""
    reports: list[str] = []
    producer = confluent_kafka.Producer({**config, "message.timeout.ms": 6000})
    producer.produce(
        topic, b"v", on_delivery=lambda err, msg: reports.append("NONE" if err is None else str(err.name()))
    )
    producer.flush(10)
    return reports[0] if reports else "no report"


def test_certificate_subject_is_the_principal(test_ca: CaFiles) -> None:
    with KafkaBroker(
        topics={"orders": 1, "other": 1},
        listeners=["SSL://127.0.0.1:0"],
        ssl_certfile=test_ca.server_cert,
        ssl_keyfile=test_ca.server_key,
        ssl_cafile=test_ca.ca_cert,
        ssl_client_auth="required",
        authorizer=True,
    ) as kafka:
        grant = AclBinding(
            ResourceType.TOPIC,
            "orders",
            PatternType.LITERAL,
            "User:CN=alice,O=kgroup test",
            "*",
            AclOperation.WRITE,
            AclPermissionType.ALLOW,
        )

        async def add() -> None:
            kafka.broker.security.authorizer.add(grant)

        kafka.run_in_loop(add())
        cert, key = test_ca.clients["alice"]
        base = {
            "bootstrap.servers": kafka.bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.ca.location": str(test_ca.ca_cert),
        }
        alice = {**base, "ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
        assert produce(alice, "orders") == "NONE"
        assert produce(alice, "other") == "TOPIC_AUTHORIZATION_FAILED"
        # no client certificate: every TLS handshake fails, the record is never delivered
        assert produce(base, "orders") == "_MSG_TIMED_OUT"
