"""Differential: a CreateTopics request naming topics more than once — sent raw to kgroup and to Apache
Kafka 4.4.0 (the ``target`` fixture). Kafka's ``ControllerApis.createTopics`` hands the controller only
the names met once: its answers come in the request's order, then each repeated name once
(``INVALID_REQUEST``) in the order of the ``java.util.HashSet`` it was collected in. Each broker's
answer is checked against that model for its own names, and the answers against each other.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw

from kgroup.javacompat import JavaHashMap, java_string_hash

pytestmark = pytest.mark.apache_kafka

NONE = 0
INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUEST = 42


def _create(raw: Raw, names: list[str], *, validate_only: bool) -> Any:
    topics = [
        {"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        for n in names
    ]
    return raw.call("CreateTopics", 7, {"topics": topics, "timeout": 30_000, "validate_only": validate_only})


def _expected(names: list[str], codes: dict[str, int]) -> list[tuple[str, int]]:
    once: JavaHashMap[str, None] = JavaHashMap(java_string_hash)
    repeated: JavaHashMap[str, None] = JavaHashMap(java_string_hash)
    for name in names:
        if name not in repeated:
            if name in once:
                once.remove(name)
                repeated.put(name, None)
            else:
                once.put(name, None)
    handed = [(n, codes[n]) for n in names if n in once]
    return handed + [(n, INVALID_REQUEST) for n in repeated.keys_in_order()]


@pytest.mark.parametrize("validate_only", [True, False])
def test_names_met_again_answered_once_after_the_others(
    target: Target, names: str, validate_only: bool
) -> None:
    t = [f"{names}-{validate_only}-{x}" for x in ("c", "d", "e", "f", "g", "h", "i", "j")]
    bad = f"{names}-no good!"
    request = [t[0], t[1], t[0], t[2], bad, t[3], t[0], t[4], t[2], t[5], t[6], t[7], t[6]]
    with Raw(target.bootstrap_servers) as raw:
        answer = _create(raw, request, validate_only=validate_only)
    got = [(r["name"], r["error_code"]) for r in answer["topics"]]
    codes = {n: NONE for n in t} | {bad: INVALID_TOPIC_EXCEPTION}
    assert got == _expected(request, codes)
    messages = {r["name"]: r["error_message"] for r in answer["topics"] if r["error_code"] == INVALID_REQUEST}
    assert set(messages.values()) == {"Duplicate topic name."}
