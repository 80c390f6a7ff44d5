"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802 / RFC 7677) as Kafka's ``ScramSaslServer`` does them.

A credential is Kafka's ``ScramCredential``: salt, stored key, server key and iteration count —
never the password. The server state machine accepts the client-first message (gs2 header ``n``
only, optional ``a=`` authorization id that must equal the user, extensions ignored), answers with
the combined nonce, salt and iterations, then checks the client proof against the stored key and
answers with the server signature. Messages are parsed with Kafka's own grammar
(``ScramMessages``) and failures carry Kafka's messages.

:class:`ScramClient` is the other side, as Kafka's ``ScramSaslClient`` does it (used by
``kgroup.client``); both sides share one implementation of the key derivation.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from kgroup.security.errors import AuthenticationFailed, CredentialsRejected

__all__ = [
    "SCRAM_MECHANISMS",
    "SCRAM_SHA_256",
    "SCRAM_SHA_512",
    "ScramClient",
    "ScramCredential",
    "ScramMechanism",
    "ScramServer",
    "credential_from_salted_password",
    "make_credential",
    "salted_password",
    "sasl_name",
    "secure_random_string",
    "username_from_sasl_name",
]


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str
    hash_name: str
    #: Kafka's ``ScramMechanism.minIterations`` / ``maxIterations``
    min_iterations: int = 4096
    max_iterations: int = 16384
    #: the ``mechanism`` number of Kafka's ``ScramMechanism`` (DescribeUserScramCredentials)
    type_code: int = 0


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", type_code=1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", type_code=2)
SCRAM_MECHANISMS: dict[str, ScramMechanism] = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """Kafka's ``ScramCredential``; the keys are left out of ``repr`` so that no log shows them."""

    salt: bytes
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int

    def to_kafka_string(self) -> str:
        """Kafka's ``ScramCredentialUtils.credentialToString`` form."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def from_kafka_string(cls, text: str) -> ScramCredential:
        parts = dict(item.split("=", 1) for item in text.split(","))
        try:
            return cls(
                salt=base64.b64decode(parts["salt"], validate=True),
                stored_key=base64.b64decode(parts["stored_key"], validate=True),
                server_key=base64.b64decode(parts["server_key"], validate=True),
                iterations=int(parts["iterations"]),
            )
        except (KeyError, ValueError, binascii.Error) as exc:
            raise ValueError(f"not a SCRAM credential ({type(exc).__name__})") from None


def secure_random_string() -> str:
    """Kafka's ``ScramFormatter.secureRandomString``: 130 random bits written in base 36."""
    value = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    while True:
        value, digit = divmod(value, 36)
        out.append(digits[digit])
        if value == 0:
            break
    return "".join(reversed(out))


def _hmac(mechanism: ScramMechanism, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, mechanism.hash_name).digest()


def _hash(mechanism: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, data).digest()


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """``Hi(Normalize(password), salt, i)``: PBKDF2 with the mechanism's HMAC (Kafka normalizes by
    UTF-8 encoding only, no SASLprep)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_salted_password(
    mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    """Kafka's ``ScramFormatter.generateCredential(salt, saltedPassword, iterations)``."""
    client_key = _hmac(mechanism, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=_hash(mechanism, client_key),
        server_key=_hmac(mechanism, salted, b"Server Key"),
        iterations=iterations,
    )


def make_credential(
    mechanism: ScramMechanism, password: str, iterations: int = 4096, salt: bytes | None = None
) -> ScramCredential:
    """A new credential for ``password`` (a random salt as Kafka makes one unless ``salt`` is given)."""
    if salt is None:
        salt = secure_random_string().encode()
    return credential_from_salted_password(
        mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations
    )


def sasl_name(username: str) -> str:
    """Kafka's ``ScramFormatter.saslName``: ``=`` -> ``=3D``, ``,`` -> ``=2C``."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username_from_sasl_name(name: str) -> str:
    """Kafka's ``ScramFormatter.username``; a stray ``=`` is a ValueError."""
    username = name.replace("=2C", ",")
    if "=" in username.replace("=3D", ""):
        raise ValueError(f"Invalid username: {name}")
    return username.replace("=3D", "=")


# Kafka's ScramMessages grammar (Java regex classes rewritten for Python's re)
_VALUE_SAFE_CHAR = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]"  # \x01-\x7F except '=' and ','
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"  # \x01-\x7F except ','
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"  # \x21-\x7E except ','
_SASLNAME = rf"(?:{_VALUE_SAFE_CHAR}|=2C|=3D)+"
_B64 = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_RESERVED = rf"(m={_VALUE},)?"
_EXTENSIONS = rf"(,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(a=(?P<authzid>{_SASLNAME}))?,{_RESERVED}n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})"
)
_CLIENT_FINAL = re.compile(
    rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})"
)


class ScramServer:
    """One SCRAM exchange on the server side: :meth:`evaluate` each client token in turn.

    ``lookup(username)`` gives the user's credential for this mechanism, or None. Failures raise
    :class:`CredentialsRejected` (the client hears Kafka's generic message) or
    :class:`AuthenticationFailed` (the client hears the message itself), as Kafka's server does.
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: Callable[[str], ScramCredential | None],
        nonce: Callable[[], str] = secure_random_string,
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._nonce = nonce
        self._state = "first"
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce_value = ""
        self.authorization_id: str | None = None

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._state == "first":
                return self._client_first(token)
            if self._state == "final":
                return self._client_final(token)
            raise AuthenticationFailed(f"Unexpected challenge in Sasl server state {self._state.upper()}")
        except (AuthenticationFailed, CredentialsRejected):
            self._credential = None
            self._state = "failed"
            raise

    def _client_first(self, token: bytes) -> bytes:
        message = token.decode("utf-8", errors="replace")
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise CredentialsRejected("Invalid SCRAM client first message format")
        server_nonce = self._nonce()
        try:
            username = username_from_sasl_name(match["saslname"])
            credential = self._lookup(username)
        except Exception as exc:  # Kafka: any failure to get the credentials
            raise CredentialsRejected("Authentication failed: Credentials could not be obtained") from exc
        if credential is None:
            raise CredentialsRejected("Authentication failed: Invalid user credentials")
        authzid = match["authzid"] or ""
        if authzid and authzid != username:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        if credential.iterations < self.mechanism.min_iterations:
            raise CredentialsRejected(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{self.mechanism.min_iterations} for {self.mechanism.name}"
            )
        self.authorization_id = username
        self._credential = credential
        extensions = match["extensions"]
        bare = f"n={match['saslname']},r={match['nonce']}"
        if extensions:
            bare += extensions  # Kafka re-joins the extensions it parsed, in their order
        self._client_first_bare = bare
        self._nonce_value = match["nonce"] + server_nonce
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce_value},s={salt},i={credential.iterations}"
        self._state = "final"
        return self._server_first.encode()

    def _client_final(self, token: bytes) -> bytes:
        message = token.decode("utf-8", errors="replace")
        match = _CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise CredentialsRejected("Invalid SCRAM client final message format")
        if match["nonce"] != self._nonce_value:
            raise CredentialsRejected("Invalid client nonce in the final client message.")
        credential = self._credential
        assert credential is not None
        proof = base64.b64decode(match["proof"])
        channel = base64.b64encode(base64.b64decode(match["channel"])).decode()
        # Kafka's ClientFinalMessage.clientFinalMessageWithoutProof: channel binding and nonce only
        without_proof = f"c={channel},r={match['nonce']}"
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        client_signature = _hmac(self.mechanism, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise CredentialsRejected("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(client_signature, proof, strict=True))
        if not hmac.compare_digest(_hash(self.mechanism, client_key), credential.stored_key):
            raise CredentialsRejected("Invalid client credentials")
        signature = _hmac(self.mechanism, credential.server_key, auth_message)
        self._credential = None
        self._state = "complete"
        return b"v=" + base64.b64encode(signature)


_SERVER_FIRST = re.compile(
    rf"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+){_EXTENSIONS}"
)
_SERVER_FINAL = re.compile(rf"(?:e=(?P<error>{_VALUE_SAFE_CHAR}+)|v=(?P<signature>{_BASE64})){_EXTENSIONS}")
#: base64 of the gs2 header ``n,,`` (no channel binding, no authorization id): Kafka's client sends it
_CHANNEL_BINDING = base64.b64encode(b"n,,").decode()


class ScramClient:
    """One SCRAM exchange on the client side, as Kafka's ``ScramSaslClient``: :meth:`first` gives the
    client-first message, :meth:`final` answers the server-first message, :meth:`verify` checks the
    server-final message. Failures raise :class:`AuthenticationFailed` with Kafka's client messages.
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        nonce: Callable[[], str] = secure_random_string,
    ) -> None:
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._nonce = nonce()
        self._client_first_bare = ""
        self._server_signature = b""

    def __repr__(self) -> str:  # no password in any log
        return f"ScramClient({self.mechanism.name}, {self._username!r})"

    def first(self) -> bytes:
        self._client_first_bare = f"n={sasl_name(self._username)},r={self._nonce}"
        return f"n,,{self._client_first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        message = server_first.decode("utf-8", errors="replace")
        match = _SERVER_FIRST.fullmatch(message)
        if match is None:
            raise AuthenticationFailed(f"Invalid SCRAM server first message format: {message}")
        nonce = match["nonce"]
        if not nonce.startswith(self._nonce):
            raise AuthenticationFailed("Invalid server nonce: does not start with client nonce")
        iterations = int(match["iterations"])
        if iterations < self.mechanism.min_iterations:
            raise AuthenticationFailed(
                f"Requested iterations {iterations} is less than the minimum "
                f"{self.mechanism.min_iterations} for {self.mechanism.name}"
            )
        salt = base64.b64decode(match["salt"])
        salted = salted_password(self.mechanism, self._password, salt, iterations)
        credential = credential_from_salted_password(self.mechanism, salt, salted, iterations)
        without_proof = f"c={_CHANNEL_BINDING},r={nonce}"
        auth_message = f"{self._client_first_bare},{message},{without_proof}".encode()
        client_key = _hmac(self.mechanism, salted, b"Client Key")
        client_signature = _hmac(self.mechanism, credential.stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, client_signature, strict=True))
        self._server_signature = _hmac(self.mechanism, credential.server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        message = server_final.decode("utf-8", errors="replace")
        match = _SERVER_FINAL.fullmatch(message)
        if match is None:
            raise AuthenticationFailed(f"Invalid SCRAM server final message format: {message}")
        if match["error"] is not None:
            raise AuthenticationFailed(
                f"Sasl authentication using {self.mechanism.name} failed with error: {match['error']}"
            )
        signature = base64.b64decode(match["signature"])
        if not self._server_signature or not hmac.compare_digest(signature, self._server_signature):
            raise AuthenticationFailed("Invalid server signature in server final message")
