"""A test CA and brokers with every listener kind for the security tests; one Apache Kafka 4.4.0
with a SASL listener (PLAIN and both SCRAM mechanisms, ACLs on) for the whole session, shared by the
differential tests (each marks itself ``apache_kafka``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.security.apache_sasl import AUTHORIZER, SaslApacheKafka

from kafka_python_sockets import _collect_refused_client_sockets  # noqa: F401  (an autouse fixture)
from kgroup.security.testca import CaFiles, make_test_ca
from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka import require_apache_kafka

USERS = {"alice": "alice-secret-7Qx", "bob": "bob-secret-9Zw", "admin": "admin-secret-3Kp"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LISTENERS = [
    "PLAINTEXT://127.0.0.1:0",
    "SSL://127.0.0.1:0",
    "SASL_PLAINTEXT://127.0.0.1:0",
    "SASL_SSL://127.0.0.1:0",
]


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> CaFiles:
    return make_test_ca(Path(tmp_path_factory.mktemp("ca")), clients=("alice",))


@pytest.fixture(scope="module")
def secure_broker(test_ca: CaFiles) -> Iterator[KafkaBroker]:
    """All four listener kinds on one broker; client certificates requested (not required)."""
    with KafkaBroker(
        topics={"orders": 1},
        listeners=LISTENERS,
        ssl_certfile=test_ca.server_cert,
        ssl_keyfile=test_ca.server_key,
        ssl_cafile=test_ca.ca_cert,
        ssl_client_auth="requested",
        sasl_users=USERS,
        failed_authentication_delay_ms=50,
    ) as kafka:
        yield kafka


@pytest.fixture(scope="session")
def apache_sasl() -> Iterator[SaslApacheKafka]:
    """Apache Kafka with StandardAuthorizer (``User:admin`` and the PLAINTEXT listener's
    ``User:ANONYMOUS`` are super users), no topic auto-creation, ``USERS`` for every mechanism,
    OAUTHBEARER with unsecured tokens, and a topic ``orders``."""
    require_apache_kafka()
    kafka = SaslApacheKafka(
        USERS,
        mechanisms=(*MECHANISMS, "OAUTHBEARER"),
        configs={
            "authorizer.class.name": AUTHORIZER,
            "super.users": "User:ANONYMOUS;User:admin",
            "auto.create.topics.enable": "false",
        },
    )
    kafka.start()
    try:
        kafka.add_scram_users(MECHANISMS[1:])
        kafka.create_topic("orders", 1)
        yield kafka
    finally:
        kafka.stop()
