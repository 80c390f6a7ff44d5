"""The client's security settings, named as Kafka's clients name them, and its side of SASL.

:class:`ClientSecurity` holds ``security.protocol`` (``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT``,
``SASL_SSL``), the TLS files (PEM, librdkafka's names: ``ssl.ca.location``,
``ssl.certificate.location``, ``ssl.key.location``, ``ssl.key.password``) and the SASL mechanism
and user (``sasl.mechanism``, ``sasl.username``, ``sasl.password``). :func:`authenticate` runs the
exchange on a new connection the way Kafka's Java client (``SaslClientAuthenticator``) does:
ApiVersions, SaslHandshake v1 naming the mechanism, then SaslAuthenticate requests carrying the
mechanism's tokens (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), failing with Kafka's client messages.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgroup.client.versions import Requester, broker_ranges
from kgroup.model import ErrorCode, KgroupError
from kgroup.security.errors import AuthenticationFailed
from kgroup.security.listeners import PROTOCOLS, SASL_MECHANISMS, SecurityProtocol
from kgroup.security.plain import plain_client_token
from kgroup.security.scram import SCRAM_MECHANISMS, ScramClient
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import build, request_class

__all__ = [
    "PROTOCOLS",
    "SASL_MECHANISMS",
    "ClientSecurity",
    "SaslAuthenticationError",
    "authenticate",
    "read_properties",
]

UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
#: the newest SaslAuthenticate version Kafka 4's client speaks
_SASL_AUTHENTICATE_MAX = 2
#: the settings :meth:`ClientSecurity.from_config` reads (``sasl.mechanisms`` is librdkafka's alias)
CONFIG_KEYS = (
    "security.protocol",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.username",
    "sasl.password",
)


class SaslAuthenticationError(ConnectionError):
    """The broker refused the client's SASL authentication (Kafka's ``AuthenticationException``):
    retrying with the same settings cannot succeed, so it is not a lost connection."""


@dataclass(frozen=True, slots=True)
class ClientSecurity(SecurityProtocol):
    """How the client reaches brokers; the default is Kafka's: ``PLAINTEXT``, no authentication.

    ``ssl_endpoint_identification`` is Kafka's ``ssl.endpoint.identification.algorithm``
    (``https``: the broker's certificate must name the host the client dialled; ``none``: not
    checked). The password is left out of ``repr`` so that no log shows it.
    """

    protocol: str = "PLAINTEXT"
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    ssl_endpoint_identification: str = "https"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise KgroupError(f"security.protocol: {self.protocol!r}; give one of {', '.join(PROTOCOLS)}")
        if self.ssl_endpoint_identification not in ("https", "none", ""):
            raise KgroupError(
                f"ssl.endpoint.identification.algorithm: {self.ssl_endpoint_identification!r}; "
                "give https (check the broker's host name) or none"
            )
        if self.tls:
            for name, value in (
                ("ssl.ca.location", self.ssl_ca_location),
                ("ssl.certificate.location", self.ssl_certificate_location),
                ("ssl.key.location", self.ssl_key_location),
            ):
                if value is not None and not Path(value).is_file():
                    raise KgroupError(f"{name}: {value!r} is not a file; give the path of a PEM file")
            if (self.ssl_certificate_location is None) != (self.ssl_key_location is None):
                raise KgroupError(
                    "ssl.certificate.location / ssl.key.location: give both (a client certificate and "
                    "its key) or neither"
                )
        if self.sasl:
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise KgroupError(
                    f"sasl.mechanism: {self.sasl_mechanism!r}; give one of {', '.join(SASL_MECHANISMS)}"
                )
            if not self.sasl_username:
                raise KgroupError(f"sasl.username: empty; {self.protocol} needs the SASL user name")
            if not self.sasl_password:
                raise KgroupError(f"sasl.password: empty; {self.protocol} needs the user's password")

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> ClientSecurity:
        """From Kafka client settings (e.g. a ``--command-config`` file); other keys are refused so
        that a misspelt setting is not silently ignored."""
        unknown = sorted(set(config) - set(CONFIG_KEYS))
        if unknown:
            raise KgroupError(
                f"{unknown[0]}: not a security setting kgroup's client reads; give {', '.join(CONFIG_KEYS)}"
            )
        if "sasl.mechanism" in config and "sasl.mechanisms" in config:
            raise KgroupError("sasl.mechanisms: give sasl.mechanism or its alias sasl.mechanisms, not both")
        mechanism = config.get("sasl.mechanism", config.get("sasl.mechanisms"))
        return cls(
            protocol=config.get("security.protocol", "PLAINTEXT").upper(),
            ssl_ca_location=config.get("ssl.ca.location"),
            ssl_certificate_location=config.get("ssl.certificate.location"),
            ssl_key_location=config.get("ssl.key.location"),
            ssl_key_password=config.get("ssl.key.password"),
            ssl_endpoint_identification=config.get("ssl.endpoint.identification.algorithm", "https").lower(),
            sasl_mechanism=mechanism.upper() if mechanism is not None else None,
            sasl_username=config.get("sasl.username"),
            sasl_password=config.get("sasl.password"),
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of ``SSL`` / ``SASL_SSL`` (``None`` otherwise): the broker's certificate
        checked against ``ssl.ca.location`` (the system's CAs when not given)."""
        if not self.tls:
            return None
        try:
            context = ssl.create_default_context(cafile=self.ssl_ca_location)
            context.check_hostname = self.ssl_endpoint_identification == "https"
            if self.ssl_certificate_location is not None and self.ssl_key_location is not None:
                context.load_cert_chain(
                    self.ssl_certificate_location, self.ssl_key_location, password=self.ssl_key_password
                )
        except (ssl.SSLError, OSError) as exc:
            raise KgroupError(
                "ssl.ca.location / ssl.certificate.location / ssl.key.location: cannot load "
                f"({getattr(exc, 'reason', None) or exc}); give PEM files (and ssl.key.password for an "
                "encrypted key)"
            ) from None
        return context


def read_properties(path: Path) -> dict[str, str]:
    """A Java ``.properties`` file of client settings (``key=value`` or ``key: value`` per line,
    ``#`` / ``!`` comments), as Kafka's tools read ``--command-config``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KgroupError(f"{path}: cannot read ({exc}); give a properties file of client settings") from None
    settings: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            raise KgroupError(
                f"{path}:{number}: continued lines are not supported; write the value on one line"
            )
        cut = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if cut < 0:
            raise KgroupError(f"{path}:{number}: {line.split()[0]!r} has no value; write key=value")
        settings[line[:cut].strip()] = line[cut + 1 :].strip()
    return settings


async def authenticate(connection: Requester, security: ClientSecurity, timeout_s: float) -> None:
    """The SASL exchange on a new connection (Kafka's ``SaslClientAuthenticator``); raises
    :class:`SaslAuthenticationError` with Kafka's message when the broker refuses."""
    versions = await broker_ranges(connection, timeout_s)
    mechanism = security.sasl_mechanism
    assert mechanism is not None and security.sasl_username and security.sasl_password
    handshake_range = versions.get(ApiKey.SASL_HANDSHAKE)
    authenticate_range = versions.get(ApiKey.SASL_AUTHENTICATE)
    if handshake_range is None or handshake_range[1] < 1 or authenticate_range is None:
        raise SaslAuthenticationError(
            f"the broker at {connection.host}:{connection.port} does not speak SaslHandshake v1 and "
            "SaslAuthenticate (Kafka 1.0+); kgroup's client needs them"
        )
    handshake = await connection.request(
        build(_request(ApiKey.SASL_HANDSHAKE, 1), {"mechanism": mechanism}), timeout_s=timeout_s
    )
    error = int(handshake.error_code)
    enabled = "[" + ", ".join(handshake.mechanisms) + "]"
    if error == UNSUPPORTED_SASL_MECHANISM:
        raise SaslAuthenticationError(
            f"Client SASL mechanism '{mechanism}' not enabled in the server, enabled mechanisms are {enabled}"
        )
    if error == ILLEGAL_SASL_STATE:
        raise SaslAuthenticationError(
            f"Unexpected handshake request with client mechanism {mechanism}, enabled mechanisms are "
            f"{enabled}"
        )
    if error != ErrorCode.NONE:
        raise SaslAuthenticationError(f"SaslHandshake answered error {error}")
    version = min(authenticate_range[1], _SASL_AUTHENTICATE_MAX)

    async def exchange(token: bytes) -> bytes:
        answer = await connection.request(
            build(_request(ApiKey.SASL_AUTHENTICATE, version), {"auth_bytes": token}), timeout_s=timeout_s
        )
        code = int(answer.error_code)
        if code != ErrorCode.NONE:
            raise SaslAuthenticationError(answer.error_message or _default_message(code))
        return bytes(answer.auth_bytes)

    if mechanism == "PLAIN":
        await exchange(plain_client_token(security.sasl_username, security.sasl_password))
        return
    client = ScramClient(SCRAM_MECHANISMS[mechanism], security.sasl_username, security.sasl_password)
    try:
        server_first = await exchange(client.first())
        server_final = await exchange(client.final(server_first))
        client.verify(server_final)
    except AuthenticationFailed as exc:
        raise SaslAuthenticationError(str(exc)) from None


def _default_message(code: int) -> str:
    return f"SaslAuthenticate answered error {code}"


def _request(api_key: int, version: int) -> type[Any]:
    cls = request_class(api_key, version)
    assert cls is not None
    return cls
