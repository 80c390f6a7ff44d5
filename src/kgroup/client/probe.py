"""What a listener wants, asked after a connection to it failed: TLS, SASL, or what the client gave.

A client that speaks plain text to a TLS listener, or skips SASL on a SASL listener, sees only a
closed connection (Kafka closes it: "Unexpected Kafka request of type METADATA during SASL
handshake", or a TLS record read as a frame size). "Is the broker running?" is then the wrong
question. :func:`listener_wants` opens one or two short connections of its own to find out:

* a TLS handshake (the certificate not checked: this only asks whether the port speaks TLS);
* a ``SaslHandshake`` v1 (over TLS when the port speaks it): a SASL listener answers ``NONE`` or
  ``UNSUPPORTED_SASL_MECHANISM`` with its mechanisms, any other listener ``ILLEGAL_SASL_STATE`` (Kafka's
  ``KafkaApis.handleSaslHandshakeRequest``).

It is asked only after a failure, so that a working client never pays for it.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kgroup.client.connection import BrokerConnection, ConnectionLost
from kgroup.client.security import ClientSecurity
from kgroup.model import ErrorCode, KgroupError
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import build, request_class

__all__ = [
    "ListenerMismatch",
    "ListenerWants",
    "check_listener",
    "listener_wants",
    "reach_cluster",
    "reach_cluster_blocking",
]

_UNSUPPORTED_SASL_MECHANISM = 33
_PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True)
class ListenerWants:
    """What the listener at ``host:port`` speaks: ``protocol`` is Kafka's ``security.protocol``
    (``SSL`` / ``SASL_SSL`` / ``SASL_PLAINTEXT``, or ``SSL or SASL_SSL`` when TLS answered but what
    runs inside it did not), ``mechanisms`` the SASL mechanisms it named."""

    host: str
    port: int
    protocol: str
    mechanisms: tuple[str, ...] = ()

    def describe(self) -> str:
        mechanisms = f" (mechanisms {', '.join(self.mechanisms)})" if self.mechanisms else ""
        wants = {
            "SSL": "TLS",
            "SASL_SSL": "TLS and SASL",
            "SASL_PLAINTEXT": "SASL",
        }.get(self.protocol, "TLS")
        if self.protocol == "SSL or SASL_SSL":
            return f"the listener at {self.host}:{self.port} wants TLS: security.protocol=SSL or SASL_SSL"
        where = f"the listener at {self.host}:{self.port}"
        return f"{where} wants {wants}: security.protocol={self.protocol}{mechanisms}"


def _unchecked_tls() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # only "does this port speak TLS?"; nothing is sent but a probe
    return context


async def _speaks_tls(host: str, port: int, timeout_s: float) -> bool:
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=_unchecked_tls(), server_hostname=None), timeout_s
        )
    except (OSError, TimeoutError, ssl.SSLError, ValueError):
        return False
    writer.transport.abort()  # no close_notify exchange to outlive the caller's event loop
    return True


async def _sasl_answer(host: str, port: int, tls: bool, timeout_s: float) -> tuple[str, ...] | bool:
    """The mechanisms a SASL listener names in answer to a SaslHandshake; ``False`` when the listener
    answered that it is not a SASL one, ``True`` when it did not answer."""
    connection = BrokerConnection(
        host, port, client_id="kgroup-probe", ssl_context=_unchecked_tls() if tls else None
    )
    try:
        await connection.open(timeout_s)
        cls: Any = request_class(ApiKey.SASL_HANDSHAKE, 1)
        body = build(cls, {"mechanism": "PLAIN"})
        answer = await connection.request(body, timeout_s=timeout_s)
    except (ConnectionLost, OSError, TimeoutError):
        return True
    finally:
        connection.close()
    if int(answer.error_code) in (ErrorCode.NONE, _UNSUPPORTED_SASL_MECHANISM):
        return tuple(answer.mechanisms)
    return False


async def listener_wants(
    host: str, port: int, security: ClientSecurity, timeout_s: float = _PROBE_TIMEOUT_S
) -> ListenerWants | None:
    """What the listener at ``host:port`` wants that ``security`` does not give; ``None`` when it
    wants nothing more (or cannot be reached: then the failure was something else)."""
    tls = security.tls or await _speaks_tls(host, port, timeout_s)
    sasl = False if security.sasl else await _sasl_answer(host, port, tls, timeout_s)
    if isinstance(sasl, tuple):
        return ListenerWants(host, port, "SASL_SSL" if tls else "SASL_PLAINTEXT", sasl)
    if tls and not security.tls:
        # TLS answered; inside it an SSL listener answers ILLEGAL_SASL_STATE; no answer at all
        # (mutual TLS required, say) leaves both possible
        return ListenerWants(host, port, "SSL or SASL_SSL" if sasl else "SSL")
    return None


class ListenerMismatch(KgroupError):
    """A connection failed because the listener wants TLS or SASL the client did not give; the
    message says which (:meth:`ListenerWants.describe`), callers add how their user gives it."""

    def __init__(self, wants: ListenerWants, fix: str = "") -> None:
        super().__init__(wants.describe() + (f"; {fix}" if fix else ""))
        self.wants = wants

    def for_command_config(self) -> KgroupError:
        """The one line a command with ``--command-config`` says (``kgroup lag``, ``kgroup record``)."""
        return KgroupError(
            f"--command-config: {self.message}; give a --command-config file with those settings "
            "(docs/security.md)"
        )


async def check_listener(host: str, port: int, security: ClientSecurity) -> None:
    """After a connection that ``security`` opened to ``host:port`` failed: raise
    :class:`ListenerMismatch` when the listener wants more; return when it does not (the failure
    was something else, which the caller reports)."""
    wants = await listener_wants(host, port, security)
    if wants is not None:
        raise ListenerMismatch(wants)


async def reach_cluster(
    bootstrap: Sequence[tuple[str, int]], security: ClientSecurity, timeout_s: float
) -> None:
    """Prove that the cluster behind ``bootstrap`` (``parse_bootstrap``'s pairs) serves this
    client: the first bootstrap server that accepts a connection answers ApiVersions, the SASL
    exchange ``security`` asks for and a Metadata request for no topic. Fails at once with one
    :class:`KgroupError` (``bootstrap servers: …``) where a client library would retry until its
    timeout: every server refused the connection, or the listener wants TLS or SASL
    (:class:`ListenerMismatch`), or the broker refused the authentication."""
    from kgroup.client.security import SaslAuthenticationError
    from kgroup.client.versions import negotiate

    refused: list[str] = []
    for host, port in bootstrap:
        connection = BrokerConnection(host, port, client_id="kgroup-probe", security=security)
        try:
            await asyncio.wait_for(connection.open(timeout_s), timeout_s)
            versions = await negotiate(connection, timeout_s)
            version = min(versions.get(ApiKey.METADATA, 1), 12)
            cls: Any = request_class(ApiKey.METADATA, version)
            no_topic = {
                "topics": [],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            }
            await connection.request(build(cls, no_topic), timeout_s=timeout_s)
            return
        except SaslAuthenticationError as exc:
            raise KgroupError(
                f"sasl.password: {host}:{port} refused the authentication ({exc}); check sasl.username, "
                "sasl.password and sasl.mechanism"
            ) from None
        except ConnectionLost as exc:
            await check_listener(host, port, security)
            refused.append(f"{host}:{port}: {exc}")
        except (OSError, TimeoutError) as exc:
            refused.append(f"{host}:{port}: {exc or type(exc).__name__}")
        finally:
            connection.close()
    raise KgroupError(
        f"bootstrap servers: cannot reach a Kafka broker ({'; '.join(refused)}); check the address and "
        "that the broker runs"
    )


def reach_cluster_blocking(
    bootstrap: Sequence[tuple[str, int]], security: ClientSecurity, timeout_s: float
) -> None:
    """:func:`reach_cluster` from code that runs no event loop (``kgroup record``'s reader)."""
    asyncio.run(reach_cluster(bootstrap, security, timeout_s))
