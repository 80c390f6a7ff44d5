"""kgroup.record.history: ``__consumer_offsets`` records (made by kgroup's encoders of Kafka's formats)
turned into the recording ``kgroup report`` draws."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kgroup.group.records import OffsetAndMetadata, OffsetCommitted
from kgroup.group.records import consumer as cg
from kgroup.group.records.offsets_topic import (
    GroupMetadata,
    GroupMetadataMember,
    GroupMetadataValue,
    OffsetCommit,
    OtherRecord,
    decode_offsets_record,
    encode_group_metadata_value,
)
from kgroup.group.records.serde import encode_record
from kgroup.messages import ConsumerAssignment
from kgroup.model import PeerError, TopicId, TopicPartition
from kgroup.record.history import GroupHistory, OffsetsEntry
from kgroup.wire.consumer_protocol import encode_assignment

G = "payments"
T = TopicId(7, 9)


def _key(group: str) -> bytes:
    raw = group.encode()
    return b"\x00\x02" + len(raw).to_bytes(2, "big") + raw


def _assignment(*partitions: int) -> bytes:
    return encode_assignment(ConsumerAssignment(tuple(TopicPartition("orders", p) for p in partitions)))


def _member(member_id: str, *partitions: int, instance: str | None = None) -> GroupMetadataMember:
    return GroupMetadataMember(
        member_id, instance, "client", "/127.0.0.1", 30_000, 10_000, b"", _assignment(*partitions)
    )


def _generation(
    generation: int, *members: GroupMetadataMember, version: int = 3, joined_ms: int | None = None
) -> bytes:
    """A GroupMetadata value; ``joined_ms``: its currentStateTimestamp (the join phase's end)."""
    value = GroupMetadataValue(
        "consumer",
        generation,
        "range" if members else None,
        members[0].member_id if members else None,
        1_000 * generation if joined_ms is None else joined_ms,
        members,
    )
    return encode_group_metadata_value(value, version)


def _owners(doc: dict[str, Any], t: int) -> dict[str, str]:
    rec = doc["recording"]
    return {rec["partitions"][i]: m for i, m, s, e in rec["intervals"] if s <= t < e}


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_values_decode_at_every_version(version: int) -> None:
    members = (_member("a-1", 0, 1, instance="i-a" if version >= 3 else None), _member("b-2", 2))
    decoded = decode_offsets_record(_key(G), _generation(4, *members, version=version))
    assert isinstance(decoded, GroupMetadata) and decoded.group_id == G
    value = decoded.value
    assert value is not None
    assert (value.protocol_type, value.generation, value.protocol, value.leader) == (
        "consumer",
        4,
        "range",
        "a-1",
    )
    assert value.current_state_timestamp_ms == (4_000 if version >= 2 else -1)
    assert value.members[0].group_instance_id == ("i-a" if version >= 3 else None)
    assert value.members[0].rebalance_timeout_ms == (30_000 if version >= 1 else -1)
    assert [m.assignment for m in value.members] == [_assignment(0, 1), _assignment(2)]


def test_corrupt_and_foreign_records() -> None:
    with pytest.raises(PeerError, match="group metadata value: unsupported version 9"):
        decode_offsets_record(_key(G), b"\x00\x09")
    with pytest.raises(PeerError, match="bytes end before the record does"):
        decode_offsets_record(_key(G), _generation(1, _member("a", 0))[:-3])
    with pytest.raises(PeerError, match="bytes after the end of the record"):
        decode_offsets_record(_key(G), _generation(1, _member("a", 0)) + b"\x00")
    assert decode_offsets_record(_key(G), None) == GroupMetadata(G, None)
    assert decode_offsets_record(b"\x00\x0a\x00\x01g", b"") == OtherRecord(10)  # a share group's record


def test_offset_commit_values_v4_and_tombstones() -> None:
    key, _ = encode_record(OffsetCommitted(G, TopicPartition("orders", 3), OffsetAndMetadata(42, 5, "m", 77)))
    # v4: flexible, compact metadata, the topic id as tagged field 0
    v4 = b"\x00\x04" + (42).to_bytes(8, "big") + (5).to_bytes(4, "big") + b"\x02m" + (77).to_bytes(8, "big")
    v4 += b"\x01\x00\x10" + bytes(range(16))
    assert decode_offsets_record(key, v4) == OffsetCommit(G, TopicPartition("orders", 3), 42, 5, "m", 77)
    assert decode_offsets_record(key, None) == OffsetCommit(G, TopicPartition("orders", 3), None)


def test_a_classic_groups_generations_owners_and_commits() -> None:
    history = GroupHistory(G)
    base = 1_700_000_000_000
    entries = [
        (0, _generation(0, joined_ms=base)),  # the group is created: empty
        (100, _generation(1, _member("a", 0, 1, 2, 3), joined_ms=base + 60)),
        (
            200,
            encode_record(OffsetCommitted(G, TopicPartition("orders", 0), OffsetAndMetadata(10, -1, "", 0)))[
                1
            ],
        ),
        # range is eager: the join phase ended 50 ms before each new generation's assignment
        (1_000, _generation(2, _member("a", 0, 1), _member("b", 2, 3), joined_ms=base + 950)),
        (
            1_500,
            _generation(2, _member("a", 0, 1), _member("b2", 2, 3, instance="i-b"), joined_ms=base + 950),
        ),  # static replacement
        (3_000, _generation(3, _member("b2", 0, 1, 2, 3, instance="i-b"), joined_ms=base + 2_950)),  # a ended
        (4_000, _generation(4, joined_ms=base + 4_000)),  # everyone gone: Empty
        (5_000, None),  # deleted
    ]
    commit_key = encode_record(
        OffsetCommitted(G, TopicPartition("orders", 0), OffsetAndMetadata(10, -1, "", 0))
    )[0]
    for offset, (t, value) in enumerate(entries):
        key = commit_key if t == 200 else _key(G)
        assert history.add(OffsetsEntry(offset, base + t, key, value))
    assert not history.add(OffsetsEntry(99, base + 6_000, _key("other"), _generation(1, _member("x", 0))))
    doc = history.document()
    assert doc["metrics"]["rebalances"] == 3  # generations 1, 2 and 3; the replacement is none
    assert doc["metrics"]["members_seen"] == 3 and doc["metrics"]["state"] == "Dead"
    assert doc["commits"] == {"orders-0": [[200, 10]]}
    assert _owners(doc, 500) == {f"orders-{p}": "a" for p in range(4)}
    # eager members hold nothing from the join phase's end to the assignment: 50 ms before generation
    # 2 and before generation 3, on each of the 4 partitions; nothing counts once the group is Empty
    assert _owners(doc, 975) == {} and _owners(doc, 2_975) == {}
    assert doc["metrics"]["unowned_partition_ms"] == 2 * 4 * 50
    assert doc["recording"]["unowned_ms"] == [100, 100, 100, 100]
    assert doc["recording"]["recorded_by"] == "kgroup record (from __consumer_offsets)"
    assert doc["metrics"]["final_protocol"] == "range"
    members = {m["member_id"]: m for m in doc["members"]}
    assert sorted(members) == ["a", "b", "b2"]
    assert {(m["client_id"], m["client_host"]) for m in members.values()} == {("client", "/127.0.0.1")}
    # b is missing from the record that has b2: the records cannot tell a replacement from a leave
    assert (members["b"]["left_ms"], members["b"]["left_reason"]) == (1_500, None)
    assert (members["b2"]["group_instance_id"], members["b2"]["joined_ms"], members["b2"]["left_ms"]) == (
        "i-b",
        1_500,
        4_000,
    )
    assert _owners(doc, 1_200) == {"orders-0": "a", "orders-1": "a", "orders-2": "b", "orders-3": "b"}
    assert _owners(doc, 2_000) == {"orders-0": "a", "orders-1": "a", "orders-2": "b2", "orders-3": "b2"}
    assert _owners(doc, 3_500) == {f"orders-{p}": "b2" for p in range(4)}
    assert _owners(doc, 4_500) == {}
    generations = [
        (e["t_ms"], e["generation"], e["members"]) for e in doc["events"] if e["kind"] == "generation"
    ]
    assert generations == [(100, 1, ["a"]), (1_000, 2, ["a", "b"]), (3_000, 3, ["b2"])]
    left = [(e["t_ms"], e["member_id"]) for e in doc["events"] if e["kind"] == "left_group"]
    assert left == [(1_500, "b"), (3_000, "a"), (4_000, "b2")]
    states = [(e["t_ms"], e["state"]) for e in doc["events"] if e["kind"] == "group_state"]
    assert states == [
        (0, "Empty"),
        (100, "Stable"),
        (1_000, "Stable"),
        (3_000, "Stable"),
        (4_000, "Empty"),
        (5_000, "Dead"),
    ]
    assert doc["recording"]["stable_marks"] == [100, 1_000, 3_000]


def _cg(record: Any, t: int, history: GroupHistory, offset: int) -> None:
    key, value = encode_record(record)
    assert history.add(OffsetsEntry(offset, t, key, value))


def test_a_consumer_protocol_groups_epochs_handover_and_states() -> None:
    history = GroupHistory(G, topic_names={T: "orders"})
    meta = cg.MemberMetadataValue(None, None, "c", "/h", ("orders",), None, 45_000, "uniform")
    meta_b = cg.MemberMetadataValue(None, "rack-b", "client-b", "/10.0.0.2", ("orders",), None, 45_000, None)
    stable = cg.MemberAssignmentState.STABLE
    steps: list[tuple[int, Any]] = [
        (0, cg.ConsumerGroupMemberMetadata(G, "a", meta)),
        (0, cg.ConsumerGroupMetadata(G, (1, 0))),
        (0, cg.ConsumerGroupTargetAssignmentMember(G, "a", {T: (0, 1)})),
        (0, cg.ConsumerGroupTargetAssignmentMetadata(G, cg.TargetAssignmentMetadataValue(1, 0))),
        (
            10,
            cg.ConsumerGroupCurrentMemberAssignment(
                G, "a", cg.CurrentAssignmentValue(1, 0, stable, {T: {0: 1, 1: 1}}, {})
            ),
        ),
        (1_000, cg.ConsumerGroupMemberMetadata(G, "b", meta_b)),
        (1_000, cg.ConsumerGroupMetadata(G, (2, 0))),
        (1_000, cg.ConsumerGroupTargetAssignmentMetadata(G, cg.TargetAssignmentMetadataValue(2, 0))),
        # a must give up 1 first; b waits for it
        (
            1_010,
            cg.ConsumerGroupCurrentMemberAssignment(
                G,
                "a",
                cg.CurrentAssignmentValue(
                    1, 1, cg.MemberAssignmentState.UNREVOKED_PARTITIONS, {T: {0: 1}}, {T: {1: 1}}
                ),
            ),
        ),
        (
            1_020,
            cg.ConsumerGroupCurrentMemberAssignment(
                G,
                "b",
                cg.CurrentAssignmentValue(2, 0, cg.MemberAssignmentState.UNRELEASED_PARTITIONS, {}, {}),
            ),
        ),
        (
            1_500,
            cg.ConsumerGroupCurrentMemberAssignment(
                G, "a", cg.CurrentAssignmentValue(2, 1, stable, {T: {0: 1}}, {})
            ),
        ),
        (
            1_600,
            cg.ConsumerGroupCurrentMemberAssignment(
                G, "b", cg.CurrentAssignmentValue(2, 0, stable, {T: {1: 2}}, {})
            ),
        ),
        (3_000, cg.ConsumerGroupCurrentMemberAssignment(G, "a", None)),
        (3_000, cg.ConsumerGroupMemberMetadata(G, "a", None)),
    ]
    for offset, (t, record) in enumerate(steps):
        _cg(record, 50_000 + t, history, offset)
    doc = history.document()
    assert doc["metrics"]["group_protocol"] == "consumer" and doc["metrics"]["rebalances"] == 2
    # a asks for uniform, b for nothing: the most asked-for server assignor
    assert doc["metrics"]["final_protocol"] == "uniform"
    # what Kafka's describe shows of each member
    assert [(m["member_id"], m["client_id"], m["client_host"], m["left_ms"]) for m in doc["members"]] == [
        ("a", "c", "/h", 3_000),
        ("b", "client-b", "/10.0.0.2", None),
    ]
    # orders-1 released by a at 1.5 s and acknowledged by b at 1.6 s: 100 ms with no owner
    assert doc["metrics"]["unowned_partition_ms"] == 100
    assert doc["recording"]["rebalance_starts"] == [0, 1_000]
    assert _owners(doc, 500) == {"orders-0": "a", "orders-1": "a"}
    assert _owners(doc, 1_200) == {"orders-0": "a", "orders-1": "a"}  # revoking, still a's
    assert _owners(doc, 1_550) == {"orders-0": "a"}  # released, not yet b's: unowned
    assert _owners(doc, 2_000) == {"orders-0": "a", "orders-1": "b"}
    last = doc["ownership"][-1]  # a's leave ends its ownership of 0 at 3 s
    assert (last["t_ms"], last["member"], last["revoked"]) == (3_000, "a", ["orders-0"])
    rec = doc["recording"]
    assert [[rec["partitions"][p], s, a, b] for p, s, a, b in rec["handover_intervals"]] == [
        ["orders-1", "revoking", 1_010, 1_500]
    ]
    # as Kafka's ConsumerGroup derives it: epoch ahead of the target: Assigning; members short of the
    # target epoch or not STABLE: Reconciling (a's leave without an epoch bump leaves b Stable)
    states = [(e["t_ms"], e["state"]) for e in doc["events"] if e["kind"] == "group_state"]
    assert states == [
        (0, "Assigning"),
        (0, "Reconciling"),
        (10, "Stable"),
        (1_000, "Assigning"),
        (1_000, "Reconciling"),
        (1_600, "Stable"),
    ]


def test_the_recording_reads_as_kgroup_reports_recording(tmp_path: Path) -> None:
    import json

    from kgroup.report.recording import load_recording

    history = GroupHistory(G)
    history.add(OffsetsEntry(0, 1_000, _key(G), _generation(1, _member("a", 0, 1), joined_ms=900)))
    history.add(
        OffsetsEntry(1, 3_000, _key(G), _generation(2, _member("a", 0), _member("b", 1), joined_ms=2_900))
    )
    path = tmp_path / "result.json"
    path.write_text(json.dumps(history.document()))
    recording = load_recording(path)
    assert recording.result.partitions == ["orders-0", "orders-1"]
    # range is eager: a held nothing from the join phase's end (1.9 s) to the assignment (2 s)
    assert sorted(recording.result.intervals) == [
        (0, "a", 0, 1_900),
        (0, "a", 2_000, 2_000),
        (1, "a", 0, 1_900),
        (1, "b", 2_000, 2_000),
    ]
