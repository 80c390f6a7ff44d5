"""The consumer protocol codec: Kafka's byte layout, Java's orderings, forward compatibility, bad bytes."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.messages import ConsumerAssignment, ConsumerSubscription
from kgroup.model import PeerError, TopicPartition
from kgroup.wire.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def test_v0_layout_is_kafkas_version_header_then_topics_then_user_data() -> None:
    raw = encode_subscription(ConsumerSubscription(("b", "a"), b"u"), version=0)
    expected = struct.pack(">hi", 0, 2) + _string("a") + _string("b") + struct.pack(">i", 1) + b"u"
    assert raw == expected


def test_v3_layout_sorts_owned_partitions_and_writes_generation_and_rack() -> None:
    sub = ConsumerSubscription(
        ("t",), None, (TopicPartition("t", 2), TopicPartition("s", 0), TopicPartition("t", 1)), 7, "r"
    )
    raw = encode_subscription(sub)
    expected = (
        struct.pack(">hi", 3, 1)
        + _string("t")
        + struct.pack(">i", -1)  # null user data
        + struct.pack(">i", 2)
        + _string("s")
        + struct.pack(">ii", 1, 0)
        + _string("t")
        + struct.pack(">iii", 2, 1, 2)
        + struct.pack(">i", 7)
        + _string("r")
    )
    assert raw == expected


def test_topics_sort_in_java_string_order_not_code_point_order() -> None:
    # U+FF5E (BMP, >= U+E000) sorts after a supplementary character in Java (UTF-16 units)
    sub = ConsumerSubscription(("\uff5e", "\U0001f600"))
    assert decode_subscription(encode_subscription(sub)).topics == ("\U0001f600", "\uff5e")


def test_newer_version_reads_as_v3_and_ignores_trailing_fields() -> None:
    sub = ConsumerSubscription(("a",), b"x", (TopicPartition("a", 0),), 4, "rack")
    raw = encode_subscription(sub)
    future = struct.pack(">h", 9) + raw[2:] + b"future-field"
    assert decode_subscription(future) == sub


def test_empty_rack_is_no_rack_and_old_versions_lose_new_fields() -> None:
    sub = ConsumerSubscription(("a",), None, (TopicPartition("a", 0),), 4, "")
    assert decode_subscription(encode_subscription(sub)).rack_id is None
    v1 = decode_subscription(encode_subscription(sub, version=1))
    assert v1.owned_partitions == (TopicPartition("a", 0),)
    assert v1.generation_id == -1


def test_assignment_groups_by_first_appearance() -> None:
    assignment = ConsumerAssignment((TopicPartition("y", 1), TopicPartition("x", 0), TopicPartition("y", 0)))
    raw = encode_assignment(assignment)
    expected = (
        struct.pack(">hi", 3, 2)
        + _string("y")
        + struct.pack(">iii", 2, 1, 0)
        + _string("x")
        + struct.pack(">ii", 1, 0)
        + struct.pack(">i", -1)
    )
    assert raw == expected
    assert decode_assignment(raw).partitions == (
        TopicPartition("y", 1),
        TopicPartition("y", 0),
        TopicPartition("x", 0),
    )
    assert decode_assignment(b"") == ConsumerAssignment()


@pytest.mark.parametrize(
    "raw", [b"", b"\x00", b"\x00\x03", b"\x00\x03\x00\x00\x00\x05\x00", b"\xff\xff\x00\x00"]
)
def test_bad_subscription_bytes_raise_peer_error(raw: bytes) -> None:
    with pytest.raises(PeerError):
        decode_subscription(raw)


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
_tps = st.builds(TopicPartition, _names, st.integers(0, 2**31 - 1))


@given(
    topics=st.lists(_names, unique=True, max_size=5),
    user_data=st.none() | st.binary(max_size=16),
    owned=st.lists(_tps, unique=True, max_size=8),
    generation=st.integers(-1, 2**31 - 1),
    rack=st.none() | _names,
)
def test_round_trip(
    topics: list[str], user_data: bytes | None, owned: list[TopicPartition], generation: int, rack: str | None
) -> None:
    sub = ConsumerSubscription(tuple(topics), user_data, tuple(owned), generation, rack)
    back = decode_subscription(encode_subscription(sub))
    assert sorted(back.topics) == sorted(topics)
    assert sorted(back.owned_partitions) == sorted(owned)
    assert (back.user_data, back.generation_id, back.rack_id) == (user_data, generation, rack)
    assignment = ConsumerAssignment(tuple(owned), user_data)
    assert sorted(decode_assignment(encode_assignment(assignment)).partitions) == sorted(owned)


@given(st.binary(max_size=64))
def test_garbage_is_decoded_or_rejected_as_peer_error(raw: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        with contextlib.suppress(PeerError):
            decode(raw)


def test_a_huge_array_length_is_a_peer_error_not_an_allocation() -> None:
    """kio's native reader reserves memory from the length on the wire; 2^31 topics in a few bytes
    must be refused before it reads (it would abort the process)."""
    huge = struct.pack(">hi", 3, 2**31 - 1) + b"\x00\x01a"
    with pytest.raises(PeerError):
        decode_subscription(huge)
    with pytest.raises(PeerError):
        decode_assignment(struct.pack(">hi", 3, 2**31 - 1))


def _kio_subscription(sub: ConsumerSubscription, version: int) -> bytes:
    """The reference: the same message written by kio's generic writer from Kafka's schema."""
    import io

    from kio.schema.consumer_protocol_subscription.v0 import data as v0
    from kio.schema.consumer_protocol_subscription.v1 import data as v1
    from kio.schema.consumer_protocol_subscription.v2 import data as v2
    from kio.schema.consumer_protocol_subscription.v3 import data as v3
    from kio.serial import entity_writer
    from kio.static.primitive import i32

    from kgroup.javacompat import java_string_key

    module = (v0, v1, v2, v3)[version]
    fields: dict[str, object] = {
        "topics": tuple(sorted(sub.topics, key=java_string_key)),
        "user_data": sub.user_data,
    }
    if version >= 1:
        grouped: list[tuple[str, list[int]]] = []
        for tp in sorted(sub.owned_partitions, key=lambda t: (java_string_key(t.topic), t.partition)):
            if not grouped or grouped[-1][0] != tp.topic:
                grouped.append((tp.topic, []))
            grouped[-1][1].append(tp.partition)
        fields["owned_partitions"] = tuple(
            module.TopicPartition(topic=t, partitions=tuple(i32(p) for p in ps)) for t, ps in grouped
        )
    if version >= 2:
        fields["generation_id"] = i32(sub.generation_id)
    if version >= 3:
        fields["rack_id"] = sub.rack_id
    buffer = io.BytesIO()
    buffer.write(struct.pack(">h", version))
    entity_writer(module.ConsumerProtocolSubscription)(buffer, module.ConsumerProtocolSubscription(**fields))
    return buffer.getvalue()


def _kio_assignment(assignment: ConsumerAssignment, version: int) -> bytes:
    import io

    from kio.schema.consumer_protocol_assignment.v0 import data as v0
    from kio.schema.consumer_protocol_assignment.v1 import data as v1
    from kio.schema.consumer_protocol_assignment.v2 import data as v2
    from kio.schema.consumer_protocol_assignment.v3 import data as v3
    from kio.serial import entity_writer
    from kio.static.primitive import i32

    module = (v0, v1, v2, v3)[version]
    grouped: dict[str, list[int]] = {}
    for tp in assignment.partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    message = module.ConsumerProtocolAssignment(
        assigned_partitions=tuple(
            module.TopicPartition(topic=t, partitions=tuple(i32(p) for p in ps)) for t, ps in grouped.items()
        ),
        user_data=assignment.user_data,
    )
    buffer = io.BytesIO()
    buffer.write(struct.pack(">h", version))
    entity_writer(module.ConsumerProtocolAssignment)(buffer, message)
    return buffer.getvalue()


# no deadline: the first example builds kio's writers for Kafka's schemas (0.7-1.1 s on a loaded
# machine, then 0.1 ms), which hypothesis reports as a flaky deadline
@settings(deadline=None)
@given(
    topics=st.lists(_names, unique=True, max_size=5),
    user_data=st.none() | st.binary(max_size=16),
    owned=st.lists(_tps, unique=True, max_size=8),
    generation=st.integers(-(2**31), 2**31 - 1),
    rack=st.none() | st.text(max_size=6),
    version=st.integers(0, 3),
)
def test_encoders_write_exactly_what_kio_writes_from_kafkas_schemas(
    topics: list[str],
    user_data: bytes | None,
    owned: list[TopicPartition],
    generation: int,
    rack: str | None,
    version: int,
) -> None:
    sub = ConsumerSubscription(tuple(topics), user_data, tuple(owned), generation, rack)
    assert encode_subscription(sub, version) == _kio_subscription(sub, version)
    assignment = ConsumerAssignment(tuple(owned), user_data)
    assert encode_assignment(assignment, version) == _kio_assignment(assignment, version)


def _kio_decode(kind: str, raw: bytes) -> object:
    """The reference reading: kio's generic reader from Kafka's schemas (None if it rejects the bytes,
    or reads a null where the schema forbids one, which Java's reader rejects)."""
    from kio.schema.consumer_protocol_assignment.v3 import data as a3
    from kio.schema.consumer_protocol_subscription.v0 import data as s0
    from kio.schema.consumer_protocol_subscription.v1 import data as s1
    from kio.schema.consumer_protocol_subscription.v2 import data as s2
    from kio.schema.consumer_protocol_subscription.v3 import data as s3
    from kio.serial import entity_reader

    version = min(struct.unpack_from(">h", raw)[0], 3)
    cls = (
        (s0, s1, s2, s3)[version].ConsumerProtocolSubscription
        if kind == "s"
        else a3.ConsumerProtocolAssignment
    )
    try:
        message, _ = entity_reader(cls)(raw, 2)
    except Exception:
        return None
    if kind == "a":
        if message.assigned_partitions is None or any(
            e.partitions is None for e in message.assigned_partitions
        ):
            return None
        parts = tuple(
            TopicPartition(e.topic, int(p)) for e in message.assigned_partitions for p in e.partitions
        )
        return ConsumerAssignment(parts, message.user_data)
    if message.topics is None or (version >= 1 and message.owned_partitions is None):
        return None
    owned = ()
    if version >= 1:
        if any(e.partitions is None for e in message.owned_partitions):
            return None
        owned = tuple(TopicPartition(e.topic, int(p)) for e in message.owned_partitions for p in e.partitions)
    return ConsumerSubscription(
        tuple(message.topics),
        message.user_data,
        owned,
        int(message.generation_id) if version >= 2 else -1,
        (message.rack_id or None) if version >= 3 else None,
    )


@given(
    topics=st.lists(_names, unique=True, max_size=4),
    owned=st.lists(_tps, unique=True, max_size=6),
    version=st.integers(0, 3),
    cut=st.integers(0, 200),
)
def test_decoders_read_exactly_what_kio_reads_or_reject_it(
    topics: list[str], owned: list[TopicPartition], version: int, cut: int
) -> None:
    """Valid bytes (every version) and every truncation of them: the same reading as kio's generic
    reader from Kafka's schemas, or a PeerError where it rejects. (Garbage is covered above; on a
    negative length other than -1 kio is stricter than Java, whose generated readers take any
    negative length of a nullable field as null — kgroup does as Java.)"""
    sub = encode_subscription(ConsumerSubscription(tuple(topics), b"u", tuple(owned), 3, "r"), version)
    asg = encode_assignment(ConsumerAssignment(tuple(owned), None), 3)
    for kind, raw in (("s", sub), ("a", asg)):
        for data in (raw, raw[: max(2, len(raw) - 1 - cut % (len(raw) - 1))]):
            decode = decode_subscription if kind == "s" else decode_assignment
            expected = _kio_decode(kind, data)
            try:
                got: object = decode(data)
            except PeerError:
                got = None
            assert got == expected, (kind, data)
            if data == raw:
                assert got is not None
