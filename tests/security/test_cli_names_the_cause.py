"""Issue 31: errors that name the real cause. ``kgroup lag``, ``kgroup record`` and kgroup's client
against a TLS or SASL listener without the settings it wants say what it wants and point at
``--command-config`` (not "is the broker running?"); ``kgroup record`` as a user without rights on
``__consumer_offsets`` says it is an authorization failure and which ACLs it needs; an unreachable
broker is reported at once (not after librdkafka's 15 s). Against kgroup serve and Apache Kafka."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from tests.security.apache_sasl import SaslApacheKafka
from tests.security.conftest import USERS

from kgroup.cli import main
from kgroup.client import ClientError, GroupConsumer
from kgroup.member import MemberConfig
from kgroup.testing import KafkaBroker

GROUP = "billing"


def kgroup(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 0), out, err


def one_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = kgroup(capsys, *args)
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("kgroup: error: ") and "Traceback" not in err, err
    return err.removeprefix("kgroup: error: ").strip()


def sasl_settings(bootstrap: str, user: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def properties(path: Path, settings: dict[str, str]) -> str:
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items() if k != "bootstrap.servers"))
    return str(path)


def commit_once(settings: dict[str, str]) -> None:
    """A group with one committed offset (what a recording reads back)."""
    consumer = Consumer({**settings, "group.id": GROUP, "log_level": 0})
    try:
        consumer.commit(offsets=[TopicPartition("orders", 0, 0)], asynchronous=False)
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    with KafkaBroker(
        topics={"orders": 1},
        data_dir=tmp_path_factory.mktemp("acl-broker"),
        listeners=["SASL_PLAINTEXT://127.0.0.1:0"],
        sasl_users=USERS,
        authorizer=True,
        super_users=["User:admin"],
    ) as kafka:
        commit_once(sasl_settings(kafka.listener_bootstrap_servers("SASL_PLAINTEXT"), "admin"))
        yield kafka


def allow(admin: AdminClient, operation: AclOperation) -> None:
    binding = AclBinding(
        ResourceType.TOPIC,
        "__consumer_offsets",
        ResourcePatternType.LITERAL,
        "User:bob",
        "*",
        operation,
        AclPermissionType.ALLOW,
    )
    for future in admin.create_acls([binding]).values():
        future.result()


def test_record_without_rights_names_the_acl_it_needs(
    acl_broker: KafkaBroker, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bootstrap = acl_broker.listener_bootstrap_servers("SASL_PLAINTEXT")
    bob = properties(tmp_path / "bob.properties", sasl_settings(bootstrap, "bob"))
    record = ("record", "-b", bootstrap, "-g", GROUP, "--command-config", bob, "--timeout", "10")
    needs = (
        "kgroup record needs the ACLs Describe and Read on Topic:__consumer_offsets for User:bob "
        "(kafka-acls.sh --add --allow-principal User:bob --operation Describe --operation Read "
        "--topic __consumer_offsets; docs/record.md)"
    )
    message = one_line(capsys, *record, "-o", str(tmp_path / "r1"))
    assert message == (
        "--command-config: User:bob is not authorized to Describe __consumer_offsets "
        f"(TOPIC_AUTHORIZATION_FAILED); {needs}"
    )
    admin = AdminClient(sasl_settings(bootstrap, "admin"))
    allow(admin, AclOperation.DESCRIBE)
    message = one_line(capsys, *record, "-o", str(tmp_path / "r2"))
    assert message == (
        "--command-config: User:bob is not authorized to Read __consumer_offsets "
        f"(TOPIC_AUTHORIZATION_FAILED); {needs}"
    )
    allow(admin, AclOperation.READ)  # the two ACLs the message names are enough (no group ACL)
    code, out, err = kgroup(capsys, *record, "-o", str(tmp_path / "r3"))
    assert code == 0, err
    assert out.startswith(f"{GROUP}: ") and "1 offset commits" in out


@pytest.fixture(scope="module")
def listeners_broker(test_ca: object) -> Iterator[KafkaBroker]:
    from kgroup.security.testca import CaFiles

    assert isinstance(test_ca, CaFiles)
    with KafkaBroker(
        topics={"orders": 1},
        listeners=["SSL://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0", "SASL_SSL://127.0.0.1:0"],
        ssl_certfile=test_ca.server_cert,
        ssl_keyfile=test_ca.server_key,
        sasl_users=USERS,
    ) as kafka:
        yield kafka


WANTS = {
    "SSL": "wants TLS: security.protocol=SSL",
    "SASL_PLAINTEXT": "wants SASL: security.protocol=SASL_PLAINTEXT (mechanisms PLAIN, SCRAM-SHA-256, "
    "SCRAM-SHA-512)",
    "SASL_SSL": "wants TLS and SASL: security.protocol=SASL_SSL (mechanisms PLAIN, SCRAM-SHA-256, "
    "SCRAM-SHA-512)",
}


@pytest.mark.parametrize("listener", list(WANTS))
def test_lag_record_and_the_client_say_what_the_listener_wants(
    listeners_broker: KafkaBroker, capsys: pytest.CaptureFixture[str], tmp_path: Path, listener: str
) -> None:
    bootstrap = listeners_broker.listener_bootstrap_servers(listener)
    said = f"--command-config: the listener at {bootstrap} {WANTS[listener]}; give a --command-config file "
    said += "with those settings (docs/security.md)"
    assert one_line(capsys, "lag", "--bootstrap-servers", bootstrap, "--group", GROUP) == said
    assert one_line(capsys, "record", "-b", bootstrap, "-g", GROUP, "-o", str(tmp_path)) == said

    async def join() -> None:
        async with GroupConsumer(bootstrap, MemberConfig(GROUP), topics=["orders"]):
            pass

    with pytest.raises(ClientError) as failure:
        asyncio.run(join())
    assert str(failure.value).startswith(f"the listener at {bootstrap} {WANTS[listener]}; give ")
    assert f"GroupConsumer(security=ClientSecurity(protocol='{listener}', ...))" in str(failure.value)


def test_an_unreachable_broker_is_reported_without_waiting_for_the_timeout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`kgroup record` asked librdkafka, which retries a refused connection until --timeout (15 s);
    now kgroup's own connection says so at once: the message is the connection's own refusal, which
    librdkafka's "cannot reach … within 15 s" never was."""
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    message = one_line(capsys, "record", "-b", f"127.0.0.1:{port}", "-g", GROUP, "-o", str(tmp_path))
    assert message.startswith(f"--bootstrap-servers: cannot reach a Kafka broker (127.0.0.1:{port}: ")
    assert "Connect call failed" in message and "within" not in message


@pytest.mark.apache_kafka
def test_apache_kafkas_sasl_listener_is_named_too(
    apache_sasl: SaslApacheKafka, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bootstrap = apache_sasl.sasl_bootstrap
    message = one_line(capsys, "lag", "--bootstrap-servers", bootstrap, "--group", GROUP)
    assert message.startswith(
        f"--command-config: the listener at {bootstrap} wants SASL: security.protocol=SASL_PLAINTEXT "
        "(mechanisms "
    )
    assert one_line(capsys, "record", "-b", bootstrap, "-g", GROUP, "-o", str(tmp_path)) == message
