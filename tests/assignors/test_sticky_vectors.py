"""Every Kafka vector of ``sticky`` and ``cooperative-sticky``, one test per file.

The vectors are built straight from their JSON with a small loader private to the sticky tests
(members' user data per FORMAT.md's defaults, encoded with kgroup's own encoders), so these tests do
not depend on the shared file loader; one more test runs the same vectors through the shared loader
(:mod:`kgroup.assignors.fileformat`) to check that the two agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.sticky import AbstractStickyAssignor, CooperativeStickyAssignor, StickyAssignor
from kgroup.assignors.sticky.userdata import encode_cooperative_user_data, encode_sticky_user_data
from kgroup.javacompat import hashmap_iteration_order
from kgroup.model import Member, TopicMetadata, TopicPartition

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
STICKY_FILES = sorted((VECTORS / "sticky").rglob("*.json"))
COOPERATIVE_FILES = sorted((VECTORS / "cooperative-sticky").rglob("*.json"))


def _partitions(texts: list[str]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition.parse(t) for t in texts)


def _user_data(assignor: str, spec: Mapping[str, Any]) -> bytes | None:
    """FORMAT.md: explicit ``userData`` if present, else what a current client of the assignor sends."""
    owned = _partitions(spec.get("owned", []))
    generation = spec.get("generation", -1)
    if "userData" in spec:
        explicit = spec["userData"]
        if explicit is None:
            return None
        if assignor == "sticky":
            return encode_sticky_user_data(_partitions(explicit["partitions"]), explicit["generation"])
        return encode_cooperative_user_data(explicit["generation"])
    if assignor == "sticky":
        if not owned and generation == -1:
            return None
        return encode_sticky_user_data(owned, generation)
    return encode_cooperative_user_data(generation)


def load_sticky_vector(data: Mapping[str, Any]) -> tuple[AbstractStickyAssignor, AssignmentRequest]:
    """A fresh assignor (with the vector's carried-over ``maxGeneration``) and the request."""
    assignor_name = data["assignor"]
    inp = data["input"]
    topics: dict[str, TopicMetadata] = {}
    for t in inp["topics"]:
        racks = None
        if "racks" in t:
            racks = tuple(frozenset(r for r in (rs or ()) if r is not None) for rs in t["racks"])
        topics[t["name"]] = TopicMetadata(t["name"], t["partitions"], racks)
    members = [
        Member(
            member_id=m["memberId"],
            topics=tuple(m.get("topics", [])),
            owned=_partitions(m.get("owned", [])),
            generation=m.get("generation", -1),
            group_instance_id=m.get("groupInstanceId"),
            rack_id=m.get("rackId"),
            user_data=_user_data(assignor_name, m),
        )
        for m in inp["members"]
    ]
    assignor: AbstractStickyAssignor = (
        StickyAssignor() if assignor_name == "sticky" else CooperativeStickyAssignor()
    )
    if "priorMaxGeneration" in inp:
        assignor.set_prior_max_generation(inp["priorMaxGeneration"])
    request = AssignmentRequest(members, topics, bool(inp.get("preferRackAwareLogic", False)))
    return assignor, request


def _check(path: Path) -> None:
    data = json.loads(path.read_text())
    assignor, request = load_sticky_vector(data)
    expected = data["expected"]
    order = hashmap_iteration_order(m.member_id for m in request.members)
    assert order == expected["memberIterationOrder"]
    got = {member: [str(tp) for tp in partitions] for member, partitions in assignor.assign(request).items()}
    differing = {
        m: (expected["assignment"][m], got.get(m))
        for m in expected["assignment"]
        if got.get(m) != expected["assignment"][m]
    }
    assert not differing, f"{path.name}: member -> (Kafka, kgroup): {differing}"
    assert set(got) == set(expected["assignment"])


@pytest.mark.parametrize("path", STICKY_FILES, ids=lambda p: p.stem)
def test_sticky_vector(path: Path) -> None:
    _check(path)


@pytest.mark.parametrize("path", COOPERATIVE_FILES, ids=lambda p: p.stem)
def test_cooperative_sticky_vector(path: Path) -> None:
    _check(path)


def test_vector_counts() -> None:
    """The whole copied set is here (kafka-test + random): 452 sticky, 484 cooperative-sticky."""
    assert len(STICKY_FILES) == 452
    assert len(COOPERATIVE_FILES) == 484


def test_shared_loader_agrees_on_every_sticky_vector() -> None:
    from kgroup.assignors.fileformat import check_vector

    inexact = []
    for path in [*STICKY_FILES, *COOPERATIVE_FILES]:
        result = check_vector(json.loads(path.read_text()), name=path.name)
        if result.error is not None or not result.exact:
            inexact.append(path.name)
    assert inexact == []


def test_prior_max_generation_turns_claims_into_previous_owners() -> None:
    """A carried-over ``maxGeneration`` above every member's generation makes all claims "previous
    owners" in the general path, and a partition then goes back to its previous owner rather than to
    the least-loaded member.

    c1 and c2 both claim u-0 in their generation-2 user data; c2 keeps it (its user-data generation 2
    beats c1's absent subscription generation, Kafka's asymmetry) and also receives t-0, so u-0 must
    move: to c0 (least loaded) on a fresh assignor, back to c1 once generation 3 was seen before.
    """
    t0, u0 = TopicPartition("t", 0), TopicPartition("u", 0)
    topics = {"t": TopicMetadata("t", 1), "u": TopicMetadata("u", 1)}
    members = [
        Member("c0", ("u",), user_data=encode_sticky_user_data([], 2)),
        Member("c1", ("u",), user_data=encode_sticky_user_data([t0, u0], 2)),
        Member("c2", ("t", "u"), user_data=encode_sticky_user_data([u0], 2)),
    ]
    request = AssignmentRequest(members, topics)
    assert StickyAssignor().assign(request) == {"c0": [u0], "c1": [], "c2": [t0]}
    carried = StickyAssignor()
    carried.set_prior_max_generation(3)
    assert carried.assign(request) == {"c0": [], "c1": [u0], "c2": [t0]}


def test_max_generation_is_carried_across_calls() -> None:
    assignor = StickyAssignor()
    assert assignor.max_generation == -1
    topics = {"t": TopicMetadata("t", 2)}
    member = Member("c1", ("t",), user_data=encode_sticky_user_data([TopicPartition("t", 0)], 7))
    assignor.assign(AssignmentRequest([member], topics))
    assert assignor.max_generation == 7
    assignor.assign(AssignmentRequest([Member("c1", ("t",))], topics))
    assert assignor.max_generation == 7  # only ever raised
