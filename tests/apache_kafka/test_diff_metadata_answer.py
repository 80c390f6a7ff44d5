"""Differential: a Metadata request naming many topics — a topic named twice, topics that do not
exist, invalid names, topics by id — sent raw to kgroup and to Apache Kafka 4.4.0 (the ``target``
fixture).

Kafka takes the names as a Scala ``Set`` (``KafkaApis.handleTopicMetadataRequest``): a name asked twice
is answered once, and more than four come in the order of their hashes, the existing topics first,
then the others in a ``java.util.HashSet``'s order. Each broker's answer is checked against that
model (``kgroup.scalacompat.ImmutableSetOrder``, ``kgroup.javacompat.JavaHashMap``) for its own names
(they differ between the two runs), and the answers (codes, partitions) against each other.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic

from kgroup.broker.answer_order import all_topics_order
from kgroup.javacompat import JavaHashMap, int32, java_string_hash
from kgroup.scalacompat import ImmutableSetOrder

pytestmark = pytest.mark.apache_kafka

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
UNKNOWN_TOPIC_ID = 100


def _by_name(raw: Raw, names: list[str]) -> Any:
    topics = [{"name": n, "topic_id": None} for n in names]
    request = {
        "topics": topics,
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    return raw.call("Metadata", 12, request)


def _uuid_hash(topic_id: uuid.UUID) -> int:
    folded = (topic_id.int >> 64) ^ (topic_id.int & 0xFFFFFFFFFFFFFFFF)
    return int32((folded >> 32) ^ (folded & 0xFFFFFFFF))


def _answered(answer: Any, prefix: str) -> list[tuple[str | None, int, int]]:
    """(topic without the run's prefix, error code, partition count) in the answer's order."""
    return [
        (None if t["name"] is None else t["name"].replace(prefix, "P"), t["error_code"], len(t["partitions"]))
        for t in answer["topics"]
    ]


def _expected_by_name(names: list[str], existing: set[str]) -> list[str]:
    """Kafka 4.4.0's order: the names as a Scala ``Set``, the existing topics in its order, then the
    others in the order of a ``java.util.HashSet`` copied from it (sized for it) with the found ones
    removed."""
    asked = ImmutableSetOrder.of(names, java_string_hash).order()
    copied: JavaHashMap[str, None] = JavaHashMap(java_string_hash, max(int(len(asked) / 0.75) + 1, 16))
    for name in asked:
        copied.put(name, None)
    return [n for n in asked if n in existing] + [n for n in copied.keys_in_order() if n not in existing]


def test_topics_named_twice_missing_and_by_id(target: Target, names: str) -> None:
    made = [f"{names}-{x}" for x in ("orders", "a", "b", "events", "t5", "zz")]
    missing = [f"{names}-none{i}" for i in range(3)] + [f"{names}-bad name!"]
    with Raw(target.bootstrap_servers) as raw:
        for i, topic in enumerate(made):
            create_topic(raw, topic, 1 + i % 3)
        many = [*made[::-1], made[2], *missing]
        big = _by_name(raw, many)
        small = _by_name(raw, [made[1], missing[0], made[1], made[0]])
        ids = {t["name"]: uuid.UUID(str(t["topic_id"])) for t in big["topics"] if t["error_code"] == NONE}
        unknown = [uuid.UUID(int=n) for n in (7, 11)]
        by_id_order = [
            ids[made[0]],
            unknown[0],
            ids[made[3]],
            ids[made[0]],
            ids[made[4]],
            unknown[1],
            ids[made[5]],
        ]
        by_id = raw.call(
            "Metadata",
            12,
            {
                "topics": [{"name": None, "topic_id": i} for i in by_id_order],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
    existing = set(made)
    assert [t["name"] for t in big["topics"]] == _expected_by_name(many, existing)
    assert [t["name"] for t in small["topics"]] == _expected_by_name(
        [made[1], missing[0], made[1], made[0]], existing
    )
    prefix = f"{names}"
    assert sorted(_answered(big, prefix), key=str) == sorted(
        [(n.replace(prefix, "P"), NONE, 1 + i % 3) for i, n in enumerate(made)]
        + [(n.replace(prefix, "P"), UNKNOWN_TOPIC_OR_PARTITION, 0) for n in missing[:3]]
        + [("P-bad name!", INVALID_TOPIC_EXCEPTION, 0)],
        key=str,
    )
    # by id: the unknown ids first, then the topics, each group in its Scala Set's order
    asked = ImmutableSetOrder.of(by_id_order, _uuid_hash)
    names_of = {v: k for k, v in ids.items()}
    unknown_first = asked.filter(lambda i: i not in names_of).order()
    known = asked.filter(lambda i: i in names_of).map(names_of.__getitem__, java_string_hash).order()
    got = [(t["error_code"], uuid.UUID(str(t["topic_id"])), t["name"]) for t in by_id["topics"]]
    assert got == [(UNKNOWN_TOPIC_ID, i, None) for i in unknown_first] + [(NONE, ids[n], n) for n in known]


def test_auto_created_topics_in_the_creators_order(target: Target, names: str) -> None:
    """Auto-creation (both brokers allow it): the names that cannot be created first, then the others in
    the order of the ``java.util.HashMap`` Kafka's ``AutoTopicCreationManager`` collects them in — each
    answered UNKNOWN_TOPIC_OR_PARTITION while the controller creates it."""
    wanted = [f"{names}-new{i}" for i in range(6)] + [f"{names}-no good!"]
    with Raw(target.bootstrap_servers) as raw:
        request = {
            "topics": [{"name": n, "topic_id": None} for n in wanted],
            "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False,
        }
        answer = raw.call("Metadata", 12, request)
    absent = _expected_by_name(wanted, set())
    creatable = [n for n in absent if "!" not in n]
    collected: JavaHashMap[str, None] = JavaHashMap(java_string_hash)
    for name in creatable:
        collected.put(name, None)
    expected = [(f"{names}-no good!", INVALID_TOPIC_EXCEPTION)] + [
        (n, UNKNOWN_TOPIC_OR_PARTITION) for n in collected.keys_in_order()
    ]
    assert [(t["name"], t["error_code"]) for t in answer["topics"]] == expected


def test_every_topic_in_kafkas_order(target: Target, names: str) -> None:
    """A Metadata request for every topic: Kafka's order (a Scala ``mutable.HashSet`` of the image's
    names, ``kgroup.broker.answer_order.all_topics_order``) over whatever topics the broker has — the
    shared Apache Kafka has other tests' topics too, so the order is checked on the names answered."""
    with Raw(target.bootstrap_servers) as raw:
        for i in range(12):
            create_topic(raw, f"{names}-all{i}", 1)
        answer = raw.call(
            "Metadata",
            12,
            {
                "topics": None,
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
    got = [t["name"] for t in answer["topics"]]
    assert {f"{names}-all{i}" for i in range(12)} <= set(got)
    assert got == all_topics_order(got)
