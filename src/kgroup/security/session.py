"""A connection's authentication: Kafka's ``SaslServerAuthenticator`` state machine, per connection.

Before a SASL connection is authenticated only ApiVersions (once, first), SaslHandshake and then
SaslAuthenticate are accepted; anything else closes the connection, as on Kafka. SaslHandshake v0
is followed by raw SASL tokens (size-prefixed, no header); v1 by SaslAuthenticate requests. A
failed authentication is answered (SASL_AUTHENTICATION_FAILED with Kafka's message, or
UNSUPPORTED_SASL_MECHANISM) after ``connection.failed.authentication.delay.ms`` and the connection
is then closed; only that connection waits, every other one keeps being served.

KIP-368: with ``connections.max.reauth.ms`` > 0 a successful SaslAuthenticate names the session
lifetime; a client that used SaslAuthenticate v1+ re-authenticates with a new SaslHandshake on
the same connection (same mechanism, same principal; at most one re-authentication starts per
second), and a request other than SaslHandshake after the session expired closes the connection.

:meth:`Session.on_frame` sees each frame before dispatch: it answers it itself (an
:class:`Outcome`) or returns None for the broker to dispatch it as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kgroup.model import PeerError
from kgroup.security.credentials import CredentialStore
from kgroup.security.errors import AuthenticationFailed, CredentialsRejected
from kgroup.security.listeners import SASL_PROTOCOLS
from kgroup.security.oauthbearer import OAuthBearerServer
from kgroup.security.plain import PlainServer
from kgroup.security.principal import ANONYMOUS, user
from kgroup.security.scram import SCRAM_MECHANISMS, ScramServer
from kgroup.wire.api_keys import ApiKey, api_name
from kgroup.wire.codec import (
    RequestHeader,
    build,
    decode_request,
    decode_request_header,
    encode_response,
    response_class,
)
from kgroup.wire.framing import Frame

__all__ = [
    "SASL_AUTHENTICATE_KEY",
    "SASL_HANDSHAKE_KEY",
    "BrokerHooks",
    "Outcome",
    "Session",
]

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58


#: Kafka's ``KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS``
_MIN_REAUTH_INTERVAL_S = 1.0
#: the error answers (``AbstractRequest.getErrorResponse``) of the requests kgroup answers with
#: ILLEGAL_SASL_STATE while a SASL exchange is under way
_ILLEGAL_STATE_ANSWERS: dict[int, dict[str, Any]] = {
    SASL_HANDSHAKE_KEY: {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []},
    int(ApiKey.API_VERSIONS): {"error_code": ILLEGAL_SASL_STATE, "api_keys": [], "throttle_time": 0},
}


class _SaslServer(Protocol):
    authorization_id: str | None

    @property
    def complete(self) -> bool: ...

    def evaluate(self, token: bytes) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Outcome:
    """The session's own answer to a frame: ``reply`` (a response frame, or a raw SASL token, to
    send as is), then, if ``close`` is set, the connection is closed for that reason (logged without
    any secret). ``delay_s``: wait this long first (failed authentication)."""

    reply: bytes | None = None
    close: str | None = None
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class BrokerHooks:
    """What a session asks of the broker it runs in: ``clock_s`` a monotonic clock (seconds),
    ``supported`` whether the broker answers an API key at a version (its handler registry),
    ``wall_clock_ms`` the wall clock (OAUTHBEARER tokens' expiry), ``run_blocking`` runs a slow check (a
    PLAIN password is salted and hashed) away from the loop."""

    clock_s: Callable[[], float]
    supported: Callable[[int, int], bool]
    wall_clock_ms: Callable[[], int] | None = None
    run_blocking: Callable[[Callable[[bytes], bytes], bytes], Any] | None = None


def _api_name(api_key: int) -> str:
    return api_name(api_key)


class Session:
    """The authentication state of one connection (see the module docs).

    ``protocol`` is the listener's security protocol; ``tls_principal`` the principal of the TLS
    peer certificate (or ``User:ANONYMOUS``); ``hooks`` what it asks of the broker.
    """

    def __init__(
        self,
        protocol: str,
        *,
        listener: str = "",
        mechanisms: tuple[str, ...] = (),
        credentials: CredentialStore | None = None,
        tls_principal: str = ANONYMOUS,
        max_reauth_ms: int = 0,
        failed_delay_ms: int = 100,
        hooks: BrokerHooks,
    ) -> None:
        self.protocol = protocol
        self._wall_clock_ms = hooks.wall_clock_ms
        self._supported = hooks.supported
        self.listener = listener
        self.sasl = protocol in SASL_PROTOCOLS
        self.mechanisms = mechanisms
        self.credentials = credentials or CredentialStore()
        self.principal = ANONYMOUS if self.sasl else tls_principal
        self.max_reauth_ms = max_reauth_ms
        self.failed_delay_s = failed_delay_ms / 1000
        self._clock = hooks.clock_s
        self._run_blocking = hooks.run_blocking
        self._state = "initial" if self.sasl else "complete"
        self._server: _SaslServer | None = None
        self._mechanism = ""
        self._framed = True
        self._client_reauth = False
        self._reauthenticating = False
        self._expires_at: float | None = None
        self._last_reauth_start: float | None = None
        self.authentications = 0

    @property
    def authenticated(self) -> bool:
        return self._state == "complete"

    @property
    def mechanism(self) -> str:
        return self._mechanism

    def expired(self) -> bool:
        return self._expires_at is not None and self._clock() >= self._expires_at

    async def on_frame(self, frame: Frame) -> Outcome | None:
        if self._state == "complete":
            return self._when_complete(frame)
        if self._state == "authenticate_raw":
            return await self._raw_token(frame)
        if self._state == "reauth_bad_mechanism":
            return self._fail_silently(
                "the SASL mechanism asked for re-authentication differs from the first"
            )
        try:
            header = decode_request_header(frame)
        except PeerError:
            return self._close_now(
                "Invalid request, potential reasons: kafka client configured with the wrong security "
                "protocol, "
                "it does not support KIP-43 or it is not a kafka client."
            )
        if self._state in ("initial", "versions_answered", "reauth_handshake"):
            return self._handshake_phase(frame, header)
        return await self._authenticate(frame, header)

    # --- states -----------------------------------------------------------------------------------

    def _when_complete(self, frame: Frame) -> Outcome | None:
        if not self.sasl:
            return None
        try:
            header = decode_request_header(frame)
        except PeerError:
            return None  # dispatch closes it with its own reason
        if header.api_key == SASL_HANDSHAKE_KEY and self._may_reauthenticate():
            self._state = "reauth_handshake"
            self._reauthenticating = True
            return self._handshake_phase(frame, header)
        if self.expired():
            return Outcome(
                close="the SASL session expired (connections.max.reauth.ms) before re-authentication"
            )
        return None

    def _may_reauthenticate(self) -> bool:
        """Kafka's ``KafkaChannel.maybeBeginServerReauthentication``: only when the session has an
        expiry (``connections.max.reauth.ms`` > 0 and a client that spoke SaslAuthenticate v1+), and
        at most once a second; otherwise the SaslHandshake is an ordinary request (ILLEGAL_SASL_STATE)."""
        if not self._client_reauth or self._expires_at is None:
            return False
        now = self._clock()
        if self._last_reauth_start is not None and now - self._last_reauth_start < _MIN_REAUTH_INTERVAL_S:
            return False
        self._last_reauth_start = now
        return True

    def _handshake_phase(self, frame: Frame, header: RequestHeader) -> Outcome | None:
        if header.api_key == ApiKey.API_VERSIONS and self._state == "initial":
            if self._supported(header.api_key, header.api_version):
                self._state = "versions_answered"
            return None  # the broker answers ApiVersions as always
        if header.api_key != SASL_HANDSHAKE_KEY:
            if header.api_key == ApiKey.API_VERSIONS:
                return self._close_now("a second ApiVersions request during SASL authentication")
            return self._close_now(
                f"Unexpected Kafka request of type {_api_name(header.api_key).upper()} during SASL handshake."
            )
        if not self._supported(header.api_key, header.api_version):
            return self._close_now(f"SaslHandshake v{header.api_version} is not supported")
        body = decode_request(frame, header).body
        mechanism: str = body.mechanism
        enabled = list(self.mechanisms)
        if mechanism not in enabled:
            self._state = "failed"
            return self._failed_reply(
                header,
                {"error_code": UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled},
                f"Unsupported SASL mechanism {mechanism}",
            )
        reply = self._encode(header, {"error_code": 0, "mechanisms": enabled})
        if self._reauthenticating and mechanism != self._mechanism:
            self._state = "reauth_bad_mechanism"
            return Outcome(reply=reply)
        self._mechanism = mechanism
        self._framed = header.api_version >= 1
        self._server = self._new_server(mechanism)
        self._state = "authenticate" if self._framed else "authenticate_raw"
        return Outcome(reply=reply)

    async def _authenticate(self, frame: Frame, header: RequestHeader) -> Outcome:
        if header.api_key != SASL_AUTHENTICATE_KEY:
            # Kafka answers this API's error response with ILLEGAL_SASL_STATE after the failed-
            # authentication delay, then closes; kgroup builds that answer for the SASL handshake and
            # ApiVersions (what a client sends here by mistake) and closes at once for any other API
            reason = (
                f"Unexpected Kafka request of type {_api_name(header.api_key).upper()} "
                "during SASL authentication."
            )
            error_answer = _ILLEGAL_STATE_ANSWERS.get(header.api_key)
            if error_answer is None or not self._supported(header.api_key, header.api_version):
                return self._close_now(reason)
            return self._failed_reply(header, dict(error_answer), reason)
        if not self._supported(header.api_key, header.api_version):
            return self._close_now(
                f"Version {header.api_version} is not supported for apiKey SASL_AUTHENTICATE"
            )
        if header.api_version > 0:
            self._client_reauth = True
        token: bytes = decode_request(frame, header).body.auth_bytes
        try:
            answer = await self._evaluate(token)
        except AuthenticationFailed as exc:
            return self._failed_reply(
                header,
                {"error_code": SASL_AUTHENTICATION_FAILED, "error_message": str(exc), "auth_bytes": b""},
                str(exc),
            )
        except CredentialsRejected:
            message = (
                f"Authentication failed during {self._phase_text()} due to invalid credentials with SASL "
                f"mechanism {self._mechanism}"
            )
            return self._failed_reply(
                header,
                {"error_code": SASL_AUTHENTICATION_FAILED, "error_message": message, "auth_bytes": b""},
                message,
            )
        lifetime_ms = self._completed_lifetime_ms()
        # the error message is "" (the generated default), as Apache Kafka answers
        data = {"error_code": 0, "error_message": "", "auth_bytes": answer, "session_lifetime": lifetime_ms}
        return Outcome(reply=self._encode(header, data))

    async def _raw_token(self, frame: Frame) -> Outcome:
        try:
            answer = await self._evaluate(bytes(frame))
        except (AuthenticationFailed, CredentialsRejected) as exc:
            detail = str(exc) if isinstance(exc, AuthenticationFailed) else "invalid credentials"
            return self._fail_silently(f"SASL {self._mechanism} authentication failed: {detail}")
        self._completed_lifetime_ms()
        return Outcome(reply=answer)

    # --- helpers ----------------------------------------------------------------------------------

    def _new_server(self, mechanism: str) -> _SaslServer:
        if mechanism == "PLAIN":
            return PlainServer(self.credentials.verify_password)
        if mechanism == "OAUTHBEARER":
            assert self._wall_clock_ms is not None, "OAUTHBEARER needs the wall clock (token expiry)"
            return OAuthBearerServer(self._wall_clock_ms)
        scram = SCRAM_MECHANISMS[mechanism]
        return ScramServer(scram, lambda name: self.credentials.lookup(name, scram.name))

    async def _evaluate(self, token: bytes) -> bytes:
        server = self._server
        assert server is not None
        try:
            if self._run_blocking is not None and isinstance(server, PlainServer):
                answer: bytes = await self._run_blocking(server.evaluate, token)
            else:
                answer = server.evaluate(token)
            if server.complete:
                assert server.authorization_id is not None
                principal = user(server.authorization_id)
                if self._reauthenticating and principal != self.principal:
                    old_type, old_name = self.principal.split(":", 1)
                    new_type, new_name = principal.split(":", 1)
                    raise AuthenticationFailed(
                        f"Cannot change principals during re-authentication from {old_type}.{old_name}: "
                        f"{new_type}.{new_name}"
                    )
                self.principal = principal
        except (AuthenticationFailed, CredentialsRejected):
            self._state = "failed"
            raise
        return answer

    def _completed_lifetime_ms(self) -> int:
        server = self._server
        assert server is not None
        if not server.complete:
            return 0
        self._state = "complete"
        self._reauthenticating = False
        self.authentications += 1
        # Kafka's ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs: the session ends with
        # connections.max.reauth.ms and with the credential (an OAUTHBEARER token's expiry)
        expiration_ms: int | None = getattr(server, "credential_expiration_ms", None)
        if expiration_ms is None and self.max_reauth_ms <= 0:
            return 0
        if expiration_ms is None:
            lifetime_ms = self.max_reauth_ms
        else:
            assert self._wall_clock_ms is not None
            left_ms = max(0, expiration_ms - self._wall_clock_ms())
            lifetime_ms = left_ms if self.max_reauth_ms <= 0 else min(left_ms, self.max_reauth_ms)
        self._expires_at = self._clock() + lifetime_ms / 1000
        return lifetime_ms

    def _phase_text(self) -> str:
        return "re-authentication" if self._reauthenticating else "authentication"

    def _encode(self, header: RequestHeader, data: dict[str, Any]) -> bytes:
        cls = response_class(header.api_key, header.api_version)
        assert cls is not None
        return encode_response(header.correlation_id, build(cls, data))

    def _failed_reply(self, header: RequestHeader, data: dict[str, Any], reason: str) -> Outcome:
        self._state = "failed"
        return Outcome(
            reply=self._encode(header, data),
            close=f"SASL {self._phase_text()} failed: {reason}",
            delay_s=self.failed_delay_s,
        )

    def _fail_silently(self, reason: str) -> Outcome:
        self._state = "failed"
        return Outcome(close=reason, delay_s=self.failed_delay_s)

    def _close_now(self, reason: str) -> Outcome:
        self._state = "failed"
        return Outcome(close=reason)
