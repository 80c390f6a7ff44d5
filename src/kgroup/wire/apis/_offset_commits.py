"""What OffsetCommit's and TxnOffsetCommit's translations share (:mod:`.offset_commit`,
:mod:`.txn_offset_commit`): the same partitions by topic both ways, topics named by name or, from a
version on, by id (through a :class:`~kgroup.wire.apis._common.TopicIds`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kgroup.messages import OffsetCommitPartition
from kgroup.model import ErrorCode, TopicPartition
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis._common import TopicIds, by_topic, need_topic_ids, response_entity
from kgroup.wire.codec import build, error_from_wire

__all__ = [
    "answer_from_wire",
    "answer_to_wire",
    "entries_to_wire",
    "offsets_from_wire",
    "offsets_to_wire",
    "topic_names",
    "wire_ids",
]


def _topic(name: str, ids: TopicIds | None) -> dict[str, Any]:
    # the name goes with the id: the versions that name topics by id have no name field, and build
    # drops the field another version has
    return {"name": name, "topic_id": ids.id(name)} if ids is not None else {"name": name}


def offsets_to_wire(offsets: Iterable[OffsetCommitPartition], ids: TopicIds | None) -> list[dict[str, Any]]:
    """A request's topics: its offsets grouped by topic, in the order topics first appear."""
    return [
        {
            **_topic(name, ids),
            "partitions": [
                {
                    "partition_index": o.partition.partition,
                    "committed_offset": o.committed_offset,
                    "committed_leader_epoch": o.committed_leader_epoch,
                    "committed_metadata": o.committed_metadata,
                }
                for o in grouped
            ],
        }
        for name, grouped in by_topic((o.partition.topic, o) for o in offsets).items()
    ]


def results_to_wire(
    results: Iterable[tuple[TopicPartition, ErrorCode]], ids: TopicIds | None
) -> list[dict[str, Any]]:
    """An answer's topics: each partition's error code, grouped by topic in the order topics first
    appear."""
    # the partitions are generators: a commit of a million partitions is not a million dicts at once
    return [
        {**_topic(name, ids), "partitions": ({"partition_index": i, "error_code": c} for i, c in entries)}
        for name, entries in by_topic((tp.topic, (tp.partition, code)) for tp, code in results).items()
    ]


def entries_to_wire(
    key: ApiKey,
    first_id_version: int,
    entries: Sequence[tuple[str, Sequence[tuple[int, ErrorCode]]]],
    version: int,
    topic_ids: TopicIds | None,
) -> Any:
    """The wire answer of ``version`` with these topic entries as they are (a topic may have two:
    Kafka answers a commit's partitions in the entries its request named them in)."""
    ids = wire_ids(key, version, first_id_version, topic_ids)
    topics = [
        {**_topic(name, ids), "partitions": [{"partition_index": i, "error_code": c} for i, c in parts]}
        for name, parts in entries
    ]
    return build(response_entity(key, version), {"throttle_time": 0, "topics": topics})


def wire_ids(key: ApiKey, version: int, first_id_version: int, topic_ids: TopicIds | None) -> TopicIds | None:
    """The ids a message of ``version`` names its topics by (``None``: by name, before
    ``first_id_version``)."""
    return need_topic_ids(key, version, topic_ids) if version >= first_id_version else None


def answer_to_wire(
    key: ApiKey,
    first_id_version: int,
    results: Iterable[tuple[TopicPartition, ErrorCode]],
    version: int,
    topic_ids: TopicIds | None,
) -> Any:
    """The wire answer of ``version`` carrying ``results``: each partition's error code by topic."""
    ids = wire_ids(key, version, first_id_version, topic_ids)
    return build(response_entity(key, version), {"throttle_time": 0, "topics": results_to_wire(results, ids)})


def answer_from_wire(
    key: ApiKey, first_id_version: int, response: Any, topic_ids: TopicIds | None
) -> tuple[tuple[TopicPartition, ErrorCode], ...]:
    """A wire answer's error codes, one per partition in the answer's order."""
    return results_from_wire(response.topics, topic_names(key, response, first_id_version, topic_ids))


def topic_names(key: ApiKey, message: Any, first_id_version: int, topic_ids: TopicIds | None) -> list[str]:
    """The names of a wire request's or answer's topics (``message.topics``): their names, or from
    ``first_id_version`` their ids' names."""
    version = int(message.__version__)
    if version >= first_id_version:
        ids = need_topic_ids(key, version, topic_ids)
        return [ids.name(t.topic_id) for t in message.topics]
    return [t.name for t in message.topics]


def offsets_from_wire(topics: Sequence[Any], names: Sequence[str]) -> tuple[OffsetCommitPartition, ...]:
    """A wire request's offsets, one per partition in the request's order."""
    return tuple(
        OffsetCommitPartition(
            TopicPartition(name, int(p.partition_index)),
            int(p.committed_offset),
            p.committed_metadata,
            int(getattr(p, "committed_leader_epoch", -1)),
        )
        for t, name in zip(topics, names, strict=True)
        for p in t.partitions
    )


def results_from_wire(
    topics: Sequence[Any], names: Sequence[str]
) -> tuple[tuple[TopicPartition, ErrorCode], ...]:
    """A wire answer's error codes, one per partition in the answer's order."""
    return tuple(
        (TopicPartition(name, int(p.partition_index)), error_from_wire(p.error_code))
        for t, name in zip(topics, names, strict=True)
        for p in t.partitions
    )
