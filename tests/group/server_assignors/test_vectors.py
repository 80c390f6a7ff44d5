"""The server assignors against the recorded ``server-uniform`` / ``server-range`` vectors.

The vectors were computed at Kafka's old trunk (1eb7644). Kafka 4.x changed one thing the vectors
see: ``UniformHomogeneousAssignmentBuilder`` now lets a member that kept fewer than the minimum give
up the "one extra partition" to the members after it, so the extra partitions of a fresh homogeneous
group go to the *last* members in ``memberIds()`` order instead of the first. The vectors below are
those whose answer that changes; kgroup answers as 4.4.0 does (checked against Kafka's own classes in
``test_against_kafka.py``), so they must keep failing here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.group.server_assignors.vectors import (
    SERVER_UNIFORM_CHANGED_BY_KAFKA_4,
    all_paths,
    assignment_strings,
    load,
)

from kgroup.group.assignors import create_server_assignor

PATHS = all_paths()

CHANGED_BY_KAFKA_4 = {f"server-uniform/{name}" for name in SERVER_UNIFORM_CHANGED_BY_KAFKA_4}
_REASON = (
    "old-trunk vector; Kafka 4.x's homogeneous uniform builder gives the extra partitions to the last members"
)


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def test_the_vectors_are_there() -> None:
    assert len(PATHS) == 120
    assert {_id(p) for p in PATHS} >= CHANGED_BY_KAFKA_4


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=_REASON))
        if _id(p) in CHANGED_BY_KAFKA_4
        else p
        for p in PATHS
    ],
    ids=_id,
)
def test_vector(path: Path) -> None:
    vector = load(path)
    assert list(vector.spec.members) == vector.expected_order
    assert vector.spec.subscription_type.value == vector.expected_type
    result = create_server_assignor(vector.assignor).assign(vector.spec, vector.topics)
    got = {m: assignment_strings(result.get(m, {}), vector.names) for m in vector.spec.members}
    assert got == vector.expected


@pytest.mark.parametrize("path", [p for p in PATHS if _id(p) in CHANGED_BY_KAFKA_4], ids=_id)
def test_a_changed_vector_differs_only_in_who_gets_the_extra_partitions(path: Path) -> None:
    vector = load(path)
    result = create_server_assignor(vector.assignor).assign(vector.spec, vector.topics)
    got = {m: assignment_strings(result.get(m, {}), vector.names) for m in vector.spec.members}
    # the same multiset of member loads, the same partitions handed out: balance is what both promise
    assert sorted(map(len, got.values())) == sorted(map(len, vector.expected.values()))
    assert sorted(p for ps in got.values() for p in ps) == sorted(
        p for ps in vector.expected.values() for p in ps
    )
