"""Listeners as Kafka names them: ``NAME://HOST:PORT`` with a security protocol per name.

``listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094`` and
``listener.security.protocol.map`` (``NAME:PROTOCOL,…``; Kafka's default map names each protocol
after itself, so listeners called PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL need no map).
TLS settings follow Kafka's ``ssl.*`` broker configs, with PEM files (Kafka's ``PEM`` store type).
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from kgroup.model import KgroupError

__all__ = [
    "PROTOCOLS",
    "SASL_MECHANISMS",
    "SASL_PROTOCOLS",
    "SUPPORTED_SASL_MECHANISMS",
    "Listener",
    "SecurityConfig",
    "SecurityProtocol",
    "TlsConfig",
    "build_security_config",
    "parse_advertised_listeners",
    "parse_listeners",
    "parse_protocol_map",
    "server_ssl_context",
]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: the protocols that authenticate with SASL (the others: none, or the TLS peer's certificate)
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: every mechanism kgroup serves; OAUTHBEARER (unsecured tokens, for tests) only when asked for
SUPPORTED_SASL_MECHANISMS = (*SASL_MECHANISMS, "OAUTHBEARER")
CLIENT_AUTH = ("none", "requested", "required")
#: the name of the one listener a broker has when no ``listeners`` are given
DEFAULT_LISTENER = "PLAINTEXT"


class SecurityProtocol:
    """What a ``security.protocol`` (``protocol``, one of :data:`PROTOCOLS`) says of a broker's
    listener or a client's connections: whether they run over TLS, whether they authenticate with SASL."""

    __slots__ = ()
    protocol: str

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS


@dataclass(frozen=True, slots=True)
class Listener(SecurityProtocol):
    name: str
    host: str
    port: int
    protocol: str

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class TlsConfig:
    """``ssl.keystore.*`` (certificate chain and key, PEM), ``ssl.truststore.*`` (CA, PEM) and
    ``ssl.client.auth``."""

    certfile: Path | None = None
    keyfile: Path | None = None
    cafile: Path | None = None
    client_auth: str = "none"

    def __post_init__(self) -> None:
        if self.client_auth not in CLIENT_AUTH:
            raise KgroupError(f"ssl.client.auth: {self.client_auth!r}; use one of {', '.join(CLIENT_AUTH)}")


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    """What ``kgroup serve`` and ``kgroup.testing.KafkaBroker`` take for security.

    ``listeners`` empty: one PLAINTEXT listener per broker on ``BrokerConfig.host``/``port`` (as before).
    """

    listeners: tuple[Listener, ...] = ()
    #: ``advertised.listeners``: the address each named listener's clients are told of (Metadata,
    #: FindCoordinator); empty: every listener advertises the address it is bound to. Set, only the
    #: listeners it names are advertised (Kafka's ``effectiveAdvertisedBrokerListeners``); port 0
    #: advertises the bound port, another port is broker 0's (broker ``i`` of a cluster: ``port + i``)
    advertised_listeners: tuple[Listener, ...] = ()
    tls: TlsConfig = field(default_factory=TlsConfig)
    #: ``sasl.enabled.mechanisms``
    sasl_mechanisms: tuple[str, ...] = SASL_MECHANISMS
    #: users for SASL (NAME, PASSWORD); turned into salted credentials at start, never kept
    users: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    #: ``connections.max.reauth.ms`` (0: sessions never expire; KIP-368)
    connections_max_reauth_ms: int = 0
    #: ``connection.failed.authentication.delay.ms``
    failed_authentication_delay_ms: int = 100
    #: an ``authorizer.class.name`` is set: ACLs are enforced
    authorizer: bool = False
    #: ``super.users`` (``User:admin;User:ops``)
    super_users: tuple[str, ...] = ()
    #: ``allow.everyone.if.no.acl.found``
    allow_everyone_if_no_acl_found: bool = False
    #: where ACLs and SCRAM credentials set through the API are kept (the broker's data directory;
    #: None: in memory only)
    state_dir: Path | None = None

    def __post_init__(self) -> None:
        for mechanism in self.sasl_mechanisms:
            if mechanism not in SUPPORTED_SASL_MECHANISMS:
                raise KgroupError(
                    f"sasl.enabled.mechanisms: {mechanism!r} is not supported; "
                    f"use {', '.join(SUPPORTED_SASL_MECHANISMS)}"
                )
        if self.connections_max_reauth_ms < 0:
            raise KgroupError(f"connections.max.reauth.ms: {self.connections_max_reauth_ms}; use 0 or more")
        if not 0 <= self.failed_authentication_delay_ms <= 60_000:
            raise KgroupError(
                "connection.failed.authentication.delay.ms: "
                f"{self.failed_authentication_delay_ms}; use 0..60000"
            )
        names = [listener.name for listener in self.listeners]
        if len(set(names)) != len(names):
            raise KgroupError("listeners: each listener name may appear once")
        self._check_advertised(names or [DEFAULT_LISTENER])
        if any(listener.tls for listener in self.listeners):
            if self.tls.certfile is None or self.tls.keyfile is None:
                raise KgroupError(
                    "ssl: an SSL or SASL_SSL listener needs a certificate and key "
                    "(--ssl-certfile/--ssl-keyfile; `kgroup test-ca DIR` makes test ones)"
                )
            if self.tls.client_auth != "none" and self.tls.cafile is None:
                raise KgroupError("ssl.client.auth: checking client certificates needs --ssl-cafile (the CA)")
        for principal in self.super_users:
            if ":" not in principal:
                raise KgroupError(f"super.users: {principal!r} is not a principal; write User:NAME")

    def _check_advertised(self, names: list[str]) -> None:
        advertised = [listener.name for listener in self.advertised_listeners]
        if len(set(advertised)) != len(advertised):
            raise KgroupError("advertised.listeners: each listener name may appear once")
        unknown = [name for name in advertised if name not in names]
        if unknown:
            # Kafka's KafkaConfig: advertised names must be equal to or a subset of the listeners'
            raise KgroupError(
                f"advertised.listeners: {', '.join(unknown)} is not a listener; "
                f"advertise one of {', '.join(names)} (the --listener names)"
            )
        for listener in self.advertised_listeners:
            if listener.host == "0.0.0.0":
                raise KgroupError(
                    f"advertised.listeners: {listener} cannot use the nonroutable meta-address 0.0.0.0; "
                    "advertise an address clients can reach"
                )

    def advertised_listener(self, name: str) -> Listener | None:
        """The advertised address of listener ``name`` ("": the default PLAINTEXT listener), or None
        when ``advertised.listeners`` is set and does not name it."""
        wanted = name or DEFAULT_LISTENER
        for listener in self.advertised_listeners:
            if listener.name == wanted:
                return listener
        return None

    @property
    def sasl(self) -> bool:
        return any(listener.sasl for listener in self.listeners)

    def open_listeners_beyond_loopback(self) -> list[Listener]:
        """Listeners on a non-loopback address without authentication (PLAINTEXT, or SSL without
        client certificates): the broker warns about each."""
        found = []
        for listener in self.listeners:
            authenticated = listener.sasl or (
                listener.protocol == "SSL" and self.tls.client_auth == "required"
            )
            if not authenticated and not is_loopback(listener.host):
                found.append(listener)
        return found


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_protocol_map(text: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``CLIENT:SASL_SSL,INTERNAL:PLAINTEXT``."""
    mapping = {p: p for p in PROTOCOLS}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, protocol = item.partition(":")
        if not sep or not name or protocol not in PROTOCOLS:
            raise KgroupError(
                f"listener.security.protocol.map: {item!r}; write NAME:PROTOCOL with PROTOCOL one of "
                f"{', '.join(PROTOCOLS)}"
            )
        mapping[name] = protocol
    return mapping


def parse_listeners(specs: list[str], protocol_map: dict[str, str] | None = None) -> tuple[Listener, ...]:
    """``NAME://HOST:PORT`` each (or one comma-separated ``listeners=`` value)."""
    mapping = protocol_map or parse_protocol_map("")
    listeners = []
    for spec in (s.strip() for text in specs for s in text.split(",")):
        if not spec:
            continue
        name, sep, address = spec.partition("://")
        host, colon, port_text = address.rpartition(":")
        if not sep or not name or not colon:
            raise KgroupError(
                f"listeners: {spec!r}; write NAME://HOST:PORT, e.g. SASL_PLAINTEXT://127.0.0.1:9093"
            )
        try:
            port = int(port_text)
        except ValueError:
            raise KgroupError(f"listeners: {spec!r}: {port_text!r} is not a port") from None
        if not 0 <= port <= 65535:
            raise KgroupError(f"listeners: {spec!r}: port {port} is not a TCP port; use 0..65535")
        protocol = mapping.get(name)
        if protocol is None:
            raise KgroupError(
                f"listeners: {name!r} has no security protocol; add it to --listener-security-protocol-map "
                f"(e.g. {name}:SASL_SSL) or name the listener after its protocol"
            )
        listeners.append(Listener(name, host.strip("[]") or "127.0.0.1", port, protocol))
    return tuple(listeners)


def parse_advertised_listeners(
    specs: list[str] | tuple[str, ...], protocol_map: dict[str, str] | None = None
) -> tuple[Listener, ...]:
    """``advertised.listeners``: ``NAME://HOST:PORT`` each (or one comma-separated value); the host
    is required (it is what clients dial), port 0 means the port the listener is bound to."""
    mapping = protocol_map or parse_protocol_map("")
    names = {spec.strip().partition("://")[0] for text in specs for spec in text.split(",")}
    # a name no listener has is refused by SecurityConfig (naming the listeners); not for its protocol
    known = {name: mapping.get(name, "PLAINTEXT") for name in names if name}
    try:
        parsed = parse_listeners(list(specs), {**mapping, **known})
    except KgroupError as exc:
        raise KgroupError(f"advertised.{exc}") from None
    for spec in (s.strip() for text in specs for s in text.split(",")):
        address = spec.partition("://")[2]
        if spec and not address.rpartition(":")[0].strip("[]"):
            raise KgroupError(
                f"advertised.listeners: {spec!r} has no host; write NAME://HOST:PORT with the address "
                "clients dial, e.g. PLAINTEXT://127.0.0.1:19092"
            )
    return parsed


def server_ssl_context(tls: TlsConfig) -> ssl.SSLContext:
    """The TLS context of SSL and SASL_SSL listeners (TLS 1.2+, as Kafka's default protocols)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    assert tls.certfile is not None and tls.keyfile is not None
    try:
        context.load_cert_chain(tls.certfile, tls.keyfile)
        if tls.cafile is not None:
            context.load_verify_locations(tls.cafile)
    except (OSError, ssl.SSLError) as exc:
        raise KgroupError(
            f"ssl: cannot load the certificate, key or CA ({exc}); "
            "check --ssl-certfile, --ssl-keyfile, --ssl-cafile"
        ) from None
    context.verify_mode = {
        "none": ssl.CERT_NONE,
        "requested": ssl.CERT_OPTIONAL,
        "required": ssl.CERT_REQUIRED,
    }[tls.client_auth]
    return context


def build_security_config(
    *,
    listeners: list[str] | tuple[str, ...] = (),
    listener_security_protocol_map: str = "",
    advertised_listeners: list[str] | tuple[str, ...] = (),
    ssl_certfile: str | Path | None = None,
    ssl_keyfile: str | Path | None = None,
    ssl_cafile: str | Path | None = None,
    ssl_client_auth: str = "none",
    sasl_mechanisms: tuple[str, ...] | list[str] = SASL_MECHANISMS,
    sasl_users: tuple[tuple[str, str], ...] = (),
    authorizer: bool = False,
    super_users: tuple[str, ...] | list[str] = (),
    allow_everyone_if_no_acl_found: bool = False,
    connections_max_reauth_ms: int = 0,
    failed_authentication_delay_ms: int = 100,
    state_dir: Path | None = None,
) -> SecurityConfig:
    """The one place ``kgroup serve``'s flags and ``kgroup.testing.KafkaBroker``'s arguments become a
    :class:`SecurityConfig` (same names, same checks)."""

    def path(value: str | Path | None) -> Path | None:
        return None if value is None else Path(value)

    protocol_map = parse_protocol_map(listener_security_protocol_map)
    return SecurityConfig(
        listeners=parse_listeners(list(listeners), protocol_map),
        advertised_listeners=parse_advertised_listeners(advertised_listeners, protocol_map),
        tls=TlsConfig(path(ssl_certfile), path(ssl_keyfile), path(ssl_cafile), ssl_client_auth),
        sasl_mechanisms=tuple(sasl_mechanisms),
        users=tuple(sasl_users),
        connections_max_reauth_ms=connections_max_reauth_ms,
        failed_authentication_delay_ms=failed_authentication_delay_ms,
        authorizer=authorizer,
        super_users=tuple(super_users),
        allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found,
        state_dir=state_dir,
    )
