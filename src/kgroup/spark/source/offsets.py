"""The offsets JSON of the ``kgroup`` source: what Spark keeps in a streaming query's checkpoint.

``{"topicA": {"0": 23, "1": -1}}`` — topic, partition, offset — is the form of Spark's Kafka source
(its ``startingOffsets`` / ``endingOffsets`` options and its checkpointed batch offsets), so a
query's checkpoint reads the same under both sources. A ``consume=group`` batch adds one key,
``kgroupGroup`` (:class:`GroupBatchOffsets`): where each partition starts and which member owned
it. Pure: no pyspark, no client.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kgroup.model import KgroupError, TopicPartition

__all__ = [
    "EARLIEST",
    "GROUP_KEY",
    "LATEST",
    "BatchOwner",
    "GroupBatchOffsets",
    "batch_end_offsets",
    "json_object",
    "offsets_from_json",
    "offsets_to_json",
    "partition_list",
    "partition_number",
]

#: In offset JSON, as in Spark and Kafka's ListOffsets: -2 is the earliest offset, -1 the latest.
EARLIEST = -2
LATEST = -1
#: the key of the offsets JSON that marks a ``consume=group`` batch
GROUP_KEY = "kgroupGroup"


def json_object(name: str, value: str, example: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise KgroupError(f"{name}: not valid JSON ({exc.msg}); give an object like {example}") from None
    if not isinstance(parsed, dict):
        raise KgroupError(f"{name}: {value!r} is not a JSON object; give an object like {example}")
    return parsed


def partition_number(name: str, topic: str, raw: Any) -> int:
    try:
        number = int(raw)
    except (TypeError, ValueError):
        raise KgroupError(f"{name}: partition {raw!r} of topic {topic!r} is not a number") from None
    if isinstance(raw, bool) or number < 0 or str(number) != str(raw).strip():
        raise KgroupError(
            f"{name}: partition {raw!r} of topic {topic!r} is not a partition number (0 or more)"
        )
    return number


def offsets_from_json(name: str, value: str) -> dict[TopicPartition, int]:
    """``{"topicA":{"0":23,"1":-1}}`` as {(topic, partition): offset}; -2 earliest, -1 latest."""
    parsed = json_object(name, value, '{"topicA":{"0":23,"1":-2}}')
    out: dict[TopicPartition, int] = {}
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise KgroupError(f'{name}: the offsets of topic {topic!r} must be an object like {{"0":23}}')
        for part, offset in parts.items():
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise KgroupError(
                    f"{name}: offset {offset!r} of {topic}-{part} is not an offset; "
                    "give 0 or more, -2 (earliest) or -1 (latest)"
                )
            out[TopicPartition(topic, partition_number(name, topic, part))] = offset
    return out


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The JSON-ready form Spark's Kafka source keeps in its checkpoint: topic -> partition -> offset."""
    out: dict[str, dict[str, int]] = {}
    for (topic, part), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(part)] = int(offset)
    return out


def partition_list(partitions: Iterable[TopicPartition]) -> str:
    """Partitions for a message, sorted, in Kafka's ``topic-partition`` form: ``[t-0, t-1]``."""
    return "[" + ", ".join(str(tp) for tp in sorted(partitions)) + "]"


def batch_end_offsets(value: Mapping[str, Any]) -> dict[TopicPartition, int]:
    """A checkpointed batch's end offsets (Spark's ``{topic: {partition: offset}}`` part)."""
    return offsets_from_json("offset", json.dumps({k: v for k, v in value.items() if k != GROUP_KEY}))


def _json_offsets(value: Any) -> dict[TopicPartition, int]:
    return offsets_from_json("offset", json.dumps(value))


@dataclass(frozen=True, slots=True)
class BatchOwner:
    """The member that owned some of a batch's partitions: what its group commit needs."""

    member_id: str
    generation: int
    group_instance_id: str | None
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class GroupBatchOffsets:
    """A ``consume=group`` batch's offsets, as Spark keeps them in the query's checkpoint.

    The JSON is Spark's ``{topic: {partition: end}}`` plus ``kgroupGroup``: the group, the broker,
    where each partition starts (``from``) and its owners (``members``; each with its partitions as
    ``{topic: {partition: 0}}``) — so a restarted query replays exactly the batch it planned, and
    the committer commits as the member that owned the partitions."""

    end: Mapping[TopicPartition, int]
    start: Mapping[TopicPartition, int]
    group_id: str
    bootstrap: str
    owners: tuple[BatchOwner, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            **offsets_to_json(self.end),
            GROUP_KEY: {
                "groupId": self.group_id,
                "bootstrap": self.bootstrap,
                "from": offsets_to_json(self.start),
                "members": [
                    {
                        "memberId": o.member_id,
                        "generation": o.generation,
                        "groupInstanceId": o.group_instance_id,
                        "partitions": offsets_to_json(dict.fromkeys(o.partitions, 0)),
                    }
                    for o in self.owners
                ],
            },
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> GroupBatchOffsets | None:
        """The batch in ``value``; ``None`` when it is a ``consume=partition`` batch's offsets."""
        info = value.get(GROUP_KEY)
        if info is None:
            return None
        try:
            owners = tuple(
                BatchOwner(
                    str(o["memberId"]),
                    int(o["generation"]),
                    None if o.get("groupInstanceId") is None else str(o["groupInstanceId"]),
                    tuple(sorted(_json_offsets(o["partitions"]))),
                )
                for o in info["members"]
            )
            return cls(
                end=batch_end_offsets(value),
                start=_json_offsets(info["from"]),
                group_id=str(info["groupId"]),
                bootstrap=str(info["bootstrap"]),
                owners=owners,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise KgroupError(
                f"checkpoint: a consume=group batch's offsets are not kgroup's ({type(exc).__name__}: "
                f"{exc}); use a new checkpointLocation"
            ) from None
