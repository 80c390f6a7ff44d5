"""Differential: a Fetch with no partition to read, a session's close, an incremental fetch of a session
the broker does not have, and the order of an answer mixing partitions read with partitions answered
aside, and what a parked fetch answers for partitions answered aside once they exist — sent raw to
kgroup and to Apache Kafka 4.4.0 (the ``target`` fixture), the answers compared.

A fetch that parked would not be answered within the connection's 15 s (``max_wait`` is 60 s here):
the test would fail on the read, so nothing here measures a time. (kgroup hands out no fetch
sessions: the session id of a full fetch's answer, which Kafka may fill, is not compared.)
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, fetch_v12, metadata
from tests.log.batches import kio_batch

pytestmark = pytest.mark.apache_kafka

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
OFFSET_OUT_OF_RANGE = 1
FETCH_SESSION_ID_NOT_FOUND = 70
LONG_WAIT_MS = 60_000


def _fetch(
    raw: Raw,
    entries: list[tuple[str, int]],
    *,
    session_id: int = 0,
    session_epoch: int = -1,
    wait_ms: int = LONG_WAIT_MS,
) -> Any:
    """Fetch v12 of (topic, partition) entries from offset 0, one topic entry each."""
    return raw.call(
        "Fetch",
        12,
        fetch_v12(entries, session_id=session_id, session_epoch=session_epoch, wait_ms=wait_ms),
    )


def _layout(answer: Any, rename: dict[str, str]) -> list[tuple[str, list[tuple[int, int]]]]:
    return [
        (
            rename.get(t["topic"], t["topic"]),
            [(p["partition_index"], p["error_code"]) for p in t["partitions"]],
        )
        for t in answer["responses"]
    ]


def test_nothing_to_read_session_epochs_and_the_answers_order(target: Target, names: str) -> None:
    t, u, nope = f"{names}-t", f"{names}-u", f"{names}-nope"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, t, 2)
        create_topic(raw, u, 1)
        produced = raw.call(
            "Produce",
            9,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 10_000,
                "topic_data": [{"name": u, "partition_data": [{"index": 0, "records": kio_batch([b"x"])}]}],
            },
        )
        assert produced["responses"][0]["partition_responses"][0]["error_code"] == NONE, produced
        empty = {
            (session_id, epoch): _fetch(raw, [], session_id=session_id, session_epoch=epoch)
            for session_id in (0, 123456)
            for epoch in (-1, 0, 1)
        }
        mixed = _fetch(raw, [(t, 0), (t, 9), (u, 0), (nope, 0), (t, 1), (t, 2)])
    seen = {key: (a["error_code"], a["responses"]) for key, a in empty.items()}
    assert seen == {
        (0, -1): (NONE, []),
        (0, 0): (NONE, []),
        (0, 1): (FETCH_SESSION_ID_NOT_FOUND, []),
        (123456, -1): (NONE, []),
        (123456, 0): (NONE, []),
        (123456, 1): (FETCH_SESSION_ID_NOT_FOUND, []),
    }
    assert all(empty[key]["session_id"] == 0 for key in empty if key[1] != 0)
    # read first (t-0, u-0, t-1 in the request's order), then answered aside (t-9, nope-0, t-2)
    assert _layout(mixed, {t: "t", u: "u", nope: "nope"}) == [
        ("t", [(0, NONE)]),
        ("u", [(0, NONE)]),
        ("t", [(1, NONE), (9, UNKNOWN_TOPIC_OR_PARTITION)]),
        ("nope", [(0, UNKNOWN_TOPIC_OR_PARTITION)]),
        ("t", [(2, UNKNOWN_TOPIC_OR_PARTITION)]),
    ]


def _produce_one(raw: Raw, topic: str) -> None:
    produced = raw.call(
        "Produce",
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": kio_batch([b"x"])}]}],
        },
    )
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == NONE, produced


def test_a_parked_fetch_keeps_its_answers_aside_for_what_was_created_meanwhile(
    target: Target, names: str
) -> None:
    """A fetch parks on an empty partition beside a topic that does not exist; the topic is created
    while it waits, then a record completes the fetch. Kafka's ``DelayedFetch`` reads again only the
    partitions it read the first time: the new topic keeps its first answer (unknown), though it
    exists and serves by then."""
    t, late = f"{names}-t", f"{names}-late"
    with Raw(target.bootstrap_servers) as raw, Raw(target.bootstrap_servers) as admin:
        create_topic(admin, t, 1)
        raw.send("Fetch", 12, fetch_v12([(t, 0), (late, 0)], wait_ms=LONG_WAIT_MS))
        create_topic(admin, late, 1)
        # it serves now: a fetch of it alone is answered (empty, no error)
        alone = _fetch(admin, [(late, 0)], wait_ms=0)
        assert _layout(alone, {late: "late"}) == [("late", [(0, NONE)])]
        _produce_one(admin, t)  # the parked fetch's min_bytes are there: it completes
        answer = raw.receive()
    assert answer["error_code"] == NONE
    assert _layout(answer, {t: "t", late: "late"}) == [
        ("t", [(0, NONE)]),
        ("late", [(0, UNKNOWN_TOPIC_OR_PARTITION)]),
    ]
    assert len(answer["responses"][0]["partitions"][0]["records"]) > 0  # the record that completed it


def _part(partition: int, offset: int, max_bytes: int = 1 << 20) -> dict[str, Any]:
    return {
        "partition": partition,
        "current_leader_epoch": -1,
        "fetch_offset": offset,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": max_bytes,
    }


def _base_offsets(records: bytes) -> list[int]:
    """The base offsets of the record batches a partition's answer holds."""
    offsets, at = [], 0
    while at + 12 <= len(records):
        offsets.append(int.from_bytes(records[at : at + 8], "big"))
        at += 12 + int.from_bytes(records[at + 8 : at + 12], "big")
    return offsets


def _read(answer: Any, key: str) -> list[tuple[str, list[tuple[int, int, list[int]]]]]:
    return [
        (
            str(t[key]),
            [
                (p["partition_index"], p["error_code"], _base_offsets(bytes(p["records"] or b"")))
                for p in t["partitions"]
            ],
        )
        for t in answer["responses"]
    ]


def test_a_partition_named_twice_is_read_once_in_its_first_place_from_its_last_offset(
    target: Target, names: str
) -> None:
    """Kafka's ``FetchRequest.fetchData`` gathers a fetch's partitions into a ``LinkedHashMap``: a
    partition named twice — in one topic entry, or in two — is answered once, in its first place,
    read from the offset (and with the limit) of its last entry; by name (v12) and by topic id (v13)."""
    t, u, nope = f"{names}-t", f"{names}-u", f"{names}-nope"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, t, 2)
        create_topic(raw, u, 1)
        for _ in range(3):  # three batches: base offsets 0, 1, 2
            _produce_one(raw, u)
        by_name = raw.call(
            "Fetch",
            12,
            fetch_v12([], wait_ms=0)
            | {
                "topics": [
                    {"topic": u, "partitions": [_part(0, 0)]},
                    {"topic": t, "partitions": [_part(1, 0), _part(0, 0), _part(1, 5)]},
                    {"topic": nope, "partitions": [_part(0, 0)]},
                    {"topic": u, "partitions": [_part(0, 2)]},
                    {"topic": nope, "partitions": [_part(0, 0), _part(1, 0)]},
                    {"topic": u, "partitions": [_part(0, 1, max_bytes=1)]},
                ]
            },
        )
        topics = {m["name"]: str(m["topic_id"]) for m in metadata(raw, [t, u], auto_create=False)["topics"]}
        by_id = raw.call(
            "Fetch",
            13,
            fetch_v12([], wait_ms=0)
            | {
                "topics": [
                    {"topic_id": uuid.UUID(topics[u]), "partitions": [_part(0, 2)]},
                    {"topic_id": uuid.UUID(topics[t]), "partitions": [_part(0, 0)]},
                    {"topic_id": uuid.UUID(topics[u]), "partitions": [_part(0, 0), _part(0, 1)]},
                ]
            },
        )
    rename = {t: "t", u: "u", nope: "nope", topics[t]: "t", topics[u]: "u"}
    # u-0 in its first place, read from offset 1 with a 1-byte limit (its last entry: KIP-74 still
    # gives the first batch whole); t-1 once, from 5 (past the end: OFFSET_OUT_OF_RANGE, an error
    # read from the log, so among those read); nope-0 once, then nope-1, answered aside
    assert [(rename[name], parts) for name, parts in _read(by_name, "topic")] == [
        ("u", [(0, NONE, [1])]),
        ("t", [(1, OFFSET_OUT_OF_RANGE, []), (0, NONE, [])]),
        ("nope", [(0, UNKNOWN_TOPIC_OR_PARTITION, []), (1, UNKNOWN_TOPIC_OR_PARTITION, [])]),
    ]
    assert [(rename[name], parts) for name, parts in _read(by_id, "topic_id")] == [
        ("u", [(0, NONE, [1, 2])]),
        ("t", [(0, NONE, [])]),
    ]
