"""``kgroup.client`` over every listener kind and SASL mechanism: a group member joins, commits and
``kgroup lag`` reads the commit back with the right settings; a wrong password fails with Kafka's
message (one line from the CLI). The SASL mechanisms run against Apache Kafka 4.4.0 too."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.security.apache_sasl import SaslApacheKafka
from tests.security.conftest import MECHANISMS, USERS

from kgroup.cli import main
from kgroup.client import ClientError, ClientSecurity, GroupConsumer
from kgroup.client.lag import describe_group_lag
from kgroup.member import MemberConfig
from kgroup.model import KgroupError, TopicPartition
from kgroup.security.testca import CaFiles
from kgroup.testing import KafkaBroker

CASES = [("PLAINTEXT", None), ("SSL", None)] + [
    (protocol, mechanism) for protocol in ("SASL_PLAINTEXT", "SASL_SSL") for mechanism in MECHANISMS
]
KAFKA_MESSAGE = {
    "PLAIN": "Authentication failed: Invalid username or password",
    "SCRAM-SHA-256": "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-256",
    "SCRAM-SHA-512": "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-512",
}


def security(ca: CaFiles, protocol: str, mechanism: str | None, password: str) -> ClientSecurity:
    return ClientSecurity(
        protocol=protocol,
        ssl_ca_location=str(ca.ca_cert) if "SSL" in protocol else None,
        sasl_mechanism=mechanism,
        sasl_username="alice" if mechanism else None,
        sasl_password=password if mechanism else None,
    )


async def join_commit_and_lag(bootstrap: str, group: str, topic: str, settings: ClientSecurity) -> int | None:
    """A member joins ``group``, commits offset 0 of ``topic``-0; the lag's committed offset."""
    config = MemberConfig(group, client_id="kgroup-secure", enable_auto_commit=False)
    async with GroupConsumer(bootstrap, config, topics=[topic], security=settings) as consumer:
        owned = await consumer.wait_stable(timeout_ms=20_000)
        assert owned == {TopicPartition(topic, 0)}
        await consumer.commit({TopicPartition(topic, 0): 0})
    lag = await describe_group_lag(bootstrap, group, 20.0, security=settings)
    rows = lag.to_json()["partitions"]
    assert [(r["topic"], r["partition"]) for r in rows] == [(topic, 0)]
    committed = rows[0]["current_offset"]
    return None if committed is None else int(str(committed))


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_member_and_lag_over_each_listener(
    secure_broker: KafkaBroker, test_ca: CaFiles, protocol: str, mechanism: str | None
) -> None:
    bootstrap = secure_broker.listener_bootstrap_servers(protocol)
    settings = security(test_ca, protocol, mechanism, USERS["alice"])
    group = f"kc-{protocol}-{mechanism}"
    assert asyncio.run(join_commit_and_lag(bootstrap, group, "orders", settings)) == 0


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_wrong_password_fails_with_kafkas_message(
    secure_broker: KafkaBroker, test_ca: CaFiles, protocol: str, mechanism: str
) -> None:
    bootstrap = secure_broker.listener_bootstrap_servers(protocol)
    settings = security(test_ca, protocol, mechanism, "not-the-password")

    async def start() -> None:
        config = MemberConfig("kc-denied", client_id="kgroup-secure")
        async with GroupConsumer(bootstrap, config, topics=["orders"], security=settings):
            pass

    with pytest.raises(ClientError) as failure:
        asyncio.run(start())
    assert KAFKA_MESSAGE[mechanism] in str(failure.value)
    with pytest.raises(KgroupError) as lag_failure:
        asyncio.run(describe_group_lag(bootstrap, "kc-denied", 10.0, security=settings))
    assert KAFKA_MESSAGE[mechanism] in lag_failure.value.message


def test_tls_without_the_ca_fails_cleanly(secure_broker: KafkaBroker) -> None:
    bootstrap = secure_broker.listener_bootstrap_servers("SSL")
    with pytest.raises(KgroupError) as failure:
        asyncio.run(describe_group_lag(bootstrap, "kc-none", 10.0, security=ClientSecurity(protocol="SSL")))
    assert "CERTIFICATE_VERIFY_FAILED" in failure.value.message
    assert "ssl.ca.location" in failure.value.message


def _kgroup_lag(
    capsys: pytest.CaptureFixture[str], bootstrap: str, group: str, config: Path
) -> tuple[int, str, str]:
    """``kgroup lag`` in this process, as a user runs it: exit status, stdout, stderr."""
    args = ["lag", "--bootstrap-servers", bootstrap, "--group", group, "--command-config", str(config)]
    with pytest.raises(SystemExit) as exited:
        main([*args, "--timeout", "20"])
    out, err = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 0), out, err


def test_cli_lag_with_command_config(
    secure_broker: KafkaBroker, test_ca: CaFiles, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = secure_broker.listener_bootstrap_servers("SASL_SSL")
    settings = security(test_ca, "SASL_SSL", "SCRAM-SHA-256", USERS["alice"])
    assert asyncio.run(join_commit_and_lag(bootstrap, "kc-cli", "orders", settings)) == 0
    good = tmp_path / "client.properties"
    good.write_text(
        "# Kafka's client settings\n"
        "security.protocol=SASL_SSL\n"
        f"ssl.ca.location={test_ca.ca_cert}\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        "sasl.username=alice\n"
        f"sasl.password={USERS['alice']}\n"
    )
    code, out, err = _kgroup_lag(capsys, bootstrap, "kc-cli", good)
    assert code == 0, err
    assert out.split("\n")[2].split()[:4] == ["kc-cli", "orders", "0", "0"]
    # kgroup record reads the group's history from __consumer_offsets with the same settings
    # (confluent-kafka takes them as they are)
    with pytest.raises(SystemExit) as exited:
        main(["record", "-b", bootstrap, "-g", "kc-cli", "-o", str(tmp_path / "rec"), "--json",
              "--command-config", str(good), "--timeout", "30"])  # fmt: skip
    out, err = capsys.readouterr()
    assert exited.value.code in (0, None), err
    summary = json.loads(out)
    assert summary["offset_commits"] >= 1 and summary["rebalances"] >= 1, summary
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(good.read_text().replace(USERS["alice"], "not-the-password"))
    code, out, err = _kgroup_lag(capsys, bootstrap, "kc-cli", wrong)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"kgroup: error: --command-config {wrong}: sasl.password:")
    assert KAFKA_MESSAGE["SCRAM-SHA-256"] in lines[0]
    assert "not-the-password" not in err
    misspelt = tmp_path / "misspelt.properties"
    misspelt.write_text("security.protocol=SASL_SSL\nsasl.mechansim=PLAIN\n")
    code, _, err = _kgroup_lag(capsys, bootstrap, "kc-cli", misspelt)
    assert code == 2
    assert err.strip().splitlines() == [
        f"kgroup: error: --command-config {misspelt}: sasl.mechansim: not a security setting kgroup's "
        "client reads; give security.protocol, ssl.ca.location, ssl.certificate.location, "
        "ssl.key.location, ssl.key.password, ssl.endpoint.identification.algorithm, sasl.mechanism, "
        "sasl.mechanisms, sasl.username, sasl.password"
    ]


# --- the same against Apache Kafka -----------------------------------------------------------------


@pytest.mark.apache_kafka
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_mechanism_against_apache_kafka(apache_sasl: SaslApacheKafka, mechanism: str) -> None:
    bootstrap = apache_sasl.sasl_bootstrap
    right = security_plain_listener(mechanism, USERS["admin"])
    assert asyncio.run(join_commit_and_lag(bootstrap, f"kc-apache-{mechanism}", "orders", right)) == 0
    wrong = security_plain_listener(mechanism, "not-the-password")  # a super user: ACLs do not matter
    with pytest.raises(KgroupError) as failure:
        asyncio.run(describe_group_lag(bootstrap, "kc-apache", 10.0, security=wrong))
    assert KAFKA_MESSAGE[mechanism] in failure.value.message


def security_plain_listener(mechanism: str, password: str) -> ClientSecurity:
    return ClientSecurity(
        protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism, sasl_username="admin", sasl_password=password
    )
