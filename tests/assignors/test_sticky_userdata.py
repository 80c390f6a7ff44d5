"""The sticky assignors' user data: Kafka's byte layout, decoding rules, and the assignor hooks."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kgroup.assignors.sticky.owned import MemberData
from kgroup.assignors.sticky.userdata import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from kgroup.model import Member, TopicPartition

T = TopicPartition


def _hex(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# StickyAssignor.STICKY_ASSIGNOR_USER_DATA_V1 written out by hand from its Schema definition:
# previous_assignment ARRAY (int32 count) of {topic STRING (int16 length + UTF-8), partitions ARRAY of
# INT32}, then generation INT32; all big-endian, no version prefix.
ONE_TOPIC_V1 = _hex("00000001  0001 74  00000002 00000000 00000002  00000005")
ONE_TOPIC_V0 = _hex("00000001  0001 74  00000002 00000000 00000002")
# Topics in java.util.HashMap order: String.hashCode "ab" = 3105 (bucket 1), "z" = 122 (bucket 10),
# "ba" = 3135 (bucket 15) in a 16-bucket table -- neither insertion order (z, ba, ab) nor sorted order.
THREE_TOPICS_V1 = _hex(
    "00000003"
    " 0002 6162  00000001 00000003"
    " 0001 7a    00000002 00000001 00000000"
    " 0002 6261  00000001 00000000"
    " 00000007"
)


def test_v1_layout_is_byte_exact() -> None:
    assert encode_sticky_user_data([T("t", 0), T("t", 2)], 5) == ONE_TOPIC_V1


def test_v0_layout_has_no_generation() -> None:
    assert encode_sticky_user_data([T("t", 0), T("t", 2)], None) == ONE_TOPIC_V0


def test_topics_are_written_in_java_hashmap_order() -> None:
    partitions = [T("z", 1), T("ba", 0), T("ab", 3), T("z", 0)]
    assert encode_sticky_user_data(partitions, 7) == THREE_TOPICS_V1


def test_decode_v1_and_v0() -> None:
    assert decode_sticky_user_data(ONE_TOPIC_V1) == ([T("t", 0), T("t", 2)], 5)
    assert decode_sticky_user_data(ONE_TOPIC_V0) == ([T("t", 0), T("t", 2)], None)
    assert decode_sticky_user_data(THREE_TOPICS_V1) == ([T("ab", 3), T("z", 1), T("z", 0), T("ba", 0)], 7)


def test_decode_ignores_trailing_bytes_like_kafka_schema_read() -> None:
    assert decode_sticky_user_data(ONE_TOPIC_V1 + b"\x01\x02") == ([T("t", 0), T("t", 2)], 5)
    # V1 needs four more bytes after the array; with two, the V0 reading wins
    assert decode_sticky_user_data(ONE_TOPIC_V0 + b"\x00\x01") == ([T("t", 0), T("t", 2)], None)


def test_empty_assignment_and_negative_generation() -> None:
    data = encode_sticky_user_data([], -1)
    assert data == _hex("00000000 ffffffff")
    assert decode_sticky_user_data(data) == ([], -1)


def test_non_ascii_topic_counts_utf8_bytes() -> None:
    data = encode_sticky_user_data([T("é", 1)], 2)
    assert data == _hex("00000001 0002 c3a9 00000001 00000001 00000002")
    assert decode_sticky_user_data(data) == ([T("é", 1)], 2)


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"\x00",
        _hex("ffffffff"),  # negative array size
        _hex("00000001 ffff"),  # negative string length
        _hex("00000001 0005 6162"),  # string longer than the data
        _hex("00000009 0001 74"),  # more elements than bytes
        _hex("00000001 0001 74 00000002 00000000"),  # a partition missing
    ],
)
def test_garbage_raises_value_error(garbage: bytes) -> None:
    with pytest.raises(ValueError):
        decode_sticky_user_data(garbage)


def test_encoding_rejects_what_java_cannot_write() -> None:
    with pytest.raises(ValueError):
        encode_sticky_user_data([T("t", 2**31)], 1)
    with pytest.raises(ValueError):
        encode_sticky_user_data([T("x" * 40000, 0)], 1)


_topics = st.sampled_from(["t", "t10", "a-b", "é", "\U0001f600", "ab", "ba", "z"])
_partition_lists = st.lists(st.builds(T, _topics, st.integers(0, 2**31 - 1)), max_size=20, unique=True)


@given(_partition_lists, st.none() | st.integers(-(2**31), 2**31 - 1))
@settings(max_examples=200, deadline=None)
def test_sticky_round_trip(partitions: list[TopicPartition], generation: int | None) -> None:
    decoded, decoded_generation = decode_sticky_user_data(encode_sticky_user_data(partitions, generation))
    assert decoded_generation == generation
    # grouped by topic (topics in HashMap order), each topic's partitions in the given order
    assert sorted(decoded) == sorted(partitions)
    for topic in {tp.topic for tp in partitions}:
        assert [tp for tp in decoded if tp.topic == topic] == [tp for tp in partitions if tp.topic == topic]


def test_kafka_python_reads_and_writes_the_same_body() -> None:
    """kafka-python's own ``StickyAssignorUserData`` (Kafka's JSON schema) agrees on the V1 body.

    kafka-python prefixes an int16 version that Java's assignor does not write; the body after it is
    Java's layout, with topics in kafka-python's insertion order.
    """
    with warnings.catch_warnings():
        # kafka-python loads its schema with a deprecated importlib.resources call
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

        decoded = StickyAssignorUserData.decode(THREE_TOPICS_V1, version=1, header=False)
        written = StickyAssignorUserData([("ab", [3]), ("z", [1, 0]), ("ba", [0])], 7).encode()
    assert [(a.topic, list(a.partitions)) for a in decoded.previous_assignment] == [
        ("ab", [3]),
        ("z", [1, 0]),
        ("ba", [0]),
    ]
    assert decoded.generation == 7
    assert written[2:] == THREE_TOPICS_V1


def test_cooperative_user_data() -> None:
    assert encode_cooperative_user_data(3) == _hex("00000003")
    assert encode_cooperative_user_data(-1) == _hex("ffffffff")
    assert decode_cooperative_user_data(_hex("0000000c")) == 12
    assert decode_cooperative_user_data(_hex("0000000c ffff")) == 12
    with pytest.raises(ValueError):
        decode_cooperative_user_data(b"\x00\x01")


# -- how each assignor reads a member ---------------------------------------------------------------


def test_sticky_reads_only_user_data() -> None:
    sticky = StickyAssignor()
    owned_elsewhere = Member("m", ("t",), owned=(T("t", 9),), generation=4)
    assert sticky.member_data(owned_elsewhere) == MemberData((), None)
    assert sticky.member_data(Member("m", ("t",), user_data=b"")) == MemberData((), None)
    v1 = Member("m", ("t",), owned=(T("t", 9),), generation=4, user_data=ONE_TOPIC_V1)
    assert sticky.member_data(v1) == MemberData((T("t", 0), T("t", 2)), 5)
    v0 = Member("m", ("t",), user_data=ONE_TOPIC_V0)
    assert sticky.member_data(v0) == MemberData((T("t", 0), T("t", 2)), None)
    unreadable = Member("m", ("t",), user_data=b"\x00\x01")
    assert sticky.member_data(unreadable) == MemberData((), -1)


def test_cooperative_reads_subscription_then_user_data_generation() -> None:
    coop = CooperativeStickyAssignor()
    owned = (T("t", 1),)
    with_generation = Member(
        "m", ("t",), owned=owned, generation=4, user_data=encode_cooperative_user_data(9)
    )
    assert coop.member_data(with_generation) == MemberData(owned, 4)
    old_protocol = Member("m", ("t",), owned=owned, user_data=encode_cooperative_user_data(9))
    assert coop.member_data(old_protocol) == MemberData(owned, 9)
    assert coop.member_data(Member("m", ("t",), owned=owned)) == MemberData(owned, None)
    unreadable = Member("m", ("t",), owned=owned, user_data=b"\x01")
    assert coop.member_data(unreadable) == MemberData(owned, -1)


def test_sticky_hooks_remember_last_assignment_and_generation() -> None:
    sticky = StickyAssignor()
    assert sticky.subscription_user_data([], -1) is None  # nothing to tell before any assignment
    assert sticky.subscription_user_data([T("t", 0), T("t", 2)], 5) == ONE_TOPIC_V1
    sticky.on_assignment(None, 5, [T("t", 0), T("t", 2)])
    # eager members join with nothing owned; the user data still carries the last assignment
    assert sticky.subscription_user_data([], -1) == ONE_TOPIC_V1
    sticky.on_assignment(None, 6, [])
    assert decode_sticky_user_data(sticky.subscription_user_data([], -1) or b"") == ([], 6)


def test_cooperative_hooks_send_the_generation() -> None:
    coop = CooperativeStickyAssignor()
    assert coop.subscription_user_data([], -1) == _hex("ffffffff")
    coop.on_assignment(None, 8)
    assert coop.subscription_user_data([T("t", 0)], 3) == _hex("00000008")
