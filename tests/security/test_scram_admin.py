"""Describe/AlterUserScramCredentials with confluent-kafka's admin client: a user added through the
API logs in with SCRAM, the credential survives a restart, and the API needs the cluster's
DESCRIBE / ALTER."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from tests.security.conftest import USERS

from kgroup.testing import KafkaBroker


def config(kafka: KafkaBroker, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> dict[str, Any]:
    return {
        "bootstrap.servers": kafka.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def can_log_in(kafka: KafkaBroker, user: str, password: str) -> bool:
    errors: list[Any] = []
    admin = AdminClient({**config(kafka, user, password), "error_cb": errors.append})
    try:
        admin.list_topics(timeout=8)
    except confluent_kafka.KafkaException:
        return False
    return not any(e.code() == confluent_kafka.KafkaError._AUTHENTICATION for e in errors)


def broker(data_dir: Path) -> KafkaBroker:
    return KafkaBroker(
        data_dir=data_dir,
        listeners=["SASL_PLAINTEXT://127.0.0.1:0"],
        sasl_users=USERS,
        authorizer=True,
        super_users=["User:admin"],
    )


def test_users_added_through_the_api_log_in_and_survive_a_restart(tmp_path: Path) -> None:
    with broker(tmp_path) as kafka:
        admin = AdminClient(config(kafka, "admin", USERS["admin"]))
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
        for future in admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("carol", info, b"carol-pw-55", b"pepper-salt")]
        ).values():
            future.result(timeout=15)
        described = admin.describe_user_scram_credentials(["carol"])["carol"].result(timeout=15)
        assert [(c.mechanism, c.iterations) for c in described.scram_credential_infos] == [
            (ScramMechanism.SCRAM_SHA_512, 8192)
        ]
        assert can_log_in(kafka, "carol", "carol-pw-55")
        assert not can_log_in(kafka, "carol", "carol-pw-56")
        # alice is no super user: ALTER on the cluster is needed
        alice = AdminClient(config(kafka, "alice", USERS["alice"]))
        refused = alice.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("alice", info, b"new", b"salt-salt-salt")]
        )
        with pytest.raises(confluent_kafka.KafkaException) as failure:
            refused["alice"].result(timeout=15)
        assert failure.value.args[0].code() == confluent_kafka.KafkaError.CLUSTER_AUTHORIZATION_FAILED
        too_few = admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(
                    "dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), b"pw"
                )
            ]
        )
        with pytest.raises(confluent_kafka.KafkaException) as failure:
            too_few["dave"].result(timeout=15)
        assert failure.value.args[0].code() == confluent_kafka.KafkaError.UNACCEPTABLE_CREDENTIAL
    stored = (tmp_path / "scram-credentials.json").read_text()
    assert "carol-pw-55" not in stored and "stored_key=" in stored
    with broker(tmp_path) as kafka:
        assert can_log_in(kafka, "carol", "carol-pw-55")
        admin = AdminClient(config(kafka, "admin", USERS["admin"]))
        for future in admin.alter_user_scram_credentials(
            [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)]
        ).values():
            future.result(timeout=15)
        assert not can_log_in(kafka, "carol", "carol-pw-55")
