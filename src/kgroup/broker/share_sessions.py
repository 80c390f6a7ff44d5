"""Share sessions (KIP-932): Kafka 4.4.0's ``ShareSessionCache`` and ``SharePartitionManager.newContext``
/ ``acknowledgeSessionUpdate``, as plain state on the broker's loop.

A share consumer keeps one session per (group, member) with each broker it fetches from: a ShareFetch
at epoch 0 opens it (removing any earlier one) with the partitions it names, later requests name only
what changed (added partitions, ``forgotten_topics_data``) at the session's epoch, which moves by one
per request (``ShareRequestMetadata.nextEpoch``: 1 after 0, back to 1 after ``Integer.MAX_VALUE``), and
epoch −1 closes it. The errors are Kafka's: a request at epoch > 0 or −1 without a session is
``SHARE_SESSION_NOT_FOUND``, at another epoch ``INVALID_SHARE_SESSION_EPOCH``; an opening ShareFetch
carrying acknowledgements is ``INVALID_REQUEST``; ShareAcknowledge at epoch 0 is
``INVALID_SHARE_SESSION_EPOCH``; a session beyond ``group.share.max.share.sessions`` (2000) is
``SHARE_SESSION_LIMIT_REACHED``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kgroup.model import ErrorCode

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "SessionContext",
    "SessionError",
    "ShareSession",
    "ShareSessionCache",
    "next_epoch",
]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_INT = 0x7FFFFFFF
#: ``group.share.max.share.sessions``
DEFAULT_MAX_SESSIONS = 2000

#: a partition a session fetches: (topic id, partition index)
SessionPartition = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    """``ShareRequestMetadata.nextEpoch``."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == _MAX_INT:
        return 1
    return epoch + 1


class SessionError(Exception):
    """A request its session refuses: the whole request is answered with ``code``."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int
    #: the connection that opened it (Kafka keys its disconnect listener by it)
    connection: str
    #: the partitions it fetches, in the order they were added
    partitions: dict[SessionPartition, None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What one ShareFetch does in its session: ``full`` (epoch 0: the request's partitions are the
    session's), ``final`` (epoch −1: nothing is fetched; the session ends once answered), or
    incremental; ``partitions`` are those to fetch."""

    full: bool
    final: bool
    partitions: tuple[SessionPartition, ...]


class ShareSessionCache:
    """The broker's share sessions, keyed by (group, member)."""

    def __init__(self, max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}
        #: connection id -> the sessions it opened (Kafka's ``connectionIdToSessionMap``)
        self._by_connection: dict[str, set[tuple[str, str]]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def new_context(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        requested: list[SessionPartition],
        forgotten: list[SessionPartition],
        acknowledging: bool,
        connection: str,
    ) -> SessionContext:
        """``SharePartitionManager.newContext``; raises :class:`SessionError`."""
        key = (group_id, member_id)
        if epoch == FINAL_EPOCH:
            if key not in self._sessions:
                raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
            return SessionContext(full=True, final=True, partitions=())
        if epoch == INITIAL_EPOCH:
            if acknowledging:
                raise SessionError(ErrorCode.INVALID_REQUEST)
            self.remove(group_id, member_id)
            if len(self._sessions) >= self.max_sessions:
                raise SessionError(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
            opened = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH), connection)
            opened.partitions = dict.fromkeys(requested)
            self._sessions[key] = opened
            self._by_connection.setdefault(connection, set()).add(key)
            return SessionContext(full=True, final=False, partitions=tuple(opened.partitions))
        session = self._sessions.get(key)
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if session.epoch != epoch:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        for partition in requested:
            session.partitions.setdefault(partition, None)
        for partition in forgotten:
            session.partitions.pop(partition, None)
        session.epoch = next_epoch(session.epoch)
        return SessionContext(full=False, final=False, partitions=tuple(session.partitions))

    def acknowledge_update(self, group_id: str, member_id: str, epoch: int) -> None:
        """``SharePartitionManager.acknowledgeSessionUpdate``; raises :class:`SessionError`."""
        if epoch == INITIAL_EPOCH:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if epoch == FINAL_EPOCH:
            return
        if session.epoch != epoch:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session.epoch = next_epoch(session.epoch)

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        session = self._sessions.pop((group_id, member_id), None)
        if session is not None:
            keys = self._by_connection.get(session.connection)
            if keys is not None:
                keys.discard((group_id, member_id))
                if not keys:
                    del self._by_connection[session.connection]
        return session

    def on_connection_closed(self, connection: str) -> list[ShareSession]:
        """The sessions opened through ``connection`` (removed): Kafka 4.4 drops a share session
        whose opening connection closes and releases what its member holds."""
        keys = self._by_connection.pop(connection, set())
        return [self._sessions.pop(key) for key in sorted(keys) if key in self._sessions]
