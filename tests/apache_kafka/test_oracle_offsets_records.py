"""``kgroup record``'s reader of ``__consumer_offsets`` against Kafka 4.4's own serde: the classic
``GroupMetadata`` records (every value version) and ``OffsetCommit`` values v1 (with an expiry) and v4
(flexible, with the topic id) that Kafka's ``GroupCoordinatorRecordSerde`` writes decode to the fields
they were written with, and kgroup writes ``GroupMetadataValue`` byte for byte as Kafka does."""

from __future__ import annotations

import base64

import pytest

from kgroup.group.records.offsets_topic import (
    GroupMetadata,
    GroupMetadataMember,
    GroupMetadataValue,
    OffsetCommit,
    decode_offsets_record,
    encode_group_metadata_value,
)
from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka import KafkaOracle
from kgroup.testing.apache_kafka.oracle import CoordinatorRecordJson

MEMBERS = (
    GroupMetadataMember(
        "a-1", "static-a", "cli-a", "/10.0.0.1", 60_000, 45_000, b"\x00\x01sub", b"\x00\x03asg"
    ),
    GroupMetadataMember("b-2", None, "cli-b", "/10.0.0.2", 30_000, 10_000, b"", b"\x00\x03\xc3\xa4"),
)


def _member_json(m: GroupMetadataMember, version: int) -> dict[str, object]:
    out: dict[str, object] = {
        "memberId": m.member_id,
        "clientId": m.client_id,
        "clientHost": m.client_host,
        "sessionTimeout": m.session_timeout_ms,
        "subscription": base64.b64encode(m.subscription).decode(),
        "assignment": base64.b64encode(m.assignment).decode(),
    }
    if version >= 1:
        out["rebalanceTimeout"] = m.rebalance_timeout_ms
    if version >= 3:
        out["groupInstanceId"] = m.group_instance_id
    return out


def _at_version(m: GroupMetadataMember, version: int) -> GroupMetadataMember:
    """The member as a value of ``version`` holds it (fields newer than it at their defaults)."""
    return GroupMetadataMember(
        m.member_id,
        m.group_instance_id if version >= 3 else None,
        m.client_id,
        m.client_host,
        m.rebalance_timeout_ms if version >= 1 else -1,
        m.session_timeout_ms,
        m.subscription,
        m.assignment,
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_as_kafka_writes_it(kafka_oracle: KafkaOracle, version: int) -> None:
    members = tuple(_at_version(m, version) for m in MEMBERS)
    timestamp = 1_700_000_000_123 if version >= 2 else -1
    value = GroupMetadataValue("consumer", 7, "cooperative-sticky", "a-1", timestamp, members)
    body: dict[str, object] = {
        "protocolType": value.protocol_type,
        "generation": value.generation,
        "protocol": value.protocol,
        "leader": value.leader,
        "members": [_member_json(m, version) for m in members],
    }
    if version >= 2:
        body["currentStateTimestamp"] = timestamp
    empty: dict[str, object] = {
        "protocolType": "",
        "generation": 0,
        "protocol": None,
        "leader": None,
        "members": [],
    }
    if version >= 2:
        empty["currentStateTimestamp"] = -1
    (key, kafka_value), (_, kafka_empty), (_, tombstone) = kafka_oracle.record_bytes(
        [
            CoordinatorRecordJson(2, {"group": "g-ü"}, body, version),
            CoordinatorRecordJson(2, {"group": "g-ü"}, empty, version),
            CoordinatorRecordJson(2, {"group": "g-ü"}, None),
        ]
    )
    assert kafka_value is not None and kafka_empty is not None and tombstone is None
    assert decode_offsets_record(key, kafka_value) == GroupMetadata("g-ü", value)
    assert encode_group_metadata_value(value, version) == kafka_value
    decoded_empty = decode_offsets_record(key, kafka_empty)
    assert isinstance(decoded_empty, GroupMetadata) and decoded_empty.value is not None
    assert decoded_empty.value.members == () and decoded_empty.value.protocol is None
    assert decode_offsets_record(key, None) == GroupMetadata("g-ü", None)


@pytest.mark.parametrize("version", [0, 1, 3, 4])
def test_offset_commits_as_kafka_writes_them(kafka_oracle: KafkaOracle, version: int) -> None:
    value: dict[str, object] = {"offset": 1234, "metadata": "meta-ü", "commitTimestamp": 1_700_000_000_999}
    if version >= 3:
        value["leaderEpoch"] = 17
    if version == 1:
        value["expireTimestamp"] = 1_800_000_000_000
    if version >= 4:
        value["topicId"] = "x3Bz0c1VQ3ev5s3ExtkP7A"
    key_json = {"group": "g", "topic": "orders", "partition": 5}
    [(key, raw), (_, tombstone)] = kafka_oracle.record_bytes(
        [CoordinatorRecordJson(1, key_json, value, version), CoordinatorRecordJson(1, key_json, None)]
    )
    assert raw is not None and tombstone is None
    epoch = 17 if version >= 3 else -1
    partition = TopicPartition("orders", 5)
    assert decode_offsets_record(key, raw) == OffsetCommit(
        "g", partition, 1234, epoch, "meta-ü", 1_700_000_000_999
    )
    assert decode_offsets_record(key, None) == OffsetCommit("g", partition, None)
