"""The test CA: a TLS handshake with its certificates (memory BIOs, both sides checking), and the
client certificate's principal as Kafka names it."""

from __future__ import annotations

import ssl
from pathlib import Path

from kgroup.security.listeners import TlsConfig, server_ssl_context
from kgroup.security.principal import ANONYMOUS, principal_from_certificate
from kgroup.security.testca import make_test_ca


def _handshake(
    client: ssl.SSLObject,
    server: ssl.SSLObject,
    c_in: ssl.MemoryBIO,
    c_out: ssl.MemoryBIO,
    s_in: ssl.MemoryBIO,
    s_out: ssl.MemoryBIO,
) -> None:
    done = {"client": False, "server": False}
    for _ in range(20):
        for side, obj in (("client", client), ("server", server)):
            if not done[side]:
                try:
                    obj.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return
    raise AssertionError("the TLS handshake did not finish in 20 rounds")


def test_mutual_tls_with_the_test_ca(tmp_path: Path) -> None:
    ca = make_test_ca(tmp_path, clients=("alice",))
    server_ctx = server_ssl_context(TlsConfig(ca.server_cert, ca.server_key, ca.ca_cert, "required"))
    client_ctx = ssl.create_default_context(cafile=str(ca.ca_cert))
    cert, key = ca.clients["alice"]
    client_ctx.load_cert_chain(cert, key)
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname="127.0.0.1")
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    _handshake(client, server, c_in, c_out, s_in, s_out)
    assert principal_from_certificate(server.getpeercert(binary_form=True)) == "User:CN=alice,O=kgroup test"
    assert principal_from_certificate(None) == ANONYMOUS
    assert oct(ca.server_key.stat().st_mode & 0o777) == "0o600"


def test_a_client_of_another_ca_is_refused(tmp_path: Path) -> None:
    ca = make_test_ca(tmp_path / "one")
    other = make_test_ca(tmp_path / "two", clients=("eve",))
    server_ctx = server_ssl_context(TlsConfig(ca.server_cert, ca.server_key, ca.ca_cert, "required"))
    client_ctx = ssl.create_default_context(cafile=str(ca.ca_cert))
    client_ctx.load_cert_chain(*other.clients["eve"])
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname="127.0.0.1")
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    try:
        _handshake(client, server, c_in, c_out, s_in, s_out)
    except ssl.SSLError as exc:
        assert "certificate" in str(exc).lower()
    else:
        raise AssertionError("a certificate from another CA was accepted")
