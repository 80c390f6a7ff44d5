"""The share group's coordinator records (types 10–15) byte for byte against Kafka 4.4's own serde.

Each record is also written as the JSON Kafka's generated converters read (built from the record's
fields); Kafka's ``GroupCoordinatorRecordSerde`` serializes it and the bytes must be kgroup's; Kafka
reads kgroup's bytes back and writes them again unchanged; kgroup decodes its bytes to the record.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kgroup.group.records import share as sg
from kgroup.group.records.serde import decode_record, encode_record
from kgroup.model import TopicId
from kgroup.testing.apache_kafka import KafkaOracle
from kgroup.testing.apache_kafka.oracle import CoordinatorRecordJson


def _assignment(assignment: sg.TopicAssignment) -> list[dict[str, Any]]:
    return [{"topicId": str(t), "partitions": list(ps)} for t, ps in assignment.items()]


def _infos(infos: tuple[sg.SharePartitionsInfo, ...]) -> list[dict[str, Any]]:
    return [
        {"topicId": str(i.topic_id), "topicName": i.topic_name, "partitions": list(i.partitions)}
        for i in infos
    ]


def kafka_json(record: sg.ShareGroupRecord) -> CoordinatorRecordJson:
    """The record as Kafka's ``*JsonConverter.read`` takes it."""
    value: dict[str, Any] | None = None
    if isinstance(record, sg.ShareGroupMemberMetadata):
        if (m := record.value) is not None:
            value = {
                "rackId": m.rack_id,
                "clientId": m.client_id,
                "clientHost": m.client_host,
                "subscribedTopicNames": list(m.subscribed_topic_names),
            }
        return CoordinatorRecordJson(10, {"groupId": record.group_id, "memberId": record.member_id}, value)
    if isinstance(record, sg.ShareGroupMetadata):
        if record.value is not None:
            value = {"epoch": record.value[0], "metadataHash": record.value[1]}
        return CoordinatorRecordJson(11, {"groupId": record.group_id}, value)
    if isinstance(record, sg.ShareGroupTargetAssignmentMetadata):
        if (t := record.value) is not None:
            value = {"assignmentEpoch": t.assignment_epoch, "assignmentTimestamp": t.assignment_timestamp_ms}
        return CoordinatorRecordJson(12, {"groupId": record.group_id}, value)
    if isinstance(record, sg.ShareGroupTargetAssignmentMember):
        if record.value is not None:
            value = {"topicPartitions": _assignment(record.value)}
        return CoordinatorRecordJson(13, {"groupId": record.group_id, "memberId": record.member_id}, value)
    if isinstance(record, sg.ShareGroupCurrentMemberAssignment):
        if (c := record.value) is not None:
            value = {
                "memberEpoch": c.member_epoch,
                "previousMemberEpoch": c.previous_member_epoch,
                "state": c.state,
                "assignedPartitions": _assignment(c.assigned_partitions),
            }
        return CoordinatorRecordJson(14, {"groupId": record.group_id, "memberId": record.member_id}, value)
    assert isinstance(record, sg.ShareGroupStatePartitionMetadata)
    if (s := record.value) is not None:
        value = {
            "initializingTopics": _infos(s.initializing),
            "initializedTopics": _infos(s.initialized),
            "deletingTopics": [{"topicId": str(t), "topicName": n} for t, n in s.deleting],
        }
    return CoordinatorRecordJson(15, {"groupId": record.group_id}, value)


def _random_records(rng: random.Random, count: int) -> list[sg.ShareGroupRecord]:
    def text(empty: bool = True) -> str:
        return "".join(rng.choice("abcé-_.Z9") for _ in range(rng.randint(0 if empty else 1, 12)))

    def topic() -> TopicId:
        return TopicId.from_int(rng.getrandbits(128))

    def assignment() -> dict[TopicId, tuple[int, ...]]:
        return {
            topic(): tuple(rng.randrange(2**31) for _ in range(rng.randint(0, 5)))
            for _ in range(rng.randint(0, 3))
        }

    def infos() -> tuple[sg.SharePartitionsInfo, ...]:
        return tuple(
            sg.SharePartitionsInfo(
                topic(), text(), tuple(rng.randrange(100) for _ in range(rng.randint(0, 4)))
            )
            for _ in range(rng.randint(0, 3))
        )

    records: list[sg.ShareGroupRecord] = []
    for _ in range(count):
        group, member = text(False), text(False)
        tombstone = rng.random() < 0.15
        kind = rng.randrange(6)
        if kind == 0:
            mv = sg.ShareMemberMetadataValue(
                rng.choice([None, text()]),
                text(),
                text(),
                tuple(text(False) for _ in range(rng.randint(0, 3))),
            )
            records.append(sg.ShareGroupMemberMetadata(group, member, None if tombstone else mv))
        elif kind == 1:
            value = (rng.randrange(-(2**31), 2**31), rng.choice([0, rng.randrange(-(2**63), 2**63)]))
            records.append(sg.ShareGroupMetadata(group, None if tombstone else value))
        elif kind == 2:
            tv = sg.TargetAssignmentMetadataValue(rng.randrange(2**31), rng.choice([0, rng.randrange(2**50)]))
            records.append(sg.ShareGroupTargetAssignmentMetadata(group, None if tombstone else tv))
        elif kind == 3:
            records.append(
                sg.ShareGroupTargetAssignmentMember(group, member, None if tombstone else assignment())
            )
        elif kind == 4:
            cv = sg.ShareCurrentAssignmentValue(
                rng.randrange(2**31), rng.randrange(-1, 2**31), 0, assignment()
            )
            records.append(sg.ShareGroupCurrentMemberAssignment(group, member, None if tombstone else cv))
        else:
            pv = sg.ShareStatePartitionValue(
                infos(), infos(), tuple((topic(), text()) for _ in range(rng.randint(0, 2)))
            )
            records.append(sg.ShareGroupStatePartitionMetadata(group, None if tombstone else pv))
    return records


@pytest.mark.parametrize("seed", range(3))
def test_random_share_records_are_kafkas_bytes(kafka_oracle: KafkaOracle, seed: int) -> None:
    records = _random_records(random.Random(seed), 60)
    mine = [encode_record(r) for r in records]
    assert kafka_oracle.record_bytes([kafka_json(r) for r in records]) == mine
    read = kafka_oracle.record_read(mine)
    assert [r.type for r in read] == [kafka_json(r).type for r in records]
    assert kafka_oracle.record_bytes(read) == mine
    assert [decode_record(k, v) for k, v in mine] == records
