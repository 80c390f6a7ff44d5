"""Differential: the ``authorized_operations`` of Metadata, DescribeGroups, ConsumerGroupDescribe and
ShareGroupDescribe, asked for and not — sent raw to kgroup and to Apache Kafka 4.4.0 (the ``target``
fixture; neither has an authorizer here, so every operation the resource type has is granted:
``AuthHelper.authorizedOperations`` over ``AclEntry.supportedOperations``). Which entries carry them is
Kafka's: Metadata's topics found or missing (not an unknown id), the cluster in v8-v10 only; a group
described without error (a Dead one too), not one answered with an error. With an authorizer:
``tests/security/test_diff_acls.py``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_hostile import _coordinator
from tests.apache_kafka.wire import Raw, create_topic, metadata

from kgroup.security.acl import SUPPORTED_OPERATIONS, ResourceType, operations_bit_field

pytestmark = pytest.mark.apache_kafka

OMITTED = -(2**31)
#: every operation of a topic / group / the cluster, as Kafka 4.4.0 answers them without an authorizer
TOPIC_OPS, GROUP_OPS, CLUSTER_OPS = 3576, 3400, 8096
_NOT_READY = (14, 15, 16)


def test_the_bit_fields_are_kafkas() -> None:
    assert operations_bit_field(SUPPORTED_OPERATIONS[ResourceType.TOPIC]) == TOPIC_OPS
    assert operations_bit_field(SUPPORTED_OPERATIONS[ResourceType.GROUP]) == GROUP_OPS
    assert operations_bit_field(SUPPORTED_OPERATIONS[ResourceType.CLUSTER]) == CLUSTER_OPS


def _metadata(raw: Raw, version: int, topics: list[dict[str, Any]], include: bool) -> Any:
    fields: dict[str, Any] = {
        "topics": topics,
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": include,
    }
    if version <= 10:
        fields["include_cluster_authorized_operations"] = include
    return raw.call("Metadata", version, fields)


def test_metadata(target: Target, names: str) -> None:
    topic, nope = f"{names}-t", f"{names}-nope"
    unknown = uuid.UUID(int=4545)
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        (found,) = metadata(raw, [topic], auto_create=False)["topics"]
        named = [{"name": topic, "topic_id": None}, {"name": nope, "topic_id": None}]
        v10 = _metadata(raw, 10, named, True)
        v10_not_asked = _metadata(raw, 10, named, False)
        v12 = _metadata(raw, 12, named, True)
        by_id = _metadata(
            raw,
            12,
            [
                {"name": None, "topic_id": uuid.UUID(str(found["topic_id"]))},
                {"name": None, "topic_id": unknown},
            ],
            True,
        )

    def ops(answer: Any) -> list[tuple[str | None, int, int]]:
        return [
            (t["name"] and t["name"].replace(names, "N"), t["error_code"], t["topic_authorized_operations"])
            for t in answer["topics"]
        ]

    assert v10["cluster_authorized_operations"] == CLUSTER_OPS
    assert ops(v10) == [("N-t", 0, TOPIC_OPS), ("N-nope", 3, TOPIC_OPS)]
    assert v10_not_asked["cluster_authorized_operations"] == OMITTED
    assert ops(v10_not_asked) == [("N-t", 0, OMITTED), ("N-nope", 3, OMITTED)]
    assert ops(v12) == [("N-t", 0, TOPIC_OPS), ("N-nope", 3, TOPIC_OPS)]
    assert ops(by_id) == [(None, 100, OMITTED), ("N-t", 0, TOPIC_OPS)]


def _ready(raw: Raw, api: str, body: dict[str, Any]) -> Any:
    """One call, asked again (bounded) while Apache Kafka's new offsets-topic partition loads."""
    deadline = time.monotonic() + 30
    while True:
        answer = raw.call(api, 1, body)
        if answer["error_code"] not in _NOT_READY or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def test_groups(target: Target, names: str) -> None:
    dead, consumer, share = f"{names}-dead", f"{names}-consumer", f"{names}-share"
    topic = f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    with Raw(_coordinator(target.bootstrap_servers, dead)) as raw:
        asked = raw.call("DescribeGroups", 5, {"groups": [dead], "include_authorized_operations": True})
        not_asked = raw.call("DescribeGroups", 5, {"groups": [dead], "include_authorized_operations": False})
        v2 = raw.call("DescribeGroups", 2, {"groups": [dead]})
        missing = raw.call(
            "ConsumerGroupDescribe", 1, {"group_ids": [dead], "include_authorized_operations": True}
        )
    with Raw(_coordinator(target.bootstrap_servers, consumer)) as raw:
        joined = _ready(
            raw,
            "ConsumerGroupHeartbeat",
            {
                "group_id": consumer,
                "member_id": str(uuid.uuid4()),
                "member_epoch": 0,
                "instance_id": None,
                "rack_id": None,
                "rebalance_timeout": 30000,
                "subscribed_topic_names": [topic],
                "subscribed_topic_regex": None,
                "server_assignor": None,
                "topic_partitions": [],
            },
        )
        assert joined["error_code"] == 0, joined
        described = raw.call(
            "ConsumerGroupDescribe", 1, {"group_ids": [consumer], "include_authorized_operations": True}
        )
        described_not_asked = raw.call(
            "ConsumerGroupDescribe", 1, {"group_ids": [consumer], "include_authorized_operations": False}
        )
    with Raw(_coordinator(target.bootstrap_servers, share)) as raw:
        joined = _ready(
            raw,
            "ShareGroupHeartbeat",
            {
                "group_id": share,
                "member_id": str(uuid.uuid4()),
                "member_epoch": 0,
                "rack_id": None,
                "subscribed_topic_names": [topic],
            },
        )
        assert joined["error_code"] == 0, joined
        shared = raw.call(
            "ShareGroupDescribe", 1, {"group_ids": [share], "include_authorized_operations": True}
        )
    assert [(g["group_state"], g["authorized_operations"]) for g in asked["groups"]] == [("Dead", GROUP_OPS)]
    assert [g["authorized_operations"] for g in not_asked["groups"]] == [OMITTED]
    assert "authorized_operations" not in v2["groups"][0]  # (before v3 the field does not exist)
    assert [(g["error_code"], g["authorized_operations"]) for g in missing["groups"]] == [(69, OMITTED)]
    assert [(g["error_code"], g["authorized_operations"]) for g in described["groups"]] == [(0, GROUP_OPS)]
    assert [g["authorized_operations"] for g in described_not_asked["groups"]] == [OMITTED]
    assert [(g["error_code"], g["authorized_operations"]) for g in shared["groups"]] == [(0, GROUP_OPS)]
