"""The group side of transactions on ``kgroup serve`` and on Apache Kafka 4.4.0 (the ``target`` fixture):
TxnOffsetCommit's answers (the transaction's checks, a group that does not exist, unknown topics and
partitions, KIP-447's generation and member checks on a classic group, a fenced producer), OffsetFetch's
``require_stable`` while a transaction holds offsets, the offsets committed by the transaction's commit
and dropped by its abort — raw requests answered alike.

What differs by nature and is not compared: producer ids, member ids (compared by shape), node ids.
"""

from __future__ import annotations

import struct
import time
import uuid
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_consumer_protocol import _heartbeat
from tests.apache_kafka.test_diff_transactions import _end, _find_transaction_coordinator, _init, _until
from tests.apache_kafka.wire import Raw, fetch_v12, find_coordinator, metadata, stable_member

from kgroup.group.discovery import coordinator_partition

pytestmark = pytest.mark.transactions

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
GROUP_ID_NOT_FOUND = 69
FENCED_INSTANCE_ID = 82
UNSTABLE_OFFSET_COMMIT = 88
PRODUCER_FENCED = 90
STALE_MEMBER_EPOCH = 113
TRANSACTION_ABORTABLE = 120


def _txn_commit(
    raw: Raw,
    version: int,
    txn: str,
    pid: int,
    epoch: int,
    group: str,
    offsets: dict[tuple[str, int], int],
    *,
    generation: int = -1,
    member: str = "",
    instance: str | None = None,
    topic_ids: dict[str, Any] | None = None,
) -> dict[tuple[str, int], int]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "committed_metadata": f"m{offset}",
            }
        )
    fields: dict[str, Any] = {
        "transactional_id": txn,
        "group_id": group,
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": generation,
        "member_id": member,
        "group_instance_id": instance,
        "topics": [
            {"topic_id": topic_ids[name]} | {"partitions": parts}
            if topic_ids is not None
            else {"name": name, "partitions": parts}
            for name, parts in topics.items()
        ],
    }
    answer = _until(
        lambda: raw.call("TxnOffsetCommit", version, fields),
        lambda a: a["topics"][0]["partitions"][0]["error_code"],
    )
    by_id = {str(v): k for k, v in (topic_ids or {}).items()}
    return {
        (by_id[t["topic_id"]] if topic_ids is not None else t["name"], p["partition_index"]): p["error_code"]
        for t in answer["topics"]
        for p in t["partitions"]
    }


def _add_offsets(raw: Raw, txn: str, pid: int, epoch: int, group: str) -> int:
    fields = {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "group_id": group}
    answer = _until(lambda: raw.call("AddOffsetsToTxn", 3, fields), lambda a: a["error_code"])
    return int(answer["error_code"])


def _fetch(
    raw: Raw, group: str, partitions: dict[str, list[int]] | None, *, stable: bool, version: int = 9
) -> dict[tuple[str, int], tuple[int, str | None, int]]:
    topics = (
        None if partitions is None else [{"name": t, "partition_indexes": p} for t, p in partitions.items()]
    )
    if version >= 8:
        answer = raw.call(
            "OffsetFetch",
            version,
            {
                "groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": topics}],
                "require_stable": stable,
            },
        )
        (entry,) = answer["groups"]
        assert entry["error_code"] == NONE, entry
        found = entry["topics"]
    else:
        answer = raw.call(
            "OffsetFetch", version, {"group_id": group, "topics": topics, "require_stable": stable}
        )
        assert answer["error_code"] == NONE, answer
        found = answer["topics"]
    return {
        (t["name"], p["partition_index"]): (p["committed_offset"], p["metadata"], p["error_code"])
        for t in found
        for p in t["partitions"]
    }


def _topic_ids(raw: Raw, topic: str) -> dict[str, Any]:
    (entry,) = metadata(raw, [topic], auto_create=False)["topics"]
    return {topic: uuid.UUID(entry["topic_id"])}


def test_txn_offset_commit_errors_answer_as_kafka(target: Target, names: str) -> None:
    """A partition not in the transaction (INVALID_TXN_STATE, TRANSACTION_ABORTABLE from v4), a group
    that does not exist (ILLEGAL_GENERATION, GROUP_ID_NOT_FOUND from v6), unknown topics and partitions
    beside a good one (in Kafka's order: the broker's errors first), a transactional id the coordinator
    does not know, a fenced or older producer epoch."""
    topic, txn, group = f"{names}-in", f"{names}-tx", f"{names}-g"
    target.create_topic(topic, 2)
    find_coordinator(target.bootstrap_servers, group)
    with Raw(target.bootstrap_servers) as raw:
        _find_transaction_coordinator(raw, txn)
        pid = _init(raw, txn)["producer_id"]
        one = {(topic, 0): 5}
        # no AddOffsetsToTxn yet: the offsets partition is not in the transaction
        assert _txn_commit(raw, 3, txn, pid, 0, group, one) == {(topic, 0): INVALID_TXN_STATE}
        assert _txn_commit(raw, 4, txn, pid, 0, group, one) == {(topic, 0): TRANSACTION_ABORTABLE}
        assert _add_offsets(raw, txn, pid, 0, group) == NONE
        # a group that does not exist, with a generation
        assert _txn_commit(raw, 3, txn, pid, 0, group, one, generation=1, member="m") == {
            (topic, 0): ILLEGAL_GENERATION
        }
        by_id = _txn_commit(
            raw, 6, txn, pid, 0, group, one, generation=1, member="m", topic_ids=_topic_ids(raw, topic)
        )
        assert by_id == {(topic, 0): GROUP_ID_NOT_FOUND}
        mixed = {(topic, 1): 7, (topic, 9): 1, (f"{names}-missing", 0): 1}
        answered = _txn_commit(raw, 3, txn, pid, 0, group, mixed)
        assert list(answered.items()) == [
            ((topic, 9), UNKNOWN_TOPIC_OR_PARTITION),
            ((topic, 1), NONE),
            ((f"{names}-missing", 0), UNKNOWN_TOPIC_OR_PARTITION),
        ]
        # a transactional id the coordinator does not know
        unknown = f"{txn}-unknown"
        for version in (3, 5):
            assert _txn_commit(raw, version, unknown, 4242, 0, group, one) == {
                (topic, 0): INVALID_PRODUCER_ID_MAPPING
            }
        assert _txn_commit(raw, 3, txn, pid, 1, group, one) == {(topic, 0): INVALID_PRODUCER_EPOCH}
        assert _txn_commit(raw, 3, txn, pid, -5, group, one) == {(topic, 0): INVALID_PRODUCER_EPOCH}
        assert _end(raw, txn, pid, 0, committed=False) == NONE


def test_classic_member_checks_answer_as_kafka(target: Target, names: str) -> None:
    """KIP-447 on a classic group: the member's generation, member id and instance id (v3+); a
    commit with no member is accepted although the group has members."""
    topic, txn, group = f"{names}-in", f"{names}-tx", f"{names}-g"
    target.create_topic(topic, 2)
    find_coordinator(target.bootstrap_servers, group)
    with Raw(target.bootstrap_servers) as raw:
        member, generation = stable_member(raw, group, instance_id="static-1")
        _find_transaction_coordinator(raw, txn)
        pid = _init(raw, txn)["producer_id"]
        assert _add_offsets(raw, txn, pid, 0, group) == NONE
        one = {(topic, 0): 5}
        for version in (3, 5):

            def code(**who: Any) -> int:
                return _txn_commit(raw, version, txn, pid, 0, group, one, **who)[(topic, 0)]  # noqa: B023

            assert code(generation=generation, member=member, instance="static-1") == NONE
            assert code(generation=generation + 1, member=member, instance="static-1") == ILLEGAL_GENERATION
            assert code(generation=generation, member="nobody") == UNKNOWN_MEMBER_ID
            assert code(generation=generation, member="nobody", instance="static-1") == FENCED_INSTANCE_ID
            assert code() == NONE
        assert _end(raw, txn, pid, 0, committed=False) == NONE


def test_consumer_group_member_epoch_answers_as_kafka(target: Target, names: str) -> None:
    """A KIP-848 consumer group: the member's epoch as ``ConsumerGroup.validateOffsetCommit`` checks it
    (an epoch newer than the member's is STALE_MEMBER_EPOCH, answered ILLEGAL_GENERATION before v6),
    an unknown member, and a commit with no member at all; its pending offset is unstable until the
    abort drops it."""
    topic, txn, group = f"{names}-in", f"{names}-tx", f"{names}-g"
    target.create_topic(topic, 2)
    find_coordinator(target.bootstrap_servers, group)
    member = str(uuid.uuid4())
    with Raw(target.bootstrap_servers) as raw:
        joined = _heartbeat(raw, group_id=group, member_id=member, subscribed_topic_names=[topic])
        assert joined["error_code"] == NONE, joined
        epoch = joined["member_epoch"]
        _find_transaction_coordinator(raw, txn)
        pid = _init(raw, txn)["producer_id"]
        assert _add_offsets(raw, txn, pid, 0, group) == NONE
        one = {(topic, 0): 5}
        ids = _topic_ids(raw, topic)
        seen = {
            "newer epoch v5": _txn_commit(
                raw, 5, txn, pid, 0, group, one, generation=epoch + 1, member=member
            ),
            "newer epoch v6": _txn_commit(
                raw, 6, txn, pid, 0, group, one, generation=epoch + 1, member=member, topic_ids=ids
            ),
            "unknown member": _txn_commit(raw, 5, txn, pid, 0, group, one, generation=epoch, member="x"),
            "its epoch": _txn_commit(raw, 5, txn, pid, 0, group, one, generation=epoch, member=member),
            "no member": _txn_commit(raw, 5, txn, pid, 0, group, one),
        }
        assert {what: answer[(topic, 0)] for what, answer in seen.items()} == {
            "newer epoch v5": ILLEGAL_GENERATION,
            "newer epoch v6": STALE_MEMBER_EPOCH,
            "unknown member": UNKNOWN_MEMBER_ID,
            "its epoch": NONE,
            "no member": NONE,
        }
        # the consumer group's pending offset is unstable too, and an abort drops it
        assert _fetch(raw, group, {topic: [0]}, stable=True) == {(topic, 0): (-1, "", UNSTABLE_OFFSET_COMMIT)}
        assert _end(raw, txn, pid, 0, committed=False) == NONE
        assert _until_stable(raw, group, {topic: [0]}, 9) == {(topic, 0): (-1, "", NONE)}


@pytest.mark.parametrize("version", [7, 9])
def test_pending_offsets_are_unstable_then_committed_or_dropped(
    target: Target, names: str, version: int
) -> None:
    """While a transaction holds offsets, OffsetFetch with ``require_stable`` answers their partitions
    UNSTABLE_OFFSET_COMMIT and without it the offsets committed before; the commit's marker makes them
    the committed offsets; an abort's drops them."""
    topic, txn, group = f"{names}-in", f"{names}-tx", f"{names}-g"
    target.create_topic(topic, 2)
    find_coordinator(target.bootstrap_servers, group)
    with Raw(target.bootstrap_servers) as raw:
        _find_transaction_coordinator(raw, txn)
        pid = _init(raw, txn)["producer_id"]
        wanted = {topic: [0, 1]}
        assert _add_offsets(raw, txn, pid, 0, group) == NONE
        assert _txn_commit(raw, 3, txn, pid, 0, group, {(topic, 0): 5}) == {(topic, 0): NONE}
        assert _fetch(raw, group, wanted, stable=True, version=version) == {
            (topic, 0): (-1, "", UNSTABLE_OFFSET_COMMIT),
            (topic, 1): (-1, "", NONE),
        }
        assert _fetch(raw, group, wanted, stable=False, version=version) == {
            (topic, 0): (-1, "", NONE),
            (topic, 1): (-1, "", NONE),
        }
        assert _end(raw, txn, pid, 0, committed=True) == NONE
        committed = {(topic, 0): (5, "m5", NONE), (topic, 1): (-1, "", NONE)}
        # Kafka writes the marker after answering EndTxn: asked again until the partition is stable
        assert _until_stable(raw, group, wanted, version) == committed
        assert _fetch(raw, group, None, stable=True, version=version) == {(topic, 0): (5, "m5", NONE)}

        # the next transaction (transactions v1: same epoch) is aborted: its offsets are dropped
        assert _add_offsets(raw, txn, pid, 0, group) == NONE
        assert _txn_commit(raw, 3, txn, pid, 0, group, {(topic, 0): 9, (topic, 1): 11}) == {
            (topic, 0): NONE,
            (topic, 1): NONE,
        }
        assert _fetch(raw, group, None, stable=True, version=version) == {
            (topic, 0): (-1, "", UNSTABLE_OFFSET_COMMIT)
        }
        assert _end(raw, txn, pid, 0, committed=False) == NONE
        assert _until_stable(raw, group, wanted, version) == committed


def _until_stable(
    raw: Raw, group: str, partitions: dict[str, list[int]], version: int, timeout_s: float = 30.0
) -> dict[tuple[str, int], tuple[int, str | None, int]]:
    deadline = time.monotonic() + timeout_s
    while True:
        fetched = _fetch(raw, group, partitions, stable=True, version=version)
        if (
            all(code != UNSTABLE_OFFSET_COMMIT for _, _, code in fetched.values())
            or time.monotonic() > deadline
        ):
            return fetched
        time.sleep(0.1)


def _fetch_bytes(raw: Raw, topic: str, partition: int) -> bytes:
    """The partition's whole batches from its start to its high watermark (Fetch v12, read_uncommitted,
    1 MiB a fetch: the shared Apache Kafka's ``__consumer_offsets`` partitions hold other tests'
    commits too, sometimes more than one fetch gives)."""
    whole = bytearray()
    offset = 0
    for _ in range(1_000):  # (bounded: 1 GiB)
        request = fetch_v12([(topic, partition)], wait_ms=0)
        request["topics"][0]["partitions"][0]["fetch_offset"] = offset
        (entry,) = raw.call("Fetch", 12, request)["responses"][0]["partitions"]
        assert entry["error_code"] == NONE, entry
        data = bytes(entry["records"] or b"")
        at = 0
        while at + 61 <= len(data):
            base, length = struct.unpack_from(">qi", data, at)
            if at + 12 + length > len(data):
                break  # a batch cut by the fetch's limit: read again from its start
            (delta,) = struct.unpack_from(">i", data, at + 23)
            offset = base + delta + 1
            at += 12 + length
        whole += data[:at]
        if at == 0 or offset >= entry["high_watermark"]:
            return bytes(whole)
    raise AssertionError(f"{topic}-{partition}: more than 1,000 fetches")


def _offset_commit(key: bytes, value: bytes | None) -> tuple[Any, ...]:
    """(group, topic, partition, offset) of an offset commit record: ``OffsetCommitKey`` v1 and the
    offset, the first field of every ``OffsetCommitValue`` version (Kafka 4.4.0 writes v4, kgroup v3)."""
    version, group_length = struct.unpack_from(">hh", key)
    assert version == 1, key
    group = key[4 : 4 + group_length].decode()
    (topic_length,) = struct.unpack_from(">h", key, 4 + group_length)
    at = 6 + group_length
    topic = key[at : at + topic_length].decode()
    (partition,) = struct.unpack_from(">i", key, at + topic_length)
    assert value is not None
    (offset,) = struct.unpack_from(">q", value, 2)
    return (group, topic, partition, offset)


def _offsets_batches(
    raw: Raw, partition: int, producer_id: int, timeout_s: float = 30.0
) -> list[dict[str, Any]]:
    """Every batch of producer ``producer_id`` in ``__consumer_offsets``-``partition`` (read_uncommitted;
    the shared Apache Kafka's partition also holds other tests' groups), once the last is a control
    batch: its transactional and control flags, producer, base sequence and records (an offset
    commit's key as (group, topic, partition) and value's offset; a marker's type)."""
    from kgroup.broker.txn_host import read_batch_entries
    from kgroup.log.batch import parse_header
    from kgroup.log.txn_index import control_type

    deadline = time.monotonic() + timeout_s
    while True:
        data = _fetch_bytes(raw, "__consumer_offsets", partition)
        batches = []
        at = 0
        while at + 61 <= len(data):
            header = parse_header(data, at)
            one = data[at : at + header.size]
            at += header.size
            if header.producer_id != producer_id:
                continue
            entry: dict[str, Any] = {
                "transactional": header.is_transactional,
                "control": header.is_control,
                "producer": (header.producer_id, header.producer_epoch),
                "base_sequence": header.base_sequence,
            }
            if header.is_control:
                entry["records"] = [control_type(one)]
            else:
                entry["records"] = [_offset_commit(key, value) for _, key, value in read_batch_entries(one)]
            batches.append(entry)
        if (batches and batches[-1]["control"]) or time.monotonic() > deadline:
            return batches
        time.sleep(0.1)


def test_the_offsets_topic_holds_the_transactional_batches_and_markers(target: Target, names: str) -> None:
    """What ``__consumer_offsets`` holds after a committed and an aborted transactional offset commit:
    each offset commit record in its producer's transactional batch (at sequence 0), each followed by the
    transaction's commit or abort marker — as Kafka's coordinator and marker writer write them."""
    topic, txn, group = f"{names}-in", f"{names}-tx", f"{names}-g"
    target.create_topic(topic, 2)
    find_coordinator(target.bootstrap_servers, group)
    with Raw(target.bootstrap_servers) as raw:
        _find_transaction_coordinator(raw, txn)
        pid = _init(raw, txn)["producer_id"]
        for offset, committed in ((5, True), (9, False)):
            assert _add_offsets(raw, txn, pid, 0, group) == NONE
            assert _txn_commit(raw, 3, txn, pid, 0, group, {(topic, 0): offset}) == {(topic, 0): NONE}
            assert _end(raw, txn, pid, 0, committed=committed) == NONE
            assert _until_stable(raw, group, {topic: [0]}, 9)[(topic, 0)] == (5, "m5", NONE)
        batches = _offsets_batches(raw, coordinator_partition(group, 50), pid)
    # Kafka's coordinator writes each transactional batch at sequence 0 (its sequence is not kept)
    offset_batch = {"transactional": True, "control": False, "producer": (pid, 0), "base_sequence": 0}
    marker = {"transactional": True, "control": True, "producer": (pid, 0), "base_sequence": -1}
    assert batches == [
        offset_batch | {"records": [(group, topic, 0, 5)]},
        marker | {"records": [1]},  # COMMIT
        offset_batch | {"records": [(group, topic, 0, 9)]},
        marker | {"records": [0]},  # ABORT
    ]


def test_deleting_a_group_with_pending_offsets_answers_as_kafka(target: Target, names: str) -> None:
    """DeleteGroups of a group (without members) whose offsets a transaction holds: deleted, and the
    transaction's commit then materialises nothing (Kafka's tombstones removed the pending offsets)."""
    topic, txn, group = f"{names}-in", f"{names}-tx", f"{names}-g"
    target.create_topic(topic, 2)
    find_coordinator(target.bootstrap_servers, group)
    with Raw(target.bootstrap_servers) as raw:
        _find_transaction_coordinator(raw, txn)
        pid = _init(raw, txn)["producer_id"]
        assert _add_offsets(raw, txn, pid, 0, group) == NONE
        assert _txn_commit(raw, 3, txn, pid, 0, group, {(topic, 0): 5}) == {(topic, 0): NONE}
        deleted = raw.call("DeleteGroups", 2, {"groups_names": [group]})
        assert [(r["group_id"], r["error_code"]) for r in deleted["results"]] == [(group, NONE)]
        assert _fetch(raw, group, {topic: [0]}, stable=True) == {(topic, 0): (-1, "", NONE)}
        assert _end(raw, txn, pid, 0, committed=True) == NONE
        _offsets_batches(raw, coordinator_partition(group, 50), pid)  # until the marker is written
        assert _fetch(raw, group, {topic: [0]}, stable=True) == {(topic, 0): (-1, "", NONE)}


def test_offsets_past_the_coordinators_batch_answer_as_kafka(target: Target, names: str) -> None:
    """A TxnOffsetCommit whose offset records make a batch larger than the offsets topic's
    ``max.message.bytes`` is UNKNOWN_SERVER_ERROR for every partition (the runtime refuses the write
    before any state changes); one offset fewer is written."""
    from tests.apache_kafka.test_diff_hostile import UNKNOWN_SERVER_ERROR, _fitting

    topic, txn, group = f"{names}-in", f"{names}-tx", f"{names}-g"
    target.create_topic(topic, 1)
    find_coordinator(target.bootstrap_servers, group)
    count = _fitting(group, topic)
    with Raw(target.bootstrap_servers, timeout_s=120) as raw:
        _find_transaction_coordinator(raw, txn)
        pid = _init(raw, txn)["producer_id"]
        assert _add_offsets(raw, txn, pid, 0, group) == NONE
        for offsets, expected in ((count + 1, {UNKNOWN_SERVER_ERROR}), (count, {NONE})):
            fields = {
                "transactional_id": txn,
                "group_id": group,
                "producer_id": pid,
                "producer_epoch": 0,
                "generation_id": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": n,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                            for n in range(offsets)
                        ],
                    }
                ],
            }
            answer = raw.call("TxnOffsetCommit", 3, fields)
            assert {p["error_code"] for t in answer["topics"] for p in t["partitions"]} == expected
        assert _end(raw, txn, pid, 0, committed=True) == NONE
        assert _until_stable(raw, group, {topic: [0]}, 9) == {(topic, 0): (count - 1, "", NONE)}
