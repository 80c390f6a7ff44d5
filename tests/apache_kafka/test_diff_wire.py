"""The differential suite, ApiVersions, Metadata and the data APIs: raw requests against kgroup's
broker and Apache Kafka 4.4.0 (the ``target`` fixture), answers compared field by field.

Normalized, and why:

* node ids (kgroup numbers its brokers from 0, the Apache fixture its KRaft nodes from 1), ports and
  the cluster id: chosen per run. Each is replaced by what it must equal (the node's own id, the
  port of the bootstrap address); a cluster id must be a non-empty string.
* topic ids: random UUIDs in Kafka, derived from the name in kgroup; each must be a non-zero UUID
  and the same in every answer about that topic.
* timestamps: the records' own (CreateTime) are chosen by the test; LogAppendTime and "now" are
  compared as within the test's wall-clock window.
"""

from __future__ import annotations

import struct
import time
import uuid
from typing import Any

import pytest
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsRequestV0
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, metadata, plain
from tests.broker.rawclient import RawClient
from tests.log.batches import decode, kio_batch

from kgroup.wire.codec import decode_response, response_class

NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
UNSUPPORTED_VERSION = 35
UNKNOWN_LEADER_EPOCH = 75
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

#: Apache Kafka 4.4.0's ApiVersions ranges for the APIs kgroup serves
APACHE_RANGES = {
    0: (0, 13),  # Produce: v0-v2 are advertised (KAFKA-18659, for old librdkafka) but refused
    1: (4, 18),  # Fetch
    2: (1, 11),  # ListOffsets
    3: (0, 13),  # Metadata
    8: (2, 10),  # OffsetCommit
    9: (1, 10),  # OffsetFetch
    10: (0, 6),  # FindCoordinator
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 6),  # DescribeGroups
    16: (0, 5),  # ListGroups
    17: (0, 1),  # SaslHandshake
    18: (0, 5),  # ApiVersions
    19: (2, 7),  # CreateTopics
    20: (1, 6),  # DeleteTopics
    22: (0, 5),  # InitProducerId
    24: (0, 5),  # AddPartitionsToTxn
    25: (0, 4),  # AddOffsetsToTxn
    26: (0, 5),  # EndTxn
    28: (0, 6),  # TxnOffsetCommit
    29: (1, 3),  # DescribeAcls
    30: (1, 3),  # CreateAcls
    31: (1, 3),  # DeleteAcls
    32: (1, 4),  # DescribeConfigs
    36: (0, 2),  # SaslAuthenticate
    37: (0, 3),  # CreatePartitions
    42: (0, 3),  # DeleteGroups
    44: (0, 1),  # IncrementalAlterConfigs (TOPIC and GROUP resources on kgroup)
    50: (0, 0),  # DescribeUserScramCredentials
    51: (0, 0),  # AlterUserScramCredentials
    65: (0, 0),  # DescribeTransactions
    66: (0, 2),  # ListTransactions
    68: (0, 1),  # ConsumerGroupHeartbeat
    69: (0, 1),  # ConsumerGroupDescribe
    76: (1, 1),  # ShareGroupHeartbeat
    77: (1, 1),  # ShareGroupDescribe
    78: (1, 2),  # ShareFetch
    79: (1, 2),  # ShareAcknowledge
    90: (0, 1),  # DescribeShareGroupOffsets
    91: (0, 0),  # AlterShareGroupOffsets
    92: (0, 0),  # DeleteShareGroupOffsets
}


def _ranges(answer: Any) -> dict[int, tuple[int, int]]:
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


def test_api_versions_ranges(target: Target) -> None:
    with Raw(target.bootstrap_servers) as raw:
        v3 = raw.call(
            "ApiVersions", 3, {"client_software_name": "kgroup-diff", "client_software_version": "1"}
        )
        v4 = raw.call(
            "ApiVersions", 4, {"client_software_name": "kgroup-diff", "client_software_version": "1"}
        )
        v0 = raw.call("ApiVersions", 0)
    assert (v3["error_code"], v0["error_code"], v3["throttle_time"]) == (NONE, NONE, 0)
    # transaction.version as Kafka 4.4.0 advertises it: finalized at 2 (so a Java producer uses
    # transactions v2), supported 0-2 — a range with a 0 minimum only from v4 (left out of v3 answers)
    transaction_version = {"name": "transaction.version", "max_version_level": 2, "min_version_level": 2}
    for answer in (v3, v4):
        assert [f for f in answer["finalized_features"] if f["name"] == "transaction.version"] == [
            transaction_version
        ]
        assert answer["finalized_features_epoch"] >= 0
    assert [f for f in v4["supported_features"] if f["name"] == "transaction.version"] == [
        {"name": "transaction.version", "min_version": 0, "max_version": 2}
    ]
    assert [f for f in v3["supported_features"] if f["name"] == "transaction.version"] == []
    assert _ranges(v3) == _ranges(v0)
    ranges = _ranges(v3)
    # the same on both brokers: kgroup serves every version Kafka 4.4.0 serves for these APIs (each
    # exercised in tests/apache_kafka/test_diff_versions.py) and advertises Produce from v0 as Kafka does
    assert {key: ranges.get(key) for key in APACHE_RANGES} == APACHE_RANGES
    # share.version as Kafka advertises it; supported from 0, so left out of v3's supported features
    share = [f for f in v4["supported_features"] if f["name"] == "share.version"]
    assert share == [{"name": "share.version", "min_version": 0, "max_version": 2}]
    assert [f for f in v3["supported_features"] if f["min_version"] == 0] == []
    finalized = [f for f in v3["finalized_features"] if f["name"] == "share.version"]
    assert finalized == [{"name": "share.version", "max_version_level": 2, "min_version_level": 2}]
    assert v3["finalized_features_epoch"] >= 0
    if target.kind == "kgroup":
        assert set(ranges) == set(APACHE_RANGES)  # kgroup serves these and no more
        # kgroup finalizes transaction.version and share.version and no other feature
        # (kgroup.broker.features)
        assert [f["name"] for f in v3["finalized_features"]] == ["transaction.version", "share.version"]
    else:
        # Kafka serves some 34 APIs more (admin, transactions, KRaft, share state, streams groups) and
        # advertises its other finalized features (group.version, …), which kgroup does not
        assert len(ranges) > len(APACHE_RANGES) + 33
        assert {f["name"] for f in v3["finalized_features"]} >= {"metadata.version", "group.version"}


def _frame(api_key: int, version: int, body: bytes, flexible: bool) -> bytes:
    return struct.pack(">hhih", api_key, version, 7, 1) + b"t" + (b"\x00" if flexible else b"") + body


def test_api_versions_at_a_version_the_broker_does_not_know(target: Target) -> None:
    """KIP-511: UNSUPPORTED_VERSION in the v0 layout, with the broker's ApiVersions range, and the
    connection stays open for the client's second try."""
    with RawClient(target.bootstrap_servers) as client:
        client.send_frame(_frame(18, 99, b"\x00\x00\x00", flexible=True))
        correlation, answer = decode_response(client.read_frame(), response_class(18, 0))
        again = plain(client.request(ApiVersionsRequestV0()))
    seen = plain(answer)
    assert (correlation, seen["error_code"]) == (7, UNSUPPORTED_VERSION)
    assert _ranges(seen)[18] == APACHE_RANGES[18]
    assert again["error_code"] == NONE


@pytest.mark.parametrize(
    ("api_key", "version", "body", "flexible"),
    [
        pytest.param(11, 10, b"\x00" * 20, True, id="JoinGroup-v10"),
        pytest.param(0, 2, b"\xff\xff\x00\x01\x00\x00\x27\x10\x00\x00\x00\x00", False, id="Produce-v2"),
        pytest.param(3, 14, b"\x00" * 8, True, id="Metadata-v14"),
        pytest.param(1000, 0, b"", False, id="unknown-api-key"),
    ],
)
def test_a_request_at_an_unsupported_version_closes_the_connection(
    target: Target, api_key: int, version: int, body: bytes, flexible: bool
) -> None:
    with RawClient(target.bootstrap_servers, timeout_s=10) as client:
        client.send_frame(_frame(api_key, version, body, flexible))
        assert client.is_closed_by_peer()


def _normalized_metadata(answer: Any, target: Target, topic_ids: dict[str, str]) -> Any:
    (broker,) = answer["brokers"]
    host, _, port = target.bootstrap_servers.partition(":")
    assert (broker["host"], broker["port"], broker["rack"]) == (host, int(port), None)
    node = broker["node_id"]
    assert answer["controller_id"] == node  # one node: it is the controller Kafka names
    assert isinstance(answer["cluster_id"], str) and answer["cluster_id"]
    for topic in answer["topics"]:
        if topic["topic_id"] is not None:
            assert uuid.UUID(topic["topic_id"]) != uuid.UUID(int=0)
            assert topic_ids.setdefault(topic["name"], topic["topic_id"]) == topic["topic_id"]
            topic["topic_id"] = "<uuid>"
        for p in topic["partitions"]:
            for key in ("leader_id",):
                assert p[key] == node
                p[key] = "<node>"
            for key in ("replica_nodes", "isr_nodes"):
                assert p[key] == [node]
                p[key] = ["<node>"]
    return {"topics": answer["topics"], "throttle_time": answer["throttle_time"]}


def test_metadata_shape_and_auto_creation(target: Target, names: str) -> None:
    made, absent, auto = f"{names}-made", f"{names}-absent", f"{names}-auto"
    ids: dict[str, str] = {}
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, made, 2)
        seen = {
            "created": _normalized_metadata(metadata(raw, [made], auto_create=False), target, ids),
            "absent, auto-creation not allowed": metadata(raw, [absent], auto_create=False)["topics"],
            "invalid name": metadata(raw, ["bad name!"], auto_create=True)["topics"],
            "auto-created, first answer": metadata(raw, [auto], auto_create=True)["topics"],
        }
        deadline = time.monotonic() + 30
        while (later := metadata(raw, [auto], auto_create=True))["topics"][0]["error_code"] != NONE:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        seen["auto-created, later"] = _normalized_metadata(later, target, ids)
        everything = metadata(raw, None, auto_create=False)
    assert made in {t["name"] for t in everything["topics"]}

    def missing(name: str, code: int) -> list[dict[str, Any]]:
        return [
            {
                "error_code": code,
                "name": name,
                "topic_id": None,
                "is_internal": False,
                "partitions": [],
                "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            }
        ]

    def present(name: str, partitions: int) -> dict[str, Any]:
        return {
            "throttle_time": 0,
            "topics": [
                {
                    "error_code": NONE,
                    "name": name,
                    "topic_id": "<uuid>",
                    "is_internal": False,
                    "partitions": [
                        {
                            "error_code": NONE,
                            "partition_index": index,
                            "leader_id": "<node>",
                            "leader_epoch": 0,
                            "replica_nodes": ["<node>"],
                            "isr_nodes": ["<node>"],
                            "offline_replicas": [],
                        }
                        for index in range(partitions)
                    ],
                    "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                }
            ],
        }

    assert seen == {
        "created": present(made, 2),
        "absent, auto-creation not allowed": missing(absent, UNKNOWN_TOPIC_OR_PARTITION),
        "invalid name": missing("bad name!", INVALID_TOPIC_EXCEPTION),
        # KRaft: the controller creates the topic; until then the topic is unknown
        "auto-created, first answer": missing(auto, UNKNOWN_TOPIC_OR_PARTITION),
        "auto-created, later": present(auto, 1),  # num.partitions=1 on both
    }


def test_the_offsets_topic_in_metadata(target: Target, names: str) -> None:
    with Raw(target.bootstrap_servers) as raw:
        # a group makes Kafka create __consumer_offsets
        raw.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [f"{names}-g"]})
        deadline = time.monotonic() + 5  # Apache Kafka has it within a second
        while (found := metadata(raw, ["__consumer_offsets"], auto_create=False)["topics"][0])[
            "error_code"
        ] != NONE:
            assert time.monotonic() < deadline, found
            time.sleep(0.2)
    assert (found["is_internal"], len(found["partitions"])) == (True, 50)


def _produce(raw: Raw, topic: str, partition: int, batch: bytes) -> dict[str, Any]:
    answer = raw.call(
        "Produce",
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
        },
    )
    (entry,) = answer["responses"][0]["partition_responses"]
    assert answer["throttle_time"] == 0
    return dict(entry)


def _fetch(raw: Raw, topic: str, offset: int, partition: int = 0, leader_epoch: int = -1) -> dict[str, Any]:
    answer = raw.call(
        "Fetch",
        12,
        {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": leader_epoch,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    assert (answer["error_code"], answer["session_id"]) == (NONE, 0)
    (entry,) = answer["responses"][0]["partitions"]
    entry["records"] = [(o, ts, v) for o, ts, _k, v in decode(entry["records"] or b"")]
    return dict(entry)


def _list_offsets(raw: Raw, topic: str, timestamp: int, partition: int = 0) -> dict[str, Any]:
    answer = raw.call(
        "ListOffsets",
        9,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": partition, "current_leader_epoch": -1, "timestamp": timestamp}
                    ],
                }
            ],
        },
    )
    (entry,) = answer["topics"][0]["partitions"]
    return dict(entry)


def _no_data(code: int, partition: int = 0, aborted: list[Any] | None = None) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "error_code": code,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "diverging_epoch": {"epoch": -1, "end_offset": -1},
        "current_leader": {"leader_id": -1, "leader_epoch": -1},
        "snapshot_id": {"end_offset": -1, "epoch": -1},
        "aborted_transactions": aborted,
        "preferred_read_replica": -1,
        "records": [],
    }


def test_produce_fetch_and_list_offsets_with_create_time(target: Target, names: str) -> None:
    topic = f"{names}-t"
    now = int(time.time() * 1000)
    # CreateTime: the records' own timestamps, out of order, so that max timestamp is not the last
    first = [now - 5000, now - 1000, now - 3000]
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        produced = [
            _produce(raw, topic, 0, kio_batch([b"a", b"b", b"c"], timestamps=first)),
            _produce(raw, topic, 0, kio_batch([b"d"], timestamps=[now - 4000])),
        ]
        fetched = _fetch(raw, topic, 1)
        at_end = _fetch(raw, topic, 4)
        offsets = {
            "latest": _list_offsets(raw, topic, -1),
            "earliest": _list_offsets(raw, topic, -2),
            "max timestamp": _list_offsets(raw, topic, -3),
            "earliest local": _list_offsets(raw, topic, -4),
            "latest tiered": _list_offsets(raw, topic, -5),
            "by timestamp, between": _list_offsets(raw, topic, now - 3500),
            "by timestamp, before all": _list_offsets(raw, topic, 0),
            "by timestamp, after all": _list_offsets(raw, topic, now + 60_000),
        }
    written = {
        "log_append_time": None,
        "record_errors": [],
        "error_message": None,
        "index": 0,
        "error_code": NONE,
    }
    assert produced == [
        {**written, "base_offset": 0, "log_start_offset": 0},
        {**written, "base_offset": 3, "log_start_offset": 0},
    ]
    data = {
        "partition_index": 0,
        "error_code": NONE,
        "high_watermark": 4,
        "last_stable_offset": 4,
        "log_start_offset": 0,
        "diverging_epoch": {"epoch": -1, "end_offset": -1},
        "current_leader": {"leader_id": -1, "leader_epoch": -1},
        "snapshot_id": {"end_offset": -1, "epoch": -1},
        "aborted_transactions": None,
        "preferred_read_replica": -1,
    }
    # a fetch returns whole batches: from offset 1, the batch holding offsets 0-2, then 3
    assert fetched == {
        **data,
        "records": [(0, first[0], b"a"), (1, first[1], b"b"), (2, first[2], b"c"), (3, now - 4000, b"d")],
    }
    assert at_end == {**data, "records": []}

    def found(offset: int, timestamp: int = -1, epoch: int = 0) -> dict[str, Any]:
        return {
            "partition_index": 0,
            "error_code": NONE,
            "timestamp": timestamp,
            "offset": offset,
            "leader_epoch": epoch,
        }

    assert offsets == {
        "latest": found(4),
        "earliest": found(0),
        "max timestamp": found(1, now - 1000),
        "earliest local": found(0),
        "latest tiered": found(-1, epoch=-1),  # no tiered storage: no offset
        "by timestamp, between": found(1, now - 1000),  # the first record at or after it
        "by timestamp, before all": found(0, now - 5000),
        "by timestamp, after all": found(-1, epoch=-1),
    }


def test_produce_and_fetch_with_log_append_time(target: Target, names: str) -> None:
    topic = f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1, {"message.timestamp.type": "LogAppendTime"})
        before = int(time.time() * 1000)
        produced = _produce(raw, topic, 0, kio_batch([b"a", b"b"], timestamps=[1000, 2000]))
        after = int(time.time() * 1000)
        fetched = _fetch(raw, topic, 0)
        by_time = _list_offsets(raw, topic, before - 1)
        latest_time = _list_offsets(raw, topic, -3)
    stamp = produced.pop("log_append_time")
    assert before - 5 <= stamp <= after + 5  # the broker's clock, within the request's window
    assert produced == {
        "index": 0,
        "error_code": NONE,
        "base_offset": 0,
        "log_start_offset": 0,
        "record_errors": [],
        "error_message": None,
    }
    # every record reads with the append time, not the producer's 1000/2000
    assert fetched["records"] == [(0, stamp, b"a"), (1, stamp, b"b")]
    assert (fetched["high_watermark"], fetched["last_stable_offset"], fetched["log_start_offset"]) == (
        2,
        2,
        0,
    )
    assert by_time == {
        "partition_index": 0,
        "error_code": NONE,
        "timestamp": stamp,
        "offset": 0,
        "leader_epoch": 0,
    }
    # max timestamp: the batch's (all records share it); Kafka names the last record with it
    assert (latest_time["timestamp"], latest_time["error_code"]) == (stamp, NONE)
    assert latest_time["offset"] in (0, 1)


def test_data_errors(target: Target, names: str) -> None:
    topic, none = f"{names}-t", f"{names}-none"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        _produce(raw, topic, 0, kio_batch([b"a", b"b", b"c"]))
        seen = {
            "produce, unknown topic": _produce(raw, none, 0, kio_batch([b"x"]))["error_code"],
            "produce, unknown partition": _produce(raw, topic, 4, kio_batch([b"x"]))["error_code"],
            "fetch, beyond the end": _fetch(raw, topic, 10),
            "fetch, negative offset": _fetch(raw, topic, -5),
            "fetch, unknown topic": _fetch(raw, none, 0),
            "fetch, unknown partition": _fetch(raw, topic, 0, partition=9),
            "fetch, a future leader epoch": _fetch(raw, topic, 0, leader_epoch=5),
            "list offsets, unknown topic": _list_offsets(raw, none, -1),
            "list offsets, unknown partition": _list_offsets(raw, topic, -1, partition=5),
        }
    missing = {"timestamp": -1, "offset": -1, "leader_epoch": -1, "error_code": UNKNOWN_TOPIC_OR_PARTITION}
    assert seen == {
        "produce, unknown topic": UNKNOWN_TOPIC_OR_PARTITION,
        "produce, unknown partition": UNKNOWN_TOPIC_OR_PARTITION,
        # a failed read carries no high watermark, stable offset or log start
        "fetch, beyond the end": _no_data(OFFSET_OUT_OF_RANGE),
        "fetch, negative offset": _no_data(OFFSET_OUT_OF_RANGE),
        # KafkaApis answers an unknown partition itself: the response's default, an empty aborted list
        "fetch, unknown topic": _no_data(UNKNOWN_TOPIC_OR_PARTITION, aborted=[]),
        "fetch, unknown partition": _no_data(UNKNOWN_TOPIC_OR_PARTITION, 9, aborted=[]),
        "fetch, a future leader epoch": _no_data(UNKNOWN_LEADER_EPOCH),
        "list offsets, unknown topic": {"partition_index": 0, **missing},
        "list offsets, unknown partition": {"partition_index": 5, **missing},
    }


def test_metadata_with_auto_creation_off_on_the_broker(target: Target, names: str) -> None:
    """``auto.create.topics.enable=false`` on the broker: an unknown topic stays unknown even when the
    request allows creation (a broker of its own on each side; the shared node has it on)."""
    from kgroup.testing import KafkaBroker
    from kgroup.testing.apache_kafka import ApacheKafka

    broker: KafkaBroker | ApacheKafka = (
        ApacheKafka(configs={"auto.create.topics.enable": False})
        if target.kind == "apache"
        else KafkaBroker(auto_create_topics=False)
    )
    with broker, Raw(broker.bootstrap_servers) as raw:
        first = metadata(raw, [f"{names}-t"], auto_create=True)["topics"]
        time.sleep(0.5)  # long enough for Kafka's controller to have created it, had it been asked to
        again = metadata(raw, [f"{names}-t"], auto_create=True)["topics"]
    absent = {
        "error_code": UNKNOWN_TOPIC_OR_PARTITION,
        "name": f"{names}-t",
        "topic_id": None,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
    assert first == again == [absent]
