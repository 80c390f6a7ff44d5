"""Differential: DescribeGroups, DeleteGroups, ConsumerGroupDescribe and ShareGroupDescribe of several
groups, some named twice — sent raw to kgroup and to Apache Kafka 4.4.0 (the ``target`` fixture).
``GroupCoordinatorService`` answers a batch grouped by coordinator partition, each partition's groups
in the request's order; kgroup orders the partitions as the ``java.util.HashMap`` Kafka collects them
in (``kgroup.broker.answer_order.by_coordinator_partition``), which is Kafka's most frequent order — its
own varies between runs. DeleteGroups takes each group once (``distinct``; an empty group id is a
group like any other).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_hostile import _coordinator
from tests.apache_kafka.wire import Raw

from kgroup.broker.answer_order import by_coordinator_partition
from kgroup.group.discovery import coordinator_partition

pytestmark = pytest.mark.apache_kafka

NONE = 0
GROUP_ID_NOT_FOUND = 69


def _kafka_order(groups: list[str]) -> list[str]:
    return [groups[i] for i in by_coordinator_partition(groups, coordinator_partition, "__consumer_offsets")]


def _check_order(target: Target, got: list[str], asked: list[str]) -> None:
    """kgroup: exactly the model's order. Apache Kafka: its order across partitions varies between runs
    (seen: the same request answered in two orders, the model's most often), so only what holds in
    every run is checked — each partition's groups together, in the request's order."""
    if target.kind == "kgroup":
        assert got == _kafka_order(asked)
        return
    assert sorted(got) == sorted(asked)
    blocks: list[list[str]] = []
    for group in got:
        if blocks and coordinator_partition(blocks[-1][0]) == coordinator_partition(group):
            blocks[-1].append(group)
        else:
            blocks.append([group])
    assert len(blocks) == len({coordinator_partition(g) for g in asked}), got  # each partition's together
    for block in blocks:
        assert block == [g for g in asked if coordinator_partition(g) == coordinator_partition(block[0])]


def test_describe_and_delete_batches(target: Target, names: str) -> None:
    groups = [f"{names}-g{i}" for i in range(8)]
    asked = [
        groups[3],
        groups[0],
        groups[5],
        groups[3],
        groups[1],
        groups[7],
        groups[2],
        groups[6],
        groups[4],
    ]
    for group in groups:
        bootstrap = _coordinator(target.bootstrap_servers, group)  # every partition loaded (one broker)
    with Raw(bootstrap) as raw:
        described: Any = raw.call(
            "DescribeGroups", 5, {"groups": asked, "include_authorized_operations": False}
        )
        deleted: Any = raw.call(
            "DeleteGroups", 2, {"groups_names": [groups[2], "", groups[0], groups[2], groups[6]]}
        )
    assert {(g["error_code"], g["group_state"]) for g in described["groups"]} == {(NONE, "Dead")}
    _check_order(target, [g["group_id"] for g in described["groups"]], asked)
    assert {r["error_code"] for r in deleted["results"]} == {GROUP_ID_NOT_FOUND}
    _check_order(target, [r["group_id"] for r in deleted["results"]], [groups[2], "", groups[0], groups[6]])


@pytest.mark.parametrize("api", ["ConsumerGroupDescribe", "ShareGroupDescribe"])
def test_consumer_and_share_group_describes_by_partition(target: Target, names: str, api: str) -> None:
    """KIP-848's and KIP-932's describes answer a batch the same way: by coordinator partition, a group
    named twice twice."""
    groups = [f"{names}-g{i}" for i in range(6)]
    asked = [groups[3], groups[0], groups[3], groups[5], groups[1], groups[4], groups[2]]
    for group in groups:
        bootstrap = _coordinator(target.bootstrap_servers, group)
    with Raw(bootstrap) as raw:
        version = 0 if api == "ConsumerGroupDescribe" else 1
        answer: Any = raw.call(api, version, {"group_ids": asked, "include_authorized_operations": False})
    assert {g["error_code"] for g in answer["groups"]} == {GROUP_ID_NOT_FOUND}
    _check_order(target, [g["group_id"] for g in answer["groups"]], asked)
