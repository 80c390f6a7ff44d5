"""The values a share partition speaks in: record states, acknowledgement types, the error codes it
answers with, the fetched log batches it acquires from, and the state batches it persists.

Kafka 4.4.0: ``org.apache.kafka.server.share.fetch.RecordState``,
``org.apache.kafka.clients.consumer.AcknowledgeType``, ``ShareFetchResponseData.AcquiredRecords``,
``org.apache.kafka.server.share.persister.PersisterStateBatch``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "AbortedTransaction",
    "AcknowledgeType",
    "AcquiredRecords",
    "FetchedBatch",
    "IsolationLevel",
    "PersisterStateBatch",
    "RecordState",
    "ShareError",
    "ShareErrorCode",
]


class RecordState(enum.IntEnum):
    """A record's state in a share partition (the ids are Kafka's; 3 is the 4.4 dead-letter queue's
    ``ARCHIVING``, which this model does not reach)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AcknowledgeType(enum.IntEnum):
    """The acknowledgement types of ShareFetch / ShareAcknowledge (0 is a gap: no record there)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class IsolationLevel(enum.IntEnum):
    """``share.isolation.level``: Kafka's ``FetchIsolation`` as the share partition sees it."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class ShareErrorCode(enum.IntEnum):
    """The Kafka error codes a share partition answers with (``Errors``)."""

    #: what Kafka answers when its own code throws (a null it does not expect)
    UNKNOWN_SERVER_ERROR = -1
    INVALID_REQUEST = 42
    INVALID_RECORD_STATE = 121


@dataclass(frozen=True, slots=True)
class ShareError:
    """An acknowledgement refused: Kafka's error code and the message its exception carries."""

    code: ShareErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """One acquired range as ShareFetch answers it: ``[first_offset, last_offset]`` delivered for the
    ``delivery_count``-th time."""

    first_offset: int
    last_offset: int
    delivery_count: int

    @property
    def count(self) -> int:
        return self.last_offset - self.first_offset + 1


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """One record batch as the log returned it (only what acquisition reads from it): its offsets and
    the transactional facts ``share.isolation.level=read_committed`` filters on."""

    base_offset: int
    last_offset: int
    producer_id: int = -1
    transactional: bool = False
    control: bool = False
    #: a control batch whose first record is an ABORT marker
    abort_marker: bool = False


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """One aborted transaction the fetch answered with (``FetchResponseData.AbortedTransaction``)."""

    producer_id: int
    first_offset: int


@dataclass(frozen=True, slots=True)
class PersisterStateBatch:
    """One persisted state batch (``__share_group_state``'s ``StateBatches`` entry): ``delivery_state``
    is 0 (Available), 2 (Acknowledged) or 4 (Archived); an acquired record is never persisted as such."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int
