"""SASL/PLAIN (RFC 4616) as Kafka's ``PlainSaslServer`` does it: ``[authzid] NUL authcid NUL passwd``.

Kafka checks the password against the plain text in its JAAS file. kgroup keeps no password: it
checks PLAIN passwords against the user's salted SCRAM credential (see
:class:`kgroup.security.credentials.CredentialStore`) — same answers, nothing to leak.
"""

from __future__ import annotations

from collections.abc import Callable

from kgroup.security.errors import AuthenticationFailed

__all__ = ["PlainServer", "plain_client_token"]


class PlainServer:
    """One PLAIN exchange: ``verify(username, password)`` says whether the password is right."""

    def __init__(self, verify: Callable[[str, str], bool]) -> None:
        self._verify = verify
        self.authorization_id: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        tokens = _tokens(token.decode("utf-8", errors="replace"))
        authzid, username, password = tokens
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        try:
            ok = self._verify(username, password)
        except Exception as exc:
            raise AuthenticationFailed(
                "Authentication failed: credentials for user could not be verified"
            ) from exc
        if not ok:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self.authorization_id = username
        self.complete = True
        return b""


def plain_client_token(username: str, password: str) -> bytes:
    """The client's one message, as Kafka's ``PlainSaslClient`` sends it: no authorization id."""
    return f"\0{username}\0{password}".encode()


def _tokens(message: str) -> list[str]:
    """Kafka's ``extractTokens``: split on NUL, at most four pieces; exactly three are valid."""
    tokens: list[str] = []
    start = 0
    for _ in range(4):
        end = message.find("\0", start)
        if end == -1:
            tokens.append(message[start:])
            break
        tokens.append(message[start:end])
        start = end + 1
    if len(tokens) != 3:
        raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    return tokens
