"""SASL/PLAIN as Kafka's PlainSaslServer: tokens, checks and messages; passwords checked against
the salted credential."""

from __future__ import annotations

import pytest

from kgroup.security.credentials import CredentialStore, parse_user_spec
from kgroup.security.errors import AuthenticationFailed
from kgroup.security.plain import PlainServer


@pytest.fixture(scope="module")
def store() -> CredentialStore:
    s = CredentialStore()
    s.add_user("alice", "alice-secret")
    return s


def test_right_password(store: CredentialStore) -> None:
    server = PlainServer(store.verify_password)
    assert server.evaluate(b"\0alice\0alice-secret") == b""
    assert server.complete and server.authorization_id == "alice"
    assert PlainServer(store.verify_password).evaluate(b"alice\0alice\0alice-secret") == b""


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
        (b"\0mallory\0alice-secret", "Authentication failed: Invalid username or password"),
        (b"\0\0pw", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        (b"alice-only", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"a\0b\0c\0d", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (
            b"bob\0alice\0alice-secret",
            "Authentication failed: Client requested an authorization id that is different from username",
        ),
    ],
)
def test_kafka_messages(store: CredentialStore, token: bytes, message: str) -> None:
    server = PlainServer(store.verify_password)
    with pytest.raises(AuthenticationFailed) as failure:
        server.evaluate(token)
    assert str(failure.value) == message
    assert not server.complete


def test_store_keeps_no_password(tmp_path: object) -> None:
    s = CredentialStore()
    s.add_user("bob", "bob-password-123")
    held = repr(s.users()) + repr(vars(s))
    assert "bob-password-123" not in held
    assert set(s.users()["bob"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}


def test_user_spec() -> None:
    assert parse_user_spec("alice:a:b") == ("alice", "a:b")
    with pytest.raises(Exception, match="NAME:PASSWORD"):
        parse_user_spec("alice")
