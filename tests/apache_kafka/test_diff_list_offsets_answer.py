"""Differential: a ListOffsets request naming many partitions — the order of its answer, a partition
named twice, special timestamps a version does not know — sent raw to kgroup and to Apache Kafka 4.4.0
(the ``target`` fixture).

Kafka answers from ``groupBy(topic)`` of a Scala ``mutable.HashMap`` of the partitions, so the topics
come in the order of their names' hashes and each topic's partitions in the order of theirs: each
broker's answer is checked against ``kgroup.broker.answer_order.list_offsets_order`` for its own topic
names, and the answers (codes, offsets, timestamps, epochs) are compared across the two.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic
from tests.log.batches import kio_batch

from kgroup.broker.answer_order import list_offsets_order

pytestmark = pytest.mark.apache_kafka

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42


def _list(raw: Raw, version: int, entries: list[tuple[str, int, int]]) -> Any:
    """ListOffsets of (topic, partition, timestamp), a topic entry each."""
    topics = [
        {"name": t, "partitions": [{"partition_index": p, "current_leader_epoch": -1, "timestamp": ts}]}
        for t, p, ts in entries
    ]
    fields = {"replica_id": -1, "isolation_level": 0, "topics": topics}
    if version >= 10:
        fields["timeout"] = 30_000
    return raw.call("ListOffsets", version, fields)


def _seen(answer: Any, prefix: str) -> list[tuple[str, int, int, int, int, int]]:
    """(topic without the run's prefix, partition, code, timestamp, offset, epoch) in the answer's order."""
    return [
        (
            t["name"][len(prefix) :],
            p["partition_index"],
            p["error_code"],
            p["timestamp"],
            p["offset"],
            p["leader_epoch"],
        )
        for t in answer["topics"]
        for p in t["partitions"]
    ]


def _layout(answer: Any) -> list[tuple[str, list[int]]]:
    return [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in answer["topics"]]


def test_many_topics_twice_named_and_timestamps_a_version_does_not_know(target: Target, names: str) -> None:
    topics = [f"{names}-{x}" for x in ("orders", "a", "b", "events", "t5", "zz")]
    nope = f"{names}-nope"
    with Raw(target.bootstrap_servers) as raw:
        for topic in topics:
            create_topic(raw, topic, 4)
        for n in range(3):  # three records in orders-1 (timestamps 1000, 2000, 3000)
            produced = raw.call(
                "Produce",
                9,
                {
                    "transactional_id": None,
                    "acks": -1,
                    "timeout": 10_000,
                    "topic_data": [
                        {
                            "name": topics[0],
                            "partition_data": [
                                {"index": 1, "records": kio_batch([b"v"], timestamp_ms=1000 * (n + 1))}
                            ],
                        }
                    ],
                },
            )
            assert produced["responses"][0]["partition_responses"][0]["error_code"] == NONE
        entries = [(t, p, -1) for t in reversed(topics) for p in (3, 0, 2, 1)]
        entries += [
            (topics[0], 1, 2000),
            (topics[0], 1, -2),
            (nope, 0, -1),
            (topics[1], 9, -1),
            (topics[2], 0, -3),
        ]
        entries[5] = (topics[4], 0, -7)  # no such special timestamp
        v11 = _list(raw, 11, entries)
        v6 = _list(raw, 6, [(topics[0], 1, -3), (topics[1], 0, -4), (topics[2], 1, -1), (topics[3], 0, 1500)])
        v11_special = _list(raw, 11, [(topics[0], 1, t) for t in (-3,)] + [(topics[1], 0, t) for t in (-4,)])
        pending = _list(raw, 11, [(topics[0], 1, -6), (topics[2], 2, -5)])
    # each answer in the order of Kafka's maps, for this broker's names
    answered = list(dict.fromkeys((t, p) for t, p, _ in entries))
    assert _layout(v11) == list_offsets_order(answered)
    assert _layout(v6) == list_offsets_order([(topics[0], 1), (topics[1], 0), (topics[2], 1), (topics[3], 0)])
    prefix = f"{names}-"
    got = {(t, p): rest for t, p, *rest in _seen(v11, prefix)}
    assert got[("orders", 1)] == [INVALID_REQUEST, -1, -1, -1]  # named three times
    assert got[("t5", 0)] == [UNSUPPORTED_VERSION, -1, -1, -1]
    assert got[("nope", 0)][0] == UNKNOWN_TOPIC_OR_PARTITION
    assert got[("a", 9)][0] == UNKNOWN_TOPIC_OR_PARTITION
    assert got[("orders", 0)] == [NONE, -1, 0, 0]
    assert sorted(_seen(v6, prefix)) == [
        ("a", 0, UNSUPPORTED_VERSION, -1, -1, -1),  # earliest-local from v8
        ("b", 1, NONE, -1, 0, 0),
        ("events", 0, NONE, -1, -1, -1),  # no record at or after 1500
        ("orders", 1, UNSUPPORTED_VERSION, -1, -1, -1),  # max timestamp from v7
    ]
    assert sorted(_seen(v11_special, prefix)) == [("a", 0, NONE, -1, 0, 0), ("orders", 1, NONE, 3000, 2, 0)]
    assert sorted(_seen(pending, prefix)) == sorted(
        [("orders", 1, *EXPECTED_PENDING), ("b", 2, NONE, -1, -1, -1)]
    )


EXPECTED_PENDING = (NONE, -1, -1, -1)  # earliest pending upload (-6) without tiered storage
