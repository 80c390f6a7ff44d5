"""Principals as Kafka's ``DefaultKafkaPrincipalBuilder`` makes them.

SASL: ``User:<authorization id>``. SSL with a client certificate: ``User:<subject DN>`` in RFC 2253
form (``CN=alice,O=kgroup test``), as ``X500Principal.getName()`` writes it with the default
``ssl.principal.mapping.rules``. Anything else (PLAINTEXT, SSL without a client certificate):
``User:ANONYMOUS``.
"""

from __future__ import annotations

__all__ = ["ANONYMOUS", "principal_from_certificate", "user"]

ANONYMOUS = "User:ANONYMOUS"


def user(name: str) -> str:
    return f"User:{name}"


def principal_from_certificate(der: bytes | None) -> str:
    """The principal of a peer certificate (DER), or ``User:ANONYMOUS`` without one."""
    if not der:
        return ANONYMOUS
    from cryptography import x509

    certificate = x509.load_der_x509_certificate(der)
    # RFC 4514 is RFC 2253's successor; both write the RDNs most specific first
    return user(certificate.subject.rfc4514_string())
