"""The two ways a SASL exchange fails, as Kafka's ``SaslServerAuthenticator`` tells them apart."""

from __future__ import annotations

__all__ = ["AuthenticationFailed", "CredentialsRejected"]


class AuthenticationFailed(Exception):
    """Kafka's ``SaslAuthenticationException``: the client is told this exact message."""


class CredentialsRejected(Exception):
    """Kafka's ``SaslException``: the client hears only a generic message (the detail could reveal
    whether a user exists); the detail stays on the broker and is never logged with a secret in it."""
