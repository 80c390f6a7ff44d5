"""The differential suite, every version: each version of each API kgroup serves, as Apache Kafka 4.4.0
serves it, sent raw to both brokers (the ``target`` fixture) and the answers compared field by field.

What the newer versions carry is exercised, not only their layout: topics named by id in Produce
v13, Fetch v13-v18, OffsetCommit v10 and OffsetFetch v10 (and an id the broker does not know:
UNKNOWN_TOPIC_ID); ListOffsets' earliest pending upload (-6, v11); Metadata v13's top-level error
code; DescribeGroups v6's GROUP_ID_NOT_FOUND and its message; DeleteGroups v3's error message;
ApiVersions v5's cluster and node ids (REBOOTSTRAP_REQUIRED for another cluster or node,
INVALID_REQUEST for one without the other) and v3+'s software name check.

Normalized, and why: topic ids (random in Kafka, derived from the name in kgroup) are read from the
broker's own Metadata answer and must be the same in every answer; node ids and the cluster id are
read from Metadata too (they are chosen per run).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, find_coordinator, metadata
from tests.broker.rawdata import consumer_join
from tests.log.batches import decode, kio_batch

from kgroup.broker.dispatch import registered_versions
from kgroup.wire.api_keys import ApiKey

pytestmark = pytest.mark.apache_kafka

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42
GROUP_ID_NOT_FOUND = 69
UNKNOWN_TOPIC_ID = 100
REBOOTSTRAP_REQUIRED = 129
STRANGER = uuid.UUID("0b5e7f2a-1d3c-4e6f-8a9b-0c1d2e3f4a5b")  # an id no topic has


def _versions(api: ApiKey) -> range:
    low, high = registered_versions()[api]
    return range(low, high + 1)


def _topic_id(raw: Raw, topic: str) -> uuid.UUID:
    (entry,) = metadata(raw, [topic], auto_create=False)["topics"]
    return uuid.UUID(entry["topic_id"])


def test_api_versions_every_version_and_v5s_cluster_and_node(target: Target) -> None:
    with Raw(target.bootstrap_servers) as raw:
        shape = metadata(raw, None, auto_create=False)
        cluster, (node,) = shape["cluster_id"], [b["node_id"] for b in shape["brokers"]]
        software = {"client_software_name": "kgroup-diff", "client_software_version": "1.0"}
        ranges = {v: raw.call("ApiVersions", v, software)["api_keys"] for v in range(6)}
        v5 = {
            "right cluster and node": raw.call(
                "ApiVersions", 5, {**software, "cluster_id": cluster, "node_id": node}
            ),
            "another cluster": raw.call(
                "ApiVersions", 5, {**software, "cluster_id": "x" * 22, "node_id": node}
            ),
            "another node": raw.call(
                "ApiVersions", 5, {**software, "cluster_id": cluster, "node_id": node + 7}
            ),
            "a cluster without a node": raw.call("ApiVersions", 5, {**software, "cluster_id": cluster}),
            "a node without a cluster": raw.call("ApiVersions", 5, {**software, "node_id": node}),
            "a software name with a space": raw.call(
                "ApiVersions", 4, {**software, "client_software_name": "kgroup diff"}
            ),
        }
    assert all(ranges[v] == ranges[0] for v in range(6))  # every version names the same ranges
    assert {k: (a["error_code"], len(a["api_keys"]) > 0) for k, a in v5.items()} == {
        "right cluster and node": (NONE, True),
        "another cluster": (REBOOTSTRAP_REQUIRED, False),
        "another node": (REBOOTSTRAP_REQUIRED, False),
        "a cluster without a node": (INVALID_REQUEST, False),
        "a node without a cluster": (INVALID_REQUEST, False),
        "a software name with a space": (INVALID_REQUEST, False),
    }


def _produce(raw: Raw, version: int, topic: str, topic_id: uuid.UUID, value: bytes) -> Any:
    answer = raw.call(
        "Produce",
        version,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [
                {
                    "name": topic,
                    "topic_id": topic_id,
                    "partition_data": [{"index": 0, "records": kio_batch([value])}],
                }
            ],
        },
    )
    (topic_answer,) = answer["responses"]
    (entry,) = topic_answer["partition_responses"]
    return (
        topic_answer.get("topic_id"),
        entry["error_code"],
        entry["base_offset"],
        answer.get("node_endpoints", []),
    )


def _fetch(raw: Raw, version: int, topic: str, topic_id: uuid.UUID, offset: int) -> Any:
    answer = raw.call(
        "Fetch",
        version,
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
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
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
    (topic_answer,) = answer["responses"]
    (entry,) = topic_answer["partitions"]
    values = [v for _o, _ts, _k, v in decode(entry["records"] or b"")]
    return (
        topic_answer.get("topic_id", topic_answer.get("topic")),
        entry["error_code"],
        entry["high_watermark"],
        values[:1],
        answer.get("node_endpoints", []),
    )


def test_produce_and_fetch_every_version_by_name_and_by_id(target: Target, names: str) -> None:
    topic = f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        topic_id = _topic_id(raw, topic)
        produced = {v: _produce(raw, v, topic, topic_id, f"v{v}".encode()) for v in _versions(ApiKey.PRODUCE)}
        fetched = {v: _fetch(raw, v, topic, topic_id, 0) for v in _versions(ApiKey.FETCH)}
        unknown = {
            "produce v13": _produce(raw, 13, topic, STRANGER, b"lost"),
            "fetch v13": _fetch(raw, 13, topic, STRANGER, 0),
            "fetch v18": _fetch(raw, 18, topic, STRANGER, 0),
        }
    sent = list(_versions(ApiKey.PRODUCE))
    assert sent == list(range(3, 14))
    assert produced == {v: (str(topic_id) if v >= 13 else None, NONE, i, []) for i, v in enumerate(sent)}
    assert fetched == {
        v: (str(topic_id) if v >= 13 else topic, NONE, len(sent), [b"v3"], []) for v in range(4, 19)
    }
    assert unknown == {
        "produce v13": (str(STRANGER), UNKNOWN_TOPIC_ID, -1, []),
        "fetch v13": (str(STRANGER), UNKNOWN_TOPIC_ID, -1, [], []),
        "fetch v18": (str(STRANGER), UNKNOWN_TOPIC_ID, -1, [], []),
    }


def test_list_offsets_and_metadata_every_version(target: Target, names: str) -> None:
    topic = f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 2)
        topic_id = _topic_id(raw, topic)
        _produce(raw, 9, topic, topic_id, b"a")
        listed = {}
        for v in _versions(ApiKey.LIST_OFFSETS):
            stamps = [-1, -2] + ([-6] if v >= 11 else [])  # -6: earliest pending upload (v11)
            listed[v] = []
            for stamp in stamps:  # one request each: Kafka refuses a partition named twice
                answer = raw.call(
                    "ListOffsets",
                    v,
                    {
                        "replica_id": -1,
                        "isolation_level": 0,
                        "timeout": 5_000,
                        "topics": [
                            {
                                "name": topic,
                                "partitions": [
                                    {"partition_index": 0, "current_leader_epoch": -1, "timestamp": stamp}
                                ],
                            }
                        ],
                    },
                )
                (p,) = answer["topics"][0]["partitions"]
                listed[v].append((p["error_code"], p["offset"], p.get("leader_epoch")))
        described = {}
        for v in _versions(ApiKey.METADATA):
            answer = raw.call(
                "Metadata",
                v,
                {
                    "topics": [{"name": topic, "topic_id": None}],
                    "allow_auto_topic_creation": False,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False,
                },
            )
            (entry,) = answer["topics"]
            described[v] = (
                answer.get("error_code"),
                entry["error_code"],
                entry["name"],
                entry.get("topic_id"),
                [
                    p["partition_index"]
                    for p in sorted(entry["partitions"], key=lambda p: p["partition_index"])
                ],
            )
    epoch = {v: None if v < 4 else 0 for v in _versions(ApiKey.LIST_OFFSETS)}  # v4+ carry the epoch
    assert listed == {
        v: [(NONE, 1, epoch[v]), (NONE, 0, epoch[v])]
        + ([(NONE, -1, -1)] if v >= 11 else [])  # no tiered storage: no pending upload, no offset
        for v in _versions(ApiKey.LIST_OFFSETS)
    }
    assert described == {
        v: (NONE if v >= 13 else None, NONE, topic, str(topic_id) if v >= 10 else None, [0, 1])
        for v in range(0, 14)
    }


def _commit(raw: Raw, version: int, group: str, topic: str, topic_id: uuid.UUID, offset: int) -> Any:
    answer = raw.call(
        "OffsetCommit",
        version,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time": -1,
            "topics": [
                {
                    "name": topic,
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": f"m{offset}",
                        }
                    ],
                }
            ],
        },
    )
    (topic_answer,) = answer["topics"]
    return topic_answer.get("topic_id", topic_answer.get("name")), [
        (p["partition_index"], p["error_code"]) for p in topic_answer["partitions"]
    ]


def _coordinator_ready(raw: Raw, group: str) -> None:
    """Wait (bounded) until the group's coordinator answers: Kafka's answers NOT_COORDINATOR while it
    loads the offsets topic's partition after creating it."""
    deadline = time.monotonic() + 30
    while True:
        answer = raw.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False})
        if answer["groups"][0]["error_code"] not in (14, 15, 16):
            return
        assert time.monotonic() < deadline, f"the coordinator of {group} is not ready after 30 s"
        time.sleep(0.2)


def _fetch_offsets(raw: Raw, version: int, group: str, topic: str | None, topic_id: uuid.UUID | None) -> Any:
    by_id = {"topic_id": topic_id} if version >= 10 else {}  # (v1-v7's topic entity has another name)
    topics = None if topic is None else [{"name": topic, **by_id, "partition_indexes": [0]}]
    answer = raw.call(
        "OffsetFetch",
        version,
        {
            "group_id": group,
            "topics": topics,
            "groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": topics}],
            "require_stable": False,
        },
    )
    entries = answer["groups"][0]["topics"] if version >= 8 else answer["topics"]
    return [
        (
            t.get("topic_id", t.get("name")),
            p["partition_index"],
            p["committed_offset"],
            p["metadata"],
            p["error_code"],
        )
        for t in entries
        for p in t["partitions"]
    ]


def test_offset_commit_and_fetch_every_version_by_name_and_by_id(target: Target, names: str) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        topic_id = _topic_id(raw, topic)
    with Raw(find_coordinator(target.bootstrap_servers, group)) as raw:
        _coordinator_ready(raw, group)
        committed = {v: _commit(raw, v, group, topic, topic_id, v) for v in _versions(ApiKey.OFFSET_COMMIT)}
        fetched = {v: _fetch_offsets(raw, v, group, topic, topic_id) for v in _versions(ApiKey.OFFSET_FETCH)}
        every = {v: _fetch_offsets(raw, v, group, None, None) for v in (9, 10)}
        unknown = {
            "commit v10": _commit(raw, 10, group, topic, STRANGER, 99),
            "fetch v10": _fetch_offsets(raw, 10, group, topic, STRANGER),
        }
    last = max(_versions(ApiKey.OFFSET_COMMIT))
    assert last == 10
    assert committed == {
        v: (str(topic_id) if v >= 10 else topic, [(0, NONE)]) for v in _versions(ApiKey.OFFSET_COMMIT)
    }
    name_or_id = {v: str(topic_id) if v >= 10 else topic for v in _versions(ApiKey.OFFSET_FETCH)}
    assert fetched == {
        v: [(name_or_id[v], 0, last, f"m{last}", NONE)] for v in _versions(ApiKey.OFFSET_FETCH)
    }
    assert every == {v: [(name_or_id[v], 0, last, f"m{last}", NONE)] for v in (9, 10)}
    assert unknown == {
        "commit v10": (str(STRANGER), [(0, UNKNOWN_TOPIC_ID)]),
        "fetch v10": [(str(STRANGER), 0, -1, "", UNKNOWN_TOPIC_ID)],
    }


def test_describe_groups_of_a_consumer_group(target: Target, names: str) -> None:
    """DescribeGroups describes classic groups: a KIP-848 consumer group is Dead with no error before
    v6, and GROUP_ID_NOT_FOUND with "… is not a classic group." from v6."""
    topic, group = f"{names}-t", f"{names}-cg"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    with Raw(find_coordinator(target.bootstrap_servers, group)) as raw:
        _coordinator_ready(raw, group)
        joined = raw.call("ConsumerGroupHeartbeat", 1, consumer_join(group, str(uuid.uuid4()), topic))
        assert joined["error_code"] == NONE, joined
        described = {}
        for v in (5, 6):
            answer = raw.call(
                "DescribeGroups", v, {"groups": [group], "include_authorized_operations": False}
            )
            (g,) = answer["groups"]
            described[v] = (g["error_code"], g["group_state"], g["members"], g.get("error_message"))
    assert described == {
        5: (NONE, "Dead", [], None),
        6: (GROUP_ID_NOT_FOUND, "Dead", [], f"Group {group} is not a classic group."),
    }


def test_describe_and_delete_groups_every_version(target: Target, names: str) -> None:
    topic, group, nobody = f"{names}-t", f"{names}-g", f"{names}-nobody"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    # (one node: the coordinator of both groups, once it has loaded the offsets topic)
    with Raw(find_coordinator(target.bootstrap_servers, group)) as raw:
        _coordinator_ready(raw, group)
        described = {}
        for v in _versions(ApiKey.DESCRIBE_GROUPS):
            answer = raw.call(
                "DescribeGroups", v, {"groups": [nobody], "include_authorized_operations": False}
            )
            (g,) = answer["groups"]
            described[v] = (g["error_code"], g["group_state"], g.get("error_message"))
        deleted = {}
        for v in _versions(ApiKey.DELETE_GROUPS):
            _commit(raw, 9, group, topic, uuid.UUID(int=0), 1)  # an Empty group with an offset
            answer = raw.call("DeleteGroups", v, {"groups_names": [group, nobody]})
            deleted[v] = [(r["group_id"], r["error_code"], r.get("error_message")) for r in answer["results"]]
    assert described == {
        **{v: (NONE, "Dead", None) for v in range(0, 6)},
        6: (GROUP_ID_NOT_FOUND, "Dead", f"Group {nobody} not found."),
    }
    # (in an order of Kafka's own: the groups' offsets partitions in a Java HashMap's order; compared as
    # sets here — the order is not a matter of versions)
    assert {v: sorted(results) for v, results in deleted.items()} == {
        v: sorted([(group, NONE, None), (nobody, GROUP_ID_NOT_FOUND, None)]) for v in range(0, 4)
    }
