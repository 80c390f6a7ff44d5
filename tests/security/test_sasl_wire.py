"""The SASL state machine on the wire, with a raw client: what Kafka's SaslServerAuthenticator
accepts before authentication, the failure answers, the failed-authentication delay that only the
failing connection waits for, and KIP-368 session lifetimes and re-authentication."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.sasl_authenticate.v0.request import SaslAuthenticateRequest as AuthV0
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest as AuthV2
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as HandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest as HandshakeV1
from tests.broker.rawclient import RawClient
from tests.security.apache_sasl import SaslApacheKafka
from tests.security.conftest import USERS

from kgroup.testing import KafkaBroker

SASL = "SASL_PLAINTEXT"


def versions() -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="raw", client_software_version="1")


def metadata() -> MetadataRequest:
    return MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )


def plain(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def test_handshake_and_plain_authenticate(secure_broker: KafkaBroker) -> None:
    with RawClient(secure_broker.listener_bootstrap_servers(SASL)) as raw:
        assert raw.request(versions()).error_code == 0
        handshake = raw.request(HandshakeV1(mechanism="PLAIN"))
        assert handshake.error_code == 0
        assert list(handshake.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        answer = raw.request(AuthV2(auth_bytes=plain("alice", USERS["alice"])))
        assert answer.error_code == 0 and answer.error_message == ""  # as Apache Kafka (test_oauthbearer)
        assert answer.session_lifetime.total_seconds() == 0  # connections.max.reauth.ms = 0
        assert raw.request(metadata()).brokers  # authenticated: served as usual
        # after authentication, Kafka's KafkaApis answers both SASL requests ILLEGAL_SASL_STATE
        again = raw.request(AuthV2(auth_bytes=b"x"))
        assert again.error_code == 34
        assert again.error_message == "SaslAuthenticate request received after successful authentication"


def test_handshake_v0_raw_tokens(secure_broker: KafkaBroker) -> None:
    with RawClient(secure_broker.listener_bootstrap_servers(SASL)) as raw:
        assert raw.request(HandshakeV0(mechanism="PLAIN")).error_code == 0
        raw.send_frame(plain("bob", USERS["bob"]))
        assert raw.read_frame() == b""
        assert raw.request(metadata()).brokers


def test_failures_answer_kafkas_messages_then_close(secure_broker: KafkaBroker) -> None:
    with RawClient(secure_broker.listener_bootstrap_servers(SASL)) as raw:
        raw.request(HandshakeV1(mechanism="PLAIN"))
        answer = raw.request(AuthV2(auth_bytes=plain("alice", "wrong")))
        assert answer.error_code == 58
        assert answer.error_message == "Authentication failed: Invalid username or password"
        assert raw.is_closed_by_peer()
    with RawClient(secure_broker.listener_bootstrap_servers(SASL)) as raw:
        raw.request(HandshakeV1(mechanism="SCRAM-SHA-256"))
        answer = raw.request(AuthV2(auth_bytes=b"n,,n=nobody,r=abcdef"))
        assert answer.error_code == 58
        assert answer.error_message == (
            "Authentication failed during authentication due to invalid credentials with SASL mechanism "
            "SCRAM-SHA-256"
        )
        assert raw.is_closed_by_peer()
    with RawClient(secure_broker.listener_bootstrap_servers(SASL)) as raw:
        answer = raw.request(HandshakeV1(mechanism="GSSAPI"))
        assert answer.error_code == 33  # UNSUPPORTED_SASL_MECHANISM, with the enabled ones
        assert list(answer.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert raw.is_closed_by_peer()


@pytest.mark.parametrize("first", ["metadata", "authenticate", "second versions"])
def test_requests_before_authentication_close_the_connection(secure_broker: KafkaBroker, first: str) -> None:
    with RawClient(secure_broker.listener_bootstrap_servers(SASL)) as raw:
        if first == "metadata":
            raw.send_frame(_frame(raw, metadata()))
        elif first == "authenticate":
            raw.send_frame(_frame(raw, AuthV2(auth_bytes=plain("alice", USERS["alice"]))))
        else:
            raw.request(versions())
            raw.send_frame(_frame(raw, versions()))
        assert raw.is_closed_by_peer()
    with RawClient(secure_broker.listener_bootstrap_servers(SASL)) as raw:
        raw.request(HandshakeV1(mechanism="PLAIN"))
        raw.send_frame(_frame(raw, metadata()))  # not SaslAuthenticate while authenticating
        assert raw.is_closed_by_peer()


def _frame(raw: RawClient, request: object) -> bytes:
    from kgroup.wire.codec import encode_request

    raw.correlation += 1
    return encode_request(request, raw.correlation)


def test_a_failed_authentication_waits_alone() -> None:
    """connection.failed.authentication.delay.ms: the failing connection hears its answer only after
    the delay, while a connection opened after it is served at once."""
    with KafkaBroker(
        listeners=["SASL_PLAINTEXT://127.0.0.1:0"], sasl_users=USERS, failed_authentication_delay_ms=1500
    ) as kafka:
        bootstrap = kafka.bootstrap_servers
        results: dict[str, float] = {}

        def fail() -> None:
            with RawClient(bootstrap) as raw:
                raw.request(HandshakeV1(mechanism="PLAIN"))
                start = time.monotonic()
                answer = raw.request(AuthV2(auth_bytes=plain("alice", "guess")))
                assert answer.error_code == 58
                results["failed_after"] = time.monotonic() - start

        failing = [threading.Thread(target=fail) for _ in range(20)]
        for thread in failing:
            thread.start()
        time.sleep(0.3)  # the failures are now waiting out their delay
        with RawClient(bootstrap) as good:
            start = time.monotonic()
            good.request(HandshakeV1(mechanism="PLAIN"))
            assert good.request(AuthV2(auth_bytes=plain("bob", USERS["bob"]))).error_code == 0
            good.request(metadata())
            results["good"] = time.monotonic() - start
        for thread in failing:
            thread.join(timeout=10)
        assert results["failed_after"] >= 1.4
        assert results["good"] < 1.0, results


@pytest.fixture
def reauth_broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(
        listeners=["SASL_PLAINTEXT://127.0.0.1:0"], sasl_users=USERS, connections_max_reauth_ms=800
    ) as kafka:
        yield kafka


def test_session_lifetime_and_reauthentication(reauth_broker: KafkaBroker) -> None:
    bootstrap = reauth_broker.bootstrap_servers
    with RawClient(bootstrap) as raw:
        raw.request(HandshakeV1(mechanism="PLAIN"))
        answer = raw.request(AuthV2(auth_bytes=plain("alice", USERS["alice"])))
        assert answer.session_lifetime.total_seconds() == 0.8
        # re-authenticate on the same connection (the client spoke SaslAuthenticate v1+)
        assert raw.request(HandshakeV1(mechanism="PLAIN")).error_code == 0
        again = raw.request(AuthV2(auth_bytes=plain("alice", USERS["alice"])))
        assert again.error_code == 0 and again.session_lifetime.total_seconds() == 0.8
        # at most one re-authentication starts per second (Kafka's KafkaChannel): a SaslHandshake
        # sooner is an ordinary request, answered ILLEGAL_SASL_STATE, and the session goes on
        assert raw.request(HandshakeV1(mechanism="PLAIN")).error_code == 34
        assert raw.request(metadata()).brokers
    with RawClient(bootstrap) as raw:
        raw.request(HandshakeV1(mechanism="PLAIN"))
        raw.request(AuthV2(auth_bytes=plain("alice", USERS["alice"])))
        # a re-authentication may not change the principal
        assert raw.request(HandshakeV1(mechanism="PLAIN")).error_code == 0
        changed = raw.request(AuthV2(auth_bytes=plain("bob", USERS["bob"])))
        assert changed.error_code == 58
        assert changed.error_message == (
            "Cannot change principals during re-authentication from User.alice: User.bob"
        )
        assert raw.is_closed_by_peer()
    with RawClient(bootstrap) as raw:
        raw.request(HandshakeV1(mechanism="PLAIN"))
        raw.request(AuthV2(auth_bytes=plain("alice", USERS["alice"])))
        time.sleep(1.0)  # the session expired: the next request other than SaslHandshake closes
        raw.send_frame(_frame(raw, metadata()))
        assert raw.is_closed_by_peer()
    with RawClient(bootstrap) as raw:  # SaslAuthenticate v0: the client cannot re-authenticate
        raw.request(HandshakeV1(mechanism="PLAIN"))
        raw.request(AuthV0(auth_bytes=plain("alice", USERS["alice"])))
        assert raw.request(HandshakeV1(mechanism="PLAIN")).error_code == 34


def _illegal_sasl_state(bootstrap: str) -> dict[str, object]:
    """What a broker answers to SASL requests out of order (Kafka's SaslServerAuthenticator and, once
    authenticated, KafkaApis): each case's answer and whether the connection was then closed."""
    seen: dict[str, object] = {}
    with RawClient(bootstrap) as raw:  # SaslAuthenticate before any handshake: closed, no answer
        raw.send_frame(_frame(raw, AuthV2(auth_bytes=plain("alice", USERS["alice"]))))
        seen["authenticate first"] = raw.is_closed_by_peer()
    with RawClient(bootstrap) as raw:  # a second SaslHandshake where SaslAuthenticate belongs
        raw.request(HandshakeV1(mechanism="PLAIN"))
        again = raw.request(HandshakeV1(mechanism="PLAIN"))
        seen["second handshake"] = (again.error_code, list(again.mechanisms), raw.is_closed_by_peer())
    with RawClient(bootstrap) as raw:  # ApiVersions where SaslAuthenticate belongs
        raw.request(HandshakeV1(mechanism="SCRAM-SHA-256"))
        versions_answer = raw.request(versions())
        seen["versions while authenticating"] = (
            versions_answer.error_code,
            len(versions_answer.api_keys),
            raw.is_closed_by_peer(),
        )
    with RawClient(bootstrap) as raw:  # authenticated: both SASL requests are ILLEGAL_SASL_STATE
        raw.request(HandshakeV1(mechanism="PLAIN"))
        assert raw.request(AuthV2(auth_bytes=plain("alice", USERS["alice"]))).error_code == 0
        handshake = raw.request(HandshakeV1(mechanism="PLAIN"))
        authenticate = raw.request(AuthV2(auth_bytes=b"x"))
        seen["after authentication"] = (
            (handshake.error_code, list(handshake.mechanisms)),
            (authenticate.error_code, authenticate.error_message),
        )
        seen["still served"] = bool(raw.request(metadata()).brokers)
    return seen


@pytest.mark.apache_kafka
def test_illegal_sasl_state_as_apache_kafka(secure_broker: KafkaBroker, apache_sasl: SaslApacheKafka) -> None:
    ours = _illegal_sasl_state(secure_broker.listener_bootstrap_servers(SASL))
    theirs = _illegal_sasl_state(apache_sasl.sasl_bootstrap)
    assert ours == theirs
    assert theirs["second handshake"] == (34, [], True)
    assert theirs["authenticate first"] is True
