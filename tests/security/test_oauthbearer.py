"""SASL/OAUTHBEARER with unsecured JWS tokens, as Kafka's OAuthBearerSaslServer and its default
unsecured validator: the token's checks, the invalid_token exchange, and the same answers as Apache
Kafka 4.4.0 on the wire (a raw client) and for confluent-kafka's unsecured-JWT login."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest as AuthV2
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest as HandshakeV1
from tests.broker.rawclient import RawClient
from tests.security.apache_sasl import SaslApacheKafka
from tests.security.conftest import USERS

from kgroup.security.errors import AuthenticationFailed, CredentialsRejected
from kgroup.security.oauthbearer import OAuthBearerServer, unsecured_token
from kgroup.testing import KafkaBroker

NOW_S = 1_800_000_000
INVALID = b'{"status":"invalid_token"}'


def first_message(token: str, authzid: str = "", extensions: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01{extensions}\x01".encode()


def server() -> OAuthBearerServer:
    return OAuthBearerServer(lambda: NOW_S * 1000)


def test_a_valid_token_names_the_principal_and_its_expiry() -> None:
    oauth = server()
    token = unsecured_token("alice", NOW_S + 60, issued_s=NOW_S - 1)
    assert oauth.evaluate(first_message(token, extensions="traceId=abc\x01")) == b""
    assert oauth.complete and oauth.authorization_id == "alice"
    assert oauth.credential_expiration_ms == (NOW_S + 60) * 1000


@pytest.mark.parametrize(
    "token",
    [
        unsecured_token("alice", NOW_S),  # expired (now >= exp)
        unsecured_token("alice", NOW_S + 60, issued_s=NOW_S + 5),  # issued in the future
        unsecured_token("alice", NOW_S + 60).replace(
            "eyJhbGciOiAibm9uZSJ9", "eyJhbGciOiAiSFMyNTYifQ"
        ),  # HS256
        unsecured_token("alice", NOW_S + 60) + "c2lnbmF0dXJl",  # a signature
        unsecured_token("", NOW_S + 60),  # no principal
        "not.a-token",
    ],
)
def test_a_bad_token_is_answered_invalid_token_then_fails(token: str) -> None:
    oauth = server()
    assert oauth.evaluate(first_message(token)) == INVALID  # no error yet: the client must acknowledge
    assert not oauth.complete
    with pytest.raises(AuthenticationFailed, match=r'^\{"status":"invalid_token"\}$'):
        oauth.evaluate(b"\x01")


def test_bad_messages_and_a_foreign_authorization_id() -> None:
    with pytest.raises(CredentialsRejected, match="Invalid OAUTHBEARER client first message"):
        server().evaluate(b"n,,auth=Bearer x")
    with pytest.raises(CredentialsRejected, match="invalid 'auth' format"):
        server().evaluate(b"n,,\x01auth=Bearer\x01\x01")
    with pytest.raises(
        AuthenticationFailed,
        match=r"^Authentication failed: Client requested an authorization id \(bob\) that is different "
        r"from the token's principal name \(alice\)$",
    ):
        server().evaluate(first_message(unsecured_token("alice", NOW_S + 60), authzid="bob"))


# --- the same on the wire, against kgroup serve and Apache Kafka --------------------------------------


@pytest.fixture(scope="module")
def oauth_broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(
        topics={"orders": 1},
        listeners=["SASL_PLAINTEXT://127.0.0.1:0"],
        sasl_users=USERS,
        sasl_mechanisms=["PLAIN", "OAUTHBEARER"],
        failed_authentication_delay_ms=50,
    ) as kafka:
        yield kafka


def _wire(bootstrap: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    now = time.time()
    with RawClient(bootstrap) as raw:
        assert raw.request(HandshakeV1(mechanism="OAUTHBEARER")).error_code == 0
        answer = raw.request(AuthV2(auth_bytes=first_message(unsecured_token("admin", now + 600, now))))
        lifetime_s = answer.session_lifetime.total_seconds()
        seen["valid"] = (
            answer.error_code,
            answer.error_message,
            bytes(answer.auth_bytes),
            590 < lifetime_s <= 600,
        )
    with RawClient(bootstrap) as raw:
        raw.request(HandshakeV1(mechanism="OAUTHBEARER"))
        answer = raw.request(AuthV2(auth_bytes=first_message(unsecured_token("admin", now - 10))))
        seen["expired"] = (answer.error_code, answer.error_message, bytes(answer.auth_bytes))
        failed = raw.request(AuthV2(auth_bytes=b"\x01"))
        seen["acknowledged"] = (failed.error_code, failed.error_message, raw.is_closed_by_peer())
    with RawClient(bootstrap) as raw:
        raw.request(HandshakeV1(mechanism="OAUTHBEARER"))
        answer = raw.request(AuthV2(auth_bytes=b"n,,auth=nothing"))
        seen["malformed"] = (answer.error_code, answer.error_message, raw.is_closed_by_peer())
    return seen


def _produce(bootstrap: str) -> str:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=admin",
            "message.timeout.ms": 20000,
        }
    )
    reports: list[Any] = []
    producer.produce("orders", b"oauth", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(25)
    return "no report" if not reports else "NONE" if reports[0] is None else str(reports[0].name())


@pytest.mark.apache_kafka
def test_oauthbearer_as_apache_kafka(oauth_broker: KafkaBroker, apache_sasl: SaslApacheKafka) -> None:
    ours = _wire(oauth_broker.bootstrap_servers)
    theirs = _wire(apache_sasl.sasl_bootstrap)
    assert ours == theirs
    assert theirs["valid"] == (0, "", b"", True)
    assert theirs["expired"] == (0, "", INVALID)
    assert theirs["acknowledged"] == (58, INVALID.decode(), True)
    # confluent-kafka's unsecured-JWT login (librdkafka makes the token) produces on both
    assert _produce(oauth_broker.bootstrap_servers) == _produce(apache_sasl.sasl_bootstrap) == "NONE"
