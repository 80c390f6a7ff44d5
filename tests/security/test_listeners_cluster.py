"""Several listeners on a cluster of brokers: a client is told the addresses of the listener it came
through (Kafka advertises per listener), so it reaches every partition leader over that listener."""

from __future__ import annotations

import confluent_kafka
from confluent_kafka.admin import AdminClient
from tests.security.conftest import USERS

from kgroup.testing import KafkaBroker


def test_each_listener_advertises_its_own_ports() -> None:
    with KafkaBroker(
        topics={"spread": 6},
        brokers=3,
        listeners=["INTERNAL://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"],
        listener_security_protocol_map="INTERNAL:PLAINTEXT",
        sasl_users=USERS,
    ) as kafka:
        sasl = kafka.listener_bootstrap_servers("SASL_PLAINTEXT")
        internal = kafka.listener_bootstrap_servers("INTERNAL")
        assert set(sasl.split(",")).isdisjoint(internal.split(","))
        config = {
            "bootstrap.servers": sasl.split(",")[0],
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": USERS["alice"],
        }
        brokers = AdminClient(config).list_topics(timeout=15).brokers
        assert sorted(f"{b.host}:{b.port}" for b in brokers.values()) == sorted(sasl.split(","))
        plain = AdminClient({"bootstrap.servers": internal.split(",")[0]}).list_topics(timeout=15).brokers
        assert sorted(f"{b.host}:{b.port}" for b in plain.values()) == sorted(internal.split(","))
        producer = confluent_kafka.Producer(config)
        reports: list[object] = []
        for partition in range(6):
            producer.produce(
                "spread", b"v", partition=partition, on_delivery=lambda err, msg: reports.append(err)
            )
        assert producer.flush(20) == 0
        assert reports == [None] * 6
