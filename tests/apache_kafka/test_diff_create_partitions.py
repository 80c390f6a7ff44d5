"""Differential: CreatePartitions (API key 37) sent raw to kgroup and to Apache Kafka 4.4.0 (the ``target``
fixture) — a topic grown (v0 and v3), validate_only, each error with its message (a count no larger,
an unknown topic, a repeated name, a request's own assignment Kafka refuses), the order of an answer
mixing them, and Metadata's partitions afterwards.

The topics' names are the same on both brokers (the answer's order is that of Java's ``HashSet`` of the
names, so it depends on them): ``cp<pid>-…``, unique in a run. A broker's id differs (kgroup's is 0,
Kafka's 1): requests and expected messages name it from Metadata.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, metadata
from tests.apache_kafka.wire import create_partitions as _grow

from kgroup.javacompat import hashmap_order_of

pytestmark = pytest.mark.apache_kafka

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_PARTITIONS = 37
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_REQUEST = 42
POLICY_VIOLATION = 44


def _partitions(raw: Raw, name: str) -> list[tuple[int, list[int]]]:
    (topic,) = metadata(raw, [name], auto_create=False)["topics"]
    assert topic["error_code"] == NONE, topic
    return sorted((p["partition_index"], p["replica_nodes"]) for p in topic["partitions"])


def _partitions_grown(raw: Raw, name: str, count: int) -> list[tuple[int, list[int]]]:
    """Metadata's partitions once it names ``count`` of them (bounded: 30 s, then whatever it names).

    Kafka answers CreatePartitions once its controller has committed the new partitions; the broker's
    metadata cache takes them in a moment later, so a Metadata request sent at once may still name the
    old count (kgroup's answers it at once)."""
    deadline = time.monotonic() + 30
    while True:
        partitions = _partitions(raw, name)
        if len(partitions) >= count or time.monotonic() > deadline:
            return partitions
        time.sleep(0.05)


def _node(raw: Raw) -> int:
    (broker,) = metadata(raw, [], auto_create=False)["brokers"]
    return int(broker["node_id"])


def test_grow_validate_only_and_each_error(target: Target) -> None:
    t, missing = f"cp{os.getpid()}-t", f"cp{os.getpid()}-missing"
    with Raw(target.bootstrap_servers) as raw:
        node = _node(raw)
        create_topic(raw, t, 2)
        answers: list[Any] = [
            _grow(raw, [(t, 4, None)], validate_only=True),
            _partitions(raw, t),  # validate_only changed nothing
            _grow(raw, [(t, 3, None)], version=0),
            _grow(raw, [(t, 3, None)]),
            _grow(raw, [(t, 1, None)]),
            _grow(raw, [(t, -1, None)]),
            _grow(raw, [(missing, 2, None)]),
            _grow(raw, [(missing, 2, None)], validate_only=True),
            _grow(raw, [(t, 5, [[node]])]),
            _grow(raw, [(t, 4, [[]])]),
            _grow(raw, [(t, 4, [[node + 100]])]),
            _grow(raw, [(t, 4, [[node, node]])]),
            _grow(raw, [(t, 4, [[node, node + 100]])]),
            _grow(raw, [(t, 4, [[node]])], validate_only=True),
            _partitions(raw, t),
            _grow(raw, [(t, 5, [[node], [node]])]),
            _grow(raw, [(t, 6, None)]),
            _partitions_grown(raw, t, 6),
        ]
    no_increase = "would not be an increase."
    assert answers == [
        [(t, NONE, None)],
        [(0, [node]), (1, [node])],
        [(t, NONE, None)],
        [(t, INVALID_PARTITIONS, "Topic already has 3 partition(s).")],
        [(t, INVALID_PARTITIONS, f"The topic {t} currently has 3 partition(s); 1 {no_increase}")],
        [(t, INVALID_PARTITIONS, f"The topic {t} currently has 3 partition(s); -1 {no_increase}")],
        [(missing, UNKNOWN_TOPIC_OR_PARTITION, None)],
        [(missing, UNKNOWN_TOPIC_OR_PARTITION, None)],
        [
            (
                t,
                INVALID_REPLICA_ASSIGNMENT,
                "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
            )
        ],
        [(t, INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list.")],
        [
            (
                t,
                INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {node + 100}, but no such broker is "
                "registered.",
            )
        ],
        [
            (
                t,
                INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {node} more than once.",
            )
        ],
        [
            (
                t,
                INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {node + 100}, but no such broker is "
                "registered.",
            )
        ],
        [(t, NONE, None)],
        [(0, [node]), (1, [node]), (2, [node])],
        [(t, NONE, None)],
        [(t, NONE, None)],
        [(p, [node]) for p in range(6)],
    ]


def test_an_answer_mixing_outcomes_is_ordered_as_kafkas_hash_sets(target: Target) -> None:
    """Repeated names first, then the others' outcomes, each in its ``HashSet``'s order."""
    prefix = f"cp{os.getpid()}-mix"
    grow, same, gone, twice, again = (f"{prefix}-{s}" for s in ("grow", "same", "gone", "twice", "again"))
    extra = [f"{prefix}-x{i}" for i in range(14)]  # past 12 names: the set's table doubles
    with Raw(target.bootstrap_servers) as raw:
        for name in (grow, same, *extra):
            create_topic(raw, name, 1)
        request: list[tuple[str, int, list[list[int]] | None]] = [
            (twice, 2, None),
            (grow, 2, None),
            (again, 3, None),
            (gone, 2, None),
            (same, 1, None),
            (twice, 3, None),
            *((name, 2, None) for name in extra),
            (again, 4, None),
        ]
        answer = _grow(raw, request)
        counts = {name: len(_partitions_grown(raw, name, 2)) for name in (grow, *extra)}
        counts[same] = len(_partitions(raw, same))
    distinct = list(dict.fromkeys(name for name, _, _ in request))
    repeated = hashmap_order_of([twice, again], 2)
    outcome = {
        grow: (NONE, None),
        same: (INVALID_PARTITIONS, "Topic already has 1 partition(s)."),
        gone: (UNKNOWN_TOPIC_OR_PARTITION, None),
        **{name: (NONE, None) for name in extra},
    }
    others = hashmap_order_of([n for n in distinct if n not in repeated], len(distinct))
    assert answer == [(name, INVALID_REQUEST, "Duplicate topic name.") for name in repeated] + [
        (name, *outcome[name]) for name in others
    ]
    assert counts == {grow: 2, same: 1, **{name: 2 for name in extra}}


def test_more_than_10000_added_partitions_fail_the_whole_request(target: Target) -> None:
    """Kafka 4.4.0's controller counts what the request adds to existing topics (an unknown topic and
    a count no larger add nothing): past 10,000 every topic of the request is answered
    ``POLICY_VIOLATION``, in the request's order, and nothing is grown."""
    prefix = f"cp{os.getpid()}-many"
    a, b, missing = f"{prefix}-a", f"{prefix}-b", f"{prefix}-missing"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, a, 1)
        create_topic(raw, b, 2)
        refused = _grow(raw, [(b, 5003, None), (missing, 20_000, None), (a, 5001, None)])  # 10,001
        counts = (len(_partitions(raw, a)), len(_partitions(raw, b)))
        # exactly 10,000 in all passes the count (validate_only: nothing is made)
        allowed = _grow(raw, [(b, 5002, None), (a, 5001, None), (missing, 20_000, None)], validate_only=True)
    message = "Excessively large number of additional partitions per request."
    assert refused == [(name, POLICY_VIOLATION, message) for name in (b, missing, a)]
    assert counts == (1, 2)
    assert sorted(allowed) == sorted(
        [(a, NONE, None), (b, NONE, None), (missing, UNKNOWN_TOPIC_OR_PARTITION, None)]
    )
