"""Fast ``TopicPartition`` helpers for the assignors' hot loops."""

from __future__ import annotations

from functools import lru_cache, partial

from kgroup.javacompat import java_string_key
from kgroup.model import TopicPartition

__all__ = ["new_partition", "topic_key", "topic_order"]

#: ``TopicPartition(topic, partition)`` without the NamedTuple's Python-level ``__new__`` (runs in C)
new_partition = partial(tuple.__new__, TopicPartition)

#: Java ``String.compareTo`` sort key of a topic name, cached (few topics, many partitions)
topic_key = lru_cache(maxsize=65536)(java_string_key)


def topic_order(tp: TopicPartition) -> tuple[bytes, int]:
    """Sort key: topic in Java order, then partition number (the order vectors list partitions in)."""
    return (topic_key(tp.topic), tp.partition)
