"""Apache Kafka's Java producer (the pinned kafka-clients) against the secured listeners, with the
settings docs/security.md gives: SCRAM over SASL_SSL with a PEM trust store, PLAIN over
SASL_PLAINTEXT, and a wrong password failing with Kafka's own message."""

from __future__ import annotations

from typing import Any

import pytest
from tests.security.conftest import USERS

from kgroup.security.testca import CaFiles
from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka import require_apache_kafka
from kgroup.testing.apache_kafka.java_client import JavaClientError, JavaProducer


def java_config(ca: CaFiles, protocol: str, mechanism: str, password: str) -> dict[str, Any]:
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    config: dict[str, Any] = {
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f"org.apache.kafka.common.security.{module} required "
        f'username="alice" password="{password}";',
        "max.block.ms": 15000,
        "delivery.timeout.ms": 20000,
        "request.timeout.ms": 10000,
    }
    if protocol == "SASL_SSL":
        config.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.ca_cert)})
    return config


@pytest.mark.parametrize(
    ("protocol", "mechanism"), [("SASL_SSL", "SCRAM-SHA-512"), ("SASL_PLAINTEXT", "PLAIN")]
)
def test_java_producer(secure_broker: KafkaBroker, test_ca: CaFiles, protocol: str, mechanism: str) -> None:
    require_apache_kafka()
    bootstrap = secure_broker.listener_bootstrap_servers(protocol)
    with JavaProducer(
        bootstrap, config=java_config(test_ca, protocol, mechanism, USERS["alice"])
    ) as producer:
        sent = producer.send_records("orders", [("k", "java")])
    assert len(sent) == 1 and sent[0].offset >= 0


def test_java_producer_wrong_password(secure_broker: KafkaBroker, test_ca: CaFiles) -> None:
    require_apache_kafka()
    bootstrap = secure_broker.listener_bootstrap_servers("SASL_SSL")
    with (
        JavaProducer(
            bootstrap, config=java_config(test_ca, "SASL_SSL", "SCRAM-SHA-256", "wrong")
        ) as producer,
        pytest.raises(JavaClientError) as failure,
    ):
        producer.send_records("orders", [("k", "never")], timeout_s=60)
    kafka_message = (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism "
        "SCRAM-SHA-256"
    )
    assert kafka_message in str(failure.value)
