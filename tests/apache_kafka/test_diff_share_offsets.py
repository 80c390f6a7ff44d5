"""The differential suite, Describe/Alter/DeleteShareGroupOffsets (KIP-932): the same raw requests to
kgroup's broker and Apache Kafka 4.4.0 (the ``target`` fixture; the ``[apache]`` run proves the
expected values are Kafka's).

One share group on a two-partition topic: a member acquires ten records of partition 0 and accepts
six (0-3 and 6-7); DescribeShareGroupOffsets v1 says partition 0 starts at 4 with lag 4 and partition
1 (initialised, never fetched) has no start offset; v0 has no lag; no topics named describes the
group's initialised partitions; an unknown topic and an unknown group answer start offset -1. Alter
and Delete on the group with its member are NON_EMPTY_GROUP; once it left, Alter moves partition 0 to
2 (an unknown partition and an unknown topic refused), a new member then gets records 2-9 at
delivery count 1, Delete drops the topic's state (an unknown topic refused), an unknown group is
GROUP_ID_NOT_FOUND and an empty group id INVALID_GROUP_ID.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_share_fetch import _acks, _fetch, _part, _topic_id
from tests.apache_kafka.test_diff_share_group import _heartbeat, _until_assigned
from tests.apache_kafka.wire import API, Raw, create_topic, find_coordinator

from kgroup.cli import main

pytestmark = pytest.mark.slow

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_GROUP_ID = 24
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
ACCEPT = 1
API.setdefault("DescribeShareGroupOffsets", 90)
API.setdefault("AlterShareGroupOffsets", 91)
API.setdefault("DeleteShareGroupOffsets", 92)
ZERO = uuid.UUID(int=0)


def _describe(raw: Raw, version: int, group: str, topics: dict[str, list[int]] | None) -> Any:
    named = None if topics is None else [{"topic_name": t, "partitions": p} for t, p in topics.items()]
    answer = raw.call(
        "DescribeShareGroupOffsets", version, {"groups": [{"group_id": group, "topics": named}]}
    )
    return answer["groups"]


def _alter(raw: Raw, group: str, topics: dict[str, list[tuple[int, int]]]) -> Any:
    body = {
        "group_id": group,
        "topics": [
            {"topic_name": t, "partitions": [{"partition_index": p, "start_offset": o} for p, o in ps]}
            for t, ps in topics.items()
        ],
    }
    return raw.call("AlterShareGroupOffsets", 0, body)


def _delete(raw: Raw, group: str, topics: list[str]) -> Any:
    body = {"group_id": group, "topics": [{"topic_name": t} for t in topics]}
    return raw.call("DeleteShareGroupOffsets", 0, body)


def _ids(answer: Any, topic_id: uuid.UUID) -> Any:
    """``answer`` with each topic id said as "id" (the topic's), "zero" or what else it is."""
    if isinstance(answer, dict):
        out = {}
        for key, value in answer.items():
            if key == "topic_id":
                value = (
                    "id"
                    if str(value) == str(topic_id)
                    else "zero"
                    if value is None or str(value) == str(ZERO)
                    else value
                )
            elif key == "throttle_time":
                continue
            out[key] = _ids(value, topic_id)
        return out
    if isinstance(answer, list | tuple):
        return [_ids(v, topic_id) for v in answer]
    return answer


def _p(index: int, start: int, lag: int | None = None, leader_epoch: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "partition_index": index,
        "start_offset": start,
        "leader_epoch": leader_epoch,
        "error_code": NONE,
        "error_message": None,
    }
    if lag is not None:
        out["lag"] = lag
    return out


def _join(coordinator: str, group: str, member: str, topic: str) -> None:
    with Raw(coordinator) as raw:
        joined = _heartbeat(raw, group_id=group, member_id=member, subscribed_topic_names=[topic])
        assert joined["error_code"] == NONE, joined
        if not (joined["assignment"] and joined["assignment"]["topic_partitions"]):
            # (initialised partitions are assigned at once; others once their state is initialised)
            _until_assigned(raw, group, member, joined["member_epoch"])


def _leave(coordinator: str, group: str, member: str) -> None:
    with Raw(coordinator) as raw:
        left = _heartbeat(raw, group_id=group, member_id=member, member_epoch=-1)
        assert left["error_code"] == NONE, left


def _lag(bootstrap: str, group: str, capsys: pytest.CaptureFixture[str], *json: str) -> str:
    """``kgroup lag --group G`` (with ``--json`` if asked): what it printed."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["lag", "--bootstrap-servers", bootstrap, "--group", group, *json])
    out, err = capsys.readouterr()
    assert exit_.value.code == 0, err
    return out


def test_describe_alter_delete_share_group_offsets(
    target: Target, names: str, capsys: pytest.CaptureFixture[str]
) -> None:
    group, topic, absent, other = f"{names}-g", f"{names}-t", f"{names}-absent", f"{names}-other"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 2)
        create_topic(raw, other, 1)
        topic_id = _topic_id(raw, topic)
    coordinator = find_coordinator(target.bootstrap_servers, group)
    member = str(uuid.uuid4())
    _join(coordinator, group, member, topic)
    ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "acks": "all"})
    with Raw(target.bootstrap_servers) as raw:
        first = _fetch(raw, group_id=group, member_id=member, topics=ask)  # starts partition 0 at 0
        assert first["error_code"] == NONE, first
        for i in range(10):
            producer.produce(topic, value=f"v{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        del producer
        got = _fetch(raw, group_id=group, member_id=member, share_session_epoch=1, max_wait=5000)
        acquired = [r for t in got["responses"] for p in t["partitions"] for r in p["acquired_records"]]
        assert [(r["first_offset"], r["last_offset"]) for r in acquired] == [(0, 9)], got
        acked = raw.call(
            "ShareAcknowledge",
            1,
            {
                "group_id": group,
                "member_id": member,
                "share_session_epoch": 2,
                "topics": [_acks(topic_id, (0, 3, ACCEPT), (6, 7, ACCEPT))],
            },
        )
        assert [p["error_code"] for t in acked["responses"] for p in t["partitions"]] == [NONE], acked
        # closing the session releases 4-5 and 8-9 (persisted with the start offset moved to 4)
        closed = _fetch(raw, group_id=group, member_id=member, share_session_epoch=-1)
        assert closed["error_code"] == NONE, closed

    with Raw(coordinator) as raw:
        described = _ids(_describe(raw, 1, group, {topic: [0, 1]}), topic_id)
        described_v0 = _ids(_describe(raw, 0, group, {topic: [0]}), topic_id)
        described_all = _ids(_describe(raw, 1, group, None), topic_id)
        unknown = _ids(_describe(raw, 1, group, {absent: [0, 3]}), topic_id)
        no_group = _ids(_describe(raw, 1, f"{names}-nobody", {topic: [0]}), topic_id)
        busy_alter = _ids(_alter(raw, group, {topic: [(0, 2)]}), topic_id)
        busy_delete = _ids(_delete(raw, group, [topic]), topic_id)
    # partition 0: start 4, records 6-7 complete beyond it: lag 10 - 4 - 2
    assert described == [
        {
            "group_id": group,
            "topics": [{"topic_name": topic, "topic_id": "id", "partitions": [_p(0, 4, 4), _p(1, -1, -1)]}],
            "error_code": NONE,
            "error_message": None,
        }
    ], target.kind
    assert described_v0[0]["topics"][0]["partitions"] == [_p(0, 4)], target.kind
    assert described_all[0]["error_code"] == NONE, target.kind
    assert [
        (
            t["topic_name"],
            sorted((p["partition_index"], p["start_offset"], p["lag"]) for p in t["partitions"]),
        )
        for t in described_all[0]["topics"]
    ] == [(topic, [(0, 4, 4), (1, -1, -1)])], target.kind
    assert unknown[0]["topics"] == [
        {"topic_name": absent, "topic_id": "zero", "partitions": [_p(0, -1, -1), _p(3, -1, -1)]}
    ], target.kind
    assert no_group[0]["topics"] == [
        {"topic_name": topic, "topic_id": "id", "partitions": [_p(0, -1, -1)]}
    ], target.kind
    # kgroup lag finds the share group and shows kafka-share-groups.sh --describe --offsets' view
    lag = json.loads(_lag(target.bootstrap_servers, group, capsys, "--json"))
    assert lag == {
        "group": group,
        "state": "Stable",
        "type": "share",
        "partitions": [
            {"topic": topic, "partition": 0, "start_offset": 4, "leader_epoch": 0, "lag": 4},
            {"topic": topic, "partition": 1, "start_offset": None, "leader_epoch": None, "lag": None},
        ],
    }, target.kind
    table = _lag(target.bootstrap_servers, group, capsys).splitlines()
    width = max(15, len(group))
    assert table[1].split() == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"], table
    assert table[2] == f"{group.ljust(width)} {topic.ljust(15)} {'0'.ljust(10)} {'4'.ljust(13)} 4", table
    assert table[3].split() == [group, topic, "1", "-", "-"], table
    not_empty = {"error_code": NON_EMPTY_GROUP, "error_message": "The group is not empty.", "responses": []}
    assert busy_alter == not_empty, target.kind
    assert busy_delete == not_empty, target.kind

    _leave(coordinator, group, member)
    with Raw(coordinator) as raw:
        altered = _ids(_alter(raw, group, {topic: [(0, 2), (5, 0)], absent: [(0, 0)]}), topic_id)
        after_alter = _ids(_describe(raw, 1, group, {topic: [0]}), topic_id)
    unknown_partition = {
        "error_code": UNKNOWN_TOPIC_OR_PARTITION,
        "error_message": "This server does not host this topic-partition.",
    }
    assert altered == {
        "error_code": NONE,
        "error_message": None,
        # the topic the broker does not have first (KafkaApis answers it before the coordinator)
        "responses": [
            {
                "topic_name": absent,
                "topic_id": "zero",
                "partitions": [{"partition_index": 0, **unknown_partition}],
            },
            {
                "topic_name": topic,
                "topic_id": "id",
                "partitions": [
                    {"partition_index": 0, "error_code": NONE, "error_message": None},
                    {"partition_index": 5, **unknown_partition},
                ],
            },
        ],
    }, target.kind
    assert after_alter[0]["topics"][0]["partitions"] == [_p(0, 2, 8)], target.kind

    # a new member reads from the altered start, each record delivered for the first time
    newcomer = str(uuid.uuid4())
    _join(coordinator, group, newcomer, topic)
    with Raw(target.bootstrap_servers) as raw:
        got = _fetch(raw, group_id=group, member_id=newcomer, topics=ask, max_wait=5000)
        again = [
            (r["first_offset"], r["last_offset"], r["delivery_count"])
            for t in got["responses"]
            for p in t["partitions"]
            for r in p["acquired_records"]
        ]
        _fetch(raw, group_id=group, member_id=newcomer, share_session_epoch=-1)
    assert again == [(2, 9, 1)], (target.kind, got)
    _leave(coordinator, group, newcomer)

    with Raw(coordinator) as raw:
        deleted = _ids(_delete(raw, group, [absent, topic, other]), topic_id)
        after_delete = _ids(_describe(raw, 1, group, {topic: [0, 1]}), topic_id)
        all_after_delete = _ids(_describe(raw, 1, group, None), topic_id)
        no_such_group = _ids(_delete(raw, f"{names}-nobody", [topic]), topic_id)
        empty_alter = _ids(_alter(raw, "", {topic: [(0, 0)]}), topic_id)
        empty_delete = _ids(_delete(raw, "", [topic]), topic_id)
    assert deleted == {
        "error_code": NONE,
        "error_message": None,
        "responses": [
            {"topic_name": topic, "topic_id": "id", "error_code": NONE, "error_message": None},
            {"topic_name": absent, "topic_id": "zero", **unknown_partition},
            {
                "topic_name": other,
                "topic_id": "zero",
                "error_code": UNKNOWN_TOPIC_OR_PARTITION,
                "error_message": "There is no offset information to delete.",
            },
        ],
    }, target.kind
    assert after_delete[0]["topics"][0]["partitions"] == [_p(0, -1, -1), _p(1, -1, -1)], target.kind
    assert all_after_delete[0]["topics"] == [], target.kind
    assert (
        _lag(target.bootstrap_servers, group, capsys)
        == f"\nShare group '{group}' has no offset information.\n"
    )
    assert no_such_group == {
        "error_code": GROUP_ID_NOT_FOUND,
        "error_message": f"Group {names}-nobody not found.",
        "responses": [],
    }, target.kind
    assert (empty_alter["error_code"], empty_delete["error_code"]) == (INVALID_GROUP_ID, INVALID_GROUP_ID), (
        target.kind
    )
