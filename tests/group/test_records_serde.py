"""The coordinator's records as bytes: Kafka's __consumer_offsets layouts, kgroup's own, round trips,
replay from bytes, and corrupt bytes."""

from __future__ import annotations

import re
import struct
import typing
from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from group.context import GROUP, GroupTestContext
from kgroup.group import ClassicGroups, GroupCoordinator, GroupState, Record, records
from kgroup.group.classic.timers import HeartbeatTimer, JoinTimer, SyncTimer
from kgroup.group.consumer.timers import (
    ClassicMemberJoinTimer,
    ClassicMemberSyncTimer,
    RebalanceTimer,
    RegexTimer,
    SessionTimer,
)
from kgroup.group.records.primitives import Reader
from kgroup.group.records.serde import (
    KGROUP_KEY_VERSION,
    _decode_offset_commit,
    decode_record,
    encode_record,
    offset_commit_batch_bytes,
)
from kgroup.messages import (
    JoinGroupProtocol,
    LeaveGroupMember,
    OffsetCommitPartition,
    OffsetCommitRequest,
)
from kgroup.model import PeerError, TopicPartition
from kgroup.wire.record_batch import HEADER_SIZE, record_size
from kgroup.wire.varint import encode_uvarint
from wire.strategies import CONSUMER_GROUP_RECORDS, SHARE_GROUP_RECORDS


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


# --- Kafka's layouts ---------------------------------------------------------------------------------


def test_offset_commit_is_kafkas_offset_commit_key_v1_and_value_v3() -> None:
    record = records.OffsetCommitted(
        "g", TopicPartition("t", 7), records.OffsetAndMetadata(42, 5, "meta", 1_700_000_000_000)
    )
    key, value = encode_record(record)
    assert key == struct.pack(">h", 1) + _string("g") + _string("t") + struct.pack(">i", 7)
    assert value == struct.pack(">hqi", 3, 42, 5) + _string("meta") + struct.pack(">q", 1_700_000_000_000)
    assert decode_record(key, value) == record


@pytest.mark.parametrize("metadata_bytes", [0, 1, 62, 63, 64, 100, 126, 127, 128, 300])
def test_the_commit_batch_estimate_sizes_kafkas_offset_commit_value_v4(metadata_bytes: int) -> None:
    """One record's estimate is the batch header plus the record of OffsetCommitKey v1 and
    OffsetCommitValue v4 as Kafka 4.4 writes them: the metadata a compact string (an unsigned varint
    of its length + 1, one byte up to 126 bytes of metadata) and the topic id a tagged field."""
    metadata = "m" * metadata_bytes
    key = struct.pack(">h", 1) + _string("g") + _string("t") + struct.pack(">i", 0)
    value = (
        struct.pack(">hqi", 4, 42, -1)
        + encode_uvarint(metadata_bytes + 1)
        + metadata.encode()
        + struct.pack(">q", 1_700_000_000_000)
        + encode_uvarint(1)  # one tagged field
        + encode_uvarint(0)  # its tag: the topic id
        + encode_uvarint(16)
        + bytes(16)
    )
    expected = HEADER_SIZE + record_size(0, len(key), len(value))
    assert offset_commit_batch_bytes("g", [("t", metadata)]) == expected


def test_older_offset_commit_values_are_read() -> None:
    key = struct.pack(">h", 0) + _string("g") + _string("t") + struct.pack(">i", 1)
    v1 = struct.pack(">hq", 1, 9) + _string("") + struct.pack(">qq", 100, 200)  # with expire timestamp
    v2 = struct.pack(">hq", 2, 9) + _string("m") + struct.pack(">q", 100)
    assert decode_record(key, v1) == records.OffsetCommitted(
        "g", TopicPartition("t", 1), records.OffsetAndMetadata(9, -1, "", 100)
    )
    assert decode_record(key, v2).value == records.OffsetAndMetadata(9, -1, "m", 100)  # type: ignore[union-attr]


def test_group_deleted_is_kafkas_group_metadata_tombstone() -> None:
    key, value = encode_record(records.GroupDeleted("g"))
    assert (key, value) == (struct.pack(">h", 2) + _string("g"), None)
    assert decode_record(key, value) == records.GroupDeleted("g")


def test_kgroup_records_use_their_own_key_version() -> None:
    key, value = encode_record(records.GroupCreated("g", 5))
    assert key[:2] == struct.pack(">h", KGROUP_KEY_VERSION) and KGROUP_KEY_VERSION > 15
    assert value is not None and value[:2] == struct.pack(">h", 0)


# --- round trips over every record type -------------------------------------------------------------

_text = st.text(max_size=12)
_ids = st.text(alphabet="abc-0123456789", min_size=1, max_size=10)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_parked = st.none() | st.builds(records.Parked, _text, _i32)
_member = st.builds(
    records.ClassicGroupMember,
    member_id=_ids,
    group_instance_id=st.none() | _ids,
    client_id=_text,
    client_host=_text,
    rebalance_timeout_ms=_i32,
    session_timeout_ms=_i32,
    protocol_type=_text,
    protocols=st.lists(st.builds(JoinGroupProtocol, _text, st.binary(max_size=20)), max_size=3).map(tuple),
    assignment=st.binary(max_size=20),
    awaiting_join=_parked,
    awaiting_sync=_parked,
    is_new=st.booleans(),
)
_i32 = st.integers(-(2**31), 2**31 - 1)
#: every registered kind of timer key (a record writes a key's kind and fields as strings)
_timer_key = st.one_of(
    st.builds(HeartbeatTimer, _text, _text),
    st.builds(JoinTimer, _text),
    st.builds(SyncTimer, _text, _i32),
    st.builds(SessionTimer, _text, _text),
    st.builds(RebalanceTimer, _text, _text, _i32),
    st.builds(ClassicMemberJoinTimer, _text, _text),
    st.builds(ClassicMemberSyncTimer, _text, _text),
    st.builds(RegexTimer, _text),
)
_opt_i64 = st.none() | _i64

_BY_TYPE: dict[type, st.SearchStrategy[Record]] = {
    records.GroupCreated: st.builds(records.GroupCreated, _ids, _i64),
    records.GroupStateChanged: st.builds(
        records.GroupStateChanged, _ids, st.sampled_from(list(GroupState)), _i64
    ),
    records.GenerationStarted: st.builds(records.GenerationStarted, _ids, _i32, st.none() | _text),
    records.GroupLeaderChanged: st.builds(records.GroupLeaderChanged, _ids, st.none() | _ids),
    records.GroupProtocolTypeChanged: st.builds(records.GroupProtocolTypeChanged, _ids, st.none() | _text),
    records.MemberUpserted: st.builds(records.MemberUpserted, _ids, _member),
    records.MemberRemoved: st.builds(records.MemberRemoved, _ids, _ids),
    records.StaticMemberReplaced: st.builds(records.StaticMemberReplaced, _ids, _ids, _member),
    records.PendingMemberAdded: st.builds(records.PendingMemberAdded, _ids, _ids),
    records.PendingMemberRemoved: st.builds(records.PendingMemberRemoved, _ids, _ids),
    records.PendingSyncMembersSet: st.builds(
        records.PendingSyncMembersSet, _ids, st.lists(_ids, max_size=4).map(tuple)
    ),
    records.PendingSyncMemberRemoved: st.builds(records.PendingSyncMemberRemoved, _ids, _ids),
    records.InitialDelayUpdated: st.builds(
        records.InitialDelayUpdated, _ids, st.booleans(), _opt_i64, _opt_i64
    ),
    records.OffsetCommitted: st.builds(
        records.OffsetCommitted,
        _ids,
        st.builds(TopicPartition, _ids, st.integers(0, 2**31 - 1)),
        st.builds(records.OffsetAndMetadata, _i64, _i32, _text, _i64),
    ),
    records.TxnOffsetCommitted: st.builds(
        records.TxnOffsetCommitted,
        _ids,
        _i64,
        st.integers(-(2**15), 2**15 - 1),
        st.builds(TopicPartition, _ids, st.integers(0, 2**31 - 1)),
        st.builds(records.OffsetAndMetadata, _i64, _i32, _text, _i64),
    ),
    records.TxnOffsetsEnded: st.builds(records.TxnOffsetsEnded, _ids, _i64, st.booleans()),
    records.GroupDeleted: st.builds(records.GroupDeleted, _ids),
    records.TimerArmed: st.builds(records.TimerArmed, _timer_key, _i64),
    records.TimerDisarmed: st.builds(records.TimerDisarmed, _timer_key),
    records.GroupRestored: st.builds(
        records.GroupRestored,
        _ids,
        st.sampled_from(list(GroupState)),
        st.sampled_from(list(GroupState)),
        _i64,
        _i32,
        st.none() | _text,
        st.none() | _text,
        st.none() | _ids,
        st.lists(_member, max_size=3).map(tuple),
        st.sampled_from([16, 32, 64]),
        st.lists(_ids, max_size=3).map(tuple),
        st.lists(_ids, max_size=3).map(tuple),
        st.booleans(),
        st.none() | st.tuples(_i64, _i64),
    ),
    **CONSUMER_GROUP_RECORDS,
    **SHARE_GROUP_RECORDS,
}
RECORD = st.one_of(*_BY_TYPE.values())


def test_the_strategy_covers_every_record_type() -> None:
    assert set(_BY_TYPE) == set(typing.get_args(Record))


@given(RECORD)
def test_every_record_round_trips(record: Record) -> None:
    assert decode_record(*encode_record(record)) == record


@settings(max_examples=300)
@given(RECORD, st.data())
def test_truncated_or_extended_bytes_are_a_peer_error(record: Record, data: st.DataObject) -> None:
    key, value = encode_record(record)
    if value:
        cut = data.draw(st.integers(0, len(value) - 1))
        with pytest.raises(PeerError):
            decode_record(key, value[:cut])
        with pytest.raises(PeerError):
            decode_record(key, value + b"\x00")
    with pytest.raises(PeerError):
        decode_record(key[: data.draw(st.integers(0, len(key) - 1))], value)


@given(st.binary(max_size=40), st.none() | st.binary(max_size=80))
def test_garbage_is_a_peer_error_or_a_record(key: bytes, value: bytes | None) -> None:
    try:
        decoded = decode_record(key, value)
    except PeerError:
        return
    assert decode_record(*encode_record(decoded)) == decoded


_OFFSET_COMMITS = st.builds(
    records.OffsetCommitted,
    st.text(max_size=6),
    st.builds(TopicPartition, st.text(max_size=6), st.integers(-(2**31), 2**31 - 1)),
    st.builds(
        records.OffsetAndMetadata,
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.text(max_size=6),
        st.integers(-(2**63), 2**63 - 1),
    ),
)


def _field_by_field(key: bytes, value: bytes | None) -> records.OffsetCommitted | str:
    """The offset record (or the error) of the field-by-field reader that the packed reader skips."""
    reader = Reader(key, "record key")
    try:
        if reader.i16() != 1:
            return "not key v1"
        return typing.cast(records.OffsetCommitted, _decode_offset_commit(reader, value))
    except PeerError as error:
        return str(error)


@settings(max_examples=300)
@given(_OFFSET_COMMITS, st.data())
def test_the_packed_offset_reader_agrees_with_the_field_by_field_one(
    record: records.OffsetCommitted, data: st.DataObject
) -> None:
    """``decode_record`` reads a well-formed OffsetCommitKey v1 / value v3 in a few unpacks; on any
    bytes (one byte changed, cut or added) it gives what the field-by-field reader gives."""
    key, value = encode_record(record)
    assert decode_record(key, value) == record == _field_by_field(key, value)
    which = data.draw(st.sampled_from(["key", "value"]))
    raw = bytearray(key if which == "key" else value)
    edit = data.draw(st.sampled_from(["set", "cut", "add"]))
    at = data.draw(st.integers(0, len(raw) - 1))
    if edit == "set":
        raw[at] = data.draw(st.integers(0, 255))
    elif edit == "cut":
        del raw[at:]
    else:
        raw[at:at] = data.draw(st.binary(min_size=1, max_size=3))
    key, value = (bytes(raw), value) if which == "key" else (key, bytes(raw))
    expected = _field_by_field(key, value)
    if isinstance(expected, str):
        if expected != "not key v1":
            with pytest.raises(PeerError, match=re.escape(expected)):
                decode_record(key, value)
    else:
        assert decode_record(key, value) == expected


# --- a coordinator rebuilt from bytes ----------------------------------------------------------------


def test_a_coordinator_rebuilt_from_the_bytes_of_a_recorded_run_equals_the_original() -> None:
    ctx = GroupTestContext()
    ids, leader, generation = ctx.join_group_to_stable(3, rebalance_timeout_ms=5000)
    ctx.send(
        OffsetCommitRequest(GROUP, generation, leader, (OffsetCommitPartition(TopicPartition("foo", 0), 7),))
    )
    static_ids, _, _ = ctx.join_group_to_stable(2, static=True, group_id="static-group")
    ctx.leave(LeaveGroupMember(ids[1]))
    ctx.join_static("instance-0", group_id="static-group", connection="back")  # returns: new id
    ctx.sleep(7000)  # sessions expire, rebalances happen, timers fire
    assert len(ctx.records) > 40
    rebuilt = GroupCoordinator(ctx.config, rng=Random(1))
    for record in ctx.records:
        rebuilt.replay(decode_record(*encode_record(record)))
    assert rebuilt.snapshot() == ctx.coordinator.snapshot()
    assert static_ids[0] not in rebuilt.kind(ClassicGroups).group("static-group").member_ids


@pytest.mark.parametrize(
    ("written", "read"),
    [(b"join", b"jxin"), (b"\x00\x01g\x00\x017", b"\x00\x01g\x00\x01x")],
    ids=["unknown-kind", "non-integer-field"],
)
def test_a_timer_key_no_kind_reads_is_refused(written: bytes, read: bytes) -> None:
    """A TimerArmed whose key names no registered kind of timer, or whose integer field is not one,
    is corrupt: a clear PeerError, not a key no timer fires for."""
    record = records.TimerArmed(JoinTimer("g") if written == b"join" else SyncTimer("g", 7), 5)
    key, value = encode_record(record)
    assert value is not None and written in value
    assert decode_record(key, value) == record
    with pytest.raises(PeerError, match="unknown timer key"):
        decode_record(key, value.replace(written, read))
