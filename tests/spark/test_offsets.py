"""The offsets JSON Spark checkpoints for a ``kgroup`` read, and the ``consume=group`` batch in it
(:class:`GroupBatchOffsets`). Pure: no Spark, no broker."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kgroup.model import KgroupError
from kgroup.model import TopicPartition as TP
from kgroup.spark.source.offsets import (
    GROUP_KEY,
    BatchOwner,
    GroupBatchOffsets,
    batch_end_offsets,
    offsets_from_json,
    partition_list,
)

#: a batch's offsets exactly as kgroup 0.1's consume=group reader wrote them into checkpoints
CHECKPOINTED = json.loads(
    """{"orders": {"0": 12, "1": 7, "2": 30},
        "kgroupGroup": {"groupId": "g", "bootstrap": "127.0.0.1:9092",
                        "from": {"orders": {"0": 10, "1": 7, "2": 25}},
                        "members": [
                          {"memberId": "m-1", "generation": 3, "groupInstanceId": null,
                           "partitions": {"orders": {"0": 0, "2": 0}}},
                          {"memberId": "m-2", "generation": 3, "groupInstanceId": "static-1",
                           "partitions": {"orders": {"1": 0}}}]}}"""
)


def test_a_checkpointed_group_batch_reads_back_and_writes_the_same_json() -> None:
    batch = GroupBatchOffsets.from_json(CHECKPOINTED)
    assert batch is not None
    assert batch.end == {TP("orders", 0): 12, TP("orders", 1): 7, TP("orders", 2): 30}
    assert batch.start == {TP("orders", 0): 10, TP("orders", 1): 7, TP("orders", 2): 25}
    assert (batch.group_id, batch.bootstrap) == ("g", "127.0.0.1:9092")
    assert batch.owners == (
        BatchOwner("m-1", 3, None, (TP("orders", 0), TP("orders", 2))),
        BatchOwner("m-2", 3, "static-1", (TP("orders", 1),)),
    )
    assert batch.to_json() == CHECKPOINTED
    assert batch_end_offsets(CHECKPOINTED) == batch.end
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.group_id = "other"  # type: ignore[misc]


def test_a_partition_batch_is_no_group_batch_and_a_damaged_one_is_named() -> None:
    plain = {"orders": {"0": 5}}
    assert GroupBatchOffsets.from_json(plain) is None
    assert batch_end_offsets(plain) == {TP("orders", 0): 5}
    damaged = {**CHECKPOINTED, GROUP_KEY: {**CHECKPOINTED[GROUP_KEY], "members": [{"memberId": "m"}]}}
    with pytest.raises(KgroupError, match=r"^checkpoint: a consume=group batch's offsets are not kgroup's"):
        GroupBatchOffsets.from_json(damaged)


def test_offsets_json_names_the_bad_part() -> None:
    assert offsets_from_json("x", '{"t": {"1": -2}}') == {TP("t", 1): -2}
    with pytest.raises(KgroupError, match=r"^x: offset -3 of t-1 is not an offset"):
        offsets_from_json("x", '{"t": {"1": -3}}')
    with pytest.raises(KgroupError, match=r"^x: partition 'a' of topic 't' is not a number"):
        offsets_from_json("x", '{"t": {"a": 1}}')
    assert partition_list([TP("b", 0), TP("a", 10), TP("a", 2)]) == "[a-2, a-10, b-0]"
