"""The consumer protocol's bytes: ``ConsumerProtocolSubscription`` (v0–v3) and ``ConsumerProtocolAssignment``.

These are the opaque ``metadata`` of a JoinGroup protocol and the opaque assignment of a SyncGroup:
the coordinator stores and forwards them untouched; consumers (kgroup's member, the simulator, the
kafka-python / aiokafka plug-ins) encode and decode them here. The layout is Kafka's
``ConsumerProtocol``: a big-endian int16 version, then the message of that version. As in Java:

* encoding sorts the topics (``Collections.sort``: Java string order) and the owned partitions by
  (topic, partition), grouping consecutive partitions of one topic; a missing generation is -1;
* an assignment groups partitions by topic in order of first appearance;
* decoding a version newer than 3 reads it as version 3 (forward compatible: trailing fields are
  ignored), an empty rack id means "no rack", and short or garbled bytes raise :class:`PeerError`.
"""

from __future__ import annotations

import struct
from functools import lru_cache

from kgroup.javacompat import java_string_key
from kgroup.messages import NO_GENERATION, ConsumerAssignment, ConsumerSubscription
from kgroup.model import KgroupError, PeerError, TopicPartition, sorted_partitions

__all__ = [
    "ASSIGNMENT_VERSION",
    "SUBSCRIPTION_VERSION",
    "decode_assignment",
    "decode_subscription",
    "decode_subscription_sharing",
    "encode_assignment",
    "encode_subscription",
]

#: ``ConsumerProtocolSubscription.HIGHEST_SUPPORTED_VERSION`` (what Kafka 4.0's consumer sends)
SUBSCRIPTION_VERSION = 3
#: ``ConsumerProtocolAssignment.HIGHEST_SUPPORTED_VERSION``
ASSIGNMENT_VERSION = 3

_VERSION = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_NULL16 = _VERSION.pack(-1)
_NULL32 = _INT32.pack(-1)


def _check_encode_version(version: int, highest: int, what: str) -> int:
    if version < 0:
        raise KgroupError(f"version: {what} version {version} does not exist; use 0..{highest}")
    return min(version, highest)  # Kafka's checkXVersion: newer versions are written as the highest


def _read_version(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise PeerError(f"{what}: {len(data)} bytes is too short for the consumer protocol's version header")
    (version,) = _VERSION.unpack_from(data, 0)
    if version < 0:
        raise PeerError(f"{what}: unsupported consumer protocol version {version}")
    return int(version)


def _put_string(parts: list[bytes], text: str | None, what: str) -> None:
    if text is None:
        parts.append(_NULL16)
        return
    data = text.encode("utf-8")
    if len(data) > 0x7FFF:
        raise KgroupError(f"{what}: {len(data)} bytes is longer than a Kafka string (32767); shorten it")
    parts.append(_VERSION.pack(len(data)))
    parts.append(data)


def _put_bytes(parts: list[bytes], data: bytes | None) -> None:
    if data is None:
        parts.append(_NULL32)
        return
    parts.append(_INT32.pack(len(data)))
    parts.append(bytes(data))


def _put_partitions(parts: list[bytes], grouped: list[tuple[str, list[int]]], what: str) -> None:
    parts.append(_INT32.pack(len(grouped)))
    for topic, numbers in grouped:
        _put_string(parts, topic, what)
        parts.append(_INT32.pack(len(numbers)))
        try:
            parts.append(struct.pack(f">{len(numbers)}i", *numbers))
        except struct.error:
            raise KgroupError(f"{what}: a partition number of {topic!r} is not a Java int") from None


# The consumer protocol's schemas are not flexible, so their bytes are plain big-endian fields; they
# are written here with struct (several times faster than kio's generic writer, which the tests use
# as the reference: the bytes are the same).


def encode_subscription(subscription: ConsumerSubscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    """Kafka's ``ConsumerProtocol.serializeSubscription``: the version header, then the message."""
    version = _check_encode_version(version, SUBSCRIPTION_VERSION, "subscription")
    parts: list[bytes] = [_VERSION.pack(version)]
    topics = sorted(subscription.topics, key=java_string_key)
    parts.append(_INT32.pack(len(topics)))
    for topic in topics:
        _put_string(parts, topic, "subscription.topics")
    _put_bytes(parts, subscription.user_data)
    if version >= 1:
        owned = sorted_partitions(subscription.owned_partitions)  # (Java's topic order, then number)
        grouped: list[tuple[str, list[int]]] = []
        for tp in owned:
            if not grouped or grouped[-1][0] != tp.topic:
                grouped.append((tp.topic, []))
            grouped[-1][1].append(tp.partition)
        _put_partitions(parts, grouped, "subscription.owned_partitions")
    if version >= 2:
        try:
            parts.append(_INT32.pack(subscription.generation_id))
        except struct.error:
            raise KgroupError("subscription.generation_id: not a Java int") from None
    if version >= 3:
        _put_string(parts, subscription.rack_id, "subscription.rack_id")
    return b"".join(parts)


class _Reader:
    """Kafka's non-flexible primitives, read big-endian; anything short or garbled is a PeerError
    (Java's generated readers throw a SchemaException there, e.g. for a null non-nullable field)."""

    __slots__ = ("data", "names", "pos", "what")

    def __init__(self, data: bytes, what: str, names: dict[bytes, str] | None = None) -> None:
        self.data = data
        self.pos = 2  # after the version header
        self.what = what
        #: topic names already decoded, by their UTF-8 bytes (a group's members repeat the same names)
        self.names: dict[bytes, str] = {} if names is None else names

    def _fail(self, problem: str) -> PeerError:
        return PeerError(f"{self.what}: {problem}")

    def int32(self) -> int:
        end = self.pos + 4
        if end > len(self.data):
            raise self._fail(f"{len(self.data)} bytes end inside a field")
        (value,) = _INT32.unpack_from(self.data, self.pos)
        self.pos = end
        return int(value)

    def nullable_string(self) -> str | None:
        end = self.pos + 2
        if end > len(self.data):
            raise self._fail(f"{len(self.data)} bytes end inside a field")
        (length,) = _VERSION.unpack_from(self.data, self.pos)
        self.pos = end
        if length < 0:
            return None
        end = self.pos + length
        if end > len(self.data):
            raise self._fail(f"a string of {length} bytes runs past the end")
        try:
            text = self.data[self.pos : end].decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail("a string is not valid UTF-8") from None
        self.pos = end
        return text

    def string(self) -> str:
        text = self.nullable_string()
        if text is None:
            raise self._fail("a non-nullable string is null")
        return text

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        if length < 0:
            return None
        end = self.pos + length
        if end > len(self.data):
            raise self._fail(f"{length} bytes of data run past the end")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def count(self) -> int:
        n = self.int32()
        if n < 0:
            raise self._fail("a non-nullable array is null")
        if n > len(self.data) - self.pos:  # every element takes at least one byte
            raise self._fail(f"an array of {n} elements does not fit in {len(self.data)} bytes")
        return n

    def topic(self) -> str:
        """A non-nullable string that names a topic, decoded once per distinct name (see ``names``)."""
        data = self.data
        pos = self.pos
        end = pos + 2
        if end > len(data):
            raise self._fail(f"{len(data)} bytes end inside a field")
        (length,) = _VERSION.unpack_from(data, pos)
        if length < 0:
            self.pos = end
            raise self._fail("a non-nullable string is null")
        stop = end + length
        if stop > len(data):
            raise self._fail(f"a string of {length} bytes runs past the end")
        raw = data[end:stop]
        text = self.names.get(raw)
        if text is None:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise self._fail("a string is not valid UTF-8") from None
            self.names[raw] = text
        self.pos = stop
        return text

    def partitions(self) -> tuple[TopicPartition, ...]:
        # one loop with the checks of count(), topic() and int32(), in their order and with their
        # messages: a group's owned partitions run to a million (topic, number) groups
        out: list[TopicPartition] = []
        new = tuple.__new__
        unpack_int = _INT32.unpack_from
        for _ in range(self.count()):
            topic = self.topic()
            n = self.count()
            pos = self.pos
            if pos + 4 * n > len(self.data):
                raise self._fail(f"{n} partition numbers run past the end")
            if n == 1:
                out.append(new(TopicPartition, (topic, unpack_int(self.data, pos)[0])))
            else:
                numbers = struct.unpack_from(f">{n}i", self.data, pos)
                out.extend(new(TopicPartition, (topic, p)) for p in numbers)
            self.pos = pos + 4 * n
        return tuple(out)


#: Decoding is memoized: in a group the same bytes are decoded several times (the leader, then every
#: host that checks or records the generation, and an unchanged assignment again in the next
#: generation), and the decoded values are frozen, so sharing them is safe. Bounded: payloads up to
#: this many bytes (about 250 partitions), this many of each kind — at most about 18 MiB per kind
#: (a 1 KiB assignment decodes to about 18 KiB of objects, measured with tracemalloc).
MEMO_MAX_BYTES = 1024
MEMO_ENTRIES = 1024


def decode_subscription(data: bytes) -> ConsumerSubscription:
    """Kafka's ``ConsumerProtocol.deserializeSubscription`` (:class:`PeerError` on bad bytes)."""
    data = bytes(data)
    if len(data) <= MEMO_MAX_BYTES:
        return _memo_subscription(data)
    return _decode_subscription(data)


def decode_assignment(data: bytes) -> ConsumerAssignment:
    """Kafka's ``ConsumerProtocol.deserializeAssignment``; empty bytes are an empty assignment.

    (A SyncGroup answer with no bytes — a member the leader left out, or a group that failed — is an
    empty assignment to the consumer, as ``ConsumerCoordinator.onJoinComplete`` treats it.)
    """
    data = bytes(data)
    if len(data) <= MEMO_MAX_BYTES:
        return _memo_assignment(data)
    return _decode_assignment(data)


def decode_subscription_sharing(data: bytes, names: dict[bytes, str]) -> ConsumerSubscription:
    """:func:`decode_subscription` for many subscriptions at once (a group leader's): topic names
    already in ``names`` (UTF-8 bytes -> name, filled as it goes) are not decoded again.

    Payloads small enough for :func:`decode_subscription`'s memo go through it (and leave ``names``
    alone), so that whoever decodes the same bytes next — the simulator checks every Stable
    generation's subscriptions after its leader decoded them — finds them decoded."""
    data = bytes(data)
    if len(data) <= MEMO_MAX_BYTES:
        return _memo_subscription(data)
    return _decode_subscription(data, names)


def _decode_subscription(data: bytes, names: dict[bytes, str] | None = None) -> ConsumerSubscription:
    version = min(_read_version(data, "subscription"), SUBSCRIPTION_VERSION)
    r = _Reader(data, f"subscription: malformed consumer protocol subscription v{version}", names)
    topics = tuple(r.topic() for _ in range(r.count()))
    user_data = r.nullable_bytes()
    owned: tuple[TopicPartition, ...] = ()
    generation = NO_GENERATION
    rack: str | None = None
    if version >= 1:
        owned = r.partitions()
    if version >= 2:
        generation = r.int32()
    if version >= 3:
        rack = r.nullable_string() or None  # an empty rack id means no rack
    return ConsumerSubscription(
        topics=topics,
        user_data=user_data,
        owned_partitions=owned,
        generation_id=generation,
        rack_id=rack,
    )


def encode_assignment(assignment: ConsumerAssignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    """Kafka's ``ConsumerProtocol.serializeAssignment`` (topics in order of first appearance)."""
    version = _check_encode_version(version, ASSIGNMENT_VERSION, "assignment")
    grouped: dict[str, list[int]] = {}
    for tp in assignment.partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    parts: list[bytes] = [_VERSION.pack(version)]
    _put_partitions(parts, list(grouped.items()), "assignment.partitions")
    _put_bytes(parts, assignment.user_data)
    return b"".join(parts)


def _decode_assignment(data: bytes) -> ConsumerAssignment:
    if not data:
        return ConsumerAssignment()
    version = min(_read_version(data, "assignment"), ASSIGNMENT_VERSION)
    r = _Reader(data, f"assignment: malformed consumer protocol assignment v{version}")
    partitions = r.partitions()
    return ConsumerAssignment(partitions=partitions, user_data=r.nullable_bytes())


_memo_subscription = lru_cache(maxsize=MEMO_ENTRIES)(_decode_subscription)
_memo_assignment = lru_cache(maxsize=MEMO_ENTRIES)(_decode_assignment)
