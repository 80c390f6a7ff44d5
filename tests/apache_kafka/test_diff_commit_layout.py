"""Differential: the layout of an OffsetCommit answer whose request names a topic in more than one
entry — sent raw to kgroup and to Apache Kafka 4.4.0 (the ``target`` fixture). ``KafkaApis`` answers
the partitions it refuses itself (an unknown topic or partition) collected by topic, and the
coordinator's answers in the entries they were asked in: each as it is when nothing was refused, else
added to its topic's collected entry (``OffsetCommitResponse.Builder.merge``).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_hostile import _coordinator
from tests.apache_kafka.wire import Raw, create_topic, metadata

pytestmark = pytest.mark.apache_kafka

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
UNKNOWN_TOPIC_ID = 100


def _commit(raw: Raw, group: str, entries: list[tuple[Any, list[int]]], version: int = 8) -> Any:
    """OffsetCommit of (topic, partitions) entries: topics by name, or by id from v10."""
    key = "topic_id" if version >= 10 else "name"
    topics = [
        {
            key: topic,
            "partitions": [
                {
                    "partition_index": p,
                    "committed_offset": 5,
                    "committed_leader_epoch": -1,
                    "committed_metadata": "",
                }
                for p in partitions
            ],
        }
        for topic, partitions in entries
    ]
    fields = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
    }
    return raw.call("OffsetCommit", version, {**fields, "topics": topics})


def _layout(answer: Any, prefix: str) -> list[tuple[str, list[tuple[int, int]]]]:
    return [
        (t["name"].replace(prefix, "P"), [(p["partition_index"], p["error_code"]) for p in t["partitions"]])
        for t in answer["topics"]
    ]


def test_a_topic_in_two_entries(target: Target, names: str) -> None:
    a, b, nope = f"{names}-a", f"{names}-b", f"{names}-nope"
    group = f"{names}-g"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, a, 3)
        create_topic(raw, b, 1)
    with Raw(_coordinator(target.bootstrap_servers, group)) as raw:
        clean = _commit(raw, group, [(a, [0, 0, 2]), (b, [0]), (a, [1])])
        refused = _commit(raw, group, [(a, [0, 9]), (nope, [0]), (b, [0]), (a, [1])])
    assert _layout(clean, names) == [("P-a", [(0, 0), (0, 0), (2, 0)]), ("P-b", [(0, 0)]), ("P-a", [(1, 0)])]
    assert _layout(refused, names) == [
        ("P-a", [(9, UNKNOWN_TOPIC_OR_PARTITION), (0, NONE), (1, NONE)]),
        ("P-nope", [(0, UNKNOWN_TOPIC_OR_PARTITION)]),
        ("P-b", [(0, NONE)]),
    ]


def _fetch_layout(
    answer: Any, prefix: str, names: dict[Any, str]
) -> list[tuple[str, list[tuple[int, int, int]]]]:
    (group,) = answer["groups"]
    return [
        (
            (t.get("name") or names.get(str(t.get("topic_id")), "unknown")).replace(prefix, "P"),
            [(p["partition_index"], p["committed_offset"], p["error_code"]) for p in t["partitions"]],
        )
        for t in group["topics"]
    ]


def test_offset_fetch_answers_the_entries_it_was_asked(target: Target, names: str) -> None:
    """``fetchOffsetsForGroup``: the coordinator's answer in the request's entries (a topic named twice
    answered twice, a partition named twice in its entry twice), then the entries refused beside it
    (here a topic id the broker does not know, in v10)."""
    a, b, nope = f"{names}-a", f"{names}-b", f"{names}-nope"
    group = f"{names}-g"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, a, 3)
        create_topic(raw, b, 1)
        ids = {t["name"]: t["topic_id"] for t in metadata(raw, [a, b], auto_create=False)["topics"]}
    with Raw(_coordinator(target.bootstrap_servers, group)) as raw:
        _commit(raw, group, [(a, [0, 1, 2]), (b, [0])])
        by_name = raw.call(
            "OffsetFetch",
            8,
            {
                "groups": [
                    {
                        "group_id": group,
                        "topics": [
                            {"name": a, "partition_indexes": [2, 0, 0]},
                            {"name": nope, "partition_indexes": [0]},
                            {"name": b, "partition_indexes": [0]},
                            {"name": a, "partition_indexes": [1]},
                        ],
                    }
                ],
                "require_stable": False,
            },
        )
        unknown = uuid.UUID(int=4242)
        by_id = raw.call(
            "OffsetFetch",
            10,
            {
                "groups": [
                    {
                        "group_id": group,
                        "member_id": None,
                        "member_epoch": -1,
                        "topics": [
                            {"topic_id": uuid.UUID(str(ids[a])), "partition_indexes": [0]},
                            {"topic_id": unknown, "partition_indexes": [1]},
                            {"topic_id": uuid.UUID(str(ids[a])), "partition_indexes": [1]},
                        ],
                    }
                ],
                "require_stable": False,
            },
        )
    assert _fetch_layout(by_name, names, {}) == [
        ("P-a", [(2, 5, NONE), (0, 5, NONE), (0, 5, NONE)]),
        ("P-nope", [(0, -1, NONE)]),
        ("P-b", [(0, 5, NONE)]),
        ("P-a", [(1, 5, NONE)]),
    ]
    id_names = {str(uuid.UUID(str(v))): k for k, v in ids.items()}
    assert _fetch_layout(by_id, names, id_names) == [
        ("P-a", [(0, 5, NONE)]),
        ("P-a", [(1, 5, NONE)]),
        ("unknown", [(1, -1, UNKNOWN_TOPIC_ID)]),
    ]


def test_a_topic_entry_without_partitions(target: Target, names: str) -> None:
    """``handleOffsetCommitRequest`` answers an entry with no partitions only when it refuses its topic
    itself (its builder's ``addPartitions`` makes the topic's entry, empty): a topic the broker does not
    have (by name, or an unknown id in v10); an entry of a topic it has goes to the coordinator only with
    partitions, so an empty one is not answered."""
    a, b, nope = f"{names}-a", f"{names}-b", f"{names}-nope"
    group = f"{names}-g"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, a, 2)
        create_topic(raw, b, 1)
        ids = {t["name"]: t["topic_id"] for t in metadata(raw, [a, b], auto_create=False)["topics"]}
    unknown = uuid.UUID(int=4343)
    with Raw(_coordinator(target.bootstrap_servers, group)) as raw:
        mixed = _commit(raw, group, [(a, []), (nope, []), (b, [0]), (nope, []), (a, [1])])
        only_empty = _commit(raw, group, [(a, []), (nope, []), (b, [])])
        known_empty = _commit(raw, group, [(a, []), (b, [])])
        by_id = _commit(
            raw,
            group,
            [(uuid.UUID(str(ids[a])), []), (unknown, []), (uuid.UUID(str(ids[b])), [0])],
            version=10,
        )
    assert _layout(mixed, names) == [("P-nope", []), ("P-b", [(0, NONE)]), ("P-a", [(1, NONE)])]
    assert _layout(only_empty, names) == [("P-nope", [])]
    assert _layout(known_empty, names) == []
    by_id_layout = [
        (str(t["topic_id"]), [(p["partition_index"], p["error_code"]) for p in t["partitions"]])
        for t in by_id["topics"]
    ]
    assert by_id_layout == [(str(unknown), []), (str(uuid.UUID(str(ids[b]))), [(0, NONE)])]
