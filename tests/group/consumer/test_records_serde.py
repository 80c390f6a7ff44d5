"""The consumer group's (KIP-848) records as Kafka 4.4 writes them: layouts by hand, byte round trips,
Kafka's reading of old or odd bytes, corrupt bytes, and a coordinator rebuilt from the bytes.

The same layouts are compared with Kafka's own serde in ``tests/apache_kafka/test_oracle_records.py``."""

from __future__ import annotations

import struct
import typing
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroup.group import CoordinatorConfig, GroupCoordinator
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.records import consumer as cg
from kgroup.group.records.serde import decode_record, encode_record
from kgroup.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    Envelope,
    JoinGroupProtocol,
    TopicPartitions,
)
from kgroup.model import ErrorCode, PeerError, TopicId
from wire.strategies import CONSUMER_GROUP_RECORD

T1 = TopicId(1, 2)


def _key(kind: int, *strings: str) -> bytes:
    out = struct.pack(">h", kind)
    for text in strings:
        raw = text.encode()
        out += struct.pack(">h", len(raw)) + raw
    return out


def test_group_epoch_record_without_and_with_its_metadata_hash() -> None:
    # what Kafka 4.4's serde writes (the oracle test checks the same bytes against Kafka itself)
    key, value = encode_record(cg.ConsumerGroupMetadata("g", (5, 0)))
    assert (key, value) == (_key(3, "g"), bytes.fromhex("00000000000500"))
    key, value = encode_record(cg.ConsumerGroupMetadata("g", (5, 7)))
    assert value == bytes.fromhex("0000000000050100080000000000000007")
    assert encode_record(cg.ConsumerGroupMetadata("g", None)) == (_key(3, "g"), None)


def test_a_consumer_protocol_member_carries_a_null_classic_metadata_tag() -> None:
    value = cg.MemberMetadataValue(None, None, "c", "h", ("t",), None, 1000, None, None)
    key, raw = encode_record(cg.ConsumerGroupMemberMetadata("g", "m", value))
    assert key == _key(5, "g", "m")
    # instance, rack null; "c"; "h"; ["t"]; regex null; 1000; assignor null; one tag: 0, size 1, null
    assert raw == bytes.fromhex("000000000263026802027400000003e80001000100")


def test_an_empty_classic_metadata_is_left_out_and_read_back_as_itself() -> None:
    empty = cg.ClassicMemberMetadata(0, ())
    value = cg.MemberMetadataValue(None, None, "c", "h", (), None, -1, None, empty)
    record = cg.ConsumerGroupMemberMetadata("g", "m", value)
    _, raw = encode_record(record)
    assert raw is not None and raw.endswith(bytes.fromhex("ffffffff0000"))
    assert decode_record(*encode_record(record)) == record


def test_classic_member_metadata_is_a_marked_struct_in_tag_0() -> None:
    classic = cg.ClassicMemberMetadata(45000, (JoinGroupProtocol("range", b"\x01\x02"),))
    value = cg.MemberMetadataValue("i", "r", "c", "h", (), "a.*", 300000, "uniform", classic)
    _, raw = encode_record(cg.ConsumerGroupMemberMetadata("g", "m", value))
    struct_bytes = bytes.fromhex("0000afc8020672616e67650301020000")
    assert raw is not None
    assert raw.endswith(bytes([1, 0, len(struct_bytes) + 1, 1]) + struct_bytes)


def test_assignment_epochs_are_tag_0_of_each_topic() -> None:
    value = cg.CurrentAssignmentValue(
        7, 6, cg.MemberAssignmentState.UNREVOKED_PARTITIONS, {T1: {0: 3, 2: 7}}, {T1: {}}
    )
    key, raw = encode_record(cg.ConsumerGroupCurrentMemberAssignment("g", "m", value))
    assert key == _key(8, "g", "m")
    uuid = T1.to_int().to_bytes(16, "big").hex()
    assigned = "02" + uuid + "030000000000000002" + "010009030000000300000007"
    pending = "02" + uuid + "0100"  # no partitions: the empty epochs list is left out
    assert raw == bytes.fromhex("0000000000070000000601" + assigned + pending + "00")


def test_missing_or_mismatched_epochs_read_as_the_member_epoch() -> None:
    uuid = T1.to_int().to_bytes(16, "big").hex()
    no_tag = "02" + uuid + "03000000000000000100"
    short_tag = "02" + uuid + "0300000000000000010100050200000009"
    for topics in (no_tag, short_tag):
        raw = bytes.fromhex("0000000000040000000300" + topics + "0100")
        record = decode_record(_key(8, "g", "m"), raw)
        assert isinstance(record, cg.ConsumerGroupCurrentMemberAssignment) and record.value is not None
        assert record.value.assigned_partitions == {T1: {0: 4, 1: 4}}
    negative = bytes.fromhex("0000ffffffffffffffff00" + no_tag + "0100")
    record = decode_record(_key(8, "g", "m"), negative)
    assert record.value.assigned_partitions == {T1: {0: 0, 1: 0}}  # type: ignore[union-attr]


def test_an_unknown_member_state_reads_as_unknown_and_unknown_tags_are_skipped() -> None:
    raw = bytes.fromhex("00000000000100000000050101020501027f00")
    record = decode_record(_key(8, "g", "m"), raw)
    assert record.value == cg.CurrentAssignmentValue(1, 0, cg.MemberAssignmentState.UNKNOWN, {}, {})  # type: ignore[union-attr]


def test_regex_topics_are_written_in_java_string_order() -> None:
    resolved = cg.ResolvedRegularExpression(frozenset({"b", "\U0001f600", "\uffff", "a"}), 3, 9)
    _, raw = encode_record(cg.ConsumerGroupRegularExpression("g", "x.*", resolved))
    assert raw is not None
    names = [b"a", b"b", "\U0001f600".encode(), "\uffff".encode()]  # a surrogate pair sorts below U+FFFF
    expected = b"\x00\x00\x05" + b"".join(bytes([len(n) + 1]) + n for n in names)
    assert raw == expected + struct.pack(">qq", 3, 9) + b"\x00"


@given(CONSUMER_GROUP_RECORD)
def test_bytes_round_trip(record: cg.ConsumerGroupRecord) -> None:
    key, value = encode_record(record)
    assert decode_record(key, value) == record
    assert encode_record(decode_record(key, value)) == (key, value)


@pytest.mark.parametrize(
    ("key", "value", "what"),
    [
        (_key(3, "g"), bytes.fromhex("00010000000500"), "unsupported value version 1"),
        (_key(3, "g") + b"\x00", None, "after the end"),
        (struct.pack(">hh", 5, 1) + b"g" + struct.pack(">h", -1), None, "null"),
        (_key(3, "g"), bytes.fromhex("000000000005ffffffffff01"), "varint"),
        (_key(3, "g"), bytes.fromhex("00000000000501000400000000"), "end before"),
        (_key(16, "g", "r"), bytes.fromhex("000000") + bytes(17), "null"),
        (_key(16, "g", "r"), bytes.fromhex("00007f"), "does not fit"),
        (_key(5, "g", "m"), bytes.fromhex("0000000002ff"), "UTF-8"),
    ],
)
def test_corrupt_bytes_are_a_peer_error(key: bytes, value: bytes | None, what: str) -> None:
    with pytest.raises(PeerError, match=what):
        decode_record(key, value)


def test_a_string_longer_than_kafkas_limit_cannot_be_written() -> None:
    with pytest.raises(ValueError, match="32767"):
        encode_record(cg.ConsumerGroupMetadata("g" * 40000, (1, 0)))


@given(st.binary(max_size=60))
def test_garbage_values_are_a_peer_error_or_a_record_that_round_trips(value: bytes) -> None:
    for kind, strings in (
        (3, ("g",)),
        (5, ("g", "m")),
        (6, ("g",)),
        (7, ("g", "m")),
        (8, ("g", "m")),
        (16, ("g", "r")),
    ):
        try:
            record = decode_record(_key(kind, *strings), b"\x00\x00" + value)
        except PeerError:
            continue
        assert decode_record(*encode_record(record)) == record


def test_a_coordinator_rebuilt_from_the_bytes_of_a_consumer_group_equals_the_original() -> None:
    image = MetadataImage.of([TopicImage(T1, "foo", 6), TopicImage(TopicId(3, 4), "bar", 2)], 1)
    coordinator = GroupCoordinator(CoordinatorConfig(), rng=Random(0))
    coordinator.set_metadata(image)
    written: list[cg.ConsumerGroupRecord] = []
    epochs: dict[str, int] = {}
    owned: dict[str, tuple[TopicPartitions, ...]] = {}
    correlation = 0
    for round_ in range(5):
        for member_id in ("a", "b", "c") if round_ < 3 else ("a", "b"):
            correlation += 1
            first = member_id not in epochs
            request = ConsumerGroupHeartbeatRequest(
                group_id="grp",
                member_id=member_id,
                member_epoch=epochs.get(member_id, 0),
                rebalance_timeout_ms=30_000 if first else -1,
                subscribed_topic_names=("foo", "bar") if first else None,
                server_assignor="uniform" if first else None,
                topic_partitions=owned.get(member_id, ()),
            )
            result = coordinator.handle(1_000 * correlation, Envelope(member_id, correlation, request))
            written.extend(
                r for r in result.records if isinstance(r, typing.get_args(cg.ConsumerGroupRecord))
            )
            (reply,) = result.replies
            answer = reply.body
            assert isinstance(answer, ConsumerGroupHeartbeatResponse) and answer.error_code == ErrorCode.NONE
            epochs[member_id] = answer.member_epoch
            if answer.assignment is not None:
                owned[member_id] = answer.assignment
        if round_ == 3:  # c leaves
            correlation += 1
            leave = ConsumerGroupHeartbeatRequest("grp", "c", -1)
            result = coordinator.handle(1_000 * correlation, Envelope("c", correlation, leave))
            written.extend(
                r for r in result.records if isinstance(r, typing.get_args(cg.ConsumerGroupRecord))
            )
    kinds = {type(r) for r in written}
    assert len(kinds) == 5 and any(r.value is None for r in written)  # every type but the regex's
    rebuilt = GroupCoordinator(CoordinatorConfig(), rng=Random(1))
    for record in written:
        rebuilt.replay(decode_record(*encode_record(record)))
    assert rebuilt.snapshot().of("consumer") == coordinator.snapshot().of("consumer")
    assert coordinator.snapshot().of("consumer")
