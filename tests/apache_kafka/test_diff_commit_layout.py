"""Differential: the layout of an OffsetCommit answer whose request names a topic in more than one
entry — sent raw to kgroup and to Apache Kafka 4.4.0 (the ``target`` fixture). ``KafkaApis`` answers
the partitions it refuses itself (an unknown topic or partition) collected by topic, and the
coordinator's answers in the entries they were asked in: each as it is when nothing was refused, else
added to its topic's collected entry (``OffsetCommitResponse.Builder.merge``).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_hostile import _coordinator
from tests.apache_kafka.wire import Raw, create_topic

pytestmark = pytest.mark.apache_kafka

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3


def _commit(raw: Raw, group: str, entries: list[tuple[str, list[int]]]) -> Any:
    topics = [
        {
            "name": name,
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
        for name, partitions in entries
    ]
    fields = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
    }
    return raw.call("OffsetCommit", 8, {**fields, "topics": topics})


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
