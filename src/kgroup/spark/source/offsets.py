"""The offsets JSON of the ``kgroup`` source: what Spark keeps in a streaming query's checkpoint.

``{"topicA": {"0": 23, "1": -1}}`` — topic, partition, offset — is the form of Spark's Kafka source
(its ``startingOffsets`` / ``endingOffsets`` options and its checkpointed batch offsets), so a
query's checkpoint reads the same under both sources. Pure: no pyspark, no client.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from kgroup.model import KgroupError, TopicPartition

__all__ = [
    "EARLIEST",
    "LATEST",
    "json_object",
    "offsets_from_json",
    "offsets_to_json",
    "partition_list",
    "partition_number",
]

#: In offset JSON, as in Spark and Kafka's ListOffsets: -2 is the earliest offset, -1 the latest.
EARLIEST = -2
LATEST = -1


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
