"""KIP-848's consumer protocol on kgroup's broker, where only kgroup's broker can be asked: its routing
across brokers, the metadata image it feeds the coordinator, a restart that replays the consumer
group's records, a checkpoint of them, and a request Kafka cannot even read. (Kafka's own answers for
the same requests are compared in ``tests/apache_kafka/test_diff_consumer_protocol.py``.)"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode as KioErrorCode
from tests.apache_kafka.wire import Raw
from tests.broker.rawclient import RawClient
from tests.broker.rawdata import consumer_heartbeat

from kgroup.broker.coordinator_host import make_checkpoint
from kgroup.testing import KafkaBroker
from kgroup.wire.codec import encode_request

NONE = 0
NOT_COORDINATOR = 16
INVALID_REQUEST = 42


def _heartbeat(raw: Raw, group: str, member: str, epoch: int, **fields: Any) -> Any:
    body = consumer_heartbeat(group, member, epoch, **fields)
    return raw.call("ConsumerGroupHeartbeat", 1, body)


def _describe(raw: Raw, *groups: str) -> list[Any]:
    answer = raw.call(
        "ConsumerGroupDescribe", 1, {"group_ids": list(groups), "include_authorized_operations": False}
    )
    return list(answer["groups"])


def _heartbeat_until(raw: Raw, group: str, member: str, epoch: int, done: Any, **fields: Any) -> Any:
    """Heartbeats as a member does (every 100 ms here) until ``done(answer)``; at most 15 s."""
    deadline = time.monotonic() + 15
    while True:
        answer = _heartbeat(raw, group, member, epoch, **fields)
        assert answer["error_code"] == NONE, answer
        if done(answer):
            return answer
        assert time.monotonic() < deadline, f"no such heartbeat answer within 15 s: {answer}"
        epoch = answer["member_epoch"]
        time.sleep(0.1)


def _partitions(answer: Any) -> dict[str, list[int]]:
    assignment = answer["assignment"]
    return {t["topic_id"]: t["partitions"] for t in assignment["topic_partitions"]} if assignment else {}


def test_api_versions_advertise_the_consumer_protocol(broker: KafkaBroker) -> None:
    with RawClient(broker.bootstrap_servers) as client:
        answer = client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert answer.error_code == KioErrorCode.none
    ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys}
    # librdkafka 2.16 needs ConsumerGroupHeartbeat v1 for group.protocol=consumer
    assert (ranges[68], ranges[69], ranges[16], ranges[9]) == ((0, 1), (0, 1), (0, 5), (1, 10))


def test_another_broker_answers_not_coordinator_but_checks_the_request_first() -> None:
    with KafkaBroker(topics={"t": 2}, brokers=3) as kafka:
        group = "routed"
        coordinator = kafka.broker.cluster.coordinator_for(group)
        other = next(b for b in range(3) if b != coordinator)
        ports = kafka.broker.ports
        member = str(uuid.uuid4())
        with Raw(f"127.0.0.1:{ports[other]}") as raw:
            wrong = _heartbeat(raw, group, member, 0, subscribed_topic_names=["t"])
            invalid = _heartbeat(raw, group, "", 0, subscribed_topic_names=["t"])
            described = _describe(raw, group, "")
        with Raw(f"127.0.0.1:{ports[coordinator]}") as raw:
            right = _heartbeat(raw, group, member, 0, subscribed_topic_names=["t"])
            here = _describe(raw, group)
    assert (wrong["error_code"], wrong["member_id"], wrong["assignment"]) == (NOT_COORDINATOR, None, None)
    assert (invalid["error_code"], invalid["error_message"]) == (INVALID_REQUEST, "MemberId can't be empty.")
    # an empty group id is answered first, as GroupCoordinatorService does
    assert [(g["error_code"], g["group_id"]) for g in described] == [(24, ""), (NOT_COORDINATOR, group)]
    assert (right["error_code"], right["member_id"], list(_partitions(right).values())) == (
        NONE,
        member,
        [[0, 1]],
    )
    assert [(g["error_code"], g["group_state"], len(g["members"])) for g in here] == [(NONE, "Stable", 1)]


def test_topics_created_and_deleted_reach_the_coordinator() -> None:
    with KafkaBroker() as kafka, Raw(kafka.bootstrap_servers) as raw:
        member = str(uuid.uuid4())
        joined = _heartbeat(raw, "g", member, 0, subscribed_topic_names=["later"])
        assert (joined["error_code"], _partitions(joined)) == (NONE, {})
        kafka.create_topic("later", 3)
        grown = _heartbeat_until(
            raw, "g", member, joined["member_epoch"], lambda a: a["assignment"] is not None
        )
        topic_id = str(kafka.broker.cluster.topics["later"].topic_id)
        assert (grown["error_code"], _partitions(grown)) == (NONE, {topic_id: [0, 1, 2]})
        assert grown["member_epoch"] > joined["member_epoch"]

        async def delete() -> None:
            kafka.broker.cluster.delete_topic("later")

        kafka.run_in_loop(delete())
        owned = [{"topic_id": uuid.UUID(topic_id), "partitions": [0, 1, 2]}]
        gone = _heartbeat_until(
            raw,
            "g",
            member,
            grown["member_epoch"],
            lambda a: a["assignment"] is not None,
            topic_partitions=owned,
        )
        (described,) = _describe(raw, "g")
    assert (gone["error_code"], _partitions(gone)) == (NONE, {})
    assert [(m["member_epoch"], m["assignment"]["topic_partitions"]) for m in described["members"]] == [
        (gone["member_epoch"], [])
    ]


def test_a_restarted_broker_replays_the_consumer_group(tmp_path: Path) -> None:
    members = [str(uuid.uuid4()) for _ in range(2)]
    with KafkaBroker(topics={"t": 4}, data_dir=tmp_path) as kafka, Raw(kafka.bootstrap_servers) as raw:
        epochs = {}
        for member in members:
            epochs[member] = _heartbeat(raw, "g", member, 0, subscribed_topic_names=["t"])["member_epoch"]
        owned: dict[str, Any] = {}
        deadline = time.monotonic() + 15
        while _describe(raw, "g")[0]["group_state"] != "Stable":  # until both have reconciled their share
            assert time.monotonic() < deadline, "the group did not become Stable within 15 s"
            time.sleep(0.1)
            for member in members:
                answer = _heartbeat(raw, "g", member, epochs[member], topic_partitions=owned.get(member))
                epochs[member] = answer["member_epoch"]
                if answer["assignment"] is not None:
                    owned[member] = [
                        {"topic_id": uuid.UUID(t["topic_id"]), "partitions": t["partitions"]}
                        for t in answer["assignment"]["topic_partitions"]
                    ]
        raw.call(
            "OffsetCommit",
            9,
            {
                "group_id": "g",
                "generation_id_or_member_epoch": epochs[members[0]],
                "member_id": members[0],
                "group_instance_id": None,
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 42,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            },
        )
        (before,) = _describe(raw, "g")
    with KafkaBroker(data_dir=tmp_path) as kafka, Raw(kafka.bootstrap_servers) as raw:
        (after,) = _describe(raw, "g")
        fetched = raw.call(
            "OffsetFetch",
            9,
            {
                "groups": [
                    {
                        "group_id": "g",
                        "member_id": members[0],
                        "member_epoch": epochs[members[0]],
                        "topics": [{"name": "t", "partition_indexes": [0]}],
                    }
                ],
                "require_stable": False,
            },
        )
        again = _heartbeat(raw, "g", members[1], epochs[members[1]])
    assert before["group_state"] == "Stable" and len(before["members"]) == 2
    assert after == before
    (group,) = fetched["groups"]
    assert (group["error_code"], group["topics"][0]["partitions"][0]["committed_offset"]) == (NONE, 42)
    assert (again["error_code"], again["member_epoch"]) == (NONE, epochs[members[1]])


def test_a_checkpoint_of_the_log_rebuilds_the_consumer_group(tmp_path: Path) -> None:
    with KafkaBroker(topics={"t": 3}, data_dir=tmp_path) as kafka, Raw(kafka.bootstrap_servers) as raw:
        epochs = {
            m: _heartbeat(raw, "g", m, 0, subscribed_topic_names=["t"])["member_epoch"]
            for m in ("m-1", "m-2")
        }
        _heartbeat(raw, "g", "m-2", -1)  # leaves: tombstones in the log
        (before,) = _describe(raw, "g")

        def checkpoint(host: Any) -> tuple[int, int, int]:  # on the coordinators' thread, as its writes
            log = host.coordinator_log
            since = log.size
            written = make_checkpoint(log, since, host.config)
            log.replace_with(log.checkpoint_path, since)
            return since, written, log.size

        since, written, size = kafka.run_in_loop(kafka.broker.coordinators.inspect(checkpoint))
    with KafkaBroker(data_dir=tmp_path) as kafka, Raw(kafka.bootstrap_servers) as raw:
        (after,) = _describe(raw, "g")
        again = _heartbeat(raw, "g", "m-1", epochs["m-1"])
    assert 0 < written == size < since  # the checkpoint holds the group in fewer bytes than the log did
    assert after == before and [m["member_id"] for m in after["members"]] == ["m-1"]
    assert again["error_code"] == NONE


def test_a_heartbeat_with_a_string_kafka_cannot_read_closes_only_its_connection(broker: KafkaBroker) -> None:
    from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest

    from kgroup.wire.codec import build

    request = build(
        ConsumerGroupHeartbeatRequest,
        {
            "group_id": "g",
            "member_id": "m" * 40_000,  # Kafka's parser refuses strings over 32,767 bytes
            "member_epoch": 0,
            "rebalance_timeout": 30000,
            "subscribed_topic_names": ["orders"],
            "topic_partitions": [],
        },
    )
    with RawClient(broker.bootstrap_servers) as client:
        client.send_frame(encode_request(request, 1))
        assert client.is_closed_by_peer()
    with Raw(broker.bootstrap_servers) as raw:
        assert _heartbeat(raw, "g", "m", 0, subscribed_topic_names=["orders"])["error_code"] == NONE


def test_the_consumer_group_settings_reach_the_coordinator() -> None:
    """``group.consumer.heartbeat.interval.ms`` is the interval every answer names, and
    ``group.consumer.session.timeout.ms`` fences a silent member (its next heartbeat: UNKNOWN_MEMBER_ID)."""
    with KafkaBroker(
        topics={"t": 2},
        group_consumer_heartbeat_interval_ms=300,
        group_consumer_min_heartbeat_interval_ms=300,
        group_consumer_session_timeout_ms=1000,
        group_consumer_min_session_timeout_ms=1000,
    ) as broker:
        member = str(uuid.uuid4())
        with Raw(broker.bootstrap_servers) as raw:
            joined = _heartbeat(raw, "g", member, 0, subscribed_topic_names=["t"])
            assert (joined["error_code"], joined["heartbeat_interval"]) == (NONE, 300)
            time.sleep(1.5)
            late = _heartbeat(raw, "g", member, joined["member_epoch"])
            configs = raw.call(
                "DescribeConfigs",
                4,
                {
                    "resources": [{"resource_type": 4, "resource_name": "0", "configuration_keys": None}],
                    "include_synonyms": False,
                    "include_documentation": False,
                },
            )
    assert (late["error_code"], late["error_message"]) == (25, f"Member {member} is not a member of group g.")
    values = {c["name"]: c["value"] for c in configs["results"][0]["configs"]}
    assert values["group.consumer.heartbeat.interval.ms"] == "300"
    assert values["group.consumer.session.timeout.ms"] == "1000"
    assert values["group.consumer.assignment.interval.ms"] == "1000"  # Kafka's default
    assert values["group.consumer.min.session.timeout.ms"] == "1000"
    assert values["group.consumer.max.heartbeat.interval.ms"] == "15000"


def test_the_consumer_group_settings_are_checked_in_one_line() -> None:
    from kgroup.broker.config import BrokerConfig
    from kgroup.model import KgroupError

    with pytest.raises(
        KgroupError, match=r"^group\.consumer\.session\.timeout\.ms: 0; use at least 1 \(ms\)$"
    ):
        BrokerConfig(group_consumer_session_timeout_ms=0)
    with pytest.raises(
        KgroupError,
        match=r"^group\.consumer\.heartbeat\.interval\.ms must be less than "
        r"group\.consumer\.session\.timeout\.ms \(5000 vs 5000\); lower the interval or raise the timeout$",
    ):
        BrokerConfig(group_consumer_session_timeout_ms=5000, group_consumer_min_session_timeout_ms=5000)
    # Kafka's bounds (GroupCoordinatorConfig), checked in its order: a broker outside them does not start
    with pytest.raises(
        KgroupError,
        match=r"^group\.consumer\.heartbeat\.interval\.ms must be greater than or equal to "
        r"group\.consumer\.min\.heartbeat\.interval\.ms \(500 vs 5000\); "
        r"raise the interval or lower the minimum$",
    ):
        BrokerConfig(group_consumer_heartbeat_interval_ms=500)
    with pytest.raises(
        KgroupError, match=r"^group\.consumer\.session\.timeout\.ms must be less than or equal"
    ):
        BrokerConfig(group_consumer_session_timeout_ms=90_000)
    with pytest.raises(KgroupError, match=r"^group\.consumer\.max\.session\.timeout\.ms must be greater"):
        BrokerConfig(group_consumer_max_session_timeout_ms=1000)
