"""The consumer group's coordinator records byte for byte against Kafka 4.4's own serde.

Each record is also written as the JSON Kafka's generated converters read (built here from the record's
fields, not from kgroup's bytes); Kafka's ``GroupCoordinatorRecordSerde`` serializes it, and the bytes
must be kgroup's. Then Kafka reads kgroup's bytes and writes them again: the same bytes.
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.group.records import consumer as cg
from kgroup.group.records.serde import encode_record
from kgroup.messages import JoinGroupProtocol
from kgroup.model import TopicId
from kgroup.testing.apache_kafka import KafkaOracle
from kgroup.testing.apache_kafka.oracle import CoordinatorRecordJson
from wire.strategies import CONSUMER_GROUP_RECORD

T1, T2 = TopicId(1, 2), TopicId.from_string("x3Bz0c1VQ3ev5s3ExtkP7A")


def _epochs(assignment: cg.PartitionEpochs) -> list[dict[str, Any]]:
    return [
        {"topicId": str(t), "partitions": list(e.keys()), "assignmentEpochs": list(e.values())}
        for t, e in assignment.items()
    ]


def _classic(classic: cg.ClassicMemberMetadata | None) -> dict[str, Any] | None:
    if classic is None:
        return None
    return {
        "sessionTimeoutMs": classic.session_timeout_ms,
        "supportedProtocols": [
            {"name": p.name, "metadata": base64.b64encode(p.metadata).decode()}
            for p in classic.supported_protocols
        ],
    }


def kafka_json(record: cg.ConsumerGroupRecord) -> CoordinatorRecordJson:
    """The record as Kafka's ``*JsonConverter.read`` takes it (what GroupCoordinatorRecordHelpers would
    set on the generated classes)."""
    value: dict[str, Any] | None = None
    if isinstance(record, cg.ConsumerGroupMetadata):
        if record.value is not None:
            value = {"epoch": record.value[0], "metadataHash": record.value[1]}
        return CoordinatorRecordJson(3, {"groupId": record.group_id}, value)
    if isinstance(record, cg.ConsumerGroupMemberMetadata):
        if (v := record.value) is not None:
            value = {
                "instanceId": v.instance_id,
                "rackId": v.rack_id,
                "clientId": v.client_id,
                "clientHost": v.client_host,
                "subscribedTopicNames": list(v.subscribed_topic_names),
                "subscribedTopicRegex": v.subscribed_topic_regex,
                "rebalanceTimeoutMs": v.rebalance_timeout_ms,
                "serverAssignor": v.server_assignor,
                "classicMemberMetadata": _classic(v.classic_member_metadata),
            }
        return CoordinatorRecordJson(5, {"groupId": record.group_id, "memberId": record.member_id}, value)
    if isinstance(record, cg.ConsumerGroupTargetAssignmentMetadata):
        if (m := record.value) is not None:
            value = {"assignmentEpoch": m.assignment_epoch, "assignmentTimestamp": m.assignment_timestamp_ms}
        return CoordinatorRecordJson(6, {"groupId": record.group_id}, value)
    if isinstance(record, cg.ConsumerGroupTargetAssignmentMember):
        if record.value is not None:
            value = {
                "topicPartitions": [
                    {"topicId": str(t), "partitions": list(p)} for t, p in record.value.items()
                ]
            }
        return CoordinatorRecordJson(7, {"groupId": record.group_id, "memberId": record.member_id}, value)
    if isinstance(record, cg.ConsumerGroupCurrentMemberAssignment):
        if (c := record.value) is not None:
            value = {
                "memberEpoch": c.member_epoch,
                "previousMemberEpoch": c.previous_member_epoch,
                "state": int(c.state),
                "assignedPartitions": _epochs(c.assigned_partitions),
                "partitionsPendingRevocation": _epochs(c.partitions_pending_revocation),
            }
        return CoordinatorRecordJson(8, {"groupId": record.group_id, "memberId": record.member_id}, value)
    assert isinstance(record, cg.ConsumerGroupRegularExpression)
    if (r := record.value) is not None:
        # GroupCoordinatorRecordHelpers sorts the topics with Collections.sort (String.compareTo)
        topics = sorted(r.topics, key=lambda s: s.encode("utf-16-be"))
        value = {"topics": topics, "version": r.version, "timestamp": r.timestamp_ms}
    return CoordinatorRecordJson(16, {"groupId": record.group_id, "regularExpression": record.regex}, value)


_MEMBER = cg.MemberMetadataValue(
    None, None, "consumer-1", "/127.0.0.1", ("bar", "foo"), None, 300000, "uniform"
)
RECORDS: list[cg.ConsumerGroupRecord] = [
    cg.ConsumerGroupMetadata("g", (3, 0)),  # no metadata hash: the tag is left out
    cg.ConsumerGroupMetadata("g", (3, -8_000_000_000)),
    cg.ConsumerGroupMetadata("g", None),
    cg.ConsumerGroupMemberMetadata("g", "m1", _MEMBER),  # no classic metadata: a null marker in tag 0
    cg.ConsumerGroupMemberMetadata(
        "g",
        "m2",
        cg.MemberMetadataValue(
            "inst",
            "rack-a",
            "c",
            "h",
            (),
            "foo.*",
            45000,
            None,
            cg.ClassicMemberMetadata(
                10000, (JoinGroupProtocol("range", b"\x00\x03ab"), JoinGroupProtocol("x", b""))
            ),
        ),
    ),
    cg.ConsumerGroupMemberMetadata(
        "g",
        "m3",
        cg.MemberMetadataValue(None, None, "c", "h", ("t",), None, -1, None, cg.ClassicMemberMetadata(0, ())),
    ),
    cg.ConsumerGroupMemberMetadata("g", "m1", None),
    cg.ConsumerGroupTargetAssignmentMetadata("g", cg.TargetAssignmentMetadataValue(4, 0)),
    cg.ConsumerGroupTargetAssignmentMetadata("g", cg.TargetAssignmentMetadataValue(4, 1_764_000_000_000)),
    cg.ConsumerGroupTargetAssignmentMetadata("g", None),
    cg.ConsumerGroupTargetAssignmentMember("g", "m1", {T1: (0, 2, 4), T2: ()}),
    cg.ConsumerGroupTargetAssignmentMember("g", "m1", {}),
    cg.ConsumerGroupTargetAssignmentMember("g", "m1", None),
    cg.ConsumerGroupCurrentMemberAssignment(
        "g",
        "m1",
        cg.CurrentAssignmentValue(
            5, 4, cg.MemberAssignmentState.UNREVOKED_PARTITIONS, {T1: {0: 5, 2: 3}, T2: {}}, {T2: {7: 4}}
        ),
    ),
    cg.ConsumerGroupCurrentMemberAssignment(
        "g", "m1", cg.CurrentAssignmentValue(0, -1, cg.MemberAssignmentState.STABLE, {}, {})
    ),
    cg.ConsumerGroupCurrentMemberAssignment("g", "m1", None),
    cg.ConsumerGroupRegularExpression(
        "g", "foo.*", cg.ResolvedRegularExpression(frozenset({"foo2", "foo1", "Foo"}), 12, 99)
    ),
    cg.ConsumerGroupRegularExpression("g", "foo.*", None),
]


def test_kafka_writes_the_bytes_kgroup_writes(kafka_oracle: KafkaOracle) -> None:
    kafka = kafka_oracle.record_bytes([kafka_json(r) for r in RECORDS])
    for record, bytes_ in zip(RECORDS, kafka, strict=True):
        assert encode_record(record) == bytes_, record


def test_kafka_reads_kgroups_bytes_as_the_record(kafka_oracle: KafkaOracle) -> None:
    read = kafka_oracle.record_read([encode_record(r) for r in RECORDS])
    # a consumer-protocol member: Kafka reads classic metadata null
    assert read[3].value is not None and read[3].value["classicMemberMetadata"] is None
    # an empty classic metadata is Kafka's default and left out of the JSON as of the bytes
    assert read[5].value is not None and "classicMemberMetadata" not in read[5].value
    assert read[13].value is not None and read[13].value["assignedPartitions"] == [
        {"topicId": str(T1), "partitions": [0, 2], "assignmentEpochs": [5, 3]},
        {"topicId": str(T2), "partitions": []},
    ]
    assert [r.value is None for r in read] == [r.value is None for r in RECORDS]
    assert [r.type for r in read] == [kafka_json(r).type for r in RECORDS]
    # and writes what it read as the same bytes
    assert kafka_oracle.record_bytes(read) == [encode_record(r) for r in RECORDS]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(CONSUMER_GROUP_RECORD, min_size=40, max_size=40))
def test_random_records_are_kafkas_bytes(
    kafka_oracle: KafkaOracle, records: list[cg.ConsumerGroupRecord]
) -> None:
    mine = [encode_record(r) for r in records]
    assert kafka_oracle.record_bytes([kafka_json(r) for r in records]) == mine
    assert kafka_oracle.record_bytes(kafka_oracle.record_read(mine)) == mine
