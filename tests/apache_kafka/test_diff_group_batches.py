"""Differential: DescribeGroups and DeleteGroups of several groups, some named twice — sent raw to kgroup
and to Apache Kafka 4.4.0 (the ``target`` fixture). ``GroupCoordinatorService`` answers a batch grouped
by coordinator partition, the partitions in the order of the ``java.util.HashMap`` it collects them in
(``kgroup.broker.answer_order.by_coordinator_partition``); DeleteGroups takes each group once
(``distinct``; an empty group id is a group like any other).
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
    assert [(g["group_id"], g["error_code"], g["group_state"]) for g in described["groups"]] == [
        (g, NONE, "Dead") for g in _kafka_order(asked)
    ]
    assert [(r["group_id"], r["error_code"]) for r in deleted["results"]] == [
        (g, GROUP_ID_NOT_FOUND) for g in _kafka_order([groups[2], "", groups[0], groups[6]])
    ]
