"""The users SASL authenticates: SCRAM credentials per user and mechanism, never a password.

Users come from a file or the command line (``NAME:PASSWORD``; both SCRAM mechanisms get a
credential of 4096 iterations, as ``kafka-storage format --add-scram`` makes by default) and from
AlterUserScramCredentials (the client sends salt and salted password, as with Kafka). Credentials
set through the API are kept in ``scram-credentials.json`` in the data directory in Kafka's
``salt=…,stored_key=…,server_key=…,iterations=…`` form and survive a restart.

PLAIN is checked against the user's credential (the password is salted and hashed with the stored
salt and iterations and compared with the stored key in constant time): kgroup's own choice, where
Kafka's PLAIN reads plain-text passwords from its JAAS file.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from pathlib import Path

from kgroup.model import KgroupError
from kgroup.security.durable import read_json, write_json
from kgroup.security.scram import (
    SCRAM_MECHANISMS,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramCredential,
    ScramMechanism,
    credential_from_salted_password,
    make_credential,
    salted_password,
)

__all__ = ["CredentialStore", "parse_user_spec", "read_users_file"]

FILE_NAME = "scram-credentials.json"


def parse_user_spec(spec: str, where: str = "--sasl-user") -> tuple[str, str]:
    """``alice:alice-secret`` -> ("alice", "alice-secret")."""
    name, sep, password = spec.partition(":")
    if not sep or not name or not password:
        raise KgroupError(
            f"{where}: expected NAME:PASSWORD with both parts non-empty, e.g. alice:alice-secret"
        )
    return name, password


def read_users_file(path: Path) -> list[tuple[str, str]]:
    """``NAME:PASSWORD`` per line; blank lines and lines starting with ``#`` are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KgroupError(
            f"--sasl-users-file: cannot read {path} ({exc.strerror}); give a readable file"
        ) from None
    users = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            users.append(parse_user_spec(line, f"--sasl-users-file {path} line {number}"))
    return users


class CredentialStore:
    """SCRAM credentials by (user, mechanism name); optionally kept in ``directory``."""

    def __init__(self, directory: Path | None = None) -> None:
        self._directory = directory
        self._credentials: dict[tuple[str, str], ScramCredential] = {}
        #: the credentials set through the API (the ones kept in the file)
        self._altered: set[tuple[str, str]] = set()
        if directory is not None:
            stored = read_json(directory / FILE_NAME)
            for entry in stored or []:
                key = (entry["user"], entry["mechanism"])
                self._credentials[key] = ScramCredential.from_kafka_string(entry["credential"])
                self._altered.add(key)

    def add_user(self, user: str, password: str, iterations: int = 4096) -> None:
        """Both SCRAM credentials for ``user`` (not persisted: users from files and flags are
        re-read at every start)."""
        for mechanism in (SCRAM_SHA_256, SCRAM_SHA_512):
            self._credentials[(user, mechanism.name)] = make_credential(mechanism, password, iterations)

    def add_users(self, users: Iterable[tuple[str, str]]) -> None:
        for user, password in users:
            self.add_user(user, password)

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._credentials.get((user, mechanism))

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        out: dict[str, dict[str, ScramCredential]] = {}
        for (user, mechanism), credential in sorted(self._credentials.items()):
            out.setdefault(user, {})[mechanism] = credential
        return out

    def verify_password(self, user: str, password: str) -> bool:
        """Whether ``password`` is ``user``'s (PLAIN): against the strongest credential held."""
        for mechanism in (SCRAM_SHA_512, SCRAM_SHA_256):
            credential = self._credentials.get((user, mechanism.name))
            if credential is not None:
                salted = salted_password(mechanism, password, credential.salt, credential.iterations)
                computed = credential_from_salted_password(
                    mechanism, credential.salt, salted, credential.iterations
                )
                return hmac.compare_digest(computed.stored_key, credential.stored_key)
        # an unknown user costs the same as a known one, so timing does not tell them apart
        salted_password(SCRAM_SHA_512, password, b"kgroup-no-such-user", 4096)
        return False

    def upsert(
        self, user: str, mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int
    ) -> None:
        """AlterUserScramCredentials' upsertion (the caller checked the iterations)."""
        key = (user, mechanism.name)
        self._credentials[key] = credential_from_salted_password(mechanism, salt, salted, iterations)
        self._altered.add(key)
        self._save()

    def delete(self, user: str, mechanism: ScramMechanism) -> bool:
        key = (user, mechanism.name)
        removed = self._credentials.pop(key, None) is not None
        if key in self._altered:
            self._altered.discard(key)
            self._save()
        return removed

    def _save(self) -> None:
        if self._directory is None:
            return
        entries = [
            {"user": user, "mechanism": mechanism, "credential": credential.to_kafka_string()}
            for (user, mechanism), credential in sorted(self._credentials.items())
            if (user, mechanism) in self._altered and mechanism in SCRAM_MECHANISMS
        ]
        write_json(self._directory / FILE_NAME, entries)
