"""Differential: a DeleteTopics request with names and ids given more than once, unknown, both or
neither — sent raw to kgroup and to Apache Kafka 4.4.0 (the ``target`` fixture). Kafka's
``ControllerApis.deleteTopics`` answers a repeated name or id once (``INVALID_REQUEST``), refuses an
entry with both or neither, and shuffles its answers (``Collections.shuffle``: no order to compare), so
the answers are compared as a set, each partition's code and message, and which topics are gone.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, metadata

pytestmark = pytest.mark.apache_kafka

ZERO = uuid.UUID(int=0)


def _answers(answer: Any, prefix: str, ids: dict[uuid.UUID, str]) -> list[tuple[Any, ...]]:
    out = []
    for r in answer["responses"]:
        raw_id = r["topic_id"]
        topic_id = raw_id if isinstance(raw_id, uuid.UUID) else uuid.UUID(str(raw_id)) if raw_id else ZERO
        name = None if r["name"] is None else r["name"].replace(prefix, "P")
        shown_id = "zero" if topic_id == ZERO else ids.get(topic_id, "other").replace(prefix, "P")
        out.append((name, shown_id, r["error_code"], r["error_message"]))
    return sorted(out, key=repr)


def test_names_and_ids_twice_unknown_both_and_neither(target: Target, names: str) -> None:
    t = [f"{names}-{x}" for x in ("a", "b", "c", "d", "e")]
    with Raw(target.bootstrap_servers) as raw:
        for topic in t:
            create_topic(raw, topic, 1)
        ids = {
            uuid.UUID(str(x["topic_id"])): x["name"] for x in metadata(raw, t, auto_create=False)["topics"]
        }
        by_name = {v: k for k, v in ids.items()}
        entries = [
            {"name": t[0], "topic_id": ZERO},
            {"name": t[0], "topic_id": ZERO},  # a name twice
            {"name": None, "topic_id": by_name[t[1]]},
            {"name": None, "topic_id": by_name[t[1]]},  # an id twice
            {"name": f"{names}-nope", "topic_id": ZERO},
            {"name": None, "topic_id": uuid.UUID(int=12345)},
            {"name": t[2], "topic_id": by_name[t[2]]},  # both
            {"name": None, "topic_id": ZERO},  # neither
            {"name": None, "topic_id": by_name[t[3]]},
            {"name": t[3], "topic_id": ZERO},  # a name whose id was given
            {"name": t[4], "topic_id": ZERO},
        ]
        answer = raw.call("DeleteTopics", 6, {"topics": entries, "timeout": 30_000})
        left = {x["name"]: x["error_code"] for x in metadata(raw, t, auto_create=False)["topics"]}
    got = _answers(answer, names, ids)
    assert got == sorted(EXPECTED, key=repr)
    assert left == {t[0]: 0, t[1]: 0, t[2]: 0, t[3]: 0, t[4]: 3}


EXPECTED: list[tuple[Any, ...]] = [
    ("P-a", "zero", 42, "Duplicate topic name."),
    (None, "P-b", 42, "Duplicate topic id."),
    ("P-c", "P-c", 42, "You may not specify both topic name and topic id."),
    (None, "zero", 42, "Neither topic name nor id were specified."),
    ("P-d", "P-d", 42, "The provided topic name maps to an ID that was already supplied."),
    ("P-e", "P-e", 0, None),
    ("P-nope", "zero", 3, "This server does not host this topic-partition."),
    (None, "other", 100, "This server does not host this topic ID."),
]
