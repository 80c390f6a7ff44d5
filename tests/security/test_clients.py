"""Real clients over every listener kind and SASL mechanism: confluent-kafka (librdkafka),
kafka-python and aiokafka succeed with the right credentials and fail cleanly with wrong ones."""

from __future__ import annotations

import asyncio
import gc
import logging
import warnings
from typing import Any

import confluent_kafka
import pytest
from tests.security.conftest import USERS

from kgroup.security.testca import CaFiles
from kgroup.testing import KafkaBroker

pytestmark = pytest.mark.filterwarnings(r"ignore:.* is deprecated. Use files\(\) instead:DeprecationWarning")

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
CASES = [("PLAINTEXT", None), ("SSL", None)] + [
    (protocol, mechanism) for protocol in ("SASL_PLAINTEXT", "SASL_SSL") for mechanism in MECHANISMS
]
WRONG = [(protocol, mechanism) for protocol in ("SASL_PLAINTEXT", "SASL_SSL") for mechanism in MECHANISMS]
KAFKA_MESSAGE = {
    "PLAIN": "Authentication failed: Invalid username or password",
    "SCRAM-SHA-256": "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-256",
    "SCRAM-SHA-512": "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-512",
}


def confluent_config(
    kafka: KafkaBroker, ca: CaFiles, protocol: str, mechanism: str | None, password: str
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": kafka.listener_bootstrap_servers(protocol),
        "security.protocol": protocol,
    }
    if "SSL" in protocol:
        config["ssl.ca.location"] = str(ca.ca_cert)
    if mechanism is not None:
        config.update({"sasl.mechanisms": mechanism, "sasl.username": "alice", "sasl.password": password})
    return config


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_confluent_kafka_round_trip(
    secure_broker: KafkaBroker, test_ca: CaFiles, protocol: str, mechanism: str | None
) -> None:
    config = confluent_config(secure_broker, test_ca, protocol, mechanism, USERS["alice"])
    producer = confluent_kafka.Producer(config)
    value = f"{protocol}/{mechanism}".encode()
    delivered: list[Any] = []
    producer.produce("orders", value, on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    assert producer.flush(15) == 0
    assert delivered and delivered[0][0] is None
    offset = delivered[0][1]
    consumer = confluent_kafka.Consumer({**config, "group.id": f"g-{protocol}-{mechanism}"})
    try:
        consumer.assign([confluent_kafka.TopicPartition("orders", 0, offset)])
        message = None
        for _ in range(50):
            message = consumer.poll(0.3)
            if message is not None:
                break
        assert message is not None and message.error() is None
        assert message.value() == value
    finally:
        consumer.close()


@pytest.mark.parametrize(("protocol", "mechanism"), WRONG)
def test_confluent_kafka_wrong_password(
    secure_broker: KafkaBroker, test_ca: CaFiles, protocol: str, mechanism: str
) -> None:
    errors: list[confluent_kafka.KafkaError] = []
    config = confluent_config(secure_broker, test_ca, protocol, mechanism, "not-the-password")
    config["error_cb"] = errors.append
    producer = confluent_kafka.Producer(config)
    producer.produce("orders", b"never")
    for _ in range(50):
        producer.poll(0.2)
        if any(e.code() == confluent_kafka.KafkaError._AUTHENTICATION for e in errors):
            break
    producer.purge()
    producer.flush(1)
    auth = [e for e in errors if e.code() == confluent_kafka.KafkaError._AUTHENTICATION]
    assert auth, errors
    assert KAFKA_MESSAGE[mechanism] in auth[0].str()


def kafka_python_config(
    kafka: KafkaBroker, ca: CaFiles, protocol: str, mechanism: str | None, password: str
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap_servers": kafka.listener_bootstrap_servers(protocol),
        "security_protocol": protocol,
        "request_timeout_ms": 5000,
        "max_block_ms": 5000,
    }
    if "SSL" in protocol:
        config["ssl_cafile"] = str(ca.ca_cert)
    if mechanism is not None:
        config.update(sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password=password)
    return config


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_kafka_python(
    secure_broker: KafkaBroker, test_ca: CaFiles, protocol: str, mechanism: str | None
) -> None:
    import kafka

    producer = kafka.KafkaProducer(
        **kafka_python_config(secure_broker, test_ca, protocol, mechanism, USERS["alice"])
    )
    try:
        assert producer.send("orders", b"kafka-python").get(timeout=10).offset >= 0
    finally:
        producer.close()


class _Messages(logging.Handler):
    """Keeps log messages as text only (a record's arguments would keep the client's objects alive)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.parametrize(("protocol", "mechanism"), WRONG[:1] + WRONG[-1:])
def test_kafka_python_wrong_password(
    secure_broker: KafkaBroker, test_ca: CaFiles, protocol: str, mechanism: str
) -> None:
    import kafka
    import kafka.errors

    logger = logging.getLogger("kafka")
    handler = _Messages()
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False

    def connect() -> bool:
        try:
            config = kafka_python_config(secure_broker, test_ca, protocol, mechanism, "nope")
            kafka.KafkaProducer(**config, bootstrap_timeout_ms=3000)
        except kafka.errors.KafkaError:
            return False
        return True

    def refused() -> bool:
        return any(KAFKA_MESSAGE[mechanism] in message for message in handler.messages)

    # under load a TLS handshake plus the SCRAM exchange can outlast one 3 s bootstrap: try again,
    # at most 8 times (each attempt must fail), until the client has logged Kafka's message
    try:
        for _ in range(8):
            assert not connect()
            if refused():
                break
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        # kafka-python 3.0.12 leaves the wake-up socket pair (AF_UNIX) of a producer whose constructor
        # failed to the garbage collector: collect it now, ignoring only the ResourceWarning of AF_UNIX
        # sockets (the broker opens none)
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=r"unclosed <socket\.socket .*family=1,", category=ResourceWarning
            )
            gc.collect()
    assert refused()


def aiokafka_config(
    kafka: KafkaBroker, ca: CaFiles, protocol: str, mechanism: str | None, password: str
) -> dict[str, Any]:
    from aiokafka.helpers import create_ssl_context

    config: dict[str, Any] = {
        "bootstrap_servers": kafka.listener_bootstrap_servers(protocol),
        "security_protocol": protocol,
        "request_timeout_ms": 5000,
    }
    if "SSL" in protocol:
        config["ssl_context"] = create_ssl_context(cafile=str(ca.ca_cert))
    if mechanism is not None:
        config.update(sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password=password)
    return config


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_aiokafka(secure_broker: KafkaBroker, test_ca: CaFiles, protocol: str, mechanism: str | None) -> None:
    import aiokafka

    async def run() -> int:
        producer = aiokafka.AIOKafkaProducer(
            **aiokafka_config(secure_broker, test_ca, protocol, mechanism, USERS["alice"])
        )
        await producer.start()
        try:
            return int((await producer.send_and_wait("orders", b"aiokafka")).offset)
        finally:
            await producer.stop()

    assert asyncio.run(run()) >= 0


@pytest.mark.parametrize(("protocol", "mechanism"), WRONG[:1] + WRONG[-1:])
def test_aiokafka_wrong_password(
    secure_broker: KafkaBroker,
    test_ca: CaFiles,
    protocol: str,
    mechanism: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import aiokafka
    import aiokafka.errors

    caplog.set_level(logging.ERROR, logger="aiokafka")

    async def run() -> None:
        producer = aiokafka.AIOKafkaProducer(
            **aiokafka_config(secure_broker, test_ca, protocol, mechanism, "nope")
        )
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(aiokafka.errors.KafkaError):
        asyncio.run(run())
    assert KAFKA_MESSAGE[mechanism] in caplog.text
