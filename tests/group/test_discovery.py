"""FindCoordinator's partition mapping and the live HashMap order,
against values printed by Java 17 (``java_outputs.txt``, printed by ``JavaOutputs.java``:
``String.hashCode``/``Math.abs`` for group ids, and a ``java.util.HashMap`` driven by a seeded
sequence of puts and removes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroup.group import GroupCoordinator, coordinator_partition
from kgroup.group.javamap import JavaHashOrder
from kgroup.javacompat import hashmap_iteration_order
from kgroup.messages import Envelope, FindCoordinatorRequest
from kgroup.model import KgroupError

JAVA = [line.split("\t") for line in (Path(__file__).parent / "java_outputs.txt").read_text().splitlines()]


@pytest.mark.parametrize("row", [r for r in JAVA if r[0] == "P"], ids=lambda r: repr(r[1]))
def test_coordinator_partition_matches_java(row: list[str]) -> None:
    _, group_id, p50, p7 = row
    assert coordinator_partition(group_id) == int(p50)
    assert coordinator_partition(group_id, 7) == int(p7)


def test_coordinator_partition_rejects_no_partitions() -> None:
    with pytest.raises(KgroupError, match="num_partitions"):
        coordinator_partition("g", 0)


def test_java_hash_order_follows_a_live_java_hashmap() -> None:
    """Puts, removes and re-puts (the table grows to 32 and never shrinks) give Java's order."""
    order = JavaHashOrder()
    checked = 0
    for kind, payload in [(r[0], r[1]) for r in JAVA if r[0] in ("OPS", "ORDER")]:
        if kind == "OPS":
            for op in payload.split():
                if op[0] == "+":
                    order.put(op[1:])
                else:
                    order.remove(op[1:])
        else:
            assert list(order.order()) == payload.split()
            checked += 1
    assert checked == 6
    assert order.state()[0] == 32


def test_java_hash_order_without_removals_equals_javacompat() -> None:
    keys = [f"member-{i}" for i in range(40)]
    order = JavaHashOrder()
    for k in keys:
        order.put(k)
    assert list(order.order()) == hashmap_iteration_order(keys)


def test_find_coordinator_is_the_hosts_not_the_coordinators() -> None:
    """Which node coordinates a group is the cluster's knowledge: the broker's handler and the
    simulator answer FindCoordinator; the pure coordinator refuses it like any non-group request."""
    from random import Random

    coordinator = GroupCoordinator(rng=Random(0))
    with pytest.raises(KgroupError, match="FindCoordinatorRequest is not a group request"):
        coordinator.handle(0, Envelope("c", 7, FindCoordinatorRequest("any-group")))
