"""A throw-away certificate authority for tests: a CA, a server certificate for 127.0.0.1 and
localhost, and client certificates — written as PEM files, so no ``openssl`` commands are needed.

``kgroup test-ca DIR --client alice`` writes ``DIR/ca.pem``, ``DIR/server.pem`` + ``server.key``
and ``DIR/alice.pem`` + ``alice.key``; :func:`make_test_ca` does the same from Python. The keys are
unencrypted EC P-256 keys: for tests only.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CaFiles", "make_test_ca"]


@dataclass(frozen=True, slots=True)
class CaFiles:
    """The files :func:`make_test_ca` wrote."""

    directory: Path
    ca_cert: Path
    server_cert: Path
    server_key: Path
    clients: dict[str, tuple[Path, Path]]  # name -> (certificate, key)


def make_test_ca(
    directory: Path,
    clients: tuple[str, ...] = (),
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
    days: int = 30,
) -> CaFiles:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=days)

    def name(common_name: str) -> x509.Name:
        return x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kgroup test"),
                x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            ]
        )

    def write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        path.chmod(0o600)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name("kgroup test CA")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path = directory / "ca.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))

    def leaf(common_name: str, stem: str, server: bool) -> tuple[Path, Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(common_name))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
        )
        if server:
            alt: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    alt.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    alt.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        cert_path, key_path = directory / f"{stem}.pem", directory / f"{stem}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        write_key(key, key_path)
        return cert_path, key_path

    server_cert, server_key = leaf(hosts[0] if hosts else "localhost", "server", True)
    made = {client: leaf(client, client, False) for client in clients}
    return CaFiles(directory, ca_path, server_cert, server_key, made)
