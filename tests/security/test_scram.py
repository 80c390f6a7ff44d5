"""SCRAM (RFC 5802/7677) as Kafka's ScramSaslServer: the RFC 7677 exchange, a client round trip
for both mechanisms, and Kafka's answers to bad input; kgroup's client side (ScramClient, as Kafka's
ScramSaslClient) on the RFC 7677 exchange and its refusals."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from kgroup.security.errors import AuthenticationFailed, CredentialsRejected
from kgroup.security.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramClient,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    make_credential,
    sasl_name,
    secure_random_string,
    username_from_sasl_name,
)

# RFC 7677 section 3
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_credential() -> ScramCredential:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    return make_credential(SCRAM_SHA_256, "pencil", 4096, salt)


def test_rfc7677_exchange() -> None:
    server = ScramServer(SCRAM_SHA_256, {"user": rfc_credential()}.get, nonce=lambda: RFC_SERVER_NONCE)
    assert server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not server.complete
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete
    assert server.authorization_id == "user"


def test_rfc7677_wrong_proof_is_rejected_with_a_generic_failure() -> None:
    server = ScramServer(SCRAM_SHA_256, {"user": rfc_credential()}.get, nonce=lambda: RFC_SERVER_NONCE)
    server.evaluate(RFC_CLIENT_FIRST)
    bad = RFC_CLIENT_FINAL.replace(b"p=dHzb", b"p=dHzc")
    with pytest.raises(CredentialsRejected, match="Invalid client credentials"):
        server.evaluate(bad)
    assert not server.complete


def test_rfc7677_exchange_client_side() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: "rOprNGfwEbeRWgbNEkqO")
    assert client.first() == RFC_CLIENT_FIRST
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify(RFC_SERVER_FINAL)  # the server proved it knows the credential
    with pytest.raises(AuthenticationFailed, match=r"^Invalid server signature in server final message$"):
        client.verify(RFC_SERVER_FINAL.replace(b"v=6rr", b"v=7rr"))
    with pytest.raises(AuthenticationFailed, match=r"failed with error: other-error$"):
        client.verify(b"e=other-error")


def test_client_refuses_what_kafkas_client_refuses() -> None:
    client = ScramClient(SCRAM_SHA_512, "user", "pencil", nonce=lambda: "abc")
    client.first()
    with pytest.raises(
        AuthenticationFailed, match=r"^Invalid server nonce: does not start with client nonce$"
    ):
        client.final(b"r=xyzabc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(
        AuthenticationFailed,
        match=r"^Requested iterations 4095 is less than the minimum 4096 for SCRAM-SHA-512$",
    ):
        client.final(b"r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095")
    with pytest.raises(AuthenticationFailed, match="server first message format"):
        client.final(b"nonsense")
    assert "pencil" not in repr(client)


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_client_against_server(mechanism: ScramMechanism) -> None:
    users = {"al,i=ce": make_credential(mechanism, "s3cret")}
    server = ScramServer(mechanism, users.get)
    client = ScramClient(mechanism, "al,i=ce", "s3cret")
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.complete and server.authorization_id == "al,i=ce"
    wrong = ScramClient(mechanism, "al,i=ce", "guess")
    server = ScramServer(mechanism, users.get)
    with pytest.raises(CredentialsRejected, match="Invalid client credentials"):
        server.evaluate(wrong.final(server.evaluate(wrong.first())))


def _client(mechanism: ScramMechanism, user: str, password: str, server: ScramServer) -> bytes:
    """An RFC 5802 client written from the RFC (independent of the server's code)."""
    nonce = "fyko+d2lbbFgONRv9qkxdawL"
    bare = f"n={sasl_name(user)},r={nonce}"
    first = server.evaluate(f"n,,{bare}".encode()).decode()
    fields = dict(item.split("=", 1) for item in first.split(","))
    assert fields["r"].startswith(nonce)
    salt = base64.b64decode(fields["s"])
    salted = hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", mechanism.hash_name).digest()
    stored = hashlib.new(mechanism.hash_name, client_key).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{bare},{first},{without_proof}".encode()
    signature = hmac.new(stored, auth, mechanism.hash_name).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = server.evaluate(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    server_key = hmac.new(salted, b"Server Key", mechanism.hash_name).digest()
    expected = b"v=" + base64.b64encode(hmac.new(server_key, auth, mechanism.hash_name).digest())
    assert final == expected
    return final


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_client_round_trip(mechanism: ScramMechanism) -> None:
    users = {"al,i=ce": make_credential(mechanism, "s3cret", 8192)}
    server = ScramServer(mechanism, users.get)
    _client(mechanism, "al,i=ce", "s3cret", server)
    assert server.complete and server.authorization_id == "al,i=ce"


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_wrong_password_fails(mechanism: ScramMechanism) -> None:
    users = {"alice": make_credential(mechanism, "right")}
    with pytest.raises(CredentialsRejected, match="Invalid client credentials"):
        _client(mechanism, "alice", "wrong", ScramServer(mechanism, users.get))


def test_unknown_user_and_bad_messages() -> None:
    server = ScramServer(SCRAM_SHA_256, {}.get)
    with pytest.raises(CredentialsRejected, match="Invalid user credentials"):
        server.evaluate(b"n,,n=nobody,r=abc")
    with pytest.raises(CredentialsRejected, match="client first message format"):
        ScramServer(SCRAM_SHA_256, {}.get).evaluate(b"p=tls-unique,,n=a,r=b")
    with pytest.raises(CredentialsRejected, match="client first message format"):
        ScramServer(SCRAM_SHA_256, {}.get).evaluate(b"n,,n=a=41,r=x")  # only =2C and =3D escape

    def broken(name: str) -> ScramCredential | None:
        raise OSError("store unreadable")

    with pytest.raises(CredentialsRejected, match="Credentials could not be obtained"):
        ScramServer(SCRAM_SHA_256, broken).evaluate(b"n,,n=a,r=x")
    # a state machine that failed stays failed
    with pytest.raises(AuthenticationFailed, match="Unexpected challenge"):
        server.evaluate(b"n,,n=nobody,r=abc")


def test_authorization_id_must_be_the_user_and_iterations_at_least_the_minimum() -> None:
    users = {"alice": make_credential(SCRAM_SHA_256, "pw")}
    with pytest.raises(AuthenticationFailed, match="authorization id that is different from username"):
        ScramServer(SCRAM_SHA_256, users.get).evaluate(b"n,a=bob,n=alice,r=abc")
    weak = {"alice": make_credential(SCRAM_SHA_256, "pw", iterations=1000)}
    with pytest.raises(CredentialsRejected, match="Iterations 1000 is less than the minimum 4096"):
        ScramServer(SCRAM_SHA_256, weak.get).evaluate(b"n,,n=alice,r=abc")


def test_nonce_must_continue_the_exchange() -> None:
    users = {"alice": make_credential(SCRAM_SHA_256, "pw")}
    server = ScramServer(SCRAM_SHA_256, users.get, nonce=lambda: "SERVER")
    server.evaluate(b"n,,n=alice,r=client")
    with pytest.raises(CredentialsRejected, match="Invalid client nonce"):
        server.evaluate(b"c=biws,r=clientOTHER,p=AAAA")


def test_credential_string_form_and_repr_hide_the_keys() -> None:
    credential = make_credential(SCRAM_SHA_512, "pw", 4096, b"salty")
    text = credential.to_kafka_string()
    assert text.startswith("salt=c2FsdHk=,stored_key=") and text.endswith(",iterations=4096")
    assert ScramCredential.from_kafka_string(text) == credential
    assert "stored_key" not in repr(credential) and "server_key" not in repr(credential)


def test_sasl_names_and_random_strings() -> None:
    assert sasl_name("a=b,c") == "a=3Db=2Cc"
    assert username_from_sasl_name("a=3Db=2Cc") == "a=b,c"
    with pytest.raises(ValueError, match="Invalid username"):
        username_from_sasl_name("a=41")
    values = {secure_random_string() for _ in range(50)}
    assert len(values) == 50 and all(v.isalnum() and v == v.lower() for v in values)
