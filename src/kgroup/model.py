"""The vocabulary every part of kgroup shares: topic-partitions, members, topic metadata, errors.

Everything here is a frozen value; nothing reads a clock or draws a random number.
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from kgroup.javacompat import int32, java_string_key
from kgroup.valuetypes import fast_init

__all__ = [
    "Assignment",
    "ErrorCode",
    "KgroupError",
    "Member",
    "PeerError",
    "RebalanceProtocol",
    "TopicId",
    "TopicMetadata",
    "TopicPartition",
    "compress_partitions",
    "jsonable",
    "sorted_partitions",
    "topic_map",
]


class KgroupError(ValueError):
    """Bad input from the user: one line naming the field and the fix.

    The CLI prints ``kgroup: error: <message>`` and exits with status 2, never a traceback.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PeerError(Exception):
    """A misbehaving peer: bytes or a request that break Kafka's protocol (never the user's input).

    Adapters answer it on the wire (``error_code``, Kafka's number for the fault) or close the
    connection; it never reaches a user as a :class:`KgroupError` and never crashes a server.
    """

    def __init__(self, message: str, error_code: int = 2) -> None:  # 2 = CORRUPT_MESSAGE
        super().__init__(message)
        self.message = message
        self.error_code = error_code


class TopicPartition(NamedTuple):
    """A topic and a partition number; ``str()`` gives Kafka's ``topic-partition`` form.

    A named tuple rather than a dataclass: assignors build and hash millions of them, and tuple
    construction, hashing and equality run in C.
    """

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TopicPartition:
        """Parse ``"topic-partition"``, splitting at the last ``-`` (topics may contain dashes)."""
        topic, sep, number = text.rpartition("-")
        if not sep or not topic or not number.isdigit():
            raise KgroupError(f"partition {text!r} is not of the form 'topic-N' (N a partition number)")
        return cls(topic, int(number))

    def java_key(self) -> tuple[bytes, int]:
        """Sort key: topic in Java ``String.compareTo`` order, then partition number."""
        return (java_string_key(self.topic), self.partition)


_MASK64 = (1 << 64) - 1


def _signed64(value: int) -> int:
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


@dataclass(frozen=True, slots=True, order=True)
class TopicId:
    """Kafka's ``Uuid``: two signed 64-bit halves; ordered as ``Uuid.compareTo`` orders them."""

    msb: int
    lsb: int
    #: ``Uuid.hashCode``: the halves XORed, then the 64-bit result's halves XORed
    java_hash: int = field(init=False, compare=False, repr=False)
    #: Python's hash of the two halves, computed once: topic ids key the assignors' hot dicts
    _hash: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        msb, lsb = _signed64(self.msb), _signed64(self.lsb)
        object.__setattr__(self, "msb", msb)
        object.__setattr__(self, "lsb", lsb)
        xor = (msb ^ lsb) & _MASK64
        object.__setattr__(self, "java_hash", int32((xor >> 32) ^ xor))
        object.__setattr__(self, "_hash", hash((msb, lsb)))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def from_int(cls, value: int) -> TopicId:
        """From the 128-bit value (``uuid.UUID.int``)."""
        return cls(value >> 64, value & _MASK64)

    @classmethod
    def from_string(cls, text: str) -> TopicId:
        """From Kafka's base64 form (``Uuid.fromString``: URL-safe alphabet, no padding)."""
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        if len(raw) != 16:
            raise ValueError(f"{text!r} is not a base64 Kafka Uuid (16 bytes)")
        return cls.from_int(int.from_bytes(raw, "big"))

    def to_int(self) -> int:
        return ((self.msb & _MASK64) << 64) | (self.lsb & _MASK64)

    def __str__(self) -> str:
        """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding."""
        return base64.urlsafe_b64encode(self.to_int().to_bytes(16, "big")).rstrip(b"=").decode()



def sorted_partitions(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """Partitions sorted by topic (Java order) then partition number, as the vectors list them."""
    # Java's String.compareTo orders UTF-16 code units, Python's str code points: the two agree on
    # every string without characters beyond U+FFFF, so the usual case sorts the tuples themselves.
    out = sorted(partitions)
    topic = None
    for tp in out:
        if tp[0] is not topic:
            topic = tp[0]
            if not _code_units_order(topic):
                out.sort(key=TopicPartition.java_key)
                break
    return out


@lru_cache(maxsize=4096)
def _code_units_order(text: str) -> bool:
    """Whether ``text`` sorts the same by code points as by UTF-16 code units (no astral characters)."""
    return not text or max(text) < "\U00010000"


def compress_partitions(partitions: Iterable[TopicPartition]) -> str:
    """A compact human form: ``t1[0-3,7] t2[1]``."""
    by_topic: dict[str, list[int]] = {}
    for tp in sorted_partitions(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    parts: list[str] = []
    for topic, numbers in by_topic.items():
        ranges: list[str] = []
        start = prev = numbers[0]
        for n in [*numbers[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(str(start) if start == prev else f"{start}-{prev}")
            if n is not None:
                start = prev = n
        parts.append(f"{topic}[{','.join(ranges)}]")
    return " ".join(parts)


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A topic as the assignors see it: partitions ``0..partitions-1`` and, optionally, the set of
    racks holding replicas of each partition (``racks[p]``; rack-less replicas are left out)."""

    name: str
    partitions: int
    racks: tuple[frozenset[str], ...] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise KgroupError("topic name is empty; give every topic a non-empty 'name'")
        if self.partitions < 0:
            raise KgroupError(
                f"topic {self.name!r}: 'partitions' is {self.partitions}; it must be 0 or more"
            )
        if self.racks is not None and len(self.racks) != self.partitions:
            raise KgroupError(
                f"topic {self.name!r}: 'racks' has {len(self.racks)} entries; give one per partition "
                f"({self.partitions})"
            )

    def topic_partitions(self) -> list[TopicPartition]:
        return [TopicPartition(self.name, p) for p in range(self.partitions)]


@fast_init  # (an assignor's input: a group of a thousand builds a thousand at every rebalance)
@dataclass(frozen=True, slots=True)
class Member:
    """One group member as an assignor sees it (Kafka's ``Subscription`` plus the member id).

    ``generation`` is ``-1`` when the member sent none (Kafka's ``DEFAULT_GENERATION``). ``user_data``
    is the assignor-specific bytes the member sent (e.g. the sticky assignor's serialized state),
    or ``None``.
    """

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = -1
    group_instance_id: str | None = None
    rack_id: str | None = None
    user_data: bytes | None = None

    def __post_init__(self) -> None:
        if not self.member_id:
            raise KgroupError("a member has an empty 'memberId'; give every member a non-empty id")


# member id -> assigned partitions
Assignment = dict[str, list[TopicPartition]]


class RebalanceProtocol(enum.Enum):
    """``ConsumerPartitionAssignor.RebalanceProtocol``."""

    EAGER = 0
    COOPERATIVE = 1


class ErrorCode(enum.IntEnum):
    """Kafka's error codes (the numbers on the wire), those kgroup's protocol code can answer."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    KAFKA_STORAGE_ERROR = 56
    UNKNOWN_PRODUCER_ID = 59
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    PRODUCER_FENCED = 90
    UNKNOWN_TOPIC_ID = 100
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    SHARE_SESSION_LIMIT_REACHED = 133


#: values :func:`jsonable` returns as they are, told apart by their exact type (no subclass: an
#: ``IntEnum`` is an ``int`` turned into its name)
_PLAIN_JSON = frozenset({str, int, bool, float, type(None)})


def jsonable(value: Any) -> Any:
    """Turn kgroup values (partitions, enums, tuples, mappings) into plain JSON data."""
    if type(value) in _PLAIN_JSON:
        return value  # (most fields: nothing to turn, and no isinstance look against Mapping)
    if isinstance(value, TopicPartition):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, frozenset, set)):
        items = [jsonable(v) for v in value]
        return sorted(items) if isinstance(value, (set, frozenset)) else items
    return value


def topic_map(topics: Sequence[TopicMetadata]) -> dict[str, TopicMetadata]:
    """Index topics by name, rejecting a topic listed twice."""
    out: dict[str, TopicMetadata] = {}
    for t in topics:
        if t.name in out:
            raise KgroupError(f"topic {t.name!r} is listed twice; list each topic once")
        out[t.name] = t
    return out

