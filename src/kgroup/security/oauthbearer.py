"""SASL/OAUTHBEARER (RFC 7628) with unsecured JWS tokens, as Kafka's ``OAuthBearerSaslServer`` with
its default ``OAuthBearerUnsecuredValidatorCallbackHandler`` does it — for tests, never production:
the token is not signed, so anyone can claim any principal.

The client's one message is ``n,[a=authzid],\\x01auth=Bearer <token>\\x01[key=value\\x01]*\\x01``.
The token is ``base64url(header).base64url(claims).`` with ``"alg": "none"`` and no signature; the
``sub`` claim (a string) is the principal, ``exp`` (seconds) is required and must be in the future,
``iat`` (optional) may not be in the future nor at or after ``exp``; a ``scope`` is read but not
required (Kafka's ``unsecuredValidatorRequiredScope`` option is not offered). Extensions are
accepted. A token that fails is answered as Kafka does: the SaslAuthenticate answer carries
``{"status":"invalid_token"}`` (no error), the client acknowledges with ``\\x01``, and only then
does the exchange fail with that text as the message. The token's expiry is the credential's
lifetime (the SASL session ends with it, KIP-368).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any

from kgroup.security.errors import AuthenticationFailed, CredentialsRejected

__all__ = ["OAuthBearerServer", "unsecured_token"]

_SEPARATOR = "\x01"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KVPAIRS = rf"(?:[A-Za-z]+=[\x21-\x7e \t\r\n]+{_SEPARATOR})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_SEPARATOR}(?P<kvpairs>{_KVPAIRS}){_SEPARATOR}"
)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_INVALID_TOKEN = '{"status":"invalid_token"}'


class _IllegalToken(Exception):
    pass


def _json_part(part: str) -> dict[str, Any]:
    try:
        decoded = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise _IllegalToken("malformed Base64 URL encoded value") from None
    try:
        value = json.loads(decoded)
    except (UnicodeDecodeError, ValueError):
        raise _IllegalToken("malformed JSON") from None
    if not isinstance(value, dict):
        raise _IllegalToken("malformed JSON")
    return value


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _IllegalToken(f"The '{name}' claim was not of type Number")
    return float(value)


def validate_unsecured_token(token: str, now_ms: int) -> tuple[str, int]:
    """``OAuthBearerUnsecuredJws`` and the validator's checks: (principal name, expiry in epoch ms),
    or :class:`_IllegalToken` with the reason (Kafka keeps the reason on the broker)."""
    if ".." in token:
        raise _IllegalToken("Malformed compact serialization contains '..'")
    parts = token.split(".")
    if len(parts) != 3:
        raise _IllegalToken("Unsecured JWS compact serializations must have 3 dot-separated values")
    header, claims = _json_part(parts[0]), _json_part(parts[1])
    if header.get("alg") != "none":
        raise _IllegalToken("Unsecured JWS must have 'none' for an algorithm")
    if parts[2]:
        raise _IllegalToken("Unsecured JWS must not contain a digital signature")
    expires = _number(claims, "exp")
    if expires is None:
        raise _IllegalToken("No expiration time in JWT")
    principal = claims.get("sub")
    if not isinstance(principal, str) or not principal.strip():
        raise _IllegalToken("No principal name in JWT claim: sub")
    expires_ms = round(expires * 1000)
    issued = _number(claims, "iat")
    issued_ms = None if issued is None else round(issued * 1000)
    if issued_ms is not None and issued_ms > now_ms:
        raise _IllegalToken("The Issued At value is after the current time")
    if now_ms >= expires_ms:
        raise _IllegalToken("The indicated time is after the expiration time")
    if issued_ms is not None and expires_ms <= issued_ms:
        raise _IllegalToken("The Expiration Time is not after the Issued At time")
    return principal, expires_ms


def unsecured_token(principal: str, expires_s: float, issued_s: float | None = None) -> str:
    """An unsecured JWS for tests (what Kafka's ``OAuthBearerUnsecuredLoginCallbackHandler`` makes)."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims: dict[str, Any] = {"sub": principal, "exp": expires_s}
    if issued_s is not None:
        claims["iat"] = issued_s
    return f"{part({'alg': 'none'})}.{part(claims)}."


class OAuthBearerServer:
    """One OAUTHBEARER exchange: :meth:`evaluate` each client token in turn (``now_ms``: wall clock)."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._error: str | None = None
        self.authorization_id: str | None = None
        self.credential_expiration_ms: int | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        if token == _SEPARATOR.encode() and self._error is not None:
            raise AuthenticationFailed(self._error)
        self._error = None
        message = token.decode("utf-8", errors="replace")
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise CredentialsRejected("Invalid OAUTHBEARER client first message")
        pairs = dict(pair.split("=", 1) for pair in match["kvpairs"].split(_SEPARATOR) if pair)
        auth = pairs.get("auth")
        if auth is None:
            raise CredentialsRejected("Invalid OAUTHBEARER client first message: 'auth' not specified")
        auth_match = _AUTH.fullmatch(auth)
        if auth_match is None:
            raise CredentialsRejected("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if auth_match["scheme"].lower() != "bearer":
            raise CredentialsRejected("Invalid scheme in OAUTHBEARER client first message")
        try:
            principal, expires_ms = validate_unsecured_token(auth_match["token"], self._now_ms())
        except _IllegalToken:
            self._error = _INVALID_TOKEN
            return _INVALID_TOKEN.encode()
        authzid = match["authzid"] or ""
        if authzid and authzid != principal:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id "
                f"({authzid}) that is different from the token's principal name ({principal})"
            )
        self.authorization_id = principal
        self.credential_expiration_ms = expires_ms
        self.complete = True
        return b""
