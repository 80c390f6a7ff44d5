"""The differential suite, hostile requests (issue 17): the same requests sent to kgroup's broker and
to Apache Kafka 4.4.0 (the ``target`` fixture) get the same answers.

* Produce: random payloads flagged gzip/snappy/lz4/zstd, an LZ4 frame with dependent blocks, codec
  ids 5-7 and an empty gzip payload are UNKNOWN_SERVER_ERROR; record counts and record framing that
  do not add up are INVALID_RECORD; base timestamp 2^63-1 with a delta of 2^62 wraps around (Java's
  long) and is accepted; 2^63-1 itself and -2^63 are INVALID_TIMESTAMP with their record listed.
  Kafka 4.4.0 sends no error message for these; kgroup sends the reason (not compared).
* OffsetCommit: a group id of 100,000 bytes closes the connection (Kafka's parser refuses strings
  over 0x7fff bytes); offsets whose records exceed the coordinator's batch (max.message.bytes of the
  offsets topic) are UNKNOWN_SERVER_ERROR, one offset fewer is committed — the threshold is computed
  for this run's names by ``offset_commit_batch_bytes``, so the formula itself is checked against Kafka.
* JoinGroup: a client id or instance id that makes the member id longer than 0x7fff bytes is
  UNKNOWN_SERVER_ERROR with an empty member id.
"""

from __future__ import annotations

import time
from typing import Any

from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, find_coordinator, plain
from tests.log.hostile_batches import HOSTILE

from kgroup.group.records.serde import offset_commit_batch_bytes
from kgroup.wire.codec import build, decode_response, encode_request, request_class, response_class

UNKNOWN_SERVER_ERROR = -1
INVALID_TIMESTAMP = 32
MAX_MESSAGE_BYTES = 1024 * 1024 + 12  # the offsets topic's max.message.bytes (Kafka's default)


def _produce(raw: Raw, topic: str, records: bytes) -> dict[str, Any]:
    answer = raw.call(
        "Produce",
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
        },
    )
    (entry,) = answer["responses"][0]["partition_responses"]
    return dict(entry)


def test_hostile_batches(target: Target, names: str) -> None:
    topic = f"{names}-t"
    answers: dict[str, int] = {}
    listed: dict[str, list[int]] = {}
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        for case, (records, _) in HOSTILE.items():
            entry = _produce(raw, topic, records)
            answers[case] = entry["error_code"]
            if entry["error_code"] == INVALID_TIMESTAMP:
                listed[case] = [e["batch_index"] for e in entry["record_errors"]]
    assert answers == {case: code for case, (_, code) in HOSTILE.items()}
    assert listed == {"timestamp 2^63-1": [0], "timestamp -2^63": [0]}


def _commit_frame(group_id: str, topic: str, offsets: int) -> bytes:
    partitions = [
        {"partition_index": 0, "committed_offset": n, "committed_leader_epoch": -1, "committed_metadata": ""}
        for n in range(offsets)
    ]
    request = build(
        request_class(8, 8),
        {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": topic, "partitions": partitions}],
        },
    )
    return encode_request(request, 1)


def _commit_codes(bootstrap: str, group_id: str, topic: str, offsets: int) -> set[int]:
    with Raw(bootstrap, timeout_s=120) as raw:
        raw.client.send_frame(_commit_frame(group_id, topic, offsets))
        _, answer = decode_response(raw.client.read_frame(), response_class(8, 8))
    return {int(p["error_code"]) for t in plain(answer)["topics"] for p in t["partitions"]}


def _coordinator(bootstrap: str, group_id: str) -> str:
    """The group's coordinator, once it answers for the group (Apache Kafka's says NOT_COORDINATOR or
    COORDINATOR_LOAD_IN_PROGRESS for a moment after creating its offsets topic): bounded."""
    found = find_coordinator(bootstrap, group_id)
    deadline = time.monotonic() + 30
    with Raw(found) as raw:
        while True:
            answer = raw.call("OffsetFetch", 8, {"groups": [{"group_id": group_id, "topics": None}]})
            if answer["groups"][0]["error_code"] not in (14, 15, 16):
                return found
            assert time.monotonic() < deadline, f"the coordinator of {group_id!r} never got ready"
            time.sleep(0.2)


def _fitting(group_id: str, topic: str) -> int:
    """The most offsets of ``topic`` a commit of ``group_id`` may write in one batch."""
    low, high = 1, 100_000
    while high - low > 1:
        middle = (low + high) // 2
        if offset_commit_batch_bytes(group_id, [(topic, "")] * middle) <= MAX_MESSAGE_BYTES:
            low = middle
        else:
            high = middle
    return low


def test_hostile_offset_commits(target: Target, names: str) -> None:
    topic, fits, too_many = f"{names}-t", f"{names}-a", f"{names}-b"  # two group ids of one length
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    count = _fitting(fits, topic)
    assert count == _fitting(too_many, topic)
    assert _commit_codes(_coordinator(target.bootstrap_servers, fits), fits, topic, count) == {0}
    coordinator = _coordinator(target.bootstrap_servers, too_many)
    assert _commit_codes(coordinator, too_many, topic, count + 1) == {UNKNOWN_SERVER_ERROR}
    with Raw(target.bootstrap_servers, timeout_s=30) as raw:
        raw.client.send_frame(_commit_frame("g" * 100_000, topic, 1))
        assert raw.client.is_closed_by_peer()


def test_a_member_id_too_long_for_a_record(target: Target, names: str) -> None:
    group = f"{names}-g"
    bootstrap = _coordinator(target.bootstrap_servers, group)
    for client_id, instance in (("c" * 0x7FFF, None), ("c", "i" * 0x7FFF)):
        request = build(
            request_class(11, 9),
            {
                "group_id": group,
                "session_timeout": 10_000,
                "rebalance_timeout": 10_000,
                "member_id": "",
                "group_instance_id": instance,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"x"}],
                "reason": None,
            },
        )
        with Raw(bootstrap) as raw:
            raw.client.send_frame(encode_request(request, 3, client_id=client_id))
            _, answer = decode_response(raw.client.read_frame(), response_class(11, 9))
        assert (int(answer.error_code), answer.member_id) == (UNKNOWN_SERVER_ERROR, "")
